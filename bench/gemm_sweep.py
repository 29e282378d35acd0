"""GEMM plan sweep: forced kernel plans of deepwell.gemm (gemm_fp8) against torch in one process.

Every plan runs in this one process, interleaved with torch.matmul call by call (bench/timing.py
measure_many: eager events back to back in rotating order, inputs rotated past the L2), the plan
switched before each call through deepwell._C.set_gemm_plan_override (include/deepwell/gemm.hpp).
Plans are compared through their ratio to torch in the same rounds: across processes the same
plan's ratio moved by up to 13 % (session 18), within one process by about 1 %. Each plan's
output is first checked against a float64 reference (relative L2 <= 1e-2). A plan the shape
cannot run falls back to the table's own choice (the shape rules), so read a row's ratio next to
the "default" row's. --rounds repeats the interleaved timing (fresh rotation order each round).

    PYTHONPATH=build/python python3 bench/gemm_sweep.py --shapes 16384x6144x4096,4096x28672x4096 \\
        --plan default: --plan pp:bf16_kk_bf16_pp_128x128 \\
        --plan coop_sw2:bf16_kk_bf16_128x256,dp,1,h,2

--plan NAME:SPEC, SPEC as DEEPWELL_GEMM_FORCE
(kernel[,dp|splitk|streamk|tail[,splits[,h|m|n[,swizzle]]]]), empty for the table's plans.
--dtype f16 and --layout kn (x @ w with w stored (K, N)) pick the other 16-bit groups (default: bf16
x @ w.t()). --fp8 tensor|row|block sweeps deepwell.gemm_fp8 instead, against torch._scaled_mm
on the gemm_fp8 suite's operands (block scaling, which torch lacks on sm_90, against its tensor
scaling), e.g. --plan own:e4m3_kk_bf16_block_ws_128x192 --plan cutlass:e4m3_kk_bf16_block_128x128.
--cublas also lists the cuBLAS kernels torch.matmul runs (torch.profiler, in a
process of its own: timings taken after a profiler session in the same process were off by up
to 25 %).
Prints one line per shape, plan and round: µs, TFLOP/s, the ratio to torch; a summary
table (median ratio over the rounds) last.
"""
from __future__ import annotations

import argparse
import statistics
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


class Problem:
    """One shape's operands and calls: 16-bit x @ w (deepwell.gemm against torch.matmul) or, with
    an fp8 granularity, deepwell.gemm_fp8 against torch._scaled_mm on the gemm_fp8 suite's operands
    (block scaling, which torch lacks on sm_90, against its tensor-scaled call on operands of the
    same shape)."""

    def __init__(self, M: int, N: int, K: int, dtype, layout: str, fp8: str | None):
        import torch

        import timing

        self.M, self.N, self.K, self.fp8 = M, N, K, fp8
        if fp8 is None:
            per_set = 2 * (M * K + N * K)
            n = timing.num_sets(per_set, "cuda", cap_bytes=4 << 30, max_sets=16)
            self.sets = [operands(M, N, K, dtype, layout) for _ in range(n)]
            self.torch_sets = self.sets
            self.torch_fn = torch.matmul
            self.ref = torch.matmul(*self.sets[0]).double()
            return
        from suites import gemm_fp8 as suite

        gen, nbytes = suite._inputs(M, N, K, fp8, "cuda", for_torch=False)
        gen_t, _ = suite._inputs(M, N, K, "tensor" if fp8 == "block" else fp8, "cuda",
                                 for_torch=True)
        n = timing.num_sets(nbytes, "cuda", cap_bytes=2 << 30, max_sets=8)
        self.sets = [gen(100 + i) for i in range(n)]
        self.torch_sets = [gen_t(200 + i) for i in range(n)]
        self.torch_fn = lambda a, b, sa, sb: torch._scaled_mm(a, b, sa, sb,
                                                              out_dtype=torch.bfloat16)
        self.fp8_check = suite._check(fp8, M, N, K, False)

    def call(self, *args):
        import deepwell

        if self.fp8 is None:
            return deepwell.gemm(*args)
        return deepwell.gemm_fp8(*args, granularity=self.fp8)

    def error(self, out) -> float:
        import common

        if self.fp8 is None:
            return common.rel_err(out, self.ref)
        return self.fp8_check(out, self.sets[0])


def time_shapes(shapes, plans, reps: int, rounds: int, dtype, layout: str,
                fp8: str | None = None) -> dict:
    """{shape: {plan: [ratio to torch per round]}}; NaN for a plan whose output is wrong."""
    import torch

    import timing
    from deepwell import _C

    timing.configure(min_reps=reps, max_reps=reps)
    table: dict[str, dict[str, list[float]]] = {}

    try:
        for M, N, K in shapes:
            shape = f"{M}x{N}x{K}"
            prob = Problem(M, N, K, dtype, layout, fp8)

            def under(spec, prob=prob):
                def call(*args):
                    _C.set_gemm_plan_override(spec)
                    return prob.call(*args)
                return call

            ok = {}
            for name, spec in plans:
                err = prob.error(under(spec)(*prob.sets[0]))
                ok[name] = err <= 1e-2
                if not ok[name]:
                    print(f"{shape:>18} {name:<14} WRONG (rel L2 {err:.3g})", flush=True)
            fl = 2.0 * M * N * K
            cells = table.setdefault(shape, {n: [] for n, _ in plans})
            for r in range(rounds):
                entries = {"torch": (prob.torch_fn, prob.torch_sets)}
                entries.update({n: (under(spec), prob.sets) for n, spec in plans if ok[n]})
                stats = timing.measure_many(entries, "cuda")
                th = stats["torch"]["median_us"]
                for name, _ in plans:
                    if not ok[name]:
                        cells[name].append(float("nan"))
                        continue
                    dw = stats[name]["median_us"]
                    cells[name].append(th / dw)
                    print(f"{shape:>18} {name:<14} round {r}  deepwell {dw:9.1f} us "
                          f"{fl / dw / 1e6:6.0f} TFLOP/s  torch {th:9.1f} us  x{th / dw:.3f}",
                          flush=True)
            prob = entries = None  # frees the operands before the next shape's
            torch.cuda.empty_cache()
    finally:
        _C.set_gemm_plan_override("")
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", required=True, help="MxNxK,... (x (M, K) @ w.t(), w (N, K))")
    ap.add_argument("--plan", action="append", default=[], help="NAME:SPEC (SPEC empty: the table)")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dtype", choices=["bf16", "f16"], default="bf16")
    ap.add_argument("--layout", choices=["kk", "kn"], default="kk",
                    help="kk: x @ w.t() with w (N, K) row-major (nn.Linear); kn: x @ w, w (K, N)")
    ap.add_argument("--fp8", choices=["tensor", "row", "block"],
                    help="deepwell.gemm_fp8 at this granularity against torch._scaled_mm "
                         "(e4m3, the gemm_fp8 suite's operands; block against tensor scaling)")
    ap.add_argument("--cublas", action="store_true", help="name torch.matmul's kernels")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    shapes = parse_shapes(args.shapes)
    import torch

    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[args.dtype]
    if args.child:  # --cublas: the profiler in a process of its own
        cublas_names(shapes, dtype, args.layout)
        return
    if args.cublas:
        proc = subprocess.run([sys.executable, __file__, "--child", "--shapes", args.shapes,
                               "--dtype", args.dtype, "--layout", args.layout],
                              capture_output=True, text=True)
        print("cuBLAS kernels (torch.matmul):\n" + proc.stdout + proc.stderr[-2000:], flush=True)
    plans = [tuple(p.partition(":")[::2]) for p in (args.plan or ["default:"])]
    table = time_shapes(shapes, plans, args.reps, args.rounds, dtype, args.layout, args.fp8)
    names = [n for n, _ in plans]
    what = (f"torch._scaled_mm, e4m3 {args.fp8} scaling" if args.fp8
            else f"torch.matmul, {args.dtype} {args.layout}")
    print(f"\nratio to {what}, median of {args.rounds} rounds (higher is better)")
    print(f"{'shape':>18} " + " ".join(f"{n:>12}" for n in names))
    for shape, cells in table.items():
        print(f"{shape:>18} " + " ".join(f"{statistics.median(cells[n]):>12.3f}" for n in names))


if __name__ == "__main__":
    main()
