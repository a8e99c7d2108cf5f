"""What a serving process holds when several principals search: one vector index or one each.

    .venv/bin/python bench/principals.py [--size 20000] [--principals 5] [--rounds 3]
                                         [--compare DIR]

A SQLite store of ``--size`` memories of ``bench/store.py``'s corpus is made once, with
the hash embedder (256 dimensions, the bundled model's; fast to load), in a temporary
home. Then, in a fresh process each round, the REST app (``create_app``) serves it with
one token per principal (an operator, applications and a registered agent), and each
principal searches once through the app (FastAPI's test client, in process). The
process's resident set (``VmRSS``) is read after the store opens, after the first
principal's search (the vector index is made) and after every principal's; what the
other principals add is the figure: with one index per store it stays near zero, with
one per principal it is an index each.

``--compare DIR`` runs the same rounds with another tree's ``src`` first on
``PYTHONPATH`` (say ``git archive`` of an older commit), interleaved with this tree's.
Progress goes to stderr; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

AGENT = "ada"
BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

CHILD = """
import json, sys
from fastapi.testclient import TestClient
import retain
from retain.doors.http import create_app

def rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
home, principals = sys.argv[1], json.loads(sys.argv[2])
service = retain.open(home=home)
tokens = {f"t{i}": p for i, p in enumerate(principals)}
client = TestClient(create_app(service, tokens=tokens, host="127.0.0.1"))
figures = {"opened": rss_mib()}
for i, principal in enumerate(principals):
    answer = client.post(
        "/v1/memories/search",
        json={"queries": ["release plan for the new office"], "limit": 10},
        headers={"Authorization": f"Bearer t{i}"},
    )
    assert answer.status_code == 200, answer.text
    figures[principal] = rss_mib()
print(json.dumps(figures))
"""


def make_store(home: Path, size: int, agent: str) -> None:
    import retain
    from store import Corpus  # bench/store.py's corpus

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[search]\nembedder = "hash"\n', encoding="utf-8")
    service = retain.open(home=home)
    corpus = Corpus(seed=1)
    for project in sorted({d.project for d in corpus.docs(0, 200) if d.project}):
        service.add_project(project)
    service.add_agent(agent)
    for start in range(0, size, 2000):
        docs = corpus.docs(start, min(size, start + 2000))
        service.write_many([d.request() for d in docs])
        print(f"stored {min(size, start + 2000)} of {size}", file=sys.stderr)
    service.close()


def one_round(home: Path, principals: list[str], src: Path | None) -> dict[str, float]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(home), json.dumps(principals)],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"the serving process failed:\n{done.stderr}")
    out = done.stdout
    figures: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return figures


def summary(rounds: list[dict[str, float]], principals: list[str]) -> dict[str, Any]:
    first, last = principals[0], principals[-1]
    return {
        "rss_opened_mib": round(statistics.median(r["opened"] for r in rounds), 1),
        "rss_after_first_search_mib": round(statistics.median(r[first] for r in rounds), 1),
        "rss_after_all_searches_mib": round(statistics.median(r[last] for r in rounds), 1),
        "added_by_the_others_mib": round(statistics.median(r[last] - r[first] for r in rounds), 1),
        "rounds": rounds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--principals", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--compare", type=Path, help="another tree's src directory")
    parser.add_argument("--make", type=Path, help=argparse.SUPPRESS)  # the store, alone
    args = parser.parse_args()
    if args.make is not None:
        make_store(args.make, args.size, AGENT)
        return
    principals = ["operator:alice", f"agent:{AGENT}"]
    principals += [f"app:app{i}" for i in range(1, args.principals - 1)]
    principals = principals[: args.principals]
    with tempfile.TemporaryDirectory(prefix="retain-principals-") as tmp:
        # The store is made by the older tree when there is one (a newer one migrates
        # it forward, an older one cannot read a newer schema); each tree opens a copy.
        made = Path(tmp) / "made"
        env = dict(os.environ)
        if args.compare is not None:
            env["PYTHONPATH"] = str(args.compare)
        subprocess.run(
            [sys.executable, __file__, "--make", str(made), "--size", str(args.size)],
            env=env,
            check=True,
        )
        homes = {tree: Path(tmp) / tree for tree in ("mine", "theirs")}
        for home in homes.values():
            shutil.copytree(made, home)
        mine: list[dict[str, float]] = []
        theirs: list[dict[str, float]] = []
        for n in range(args.rounds):
            print(f"round {n + 1} of {args.rounds}", file=sys.stderr)
            mine.append(one_round(homes["mine"], principals, ROOT / "src"))
            if args.compare is not None:
                theirs.append(one_round(homes["theirs"], principals, args.compare))
    result: dict[str, Any] = {
        "benchmark": "principals",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "python": platform.python_version(),
        "size": args.size,
        "principals": principals,
        "this_tree": summary(mine, principals),
    }
    if args.compare is not None:
        result["compared"] = {"src": str(args.compare), **summary(theirs, principals)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
