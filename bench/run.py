#!/usr/bin/env python3
"""deepwell benchmark runner.

  python3 bench/run.py [--suite NAME ...] [--smoke] [--out bench/results] [--cpu]

Each suite runs in its own child process (a crash or hang in one cannot take the others down),
checks every variant against a float64 reference before timing it, and writes
<out>/<suite>.json and <suite>.png (cpu_<suite>.* with --cpu). At the end bench/report.py
regenerates bench/RESULTS.md and a short summary table is printed (and saved to
<out>/summary.txt). Exit status: 0, or 1 when a variant gave a wrong result, a deepwell variant
raised an error, or a suite crashed or timed out.
"""
from __future__ import annotations

import argparse
import collections
import importlib
import json
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import common  # noqa: E402
import report  # noqa: E402
import timing  # noqa: E402
from suites import SUITES  # noqa: E402

CPU_NOTE = ("CPU numbers: deepwell's CPU reference backend vs PyTorch on the CPU, at reduced "
            "sizes. They say nothing about GPU performance.")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--suite", action="extend", nargs="+", choices=SUITES, metavar="NAME",
                   help=f"suites to run (default: all): {', '.join(SUITES)}")
    p.add_argument("--smoke", action="store_true", help="a few cases per suite, short timing")
    p.add_argument("--out", default=str(HERE / "results"), help="results folder")
    p.add_argument("--cpu", action="store_true",
                   help="no GPU: deepwell's CPU backend vs torch on the CPU, small sizes")
    p.add_argument("--l2", choices=["rotate", "flush"], default="rotate",
                   help="keep inputs out of L2 by rotating input sets (default) or by writing "
                        "a 256 MB buffer before each call")
    p.add_argument("--rep-ms", type=float, help="timed milliseconds per variant "
                   "(default 100, smoke 40)")
    p.add_argument("--warmup-ms", type=float, help="untimed milliseconds per variant before "
                   "each case's timed calls (default 25, smoke 10)")
    p.add_argument("--do-bench", action="store_true",
                   help="also record triton.testing.do_bench's median as a cross-check")
    p.add_argument("--no-flex", action="store_true", help="do not time flex_attention")
    p.add_argument("--compile-on-cpu", action="store_true",
                   help="with --cpu, also run the torch.compile'd baselines (slow to build)")
    p.add_argument("--timeout", type=float,
                   help="seconds per suite before it is killed (default 900, smoke 300)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    return p.parse_args(argv)


# ---------------------------------------------------------------------------------- child
def run_child(args) -> int:
    """Runs one suite in this process; writes the JSON after every case."""
    import warnings

    warnings.filterwarnings("ignore")
    device = "cpu" if args.cpu else "cuda"
    common.OPTIONS.update(flex=not args.no_flex, compile_on_cpu=args.compile_on_cpu)
    rep_ms = args.rep_ms or (40.0 if args.smoke else 100.0)
    warmup_ms = args.warmup_ms or (10.0 if args.smoke else 25.0)
    timing.configure(l2=args.l2, rep_ms=rep_ms, warmup_ms=warmup_ms,
                     do_bench=args.do_bench)
    timing.CPU_CONFIG["rep_ms"] = rep_ms
    suite = importlib.import_module(f"suites.{args.child}")
    out = Path(args.out)
    stem = common.result_stem(suite.NAME, device)
    path = out / f"{stem}.json"
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        print(f"[{suite.NAME}] no CUDA device visible to torch: use --cpu", flush=True)
        return 2
    torch.set_grad_enabled(False)
    doc = {"suite": suite.NAME, "mode": device, "smoke": args.smoke, "status": "running",
           "note": CPU_NOTE if device == "cpu" else "GPU numbers",
           "env": common.env_info(device), "timing": timing.describe(device, getattr(suite, "TIMER", "")),
           "metric": "gflops" if device == "cpu" and suite.METRIC == "tflops" else suite.METRIC,
           "case_keys": suite.CASE_KEYS, "variants": [], "ratios": [],
           "rows": []}
    print(f"[{suite.NAME}] {'CPU' if device == 'cpu' else doc['env'].get('gpu')} "
          f"sha {doc['env']['git_sha'][:10]}{' (dirty)' if doc['env']['git_dirty'] else ''}",
          flush=True)
    common.write_json(path, doc)
    rc, raised = 0, 0
    t0 = time.time()
    try:
        for case in suite.cases(args.smoke, args.cpu):
            try:
                row = suite.run(case)
            except common.ContextLost:
                raise
            except Exception as e:  # noqa: BLE001 - a bug in one case must not lose the others
                raised += 1
                row = {"case": {k: case.get(k) for k in suite.CASE_KEYS}, "label": str(case),
                       "variants": {}, "ratios": {},
                       "error": "".join(traceback.format_exception(
                           type(e), e, e.__traceback__))[-3000:]}
                print(f"[{suite.NAME}] {case}: raised {type(e).__name__}: {e}", flush=True)
            doc["rows"].append(row)
            for v in row["variants"]:
                if v not in doc["variants"]:
                    doc["variants"].append(v)
            for r in row["ratios"]:
                if r not in doc["ratios"]:
                    doc["ratios"].append(r)
            print(f"[{suite.NAME}] {row['label']}: " + "  ".join(
                f"{v} {common.cell(res, doc['metric'])}" for v, res in row["variants"].items()),
                flush=True)
            common.write_json(path, doc)
        doc["status"] = "complete" if not raised else f"complete, but {raised} cases raised"
    except common.ContextLost as e:
        doc["status"] = f"aborted: CUDA context lost ({e})"
        rc = 3
    doc["elapsed_s"] = round(time.time() - t0, 1)
    if device == "cuda":
        doc["env"]["clocks_end"] = common.gpu_clocks()
    common.write_json(path, doc)
    try:
        suite.plot(doc, out / f"{stem}.png")
    except Exception as e:  # noqa: BLE001 - e.g. matplotlib missing on the GPU machine
        print(f"[{suite.NAME}] no plot: {type(e).__name__}: {e}", flush=True)
    return rc


# ---------------------------------------------------------------------------------- parent
def spawn(name: str, args, argv: list[str]) -> tuple[int, list[str]]:
    """Runs one suite in a child process, echoing its output (not its progress lines)."""
    cmd = [sys.executable, str(HERE / "run.py"), "--child", name] + argv
    tail: collections.deque[str] = collections.deque(maxlen=40)
    timeout = args.timeout or (300.0 if args.smoke else 900.0)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            bufsize=1)
    deadline = time.time() + timeout
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    timed_out = False
    while True:
        if time.time() > deadline:
            proc.kill()
            timed_out = True
            break
        if not sel.select(timeout=1.0):
            if proc.poll() is not None:
                break
            continue
        line = proc.stdout.readline()
        if not line:
            break
        tail.append(line.rstrip("\n"))
        if not line.startswith("\t."):
            print(line, end="", flush=True)
    rc = proc.wait()
    if timed_out:
        tail.append(f"killed after {timeout:.0f} s (--timeout)")
        rc = 124
    return rc, list(tail)


def record_crash(path: Path, name: str, args, rc: int, tail: list[str]):
    """Marks the suite's JSON (a stub when this run wrote none) as crashed, with the output's
    tail; keeps the rows written before the crash."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        doc = None
    if doc is None or doc.get("env", {}).get("timestamp_utc", "") < START_UTC:  # missing / old
        doc = {"suite": name, "mode": "cpu" if args.cpu else "cuda", "smoke": args.smoke,
               "env": {"timestamp_utc": START_UTC, **common.git_info()}, "rows": [],
               "variants": [], "ratios": []}
    if not str(doc.get("status", "")).startswith("aborted"):
        last = next((ln[2:] for ln in reversed(tail) if ln.startswith("\t.")), None)
        shown = [ln for ln in tail if not ln.startswith("\t.")]
        if rc == 2:
            doc["status"] = "not run: " + (shown[-1] if shown else "exit 2")
        else:
            what = "timed out" if rc == 124 else f"crashed (exit {rc})"
            doc["status"] = what + (f" while running {last}" if last else "")
    doc["output_tail"] = tail[-25:]
    common.write_json(path, doc)


START_UTC = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.child:
        return run_child(args)
    passthrough = list(sys.argv[1:] if argv is None else argv)  # the child ignores --suite
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    device = "cpu" if args.cpu else "cuda"
    if args.cpu:
        print(f"== --cpu: {CPU_NOTE}", flush=True)
    suites = args.suite or SUITES
    bad = False
    for name in suites:
        t0 = time.time()
        print(f"== {name}{' (smoke)' if args.smoke else ''}", flush=True)
        rc, tail = spawn(name, args, passthrough)
        path = out / f"{common.result_stem(name, device)}.json"
        if rc != 0:
            bad = True
            print(f"== {name}: exit {rc}; last output:\n" + "\n".join(tail[-12:]), flush=True)
            record_crash(path, name, args, rc, tail)
        print(f"== {name}: {time.time() - t0:.0f} s", flush=True)
    md = HERE / "RESULTS.md" if out.resolve() == (HERE / "results").resolve() \
        else out / "RESULTS.md"
    report.write(out, md)
    summary, failed = report.summary(out, suites, device)
    (out / ("cpu_summary.txt" if args.cpu else "summary.txt")).write_text(summary + "\n")
    print("\n" + summary, flush=True)
    return 1 if bad or failed else 0


if __name__ == "__main__":
    sys.exit(main())
