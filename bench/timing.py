"""Timers: CUDA events on the GPU, time.perf_counter on the CPU.

The variants of one case are timed interleaved (measure_many): every round calls each variant
once, back to back on one stream, so clock and power drift over the case hits every variant alike
(timed one block after another, the first variant was favoured by up to 8%; docs/perf-notes.md,
attention item 6). The order is drawn afresh each round (seeded), so each variant follows every
other about equally often: under the H100's power cap a kernel's speed depends on what ran just
before it, and the rotating order used until 2026-11-26 kept each variant's predecessor fixed
(two identical attention variants read up to 3.3 % apart that way, within 0.2 % shuffled; attention
item 45).

Every call is timed on its own (one event pair around one eager call), so the distribution
(median, p20, p80) comes out, and host-side launch and binding cost shows wherever it exceeds the
kernel's time: the GPU reaches the start event, then waits for the call to be enqueued. Between
calls the inputs rotate among several sets whose total size exceeds twice the L2 cache, so a
call does not find its inputs in L2 (mode "rotate", the default). Mode "flush" instead writes a
256 MB buffer before every call; that hides launch overhead (the host runs ahead during the
flush), so it suits large kernels only.

measure_graph times replays of CUDA graphs of the calls instead: kernel time only, for suites
whose bar is about the kernels (quant) and whose host cost per call is close to the GPU time.
"""
from __future__ import annotations

import math
import random
import time

# Set once by run.py (configure()); the suites read them through measure().
CONFIG = {"warmup_ms": 25.0, "rep_ms": 100.0, "min_reps": 10, "max_reps": 1000, "l2": "rotate",
          "do_bench": False, "order": "shuffle"}
CPU_CONFIG = {"warmup_calls": 2, "rep_ms": 100.0, "min_reps": 3, "max_reps": 50}
_flush_buf = None


def configure(**kw):
    CONFIG.update({k: v for k, v in kw.items() if v is not None})


def describe(device: str, timer: str = "") -> dict:
    """What the JSON records about the timing method (timer "graph": the suite times CUDA graphs)."""
    if device == "cpu":
        return {"timer": "time.perf_counter per call", **CPU_CONFIG, "stat": "median"}
    if timer == "graph":
        return {"timer": "CUDA graphs of the calls, one event pair per replay (measure_graph)",
                **CONFIG, "stat": "median of replay time / calls", "flush_bytes": 0}
    return {"timer": "CUDA events, one pair per eager call", **CONFIG, "stat": "median",
            "flush_bytes": 256 << 20 if CONFIG["l2"] == "flush" else 0}


def l2_bytes(device: str) -> int:
    if device == "cpu":
        return 32 << 20  # no shared last-level cache size to read portably; a generous guess
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 0) or (50 << 20))


def num_sets(set_bytes: int, device: str, cap_bytes: int = 2 << 30, max_sets: int = 1024) -> int:
    """How many input sets to rotate among so that together they exceed twice the L2 size."""
    if CONFIG["l2"] == "flush" and device != "cpu":
        return 1
    if device == "cpu":
        max_sets = min(max_sets, 8)  # CPU timing is coarse anyway; generating sets costs time
    set_bytes = max(int(set_bytes), 1)
    n = math.ceil(2 * l2_bytes(device) / set_bytes)
    n = min(n, max_sets, max(1, cap_bytes // set_bytes))
    return max(1, n)


def _stats(samples_us: list[float]) -> dict:
    s = sorted(samples_us)
    def q(p):
        if len(s) == 1:
            return s[0]
        x = p * (len(s) - 1)
        lo = int(math.floor(x))
        hi = min(lo + 1, len(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (x - lo)
    return {"median_us": q(0.5), "p20_us": q(0.2), "p80_us": q(0.8), "min_us": s[0],
            "count": len(s)}


def measure(fn, sets: list[tuple], device: str) -> dict:
    """Times fn(*sets[i % len(sets)]); returns median/p20/p80/min in microseconds and the count."""
    if device == "cpu":
        return _measure_cpu(fn, sets)
    return measure_many({"fn": (fn, sets)}, device)["fn"]  # one variant: a block of its calls


def _flush_buffer():
    """The 256 MB buffer written before each call in mode "flush" (allocated once), else None."""
    global _flush_buf
    if CONFIG["l2"] != "flush":
        return None
    if _flush_buf is None:
        import torch

        _flush_buf = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    return _flush_buf


def _rounds(names: list, round_ms: float, call, max_warmup: int, share: float = 1.0) -> dict:
    """Warm-up rounds, then timed rounds in which every variant runs once, in _round_order's
    order; call(name, start, end) runs one unit of a variant (between the
    two events when they are given). Each variant gets the warm-up and repetition time of one
    timed alone (times `share` of the repetitions, for one of several blocks). Returns
    {name: [elapsed ms per timed unit]}."""
    import torch

    c = CONFIG
    budget = len(names)
    for _ in range(int(min(max_warmup, c["warmup_ms"] * budget / round_ms))):
        for n in names:
            call(n, None, None)
    reps = int(min(c["max_reps"], max(c["min_reps"], c["rep_ms"] * budget / round_ms)))
    reps = max(1, round(reps * share))
    starts = {n: [torch.cuda.Event(enable_timing=True) for _ in range(reps)] for n in names}
    ends = {n: [torch.cuda.Event(enable_timing=True) for _ in range(reps)] for n in names}
    torch.cuda.synchronize()
    for r in range(reps):
        for n in _round_order(names, r):
            call(n, starts[n][r], ends[n][r])
    torch.cuda.synchronize()
    return {n: [s.elapsed_time(e) for s, e in zip(starts[n], ends[n])] for n in names}


def _round_order(names: list, r: int) -> list:
    """Round r's order. "shuffle" (the default): a permutation drawn per round (seeded by r), so
    each variant follows every other about equally often. "rotate" (before 2026-11-26): names
    rotated by r, which keeps every variant's predecessor the same within a round."""
    if CONFIG["order"] == "shuffle":
        order = list(names)
        random.Random(r).shuffle(order)
        return order
    k = r % len(names)
    return names[k:] + names[:k]


def measure_many(entries: dict, device: str) -> dict:
    """Times several variants interleaved; entries = {name: (fn, sets)}. Returns {name: stats}
    (the same keys as measure()). Variants that share a sets list share one rotation counter, so
    a call never reuses the set the previous variant just read (it would find it in L2)."""
    if device == "cpu":
        return {n: _measure_cpu(fn, sets) for n, (fn, sets) in entries.items()}
    samples = _sample_many(entries, device)
    out = {}
    for n in entries:
        res = _result(samples[n], entries[n][1])
        if len(entries) > 1:
            res["interleaved_with"] = len(entries) - 1
        if CONFIG["do_bench"]:
            res["do_bench_us"] = _do_bench(entries[n][0], entries[n][1][0])
        out[n] = res
    return out


def measure_blocks(entries: dict, device: str, blocks: int = 4) -> dict:
    """Times host-bound variants, each in its own blocks of back-to-back calls (so one variant's
    host latency never lands between another's events: docs/benchmarking.md, "Timing"); the
    variants' blocks take turns `blocks` times, in an order that rotates from turn to turn, each
    block with its own warm-up and 1/blocks of the repetitions, so a drift of the host's speed
    over the case (one variant's block in a slow spell) hits every variant alike. Stats are over
    the calls of all its blocks; same keys as measure(), plus "blocks"."""
    if device == "cpu":
        return {n: _measure_cpu(fn, sets) for n, (fn, sets) in entries.items()}
    names = list(entries)
    samples: dict = {n: [] for n in names}
    for b in range(blocks):
        k = b % len(names)
        for n in names[k:] + names[:k]:
            samples[n] += _sample_many({n: entries[n]}, device, share=1.0 / blocks)[n]
    return {n: {**_result(samples[n], entries[n][1]), "blocks": blocks} for n in names}


def _result(samples_ms: list[float], sets: list) -> dict:
    """Stats of one variant's timed calls, and how many input sets it rotated over."""
    return {**_stats([ms * 1e3 for ms in samples_ms]), "sets": len(sets)}


def _sample_many(entries: dict, device: str, share: float = 1.0) -> dict:
    """measure_many's timed calls: {name: [elapsed ms per call]}."""
    import torch

    flush = _flush_buffer()
    names = list(entries)
    counters: dict[int, int] = {}

    def next_args(name):
        sets = entries[name][1]
        i = counters.get(id(sets), 0)
        counters[id(sets)] = i + 1
        return sets[i % len(sets)]

    # First calls (module load, autotuning, handle creation) and a cost estimate per variant.
    est = {}
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for n in names:
        fn = entries[n][0]
        fn(*next_args(n))
        torch.cuda.synchronize()
        e0.record()
        for _ in range(3):
            fn(*next_args(n))
        e1.record()
        torch.cuda.synchronize()
        est[n] = max(e0.elapsed_time(e1) / 3, 1e-4)
    def call(n, start, end):
        args = next_args(n)
        if start is not None:
            if flush is not None:
                flush.zero_()
            start.record()
        entries[n][0](*args)
        if end is not None:
            end.record()

    return _rounds(names, sum(est.values()), call, max_warmup=1000, share=share)


def measure_graph(entries: dict, device: str, min_graph_us: float = 300.0) -> dict:
    """Kernel time without host cost: each variant's calls are captured once into a CUDA graph
    (calls over its input sets in rotation, at least one per set and enough for ~min_graph_us of
    GPU time), and each replay is timed with one event pair; a sample is replay time / calls.
    Inside a replay the GPU runs the calls back to back, so the host's binding and launch cost
    per call (25-58 us for a quantize call) never shows, even where it exceeds the kernel's.
    Variants take turns replay by replay, in rotating order, as measure_many. Same keys as
    measure(), plus "calls_per_replay". The ops must be capturable (no host sync)."""
    import torch

    names = list(entries)
    side = torch.cuda.Stream()

    def capture(fn, sets, calls):
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up off the capture (allocator, lazy init)
            for i in range(min(calls, 3)):
                fn(*sets[i % len(sets)])
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for i in range(calls):
                fn(*sets[i % len(sets)])
        return g

    graphs, est = {}, {}
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for n in names:
        fn, sets = entries[n]
        g = capture(fn, sets, len(sets))
        g.replay()
        torch.cuda.synchronize()
        e0.record()
        g.replay()
        e1.record()
        torch.cuda.synchronize()
        per_call = max(e0.elapsed_time(e1) * 1e3 / len(sets), 1e-2)
        calls = len(sets) * max(1, math.ceil(min_graph_us / (per_call * len(sets))))
        if calls != len(sets):
            del g
            g = capture(fn, sets, calls)
        graphs[n], est[n] = (g, calls), per_call * calls / 1e3

    def replay(n, start, end):
        if start is not None:
            start.record()
        graphs[n][0].replay()
        if end is not None:
            end.record()

    samples = _rounds(names, sum(est.values()), replay, max_warmup=200)
    out = {}
    for n in names:
        calls = graphs[n][1]
        res = _stats([ms * 1e3 / calls for ms in samples[n]])
        res.update(sets=len(entries[n][1]), calls_per_replay=calls, timer="cuda_graph")
        if len(names) > 1:
            res["interleaved_with"] = len(names) - 1
        out[n] = res
    del graphs
    return out


def _measure_cpu(fn, sets):
    c = CPU_CONFIG
    n = len(sets)
    t0 = time.perf_counter()
    for i in range(c["warmup_calls"]):
        fn(*sets[i % n])
    est = (time.perf_counter() - t0) / c["warmup_calls"]
    reps = int(min(c["max_reps"], max(c["min_reps"], c["rep_ms"] * 1e-3 / max(est, 1e-9))))
    samples = []
    for i in range(reps):
        args = sets[i % n]
        t = time.perf_counter()
        fn(*args)
        samples.append((time.perf_counter() - t) * 1e6)
    return {**_stats(samples), "sets": n}


def _do_bench(fn, args):
    """Cross-check with triton.testing.do_bench (median, L2 cleared between calls)."""
    try:
        from triton.testing import do_bench

        return do_bench(lambda: fn(*args), warmup=25, rep=100, return_mode="median") * 1e3
    except Exception as e:  # noqa: BLE001 - a cross-check never stops the run
        return f"do_bench failed: {type(e).__name__}: {e}"
