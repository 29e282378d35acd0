"""Interleaved A/B timing of attention variants against SDPA's cuDNN backend, in one process.

A variant is a set of environment variables that an experimental build of the library reads at
call time (e.g. a `std::getenv("DW_EXP_...")` switch in a launcher, kept out of commits). Every
repetition times each variant once, in an order shuffled per repetition (`--order`; until
2026-11-26 it rotated, which keeps each variant's predecessor fixed and biased identical variants
by up to 3.3 %: perf-notes, attention item 45), so clock and thermal drift hit all variants
alike; timing the variants one after the other moved ratios by up to 8% (docs/perf-notes.md,
attention item 6). The timer is the benchmark
framework's (bench/timing.py measure_many: each call between its own CUDA events, calls back to
back, median of --reps). Until 2026-11-21 session 4 this script synchronized after every call,
which added each implementation's host launch time to its GPU time (d=64 causal S=512: cuDNN 181
TFLOP/s there against 259 in the benchmark). Inputs rotate over 4 sets; each variant's output is
checked against cuDNN's (relative L2 <= 1e-2) before timing.

Ratios against cuDNN depend on what else runs (perf-notes, attention item 44): alone with cuDNN
(`--regime pair`, the default) every kernel in the rotation is a heavy one and the H100 sits at
its 700 W cap (~1500-1600 MHz), while the benchmark suite also interleaves SDPA's slower flash
and mem-efficient backends, which let the clock recover (~1800 MHz). Causal d = 128 8k reads
1.16x in the pair regime and 1.06x in the suite's. `--regime sweep` interleaves those two
backends too (timed, not printed), so that a ratio here is comparable with bench/results.

    PYTHONPATH=build/python python3 bench/ab.py --d 128 --causal both --S 512,2048,8192 \
        --variant cur: --variant old:DW_EXP_OLD_ORDER=1

Prints one line per case: TFLOP/s of each variant and of cuDNN, and each variant / cuDNN.
"""
from __future__ import annotations

import argparse
import os


def parse_variant(text: str) -> tuple[str, dict]:
    name, _, env = text.partition(":")
    pairs = [kv for kv in env.split(",") if kv]
    return name, dict(kv.split("=", 1) for kv in pairs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--d", default="128", help="head dims, comma-separated")
    ap.add_argument("--S", default="512,2048,8192", help="sequence lengths, comma-separated")
    ap.add_argument("--causal", choices=["yes", "no", "both"], default="both")
    ap.add_argument("--variant", action="append", required=True,
                    help="NAME:VAR=VALUE[,VAR=VALUE...] (NAME: alone = no variables)")
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--regime", choices=["pair", "sweep"], default="pair",
                    help="sweep: also interleave SDPA's flash and mem-efficient backends, as the "
                         "benchmark suite does (its power regime)")
    ap.add_argument("--order", choices=["rotate", "shuffle"], default="shuffle",
                    help="round order of the interleaved timer (bench/timing.py _round_order)")
    args = ap.parse_args()

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import deepwell
    import timing  # bench/timing.py: the benchmark framework's interleaved timer

    timing.configure(min_reps=args.reps, max_reps=args.reps, order=args.order)
    variants = dict(parse_variant(v) for v in args.variant)
    keys = {k for env in variants.values() for k in env}

    def ours(env, causal):
        def f(q, k, v):
            for key in keys:
                os.environ.pop(key, None)
            os.environ.update(env)
            return deepwell.attention(q, k, v, causal=causal)
        return f

    def sdpa(causal, backend=SDPBackend.CUDNN_ATTENTION):
        def f(q, k, v):
            with sdpa_kernel([backend]):
                return torch.nn.functional.scaled_dot_product_attention(
                    q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal
                ).transpose(1, 2)
        return f

    causals = {"yes": [True], "no": [False], "both": [False, True]}[args.causal]
    for d in (int(x) for x in args.d.split(",")):
        for causal in causals:
            for S in (int(x) for x in args.S.split(",")):
                H, B = 2048 // d, 16384 // S  # the FA3 sweep: 16k tokens, hidden 2048
                sets = [tuple(torch.randn(B, S, H, d, device="cuda", dtype=torch.bfloat16)
                              for _ in range(3)) for _ in range(4)]
                fns = {n: ours(env, causal) for n, env in variants.items()}
                ref = sdpa(causal)(*sets[0]).float()
                for n, f in fns.items():
                    err = ((f(*sets[0]).float() - ref).norm() / ref.norm()).item()
                    assert err <= 1e-2, f"{n}: rel L2 {err:.3g} at d={d} S={S} causal={causal}"
                fns["cudnn"] = sdpa(causal)
                names = list(fns)
                if args.regime == "sweep":
                    fns["_flash"] = sdpa(causal, SDPBackend.FLASH_ATTENTION)
                    fns["_efficient"] = sdpa(causal, SDPBackend.EFFICIENT_ATTENTION)
                stats = timing.measure_many({n: (f, sets) for n, f in fns.items()}, "cuda")
                flops = 4 * B * H * S * S * d / (2 if causal else 1)
                tf = {n: flops / (st["median_us"] * 1e-6) / 1e12 for n, st in stats.items()}
                cells = "  ".join(f"{n}={tf[n]:.0f}({tf[n] / tf['cudnn']:.3f})" for n in names)
                print(f"d={d:<4} causal={causal!s:<5} S={S:<6} {cells}", flush=True)


if __name__ == "__main__":
    main()
