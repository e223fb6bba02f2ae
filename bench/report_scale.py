"""The full report over millions of stored token offsets: time and peak memory, DuckDB and chdb.

Issue 8 asks how long ``write_reports`` (report.json + report.md + report.html with its plots)
takes when a run holds 10 million token offsets, and how much memory it needs, for the embedded
DuckDB store and for ClickHouse (chdb in-process, the ClickHouse SQL dialect).

- **Stores**: for each ``--requests`` size, ``bench/query_dialects.py``'s ``build_store`` writes
  one run of that many requests × ``--tokens`` tokens into a DuckDB store (per request a client
  span with one chunk offset per token and an engine-hook server span with one token offset per
  token, JSON int arrays as the exporter writes them), and ``copy_duckdb_to_chdb`` copies it into
  chdb. By default 10,000 and 100,000 requests × 100 tokens: 1M and 10M server token offsets
  (plus as many client chunk offsets).
- **Total**: ``otelbench.benchmark.write_reports`` exactly as ``otelbench run`` calls it, in a
  fresh subprocess per measurement, so the peak resident memory (``VmHWM``) belongs to that
  one report; the RSS after the imports is recorded too, to tell the interpreter and libraries
  from the report's own data.
- **Phases**: a second fresh subprocess runs the same steps one by one — open the store, the
  extraction with each named query's SQL time under it (on DuckDB ``client_requests`` and
  ``run_server_requests`` run at the same time, so their times overlap; the record building is
  the rest of the extraction), the metrics (``report_from_data`` with its sections timed by
  wrapping them), each format (JSON, Markdown, the HTML's plot data with its parts, the HTML
  itself) — and checks that the three files it writes are byte-identical to the total run's,
  so the breakdown cannot drift from ``write_reports``.
- The DuckDB and chdb reports are checked byte-identical too.

Every timing is the median of ``--repeats`` subprocesses (monotonic clock); the load average is
recorded beside it, as other work on the machine makes absolute times noisy. ``--root`` measures
the ``otelbench`` package of another copy of the tree (to compare a change with the tree before
it); the stores are always built with this tree's code.

Usage: ``.venv/bin/python bench/report_scale.py [--requests 10000 100000] [--tokens 100]
[--repeats 3] [--out bench/results/report_scale.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RUN_ID = "bench"  # bench/query_dialects.py's run id
REPORT_FILES = ("report.json", "report.md", "report.html")
GOAL_S = 2.0  # issue 8: the full report over 10M token offsets in under 2 s on this machine

# What the phase breakdown times: (parent phase, module, attribute, label). write_reports and
# the functions it calls look each one up in their module's namespace at call time, so
# replacing the module attribute with a timing wrapper times every call of it.
PHASES = (
    ("", "otelbench.benchmark", "extract_run_data", "extract"),
    ("", "otelbench.benchmark", "report_from_data", "report_from_data"),
    ("report_from_data", "otelbench.report.build", "_server_metrics", "metrics.server"),
    ("report_from_data", "otelbench.report.build", "fluidity_section", "metrics.fluidity"),
    ("report_from_data", "otelbench.report.build", "derive_ahead", "derive ahead (2 threads)"),
    ("report_from_data", "otelbench.report.build", "classes_section", "metrics.classes"),
    ("report_from_data", "otelbench.report.build", "reasoning_section", "client.reasoning"),
    ("report_from_data", "otelbench.report.build", "guardrails_section", "metrics.guardrails"),
    ("report_from_data", "otelbench.report.build", "_run_section", "run"),
    ("report_from_data", "otelbench.report.build", "_deviations", "deviations"),
    ("report_from_data", "otelbench.report.build", "configuration_summary", "configuration"),
    ("report_from_data", "otelbench.report.build", "compliance", "compliance"),
    ("", "otelbench.benchmark", "render_markdown", "render markdown"),
    ("", "otelbench.benchmark", "render_json", "render json"),
    ("", "otelbench.benchmark", "plot_data", "plot_data"),
    ("plot_data", "otelbench.render.html", "_histograms", "histograms"),
    ("plot_data", "otelbench.render.html", "_fluidity_plot", "fluidity CDFs"),
    ("plot_data", "otelbench.render.html", "_preemption_plot", "preemption timeline"),
    ("plot_data", "otelbench.render.html", "_waterfall", "waterfall"),
    ("", "otelbench.benchmark", "render_html", "render html"),
)


# ---------------------------------------------------------------------------------------------
# Child: one measurement in a fresh process
# ---------------------------------------------------------------------------------------------
def _rss_mib() -> float:
    resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mib() -> float:
    """This process's peak resident memory: ``VmHWM``, the high-water mark of its own address
    space. Not ``ru_maxrss``: Linux carries the parent's resident size at fork into the child's
    ``ru_maxrss`` across the exec, so a parent that had just built a store made every child look
    as large as itself."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


class Clock:
    """Accumulates monotonic durations per label, in first-seen order."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    @contextmanager
    def phase(self, label: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[label] += time.perf_counter() - start

    def wrap(self, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.phase(label):
                return fn(*args, **kwargs)

        return timed


def child_total(store: str, out_dir: Path) -> dict[str, Any]:
    from otelbench.benchmark import write_reports

    rss_imports = _rss_mib()
    start = time.perf_counter()
    write_reports(out_dir, store, RUN_ID)
    return {
        "seconds": time.perf_counter() - start,
        "rss_after_imports_mib": rss_imports,
        "peak_rss_mib": _peak_mib(),
    }


def child_phases(store: str, out_dir: Path) -> dict[str, Any]:
    """write_reports with its steps timed (see PHASES); the rest is writing the files."""
    import importlib

    from otelbench import benchmark
    from otelbench.query import extract

    clock, sections, queries = Clock(), Clock(), Clock()
    for parent, module, name, label in PHASES:
        mod = importlib.import_module(module)
        target = clock if not parent else sections
        setattr(
            mod, name, target.wrap(f"{parent}/{label}" if parent else label, getattr(mod, name))
        )
    open_store, run_query = getattr(benchmark, "open_store"), extract.QueryRunner.run  # noqa: B009

    @contextmanager
    def timed_open(path: str) -> Iterator[Any]:
        with ExitStack() as stack:
            with clock.phase("open store"):
                runner = stack.enter_context(open_store(path))
            yield runner
            clock.seconds["close store"] = 0.0
            with clock.phase("close store"):
                stack.close()

    def timed_query(self: Any, query: str, **values: object) -> Any:
        with queries.phase(query):
            return run_query(self, query, **values)

    setattr(benchmark, "open_store", timed_open)  # noqa: B010  (write_reports' own name)
    extract.QueryRunner.run = timed_query  # type: ignore[method-assign]
    start = time.perf_counter()
    benchmark.write_reports(out_dir, store, RUN_ID)
    seconds = time.perf_counter() - start
    clock.seconds["write files and the rest"] = seconds - sum(clock.seconds.values())
    return {
        "seconds": seconds,
        "phases_s": dict(clock.seconds),
        "sections_s": dict(sections.seconds),
        "queries_s": dict(queries.seconds),
        "peak_rss_mib": _peak_mib(),
    }


def child_main(mode: str, root: Path, store: str, out_dir: Path) -> None:
    sys.path.insert(0, str(root))
    result = child_total(store, out_dir) if mode == "total" else child_phases(store, out_dir)
    print(json.dumps(result))


# ---------------------------------------------------------------------------------------------
# Parent: stores, subprocesses, table, JSON
# ---------------------------------------------------------------------------------------------
def run_child(mode: str, root: Path, store: str, out_dir: Path) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, __file__, "--child", mode, "--root", str(root), store, str(out_dir)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} on {store} failed:\n{proc.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["load_avg_1m"] = round(os.getloadavg()[0], 2)
    return result


def same_files(a: Path, b: Path) -> bool:
    return all((a / f).read_bytes() == (b / f).read_bytes() for f in REPORT_FILES)


def build_stores(tmp: Path, requests: int, tokens: int) -> dict[str, Any]:
    import chdb

    sys.path.insert(0, str(REPO / "bench"))
    sys.path.insert(0, str(REPO))
    from query_dialects import build_store

    from otelbench.store.clickhouse import ChdbConnection, copy_duckdb_to_chdb

    duck = tmp / "spans.duckdb"
    stores = {"duckdb": str(duck), "chdb": f"chdb://{tmp / 'ch'}?database=otel"}
    done = tmp / "built.json"
    if done.exists():  # --work-dir: a store built by an earlier run with the same size
        return {"stores": stores, **json.loads(done.read_text())}
    tmp.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    spans = build_store(duck, requests, tokens)
    build_s = time.perf_counter() - start
    session = chdb.session.Session(str(tmp / "ch"))
    start = time.perf_counter()
    copied = copy_duckdb_to_chdb(duck, ChdbConnection(session, "otel"), database="otel")
    copy_s = time.perf_counter() - start
    session.close()
    if copied != spans:
        raise RuntimeError(f"copied {copied} spans into chdb, expected {spans}")
    built = {
        "spans": spans,
        "build_duckdb_s": round(build_s, 2),
        "copy_to_chdb_s": round(copy_s, 2),
    }
    done.write_text(json.dumps(built))
    return {"stores": stores, **built}


def measure_size(args: argparse.Namespace, requests: int, tmp: Path) -> dict[str, Any]:
    built = build_stores(tmp / f"store-{requests}x{args.tokens}", requests, args.tokens)
    out: dict[str, Any] = {
        "requests": requests,
        "server_token_offsets": requests * args.tokens,
        "client_chunk_offsets": requests * args.tokens,
        "spans": built["spans"],
        "build_duckdb_s": built["build_duckdb_s"],
        "copy_to_chdb_s": built["copy_to_chdb_s"],
    }
    first: Path | None = None
    for backend, store in built["stores"].items():
        totals, phases = [], []
        for r in range(args.repeats):
            total_dir = tmp / f"out-{requests}-{backend}-total-{r}"
            phase_dir = tmp / f"out-{requests}-{backend}-phases-{r}"
            totals.append(run_child("total", args.root, store, total_dir))
            phases.append(run_child("phases", args.root, store, phase_dir))
            if not same_files(total_dir, phase_dir):
                raise RuntimeError(f"{backend}: the phase breakdown wrote different reports")
            first = first or total_dir
            if not same_files(first, total_dir):
                raise RuntimeError(f"{backend}: the report differs from the DuckDB one")
        out[backend] = summarize_runs(totals, phases)
    out["reports_identical"] = True
    out["report_bytes"] = {f: (first / f).stat().st_size for f in REPORT_FILES} if first else {}
    return out


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in runs))


def summarize_runs(totals: list[dict[str, Any]], phases: list[dict[str, Any]]) -> dict[str, Any]:
    def median_of(field: str) -> dict[str, float]:
        keys = list(phases[0][field])
        return {k: round(statistics.median(p[field].get(k, 0.0) for p in phases), 3) for k in keys}

    return {
        "write_reports_s": round(_median(totals, "seconds"), 3),
        "write_reports_runs_s": [round(t["seconds"], 3) for t in totals],
        "peak_rss_mib": round(_median(totals, "peak_rss_mib"), 1),
        "rss_after_imports_mib": round(_median(totals, "rss_after_imports_mib"), 1),
        "load_avg_1m": [t["load_avg_1m"] for t in totals],
        "phases_total_s": round(_median(phases, "seconds"), 3),
        "phases_s": median_of("phases_s"),
        "sections_s": median_of("sections_s"),
        "queries_s": median_of("queries_s"),
    }


def print_table(sizes: list[dict[str, Any]]) -> None:
    backends = ("duckdb", "chdb")
    for size in sizes:
        print(
            f"\n{size['requests']:,} requests: {size['server_token_offsets']:,} server token "
            f"offsets + {size['client_chunk_offsets']:,} client chunk offsets "
            f"({size['spans']:,} spans); median of {len(size['duckdb']['load_avg_1m'])}"
        )
        res = [size[b] for b in backends]

        def row(label: str, fmt: str, *path: str, res: list[Any] = res) -> tuple[str, ...]:
            """One table row: the value at ``path`` in each backend's results."""
            cells = [label]
            for r in res:
                value: Any = r
                for key in path:
                    value = value.get(key, 0.0)
                cells.append(format(float(value), fmt))
            return tuple(cells)

        rows = [("", *(f"{b}" for b in backends))]
        rows.append(row("write_reports s", ".3f", "write_reports_s"))
        rows.append(row("peak RSS MiB", ".0f", "peak_rss_mib"))
        rows.append(row("RSS after imports MiB", ".0f", "rss_after_imports_mib"))
        rows.append(row("phases s (instrumented run)", ".3f", "phases_total_s"))
        for phase in res[0]["phases_s"]:
            rows.append(row(f"  {phase}", ".3f", "phases_s", phase))
            if phase == "extract":  # DuckDB's two largest queries overlap (extract_run_data)
                for query in res[0]["queries_s"]:
                    rows.append(row(f"    of which SQL {query}", ".3f", "queries_s", query))
            for key in res[0]["sections_s"]:
                parent, _, label = key.partition("/")
                if parent == phase:
                    rows.append(row(f"    of which {label}", ".3f", "sections_s", key))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for k, cells in enumerate(rows):
            print(
                "  ".join(
                    c.ljust(w) if i == 0 else c.rjust(w)
                    for i, (c, w) in enumerate(zip(cells, widths, strict=True))
                )
            )
            if k == 0:
                print("  ".join("-" * w for w in widths))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--root", type=Path, default=REPO, help="tree whose otelbench is measured")
    parser.add_argument(
        "--work-dir", type=Path, help="keep the stores here and reuse them on the next run"
    )
    parser.add_argument("--label", default="", help="recorded in the JSON (e.g. before/after)")
    parser.add_argument(
        "--out", type=Path, default=REPO / "bench" / "results" / "report_scale.json"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="an earlier run's JSON (e.g. with --root at a copy of the tree before a change), "
        "embedded in the output as 'baseline'",
    )
    parser.add_argument("--child", choices=("total", "phases"), help=argparse.SUPPRESS)
    parser.add_argument("child_args", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        store, out_dir = args.child_args
        child_main(args.child, args.root, store, Path(out_dir))
        return 0

    with tempfile.TemporaryDirectory(prefix="otelbench-report-scale-") as tmp:
        work = args.work_dir or Path(tmp)
        sizes = [measure_size(args, n, work) for n in args.requests]
    print_table(sizes)
    sys.path.insert(0, str(REPO))
    import chdb
    import duckdb
    import numpy

    from bench.common import machine, write_result

    report = {
        "benchmark": "report_scale",
        "label": args.label,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(
            numpy=numpy.__version__, duckdb=duckdb.__version__, chdb=chdb.__version__
        ),
        "workload": {
            "requests": args.requests,
            "tokens_per_request": args.tokens,
            "repeats": args.repeats,
            "root": str(args.root),
        },
        "goal_s": GOAL_S,
        "sizes": sizes,
    }
    if args.baseline is not None:
        report["baseline"] = json.loads(args.baseline.read_text())
    write_result(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
