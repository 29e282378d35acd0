"""GEMM plan sweep: forced kernel plans of deepwell.gemm against torch.matmul (16-bit operands).

The kernel table reads DEEPWELL_GEMM_FORCE once per process (src/gemm/gemm_tuning.hpp), so each
plan runs in its own child process, which times every shape with torch.matmul interleaved
(bench/timing.py measure_many: eager calls back to back, inputs rotated past the L2); plans are
compared through their ratio to torch in the same process. Each plan's output is first checked
against torch's (relative L2 <= 1e-2). A plan the shape cannot run falls back to the table's own
choice (the tuning rule), so read a row's ratio next to the "default" row's.

    PYTHONPATH=build/python python3 bench/gemm_sweep.py --shapes 16384x6144x4096,4096x28672x4096 \\
        --plan default: --plan pp:bf16_kk_bf16_pp_128x128 \\
        --plan coop_sw2:bf16_kk_bf16_128x256,dp,1,h,2

--plan NAME:SPEC, SPEC as DEEPWELL_GEMM_FORCE
(kernel[,dp|splitk|streamk[,splits[,h|m|n[,swizzle]]]]), empty for the table's plans. --dtype f16
and --layout kn (x @ w with w stored (K, N)) pick the other 16-bit groups (default: bf16
x @ w.t()). --cublas also lists the cuBLAS kernels torch.matmul runs (torch.profiler, in a
process of its own: timings taken after a profiler session in the same process were off by up
to 25 %).
Prints one line per shape and plan: µs, TFLOP/s, the ratio to torch.matmul; a summary table last.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    return [tuple(int(v) for v in s.split("x")) for s in text.split(",") if s]


def operands(M: int, N: int, K: int, dtype, layout: str):
    import torch

    x = torch.randn(M, K, device="cuda", dtype=dtype)
    if layout == "kn":
        return x, torch.randn(K, N, device="cuda", dtype=dtype) * K ** -0.5
    return x, (torch.randn(N, K, device="cuda", dtype=dtype) * K ** -0.5).t()


def cublas_names(shapes, dtype, layout: str) -> None:
    """The CUDA kernels one torch.matmul call runs at each shape (no timing: see the docstring)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for M, N, K in shapes:
        args = operands(M, N, K, dtype, layout)
        torch.matmul(*args)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            torch.matmul(*args)
            torch.cuda.synchronize()
        names = sorted({e.key for e in prof.key_averages()
                        if getattr(e.device_type, "name", "") == "CUDA"})
        print(f"{M}x{N}x{K}: {', '.join(names)}", flush=True)


def time_shapes(shapes, reps: int, dtype, layout: str) -> None:
    """One ROW line (JSON) per shape: deepwell.gemm under this process's plan against torch."""
    import torch

    import common
    import deepwell
    import timing

    timing.configure(min_reps=reps, max_reps=reps)
    for M, N, K in shapes:
        per_set = 2 * (M * K + N * K)
        sets = [operands(M, N, K, dtype, layout)
                for _ in range(timing.num_sets(per_set, "cuda", cap_bytes=4 << 30, max_sets=16))]
        err = common.rel_err(deepwell.gemm(*sets[0]), torch.matmul(*sets[0]).double())
        stats = timing.measure_many({"deepwell": (lambda x, w: deepwell.gemm(x, w), sets),
                                     "torch": (torch.matmul, sets)}, "cuda")
        row = {"shape": f"{M}x{N}x{K}", "err": err, "flops": 2.0 * M * N * K,
               "us": {n: s["median_us"] for n, s in stats.items()}}
        print("ROW " + json.dumps(row), flush=True)
        del sets
        torch.cuda.empty_cache()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", required=True, help="MxNxK,... (x (M, K) @ w.t(), w (N, K))")
    ap.add_argument("--plan", action="append", default=[], help="NAME:SPEC (SPEC empty: the table)")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--dtype", choices=["bf16", "f16"], default="bf16")
    ap.add_argument("--layout", choices=["kk", "kn"], default="kk",
                    help="kk: x @ w.t() with w (N, K) row-major (nn.Linear); kn: x @ w, w (K, N)")
    ap.add_argument("--cublas", action="store_true", help="name torch.matmul's kernels")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    shapes = parse_shapes(args.shapes)
    if args.child:
        import torch

        dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[args.dtype]
        if args.cublas:
            cublas_names(shapes, dtype, args.layout)
        else:
            time_shapes(shapes, args.reps, dtype, args.layout)
        return
    plans = [p.partition(":")[::2] for p in (args.plan or ["default:"])]
    base = [sys.executable, __file__, "--child", "--shapes", args.shapes, "--reps", str(args.reps),
            "--dtype", args.dtype, "--layout", args.layout]
    if args.cublas:
        proc = subprocess.run(base + ["--cublas"], capture_output=True, text=True)
        print("cuBLAS kernels (torch.matmul):\n" + proc.stdout + proc.stderr[-2000:], flush=True)
    table: dict[str, dict[str, float]] = {}
    for name, spec in plans:
        env = {k: v for k, v in os.environ.items() if k != "DEEPWELL_GEMM_FORCE"}
        if spec:
            env["DEEPWELL_GEMM_FORCE"] = spec
        proc = subprocess.run(base, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{name}: child failed ({proc.returncode})\n{proc.stderr[-2000:]}", flush=True)
            continue
        for line in proc.stdout.splitlines():
            if not line.startswith("ROW "):
                continue
            r = json.loads(line[4:])
            dw, th = r["us"]["deepwell"], r["us"]["torch"]
            ok = "ok" if r["err"] <= 1e-2 else f"WRONG (rel L2 {r['err']:.3g})"
            ratio = th / dw if r["err"] <= 1e-2 else float("nan")
            table.setdefault(r["shape"], {})[name] = ratio
            print(f"{r['shape']:>18} {name:<14} deepwell {dw:9.1f} us {r['flops'] / dw / 1e6:6.0f} "
                  f"TFLOP/s  torch {th:9.1f} us  x{ratio:.3f}  {ok}", flush=True)
    names = [n for n, _ in plans]
    print(f"\nratio to torch.matmul (higher is better), {args.dtype} {args.layout}")
    print(f"{'shape':>18} " + " ".join(f"{n:>12}" for n in names))
    for shape, cells in table.items():
        print(f"{shape:>18} " + " ".join(f"{cells.get(n, float('nan')):>12.3f}" for n in names))


if __name__ == "__main__":
    main()
