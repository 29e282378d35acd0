"""Shared pieces of the benchmark suites: the environment record, correctness-then-timing of
variants, result files and tables. torch is imported lazily so the parent runner (run.py) and
report.py work without it."""
from __future__ import annotations

import datetime
import json
import math
import os
import platform
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import timing

REPO = Path(__file__).resolve().parent.parent
TOL = 2e-2  # relative L2 error allowed for bf16 / fp8 outputs against a float64 reference
# Set by run.py: flex = time flex_attention; compile_on_cpu = run torch.compile'd baselines in
# --cpu mode too (slow to build on a small CPU, so off by default).
OPTIONS = {"flex": True, "compile_on_cpu": False}


class ContextLost(RuntimeError):
    """The CUDA context is unusable (e.g. after an illegal memory access): stop the suite."""


def progress(msg: str):
    """A progress line: run.py keeps it in the crash record but does not echo it."""
    print("\t." + msg, flush=True)


# ----------------------------------------------------------------------------- environment
def _cmd(args: list[str]) -> str | None:
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=20, cwd=REPO)
        return r.stdout.strip() if r.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def git_info() -> dict:
    sha = os.environ.get("DEEPWELL_GIT_SHA") or _cmd(["git", "rev-parse", "HEAD"]) or "unknown"
    dirty_env = os.environ.get("DEEPWELL_GIT_DIRTY")
    if dirty_env is not None:
        dirty = dirty_env not in ("", "0", "false")
    else:
        st = _cmd(["git", "status", "--porcelain", "--untracked-files=no"])
        dirty = None if st is None else bool(st)
    return {"git_sha": sha, "git_dirty": dirty}


def gpu_clocks() -> dict:
    """SM/memory clocks from nvidia-smi (MHz, as printed); {} when nvidia-smi fails."""
    out = _cmd(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,clocks.max.sm",
                "--format=csv"])
    if not out:
        return {}
    lines = out.splitlines()
    keys = [k.strip() for k in lines[0].split(",")]
    vals = [v.strip() for v in lines[1].split(",")] if len(lines) > 1 else []
    return dict(zip(keys, vals))


def deepwell_module():
    """(module, None) or (None, "ImportError: ...")."""
    try:
        import deepwell

        return deepwell, None
    except Exception as e:  # noqa: BLE001 - a broken build must not stop the baselines
        return None, f"import deepwell failed: {type(e).__name__}: {e}"


def env_info(device: str) -> dict:
    import torch

    info = {"timestamp_utc": datetime.datetime.now(datetime.timezone.utc)
            .strftime("%Y-%m-%dT%H:%M:%SZ"), **git_info(), "host": platform.node(),
            "python": platform.python_version(), "torch": torch.__version__,
            "cuda": torch.version.cuda}
    try:
        info["cudnn"] = torch.backends.cudnn.version()
    except Exception:  # noqa: BLE001
        info["cudnn"] = None
    try:
        import triton

        info["triton"] = triton.__version__
    except Exception:  # noqa: BLE001
        info["triton"] = None
    dw, err = deepwell_module()
    info["deepwell"] = dw.__version__ if dw else err
    info["deepwell_built_with_cuda"] = dw.built_with_cuda() if dw else None
    if device == "cpu":
        info["device"] = "cpu"
        info["cpu"] = platform.processor() or platform.machine()
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
        info["torch_threads"] = torch.get_num_threads()
        return info
    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    info.update({"device": "cuda", "gpu": p.name, "sm_count": p.multi_processor_count,
                 "capability": f"{p.major}.{p.minor}",
                 "memory_gib": round(p.total_memory / 2**30, 1),
                 "l2_bytes": getattr(p, "L2_cache_size", None)})
    drv = _cmd(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    info["driver"] = drv.splitlines()[0] if drv else None
    info["clocks_start"] = gpu_clocks()
    return info


# ----------------------------------------------------------------------------- tensors
def sync(device: str):
    if device != "cpu":
        import torch

        torch.cuda.synchronize()


def generator(device: str, seed: int):
    import torch

    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g


def rel_err(out, ref) -> float:
    """‖out − ref‖ / ‖ref‖ in float64; NaN when out has a non-finite element."""
    import torch

    out = out.double()
    if not bool(torch.isfinite(out).all()):
        return float("nan")
    return float((out - ref).norm() / ref.norm().clamp_min(1e-300))


def _poison(nbytes: int, device: str):
    """Fill the caching allocator's next block of this size with 0xFF bytes (NaN in bf16, fp16,
    fp32, e4m3), so that an output element the kernel never writes shows up as non-finite."""
    if device == "cpu" or not nbytes:
        return
    import torch

    torch.empty(nbytes, dtype=torch.uint8, device=device).fill_(255)


# ----------------------------------------------------------------------------- variants
@dataclass
class Variant:
    name: str
    fn: Callable[..., Any]  # fn(*args) -> output (timed exactly as called)
    gen: Callable[[int], tuple]  # seed -> fresh random args; variants sharing gen share sets
    check: Callable[[Any, tuple], float]  # (output, args) -> relative L2 error vs float64
    set_bytes: int  # bytes of one argument set (sizes the rotation)
    out_bytes: int = 0  # bytes of the output (poisoned before the correctness call)
    unavailable: str | None = None  # known reason not to run it
    ours: bool = False  # a deepwell variant: an exception other than NotImplementedError is an
    #                     error (a bug); a baseline that raises is recorded as unavailable
    tol: float = TOL


def _short_warnings(caught) -> str:
    msgs = []
    for w in caught:
        m = str(w.message).strip().replace("\n", " ")
        if m and m not in msgs:
            msgs.append(m[:300])
    return (" | warnings: " + " / ".join(msgs[:4])) if msgs else ""


def _context_alive(device: str) -> bool:
    if device == "cpu":
        return True
    import torch

    try:
        torch.cuda.synchronize()
        torch.zeros(1, device=device).add_(1).item()
        return True
    except Exception:  # noqa: BLE001
        return False


def run_variants(variants: list[Variant], device: str, flops: float | None,
                 label: str = "", interleave: bool = True, graph: bool = False) -> dict:
    """Checks each variant against its float64 reference on fresh inputs, then times the ones that
    passed together, interleaved (timing.measure_many), or in blocks of each variant's calls that
    take turns when interleave is False (timing.measure_blocks; host-bound cases: see
    docs/benchmarking.md, "Timing"); graph: replays of
    CUDA graphs of the calls, interleaved (timing.measure_graph: kernel time, no host cost).
    Returns {name: {"status": "ok"|"FAILED"|"unavailable"|"error", ...}}."""
    results: dict[str, dict] = {}
    sets_cache: dict[int, list] = {}
    timed: dict[str, tuple] = {}  # name -> (variant, partial result) of those that passed
    for idx, v in enumerate(variants):
        if v.unavailable:
            results[v.name] = {"status": "unavailable", "error": v.unavailable}
            continue
        progress(f"{label} -> {v.name}")
        res: dict = {}
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    args = v.gen(7919 * (idx + 1))
                    _poison(v.out_bytes, device)
                    t0 = time.perf_counter()
                    out = v.fn(*args)
                    sync(device)
                    res["first_call_s"] = round(time.perf_counter() - t0, 4)
                except Exception as e:
                    e.args = (f"{e}{_short_warnings(caught)}",)
                    raise
            err = v.check(out, args)
            del out, args
            res["rel_err"] = err
            if not err <= v.tol:
                why = "non-finite output" if math.isnan(err) else f"rel L2 error {err:.3g}"
                results[v.name] = {"status": "FAILED", **res, "error": f"{why} > tol {v.tol:g}"}
                continue
            key = id(v.gen)
            if key not in sets_cache:
                n = timing.num_sets(v.set_bytes, device)
                sets_cache[key] = [v.gen(1000 + i) for i in range(n)]
            timed[v.name] = (v, res)
        except Exception as e:  # noqa: BLE001 - a failing variant never stops the run
            _record_exception(results, v, res, e, device, label)

    stats = None  # from the timer of all variants; None: time each alone
    if timed:
        how = ", CUDA graphs" if graph else "" if interleave else ", in blocks taking turns"
        progress(f"{label} -> timing {', '.join(timed)}{how}")
    if timed:
        timer = (timing.measure_graph if graph and device != "cpu" else
                 timing.measure_many if interleave or graph else timing.measure_blocks)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                stats = timer({n: (v.fn, sets_cache[id(v.gen)]) for n, (v, _) in timed.items()},
                              device)
        except Exception:  # noqa: BLE001 - one variant broke the round: time each alone
            if not _context_alive(device):
                raise
    for n, (v, res) in timed.items():
        try:
            if stats is None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res.update(timing.measure(v.fn, sets_cache[id(v.gen)], device))
            else:
                res.update(stats[n])
            if flops:
                res["tflops"] = flops / (res["median_us"] * 1e-6) / 1e12
                if device == "cpu":
                    res["gflops"] = res["tflops"] * 1e3
            results[n] = {"status": "ok", **res}
        except Exception as e:  # noqa: BLE001
            _record_exception(results, v, res, e, device, label)
    results = {v.name: results[v.name] for v in variants if v.name in results}
    sets_cache.clear()
    if device != "cpu":
        import torch

        torch.cuda.empty_cache()
    return results


def _record_exception(results: dict, v: Variant, res: dict, e: Exception, device: str,
                      label: str):
    if isinstance(e, NotImplementedError):
        results[v.name] = {"status": "unavailable", "error": f"not available: {e}"}
        return
    msg = f"{type(e).__name__}: {e}"
    results[v.name] = {"status": "error" if v.ours else "unavailable", "error": msg[:2000], **res}
    if not _context_alive(device):
        results[v.name]["error"] += " [CUDA context lost]"
        raise ContextLost(f"{v.name} at {label}: {msg[:500]}") from e


def metric(res: dict | None, key: str) -> float | None:
    if res and res.get("status") == "ok":
        return res.get(key)
    return None


def ratio(num, den) -> float | None:
    return num / den if num and den else None


def best_of(results: dict, names: list[str], key: str, higher: bool = True):
    """(name, value) of the best ok variant among names by key, or (None, None)."""
    vals = [(n, metric(results.get(n), key)) for n in names]
    vals = [(n, x) for n, x in vals if x is not None]
    if not vals:
        return None, None
    return (max if higher else min)(vals, key=lambda t: t[1])


# ----------------------------------------------------------------------------- files, tables
def write_json(path: Path, doc: dict):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    tmp.replace(path)


def result_stem(suite: str, device: str) -> str:
    return f"cpu_{suite}" if device == "cpu" else suite


def cell(res: dict | None, key: str) -> str:
    """One table cell: the metric, or n/a / FAILED / error."""
    if not res:
        return "-"
    st = res.get("status")
    if st == "ok":
        x = res.get(key)
        if x is None:
            return "-"
        return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.3g}"
    return {"unavailable": "n/a", "FAILED": "FAILED", "error": "error"}.get(st, st or "-")


def fmt_ratio(x) -> str:
    return "-" if x is None else f"{x:.2f}x"


def format_table(headers: list[str], rows: list[list[str]], markdown: bool = False) -> str:
    if markdown:
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    fmt = lambda r: "  ".join(c.rjust(w) for c, w in zip(r, widths))  # noqa: E731
    return "\n".join([fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


def doc_table(doc: dict, markdown: bool = False, short: bool = False) -> str:
    """The per-case table of a suite result: case columns, each variant's metric, the ratios."""
    key = doc.get("metric", "tflops")
    variants = doc.get("variants", [])
    if short:
        variants = doc.get("short_variants", variants)
    headers = list(doc.get("case_keys", [])) + variants + list(doc.get("ratios", []))
    rows = []
    for r in doc.get("rows", []):
        c = r.get("case", {})
        line = [str(c.get(k, "")) for k in doc.get("case_keys", [])]
        line += [cell(r.get("variants", {}).get(v), key) for v in variants]
        line += [fmt_ratio(r.get("ratios", {}).get(n)) for n in doc.get("ratios", [])]
        rows.append(line)
    return format_table(headers, rows, markdown)


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


UNITS = {"tflops": "TFLOP/s", "gflops": "GFLOP/s", "median_us": "median µs", "gbps": "GB/s"}


def headline(doc: dict, statuses: bool = True) -> list[str]:
    """Short lines for the end-of-run summary: ratio geomeans, and (statuses) the variants that
    did not run everywhere, with their first error."""
    rows = doc.get("rows", [])
    out, none = [], []
    for name in doc.get("ratios", []):
        xs = [r.get("ratios", {}).get(name) for r in rows]
        xs = [x for x in xs if x]
        if xs:
            out.append(f"{name}: geomean {geomean(xs):.2f}x (min {min(xs):.2f}x, max "
                       f"{max(xs):.2f}x, {len(xs)} cases)")
        else:
            none.append(name)
    if none:
        out.append(f"{', '.join(none)}: n/a")
    counts: dict[str, dict[str, int]] = {}
    errors: dict[str, str] = {}
    for r in rows:
        for v, res in r.get("variants", {}).items():
            st = res.get("status", "?")
            counts.setdefault(v, {}).setdefault(st, 0)
            counts[v][st] += 1
            if st != "ok" and v not in errors:
                errors[v] = res.get("error", "")
    groups: dict[tuple, list[str]] = {}  # variants with the same counts and message share a line
    for v, c in counts.items():
        if statuses and set(c) != {"ok"}:
            desc = ", ".join(f"{k} {n}" for k, n in sorted(c.items()))
            groups.setdefault((desc, errors.get(v, "")[:160]), []).append(v)
    for (desc, err), names in groups.items():
        out.append(f"{', '.join(names)}: {desc}; first: {err}")
    if doc.get("status") not in (None, "complete"):
        out.append(f"suite status: {doc['status']}")
    return out
