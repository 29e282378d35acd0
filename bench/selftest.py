#!/usr/bin/env python3
"""Self-test of the benchmark framework on the CPU (about 20 s; no GPU, no deepwell build needed):
  1. each suite's run() against a fake deepwell that is right (ok), wrong (FAILED) or raises
     NotImplementedError (unavailable), at small CPU sizes;
  2. report.py and the plots on a synthetic GPU result;
  3. the interleaved and block CUDA timers (timing.measure_many, measure_blocks) against a fake
     CUDA clock.
  python3 bench/selftest.py
"""
from __future__ import annotations

import json
import sys
import tempfile
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import common  # noqa: E402
import refs  # noqa: E402
import report  # noqa: E402
import timing  # noqa: E402
from suites import (attention_decode, attention_fa3_sweep, attention_small, gemm_bf16,  # noqa: E402
                    gemm_fp8, gemm_fp8_small)


def fake_attention(q, k, v, causal=False):
    t = lambda x: x.transpose(1, 2).float()  # noqa: E731
    o = torch.nn.functional.scaled_dot_product_attention(t(q), t(k), t(v), is_causal=causal,
                                                         enable_gqa=k.shape[2] != q.shape[2])
    return o.transpose(1, 2).to(q.dtype)


def fake_gemm(a, b, bias=None, activation="none"):
    y = a.float() @ b.float() + (0 if bias is None else bias.float())
    y = torch.nn.functional.gelu(y, approximate="tanh") if activation == "gelu_tanh" else y
    return y.to(torch.bfloat16)


def fake_gemm_fp8(a, b, sa, sb, granularity):
    """include/deepwell/gemm.hpp's Fp8Scaling conventions (row: scale_b (1, N))."""
    M, K = a.shape
    sb = sb.reshape(-1, 1) if granularity == "row" else sb
    ba, bw = gemm_fp8.BLOCKS[granularity](M, b.shape[1], K)
    A = a.double() * refs.expand_scale(sa, ba, None, None)
    W = b.t().double() * refs.expand_scale(sb, bw, None, None)
    return (A @ W.t()).to(torch.bfloat16)


def not_impl(*a, **k):
    raise NotImplementedError("kernels in progress")


def statuses(row):
    return {n: r["status"] for n, r in row["variants"].items() if n.startswith("deepwell")}


def check_suites():
    cases = [(attention_fa3_sweep, {"d": 64, "causal": True, "S": 128, "B": 2, "H": 2,
                                    "device": "cpu", "flex": False}),
             (attention_small, {"B": 1, "H": 2, "S": 64, "d": 64, "device": "cpu"}),
             (attention_decode, {"B": 1, "Sq": 1, "Sk": 64, "H": 2, "Hkv": 2, "d": 64,
                                 "device": "cpu"}),
             (attention_decode, {"B": 1, "Sq": 1, "Sk": 64, "H": 4, "Hkv": 2, "d": 64,
                                 "device": "cpu"}),
             (gemm_bf16, {"shape": "t", "op": "bias+gelu_tanh", "M": 64, "N": 128, "K": 256,
                          "device": "cpu"}),
             (gemm_fp8, {"M": 128, "N": 256, "K": 256, "device": "cpu"}),
             (gemm_fp8_small, {"shape": "t", "M": 16, "N": 256, "K": 256, "device": "cpu"})]
    good = types.SimpleNamespace(attention=fake_attention, gemm=fake_gemm,
                                 gemm_fp8=fake_gemm_fp8)
    wrong = types.SimpleNamespace(
        attention=lambda q, k, v, causal=False: fake_attention(q, k, v, not causal),
        gemm=lambda a, b, **kw: fake_gemm(a, b),  # drops the epilogue
        gemm_fp8=lambda a, b, sa, sb, granularity: fake_gemm_fp8(a, b, sa, sb, granularity) * 2)
    missing = types.SimpleNamespace(attention=not_impl, gemm=not_impl, gemm_fp8=not_impl)
    for fake, want in ((good, "ok"), (wrong, "FAILED"), (missing, "unavailable")):
        common.deepwell_module = lambda: (fake, None)
        for suite, case in cases:
            row = suite.run(case)
            got = statuses(row)
            assert set(got.values()) == {want}, (suite.NAME, want, got, row["variants"])
            json.dumps(row)
        print(f"suites with a fake deepwell that is {want}: as expected")


def synthetic_doc():
    rows = []
    for d, causal, S, tf in [(128, False, 2048, 500.0), (128, False, 8192, 600.0),
                             (128, True, 8192, 550.0)]:
        v = {"deepwell": {"status": "ok", "median_us": 100.0, "tflops": tf, "rel_err": 3e-3},
             "cudnn": {"status": "ok", "median_us": 110.0, "tflops": tf * 0.95},
             "flash": {"status": "ok", "median_us": 180.0, "tflops": tf * 0.55},
             "efficient": {"status": "unavailable", "error": "RuntimeError: No available kernel"},
             "flex": {"status": "FAILED", "rel_err": 0.5, "error": "rel L2 error 0.5 > tol"}}
        rows.append({"case": {"d": d, "causal": causal, "S": S, "B": 16384 // S, "H": 16},
                     "label": f"S={S} d={d}", "variants": v,
                     "ratios": {"deepwell/best": 1 / 0.95, "deepwell/cudnn": 1 / 0.95}})
    return {"suite": "attention_fa3_sweep", "mode": "cuda", "smoke": False, "status": "complete",
            "env": {"git_sha": "0123456789abcdef", "git_dirty": False, "gpu": "NVIDIA H100",
                    "sm_count": 132, "timestamp_utc": "2026-11-21T00:00:00Z",
                    "clocks_end": {"clocks.current.sm [MHz]": "1980 MHz"}},
            "metric": "tflops", "case_keys": attention_fa3_sweep.CASE_KEYS,
            "variants": list(rows[0]["variants"]), "ratios": ["deepwell/best", "deepwell/cudnn"],
            "rows": rows}


def check_report():
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        doc = synthetic_doc()
        common.write_json(out / "attention_fa3_sweep.json", doc)
        attention_fa3_sweep.plot(doc, out / "attention_fa3_sweep.png")
        report.write(out, out / "RESULTS.md")
        md = (out / "RESULTS.md").read_text()
        for want in ("NVIDIA H100", "0123456789ab", "| 128 | False | 8192 | 2 | 16 | 600 |",
                     "1.05x", "FAILED", "No available kernel", "attention_fa3_sweep.png"):
            assert want in md, (want, md)
        text, failed = report.summary(out, ["attention_fa3_sweep"], "cuda")
        assert failed and "deepwell/best: geomean 1.05x" in text, text
        assert (out / "attention_fa3_sweep.png").stat().st_size > 1000
    print("report and plot from a synthetic GPU result: as expected")


def check_interleaved_timer():
    """measure_many on a fake CUDA clock: each call advances the clock by its variant's cost, an
    event stamps the clock when recorded. Checks the medians, that every round calls each variant
    once in an order that varies so each variant follows every other, and that two consecutive
    calls never read the same input set."""
    clock = [0.0]  # ms
    calls = []

    class FakeEvent:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self):
            self.t = clock[0]

        def elapsed_time(self, end):
            return end.t - self.t

    def variant(name, cost_ms):
        def fn(x):
            calls.append((name, x))
            clock[0] += cost_ms
        return fn

    sets = [(i,) for i in range(5)]
    real_event, real_sync = torch.cuda.Event, torch.cuda.synchronize
    torch.cuda.Event, torch.cuda.synchronize = FakeEvent, (lambda *a: None)
    try:
        res = timing.measure_many({"a": (variant("a", 0.1), sets), "b": (variant("b", 0.3), sets),
                                   "c": (variant("c", 0.2), [(9,)])}, "cuda")
        alone = timing.measure(variant("d", 0.4), sets, "cuda")  # one variant: a block of calls
    finally:
        torch.cuda.Event, torch.cuda.synchronize = real_event, real_sync
    for name, cost in (("a", 0.1), ("b", 0.3), ("c", 0.2)):
        assert abs(res[name]["median_us"] - cost * 1e3) < 1e-6, res
        assert res[name]["count"] == res["a"]["count"] >= timing.CONFIG["min_reps"], res
    assert abs(alone["median_us"] - 400.0) < 1e-6 and "interleaved_with" not in alone, alone
    calls = [c for c in calls if c[0] != "d"]
    timed = calls[-3 * res["a"]["count"]:]
    rounds = [[n for n, _ in timed[i:i + 3]] for i in range(0, len(timed), 3)]
    assert all(sorted(r) == ["a", "b", "c"] for r in rounds), rounds[:4]
    assert len({tuple(r) for r in rounds}) > 1, rounds[:4]
    # Shuffled rounds: every variant follows every other one often (a fixed predecessor biased
    # identical variants by up to 3.3 % under the H100's power cap; perf-notes attention item 45).
    seq = [n for n, _ in timed]
    follows = {(x, y): 0 for x in "abc" for y in "abc" if x != y}
    for x, y in zip(seq, seq[1:]):
        if x != y:
            follows[(x, y)] += 1
    assert min(follows.values()) >= len(rounds) // 4, follows
    shared = [x for n, x in calls if n != "c"]
    assert all(x != y for x, y in zip(shared, shared[1:])), shared[:12]

    # measure_blocks: each variant's calls in runs of its own, the runs taking turns.
    calls.clear()
    torch.cuda.Event, torch.cuda.synchronize = FakeEvent, (lambda *a: None)
    try:
        blk = timing.measure_blocks({"a": (variant("a", 0.1), sets), "b": (variant("b", 0.3), sets),
                                     "c": (variant("c", 0.2), [(9,)])}, "cuda", blocks=3)
    finally:
        torch.cuda.Event, torch.cuda.synchronize = real_event, real_sync
    assert abs(blk["a"]["median_us"] - 100.0) < 1e-6 and abs(blk["b"]["median_us"] - 300.0) < 1e-6
    assert blk["a"]["blocks"] == 3 and "interleaved_with" not in blk["a"], blk
    runs = [calls[0][0]]
    for (n0, _), (n1, _) in zip(calls, calls[1:]):
        if n1 != n0:
            runs.append(n1)
    assert "".join(runs) == "abcbcacab", runs  # turns rotate: abc, bca, cab
    print("interleaved and block CUDA timers on a fake clock: as expected")


if __name__ == "__main__":
    torch.set_grad_enabled(False)
    common.progress = lambda msg: None
    check_suites()
    check_report()
    check_interleaved_timer()
    print("selftest passed")
