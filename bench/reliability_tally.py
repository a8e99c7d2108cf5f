"""A pytest plugin ``bench/reliability.py`` loads into its Schemathesis run: it tallies
every request Schemathesis sent and every check it ran, through Schemathesis's public
``after_call`` and ``after_validate`` hooks, and writes the tally as JSON to the file
``$RETAIN_RELIABILITY_TALLY`` names when the session ends.

    RETAIN_RELIABILITY_TALLY=out.json pytest -p reliability_tally tests/doors/test_openapi.py

(with ``bench/`` on ``PYTHONPATH``). Per operation (``GET /memories``): requests sent,
how many were generated to fit the document (``positive``) or to break it
(``negative``), the answers by status, and per check how often it ran and failed.
Without the variable the plugin does nothing.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

TALLY = os.environ.get("RETAIN_RELIABILITY_TALLY")


def _blank() -> dict[str, Any]:
    return {"requests": 0, "modes": Counter(), "statuses": Counter(), "checks": {}}


operations: defaultdict[str, dict[str, Any]] = defaultdict(_blank)


def _mode(case: Any) -> str:
    meta = getattr(case, "meta", None)
    mode = getattr(getattr(meta, "generation", None), "mode", None)
    return str(getattr(mode, "value", mode) or "unknown")


if TALLY:
    import schemathesis

    @schemathesis.hook
    def after_call(context: Any, case: Any, response: Any) -> None:
        entry = operations[case.operation.label]
        entry["requests"] += 1
        entry["modes"][_mode(case)] += 1
        entry["statuses"][str(response.status_code)] += 1

    @schemathesis.hook
    def after_validate(context: Any, case: Any, response: Any, results: Any) -> None:
        checks = operations[case.operation.label]["checks"]
        for result in results:
            counts = checks.setdefault(result.name, {"ran": 0, "failed": 0})
            counts["ran"] += 1
            if result.failure is not None:
                counts["failed"] += 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if TALLY:
        tally = {label: {**e, "modes": dict(e["modes"]), "statuses": dict(e["statuses"])}
                 for label, e in sorted(operations.items())}  # fmt: skip
        Path(TALLY).write_text(json.dumps(tally, indent=1) + "\n")
