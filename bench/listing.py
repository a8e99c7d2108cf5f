"""Listings (no query) of a store ``bench/cold.py`` loaded, filter by filter.

    python bench/listing.py --store DIR [--times 20]

``DIR`` is one of ``bench/cold.py``'s stores (``<home>/cold-<size>``): one memory in a
thousand in the project ``tiny``, tagged ``rare``, trusted ``verified``, referencing
``CITED``, expired, or last verified a year ago; a project (``infra``) of about 8% and a
tag (``infra``) of about 6%. For each filter, the first page (20) is listed ``--times``
times in one process (the first listing of each is not counted), and the median
reported in milliseconds (``page_ms``); then the whole listing of the 0.1% project,
once (``whole_tier``: rows and milliseconds). Run it with another tree first on
``PYTHONPATH`` to compare the two on the same store.

The last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import retain  # noqa: E402
from cold import PROJECT, SCOPE, SMALL, TAG, listed  # noqa: E402
from store import machine, source_state  # noqa: E402

FILTERS = {**SMALL, "project": {"project": PROJECT}, "tag": {"tag": TAG}, "realm": {}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, required=True, help="a bench/cold.py store")
    parser.add_argument("--times", type=int, default=20)
    args = parser.parse_args()
    store = retain.open(args.store / "retain.db", home=args.store)
    page_ms = {}
    for name, options in FILTERS.items():
        store.list_memories(limit=20, **options)
        page_ms[name] = round(statistics.median(listed(store, options, args.times)) * 1000, 2)
    began = time.perf_counter()
    rows = len(store.list_memories(project=SCOPE))
    whole = {"rows": rows, "ms": round((time.perf_counter() - began) * 1000, 1)}
    store.close()
    print(
        json.dumps(
            {
                "benchmark": "listing",
                "source": source_state(),
                "machine": machine(),
                "store": str(args.store),
                "page_ms": page_ms,
                "whole_tier": whole,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
