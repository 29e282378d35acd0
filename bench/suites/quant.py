"""Quantization kernels against copy bandwidth: deepwell.quantize / dequantize on bf16 inputs, per
format and with / without the transposed copy, vs a device-to-device copy of the same number of
bytes, timed by common.run_variants in the same process for every case.

"moved" bytes = x read once + every output written (codes and scales, as the call returns them).
Formats that reduce a per-tensor amax first (fp8_tensor, nvfp4's FP32 tensor scale) and fp8_row
with the transposed copy (row and column amaxes) read x twice: their ratio is bounded by about
(in + out) / (2 in + out). Along rows, fp8_tensor and nvfp4 re-read only the part of x that does
not fit in shared memory (the one-pass kernel, quantize_onepass_sm90.cu: 25 MB on an H100). "fp8_tensor+amax" and "nvfp4+amax" pass the amax in (amax=, delayed
scaling; reduced outside the timed call): one read of x. Cells: GB/s of moved bytes; ratio: deepwell GB/s / copy GB/s, the faster of two
copies of about the same size (rounded to 256 bytes and to 1 MiB; the issue-4 bar is 0.80).

Timing: replays of CUDA graphs of the calls (common.run_variants(graph=True), timing.measure_graph):
kernel time only. One quantize call costs 25-58 µs of host time on an H100 host, as much as its
GPU time at 4097x8192; timed call by call with events (even in blocks of calls, session 10), the
cells then moved with the host (mxfp8 rows at 4097x8192: 0.54 / 0.75 / 1.09 of copy in three
runs, docs/perf-notes.md). The 0.80 bar is about the kernels' bandwidth, which this measures.

Correctness per case (before timing, fresh input, outputs poisoned): the outputs are decoded with
deepwell.dequantize on the GPU and compared with x (x^T for the transposed copy) in float64; the
relative L2 error must be below the format's bound (e4m3 3-bit mantissa: 0.05; e2m1: 0.25). The
bit-exact comparison with the CPU reference is tests/python/test_quant_gpu.py's job.
"""
from __future__ import annotations

import common
from common import Variant

NAME = "quant"
METRIC = "gbps"
TIMER = "graph"  # run_variants(graph=True) below; recorded in the JSON's "timing"
CASE_KEYS = ["op", "format", "transpose", "R", "K"]
FORMATS = ["mxfp8", "mxfp4", "nvfp4", "fp8_block1x128", "fp8_block128x128", "fp8_row",
           "fp8_tensor", "fp8_tensor+amax", "nvfp4+amax"]
DEQUANT_FORMATS = ["mxfp8", "mxfp4", "nvfp4"]  # to bf16
BLOCK_ROWS = {"mxfp8": 32, "mxfp4": 32, "nvfp4": 16}  # R multiple needed for the transposed copy
TOL = {"mxfp4": 0.25, "nvfp4": 0.25}


def cases(smoke: bool, cpu: bool = False):
    dev = "cpu" if cpu else "cuda"
    # 4097 rows: not a multiple of any block (no transposed copy for the MX / NVFP4 formats, whose
    # transposed scale groups run along R)
    shapes = [(256, 512), (129, 384)] if cpu else [(8192, 8192), (4097, 8192)]
    for R, K in shapes[:1] if smoke else shapes:
        for fmt in FORMATS[:2] if smoke else FORMATS:
            for transpose in (False, True):
                yield {"op": "quantize", "format": fmt, "transpose": transpose, "R": R, "K": K,
                       "device": dev}
        for fmt in DEQUANT_FORMATS[:1] if smoke else DEQUANT_FORMATS:
            yield {"op": "dequantize", "format": fmt, "transpose": False, "R": R, "K": K,
                   "device": dev}


def _copy_variant(nbytes: int, dev: str, name: str = "copy", unit: int = 256) -> Variant:
    """A copy of about nbytes / 2 bytes, rounded down to a multiple of `unit` (at least 256: an
    odd length sends torch's copy to its unvectorized kernel, 0.81x the bandwidth)."""
    import torch

    half = max(nbytes // 2 // unit * unit, 256)

    def gen(seed):
        g = common.generator(dev, seed)
        return (torch.randint(0, 256, (half,), dtype=torch.uint8, device=dev, generator=g),
                torch.empty(half, dtype=torch.uint8, device=dev))

    return Variant(name, lambda src, dst: dst.copy_(src), gen,
                   lambda out, args: 0.0 if bool(torch.equal(out, args[0])) else float("nan"),
                   2 * half, half)


def _decoded_error(dw, outs, x, fmt: str, transpose: bool) -> float:
    """Worst relative L2 error of the decoded outputs against x (and x^T)."""
    outs = list(outs)
    ts = outs.pop(2) if fmt == "nvfp4" else None
    pairs = [(outs[0], outs[1], x)]
    if transpose:
        scales_t = outs[1] if fmt == "fp8_tensor" else outs[3]
        pairs.append((outs[2], scales_t, x.t()))
    err = 0.0
    for data, scales, ref in pairs:
        dec = dw.dequantize(data, scales, fmt, tensor_scale=ts, out_dtype="float32")
        err = max(err, common.rel_err(dec, ref.double()))
    return err


def run(case: dict) -> dict:
    import torch

    op, fmt, transpose, R, K, dev = (case[k] for k in ("op", "format", "transpose", "R", "K",
                                                       "device"))
    label = f"{op} {fmt}{' +T' if transpose else ''} {R}x{K}"
    row = {"case": {k: case[k] for k in CASE_KEYS}, "label": label, "variants": {}, "ratios": {}}
    given_amax = fmt.endswith("+amax")
    fmt = fmt.removesuffix("+amax")
    dw, err = common.deepwell_module()
    if transpose and R % BLOCK_ROWS.get(fmt, 1):
        err = f"not available: the transposed copy in {fmt} needs R % {BLOCK_ROWS[fmt]} == 0"
    if err:
        row["variants"]["deepwell"] = {"status": "unavailable", "error": err}
        return row

    def gen_x(seed):
        g = common.generator(dev, seed)
        return (torch.randn(R, K, generator=g, device=dev).bfloat16(),)

    x0 = gen_x(1)[0]
    if op == "dequantize":
        q = dw.quantize(x0, fmt)
        out_bytes = R * K * 2
        moved = sum(t.numel() * t.element_size() for t in q) + out_bytes

        def gen(seed):
            x = gen_x(seed)[0]
            return tuple(dw.quantize(x, fmt)) + (x,)

        if fmt == "nvfp4":  # (data, scales, tensor scale, x)
            fn = lambda data, scales, ts, x: dw.dequantize(  # noqa: E731
                data, scales, fmt, tensor_scale=ts, out_dtype="bfloat16")
        else:
            fn = lambda data, scales, x: dw.dequantize(data, scales, fmt, out_dtype="bfloat16")  # noqa: E731
        check = lambda out, args: common.rel_err(out, args[-1].double())  # noqa: E731
        tol = TOL.get(fmt, 0.05)
    else:
        outs = dw.quantize(x0, fmt, transpose=transpose)
        out_bytes = sum(t.numel() * t.element_size() for t in outs)
        moved = R * K * 2 + out_bytes
        gen = gen_x
        fn = lambda x: dw.quantize(x, fmt, transpose=transpose)  # noqa: E731
        if given_amax:  # the amax comes with the input, reduced outside the timed call
            def gen(seed):
                x = gen_x(seed)[0]
                return x, x.abs().amax().float().reshape(1)

            fn = lambda x, amax: dw.quantize(x, fmt, transpose=transpose, amax=amax)  # noqa: E731
        check = lambda out, args: _decoded_error(dw, out, args[0], fmt, transpose)  # noqa: E731
        tol = TOL.get(fmt, 0.05)
    del x0
    # Two copies, the faster (in GB/s of its own bytes) is the baseline: the size rounded to 256
    # bytes and to 1 MiB. In graph timing a copy's bandwidth depended on its exact length (H100,
    # session 11: 2326 GB/s at 2 x 67.13 MB, 2870 GB/s at 2 x 67.15 MB, on separate buffers alike).
    copies = [_copy_variant(moved, dev, "copy"), _copy_variant(moved, dev, "copy_b", 1 << 20)]
    copy_bytes = {c.name: c.set_bytes for c in copies}  # read + written by each copy
    variants = [Variant("deepwell", fn, gen, check, R * K * 2, out_bytes, ours=True, tol=tol),
                *copies]
    res = common.run_variants(variants, dev, None, label, graph=True)
    for name, r in res.items():
        if r.get("status") == "ok":
            r["gbps"] = (moved if name == "deepwell" else copy_bytes[name]) / r["median_us"] / 1e3
    row["variants"] = res
    row["moved_bytes"] = moved
    _, best_copy = common.best_of(res, ["copy", "copy_b"], "gbps")
    row["ratios"] = {"deepwell/copy": common.ratio(common.metric(res["deepwell"], "gbps"), best_copy)}
    return row


def plot(doc: dict, path):
    import plots

    plots.bars(doc, path, y="gbps", ylabel="GB/s moved (higher is better)")
