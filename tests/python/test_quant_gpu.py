"""GPU quantization kernels against the CPU reference, bit for bit (needs an sm_90 GPU).

Every output byte (codes, UE8M0 / UE4M3 scales, FP32 scale bits, dequantized values) of the CUDA
path must equal the CPU reference's on the same input: random values over many binades, planted
zero / all-equal / outlier / subnormal / tie / NaN / Inf blocks, odd and misaligned shapes.
`pytest -s -k bandwidth` prints the achieved bandwidth against a device-to-device copy.
"""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import deepwell  # noqa: E402

pytestmark = pytest.mark.gpu

FP4 = ("mxfp4", "nvfp4")


def make_input(shape, gen, nonfinite=True, binades=20):
    """Rows scaled over +-binades powers of two (keep it small for f16: 65504 is its max)."""
    x = torch.randn(shape, generator=gen)
    x *= 2.0 ** torch.randint(-binades, binades, shape[:-1] + (1,), generator=gen).float()
    flat = x.view(-1, shape[-1])
    R, K = flat.shape
    if R >= 7 and K >= 32:
        flat[0, :32] = 0.0
        flat[1, :32] = -2.75
        flat[2, :32] = 1e-3
        flat[2, 5] = 3.0e4
        flat[3, :32] = 2.0 ** -133                     # subnormal inputs
        flat[4, :16] = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0] * 2)
        flat[5, :32] = 448.0 * torch.arange(32) / 31   # block amax exactly 448
        if nonfinite:
            flat[6, 3] = float("nan")
            flat[-1, K - 1] = float("inf")
    return x


def raw(t):
    """Exact bytes of a tensor, on the CPU."""
    t = t.detach().contiguous().cpu()
    return t.view(torch.uint8) if t.element_size() == 1 else t.view(torch.int32 if t.element_size() == 4 else torch.int16)


def assert_same(gpu_out, cpu_out, what):
    assert len(gpu_out) == len(cpu_out), what
    for i, (g, c) in enumerate(zip(gpu_out, cpu_out)):
        assert g.is_cuda and g.dtype == c.dtype and g.shape == c.shape, (what, i)
        rg, rc = raw(g), raw(c)
        bad = (rg != rc).nonzero()
        assert bad.numel() == 0, f"{what}: output {i} differs at {bad[:5].tolist()} ({bad.shape[0]} places)"


def cases():
    out = []
    for fmt in ("fp8_tensor", "fp8_row", "fp8_block1x128", "fp8_block128x128", "mxfp8"):
        for elem in ("e4m3", "e5m2"):
            for rule in (("floor", "rceil") if fmt == "mxfp8" else ("floor",)):
                out.append((fmt, elem, rule))
    out += [("mxfp4", "e4m3", "floor"), ("mxfp4", "e4m3", "rceil"), ("nvfp4", "e4m3", "floor")]
    return out


def shapes(fmt):
    if fmt in ("mxfp8", "mxfp4"):
        return [(1, 32), (3, 5, 96), (257, 160), (1000, 1024)]
    if fmt == "nvfp4":
        return [(1, 16), (7, 48), (129, 272), (1000, 1024)]
    return [(1, 1), (5, 300), (129, 129), (3, 7, 200), (1000, 1024), (2, 4096)]


@pytest.mark.parametrize("fmt,elem,rule", cases())
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_quantize_bit_identical(fmt, elem, rule, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    for shape in shapes(fmt):
        nonfinite = fmt not in ("fp8_tensor", "nvfp4") or shape[0] == 1
        x = make_input(shape, gen, nonfinite=nonfinite, binades=8 if dtype == torch.float16 else 20).to(dtype)
        kw = dict(rule=rule, elem=elem if fmt not in FP4 else "e4m3")
        cpu = deepwell.quantize(x, fmt, **kw)
        gpu = deepwell.quantize(x.cuda(), fmt, **kw)
        torch.cuda.synchronize()
        assert_same(gpu, cpu, f"{fmt} {elem} {rule} {dtype} {shape}")


@pytest.mark.parametrize("fmt", ["fp8_tensor", "nvfp4"])
def test_nonfinite_tensor_amax(fmt, seed):
    gen = torch.Generator().manual_seed(seed)
    x = make_input((64, 256), gen, nonfinite=True)
    assert_same(deepwell.quantize(x.cuda(), fmt), deepwell.quantize(x, fmt), fmt)


@pytest.mark.parametrize("fmt", ["fp8_tensor", "nvfp4"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("transpose", [False, True])
def test_given_amax_bit_identical(fmt, dtype, transpose, seed):
    """amax= (one pass over x) against the CPU reference with the same amax; x's own amax,
    reduced on the GPU, reproduces the default two-pass result."""
    gen = torch.Generator().manual_seed(seed)
    for shape in ([(64, 96), (256, 1024), (4096, 4096)] if transpose else
                  [(1, 16), (7, 48), (3, 5, 272), (1000, 1024)]):
        x = make_input(shape, gen, nonfinite=False).to(dtype)
        xg = x.cuda()
        own = xg.abs().amax().float()
        for factor in (1.0, 0.25, -3.0):
            kw = dict(transpose=transpose, amax=(own * factor).reshape(1))
            gpu = deepwell.quantize(xg, fmt, **kw)
            cpu = deepwell.quantize(x, fmt, **dict(kw, amax=kw["amax"].cpu()))
            assert_same(gpu, cpu, f"{fmt} {dtype} {shape} amax x{factor}")
        assert_same(deepwell.quantize(xg, fmt, transpose=transpose, amax=own),
                    deepwell.quantize(xg, fmt, transpose=transpose), f"{fmt} {shape} own amax")
    # The encoding kernel writes the tensor scale of a given amax; an empty x launches none, and
    # the scale still comes out.
    for shape in ([(0, 64), (32, 0)] if transpose else [(0, 16), (4, 0)]):
        x = torch.zeros(shape, dtype=dtype)
        amax = torch.tensor([3.0])
        assert_same(deepwell.quantize(x.cuda(), fmt, transpose=transpose, amax=amax.cuda()),
                    deepwell.quantize(x, fmt, transpose=transpose, amax=amax), f"{fmt} {shape}")


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_row", "fp8_block1x128"])
def test_pow2_scales_bit_identical(fmt, seed):
    """Power-of-two scales: rows of partial groups (the general row kernels) and of whole groups
    (quantize_chunks_kernel; fp8_tensor there with `amax=`)."""
    gen = torch.Generator().manual_seed(seed)
    for shape in [(300, 520), (257, 1024)]:
        x = make_input(shape, gen, nonfinite=fmt != "fp8_tensor").bfloat16()
        kws = [{}]
        if fmt == "fp8_tensor":
            kws.append({"amax": x.float().abs().amax().reshape(1)})
        for kw in kws:
            cpu = deepwell.quantize(x, fmt, pow2_scales=True, **kw)
            gkw = {k: v.cuda() for k, v in kw.items()}
            gpu = deepwell.quantize(x.cuda(), fmt, pow2_scales=True, **gkw)
            assert_same(gpu, cpu, f"{fmt} {shape} {list(kw)}")


@pytest.mark.parametrize("fmt,elem,rule", cases())
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_transposed_copy_bit_identical(fmt, elem, rule, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    block_rows = fmt in ("mxfp8", "mxfp4", "nvfp4")
    binades = 8 if dtype == torch.float16 else 20
    # odd R (131): data_t rows at every 4-byte offset (the staged word stores' head bytes)
    shapes = ([(32, 64), (96, 160), (512, 1024)] if block_rows else
              [(1, 1), (70, 150), (131, 260), (300, 1000)])
    for R, K in shapes:
        x = make_input((R, K), gen, nonfinite=fmt not in ("fp8_tensor", "nvfp4"),
                       binades=binades).to(dtype)
        kw = dict(rule=rule, elem=elem if fmt not in FP4 else "e4m3", transpose=True)
        assert_same(deepwell.quantize(x.cuda(), fmt, **kw), deepwell.quantize(x, fmt, **kw),
                    f"{fmt} {elem} {rule} {(R, K)} transposed")


@pytest.mark.parametrize("fmt", ["mxfp8", "mxfp4", "nvfp4", "fp8_block1x128", "fp8_block128x128",
                                 "fp8_tensor", "fp8_row"])
def test_transposed_copy_long_walks(fmt, seed):
    """x large enough that a CTA of 64-column tiles (nvfp4, fp8_row) walks two tiles (over 16
    tiles per SM on 132 SMs), with a ragged last row tile, a ragged last column tile and a last
    walk of one tile: every code and scale equals the CPU reference's. The other formats take one
    128-column tile per CTA (tile_cols), over the same ragged edges; mxfp8 gathers its row scale
    bytes per CTA (walks_along_k), also for K = 64 (a half-empty tile)."""
    gen = torch.Generator().manual_seed(seed)
    shapes = [(4128, 8224)]
    if fmt == "mxfp8":
        shapes.append((4224 * 128 + 32, 64))
    for R, K in shapes:
        x = make_input((R, K), gen, nonfinite=fmt not in ("fp8_tensor", "nvfp4"),
                       binades=20).bfloat16()
        for transpose in (True, False) if fmt == "fp8_block128x128" else (True,):
            want = deepwell.quantize(x, fmt, transpose=transpose)
            assert_same(deepwell.quantize(x.cuda(), fmt, transpose=transpose), want,
                        f"{fmt} {(R, K)} transpose={transpose}")


def quantize_with_data_t_rows(x, fmt, ld, offset=0):
    """quantize(x, fmt, transpose=True), with data_t written into a (K, R) view of the caller's
    buffer whose rows are ld codes apart, starting `offset` bytes into it, through the native entry
    (the Python wrapper always pads to 16 bytes). Returns the outputs and the whole buffer."""
    from deepwell import _tensors as T
    from deepwell import quant as Q

    out = list(deepwell.quantize(x, fmt, transpose=True))  # every other output, freshly written
    R, K = x.shape
    buf = torch.full((offset + K * ld + 16,), 0x5A, dtype=torch.uint8, device=x.device)
    data_t = buf[offset:offset + K * ld].view(K, ld)[:, :R].view(out[0].dtype)
    scales_t = None if fmt == "fp8_tensor" else out[3]
    Q._native().quantize(T.describe(x, "x"), T.describe(out[0], "data"),
                         T.describe(out[1], "scales"), None, T.describe(data_t, "data_t"),
                         T.describe(scales_t, "scales_t"), None, Q._format(fmt), 0, False, False,
                         T.stream_of(x))
    out[2] = data_t
    return out, buf


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_row", "fp8_block1x128", "fp8_block128x128"])
def test_transposed_copy_any_row_stride(fmt, seed):
    """data_t rows at any stride >= R, 16-byte aligned (the direct stores) or not (the staged
    stores), at aligned and odd base addresses: the codes equal the CPU reference's and no byte
    outside the (K, R) view is written."""
    gen = torch.Generator().manual_seed(seed)
    for R, K in ((131, 160), (1000, 256), (17, 64)):
        x = make_input((R, K), gen, nonfinite=fmt != "fp8_tensor").bfloat16()
        want = deepwell.quantize(x, fmt, transpose=True)
        pad16 = (R + 15) // 16 * 16
        for ld, offset in ((R, 0), (R + 3, 0), (pad16, 0), (pad16 + 16, 0), (pad16, 5),
                           ((R + 31) // 32 * 32, 0)):
            got, buf = quantize_with_data_t_rows(x.cuda(), fmt, ld, offset)
            assert_same(got, want, f"{fmt} {(R, K)} ld {ld} offset {offset}")
            inside = torch.zeros(buf.numel(), dtype=torch.bool)
            rows = torch.arange(K).unsqueeze(1) * ld + offset
            inside[(rows + torch.arange(R)).reshape(-1)] = True
            outside = buf.cpu()[~inside]
            assert bool((outside == 0x5A).all()), f"{fmt} ld {ld}: bytes outside data_t written"


def test_gemm_fp8_reads_padded_transposed_copy(seed):
    """The weight-gradient GEMM dW = dY^T X straight from the transposed copies of an odd number
    of tokens (R = 1000: rows padded to 1024 bytes), against the decoded operands in float64."""
    gen = torch.Generator().manual_seed(seed)
    R, K, N = 1000, 256, 192
    x = torch.randn(R, K, generator=gen).bfloat16().cuda()
    dy = torch.randn(R, N, generator=gen).bfloat16().cuda()
    xq, xs, xt = deepwell.quantize(x, "fp8_tensor", transpose=True)
    dq, ds, dyt = deepwell.quantize(dy, "fp8_tensor", transpose=True)
    assert xt.stride() == (1024, 1) and dyt.stride() == (1024, 1)
    ref = (deepwell.dequantize(dyt, ds, "fp8_tensor").double()
           @ deepwell.dequantize(xt, xs, "fp8_tensor").double().t())
    for out_dtype, tol in ((torch.bfloat16, 1e-2), (torch.float32, 1e-3)):
        dw = deepwell.gemm_fp8(dyt, xt.t(), ds, xs, granularity="tensor", out_dtype=out_dtype)
        err = ((dw.double() - ref).norm() / ref.norm()).item()
        assert dw.shape == (N, K) and err < tol, (out_dtype, err)


@pytest.mark.parametrize("fmt", ["mxfp8", "mxfp4", "nvfp4"])
def test_swizzled_bit_identical(fmt, seed):
    gen = torch.Generator().manual_seed(seed)
    for shape in [(130, 160), (2, 100, 64), (7, 32), (512, 512)]:
        x = make_input(shape, gen, nonfinite=fmt != "nvfp4")
        kw = dict(swizzle=True, transpose=len(shape) == 2 and shape[0] % 32 == 0)
        gpu = deepwell.quantize(x.cuda(), fmt, **kw)
        assert_same(gpu, deepwell.quantize(x, fmt, **kw), f"{fmt} {shape} swizzled")
        plain = deepwell.quantize(x.cuda(), fmt)
        swz = deepwell.swizzle_scales(plain[1])
        assert_same((swz,), (deepwell.swizzle_scales(plain[1].cpu()),), "swizzle_scales")
        back = deepwell.unswizzle_scales(swz, plain[1].shape)
        assert torch.equal(raw(back), raw(plain[1]))


def test_misaligned_input(seed):
    """A contiguous input at an odd address takes the scalar path; the result is the same."""
    gen = torch.Generator().manual_seed(seed)
    buf = make_input((1, 64 * 96 + 1), gen, nonfinite=False).bfloat16().view(-1)
    x = buf[1:].view(64, 96)
    for fmt in ("mxfp8", "fp8_row", "fp8_block1x128", "fp8_block128x128", "nvfp4"):
        assert_same(deepwell.quantize(x.cuda(), fmt), deepwell.quantize(x, fmt), fmt)
        xg = buf.cuda()[1:].view(64, 96)
        assert xg.data_ptr() % 16 != 0
        assert_same(deepwell.quantize(xg, fmt), deepwell.quantize(x, fmt), fmt + " misaligned")


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_block1x128", "mxfp8", "mxfp4", "nvfp4"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_rows_of_whole_groups(fmt, dtype, seed):
    """16-bit rows of whole groups run as one stream of 16-element chunks, 256 threads per CTA
    and 3 or 4 chunks per thread (quantize_chunks_kernel): streams shorter than a CTA, ending at
    and one chunk past a CTA's 768 / 1024 chunks, one-group rows, rows that end mid-CTA, plain
    and swizzled scales. The same values one element off alignment take the general kernel."""
    gen = torch.Generator().manual_seed(seed)
    block = {"fp8_tensor": 16, "fp8_block1x128": 128, "nvfp4": 16}.get(fmt, 32)
    tpg = block // 16
    binades = 8 if dtype == torch.float16 else 20
    for chunks, groups in ((tpg, 1), (768, 1), (768 + tpg, 1), (1024, 1), (1024 + tpg, 1),
                           (2 * 1024 * tpg, 3), (3 * 1024 + 7 * tpg, 7)):
        rows = max(chunks // (groups * tpg), 1)
        shape = (rows, groups * block)
        x = make_input(shape, gen, nonfinite=fmt not in ("fp8_tensor", "nvfp4"),
                       binades=binades).to(dtype)
        kws = [{}]
        if fmt in ("fp8_tensor", "nvfp4"):
            kws = [{"amax": x.float().abs().amax().reshape(1)}]
        if fmt in ("mxfp8", "mxfp4", "nvfp4"):
            kws.append(dict(kws[0], swizzle=True))
        for kw in kws:
            cpu = deepwell.quantize(x, fmt, **kw)
            gkw = {k: (v.cuda() if torch.is_tensor(v) else v) for k, v in kw.items()}
            assert_same(deepwell.quantize(x.cuda(), fmt, **gkw), cpu, f"{fmt} {dtype} {shape} {kw}")
            buf = torch.empty(x.numel() + 1, dtype=dtype, device="cuda")
            xg = buf[1:].view(shape)
            xg.copy_(x)
            assert xg.data_ptr() % 16 != 0
            assert_same(deepwell.quantize(xg, fmt, **gkw), cpu, f"{fmt} {dtype} {shape} {kw} misaligned")


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_row", "fp8_block1x128", "fp8_block128x128",
                                 "mxfp8", "mxfp4", "nvfp4"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_extreme_magnitudes_bit_identical(fmt, dtype, seed):
    """FP32 scales outside [2^-40, 2^40] take __fdiv_rn instead of the hoisted-reciprocal division
    (kernels.cuh, kDivLo); signed zeros and values far below their scale keep their sign. Whole
    tensors at one magnitude (the tensor scale follows it), and tensors mixing magnitudes by row;
    with and without the transposed copy, on full and edge tiles, aligned and misaligned."""
    gen = torch.Generator().manual_seed(seed)
    R, K = 160, 288  # R, K multiples of 32, not of the 128-row / 64-column tiles
    mags = [2.0 ** e for e in (-120, -100, -70, -45, -30, 0, 30, 45, 70, 100)]
    inputs = [torch.randn(R, K, generator=gen) * m for m in mags]
    mixed = torch.randn(R, K, generator=gen)
    mixed *= torch.tensor(mags)[torch.randint(0, len(mags), (R, 1), generator=gen)]
    mixed[:, 5] = -0.0
    mixed[3, :] = -0.0
    mixed[7, :64] = 1e-30 * torch.randn(64, generator=gen)
    inputs.append(mixed)
    for i, x in enumerate(inputs):
        x = x.to(dtype)
        kw = dict(elem="e4m3")
        for transpose in (False, True):
            want = deepwell.quantize(x, fmt, transpose=transpose, **kw)
            assert_same(deepwell.quantize(x.cuda(), fmt, transpose=transpose, **kw), want,
                        f"{fmt} {dtype} input {i} transpose={transpose}")
        buf = torch.empty(R * K + 1, dtype=dtype, device="cuda")
        xg = buf[1:].view(R, K)
        xg.copy_(x)
        assert_same(deepwell.quantize(xg, fmt, transpose=True, **kw),
                    deepwell.quantize(x, fmt, transpose=True, **kw), f"{fmt} {i} misaligned")


def every_16bit_value_in_blocks(dtype, gen, block=32):
    """Every finite bf16 / f16 value, each in a block whose amax lies 0..13 binades above it (so its
    quotient by the block scale spans every e2m1 code), blocks at every exponent the format has,
    zeros and subnormals included. Rows of `block` elements, shuffled within each row."""
    bits = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dtype).float()
    vals = bits[torch.isfinite(bits)]
    finfo = torch.finfo(dtype)
    e = torch.floor(torch.log2(vals.abs().clamp(min=finfo.tiny)))
    lo, hi = int(e.min()), int(torch.log2(torch.tensor(finfo.max)).floor())
    anchor = (e + torch.randint(0, 14, e.shape, generator=gen)).clamp(lo, hi)
    order = torch.argsort(anchor * 4 + torch.rand(anchor.shape, generator=gen))
    vals, anchor = vals[order], anchor[order]
    n = (len(vals) + block - 2) // (block - 1) * (block - 1)
    vals = torch.cat([vals, torch.zeros(n - len(vals))]).view(-1, block - 1)
    anchor = torch.cat([anchor, torch.full((n - len(anchor),), float(lo))]).view(-1, block - 1)
    # the block's amax: 1.5 * 2^(its largest anchor), at most the format's max
    top = torch.minimum(1.5 * 2.0 ** anchor.amax(dim=1, keepdim=True), torch.tensor(finfo.max))
    rows = torch.cat([vals, top * torch.where(torch.rand(top.shape, generator=gen) < 0.5, -1.0, 1.0)], 1)
    perm = torch.argsort(torch.rand(rows.shape, generator=gen), dim=1)
    return torch.gather(rows, 1, perm).to(dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("rule", ["floor", "rceil"])
def test_mxfp4_every_16bit_value(dtype, rule, seed):
    """The packed-half MXFP4 encoder (kernels.cuh, Mx4Packed) and its fp32 fallback at the ends of
    the scale range, on every finite input value: rows (row kernel and tile kernel) and columns."""
    gen = torch.Generator().manual_seed(seed)
    blocks = every_16bit_value_in_blocks(dtype, gen)  # (n, 32)
    n = blocks.shape[0] // 128 * 128
    blocks = blocks[:n]
    rows = blocks.reshape(-1, 2048)  # 64 blocks per row
    assert_same(deepwell.quantize(rows.cuda(), "mxfp4", rule=rule),
                deepwell.quantize(rows, "mxfp4", rule=rule), f"{dtype} {rule} rows")
    # columns whose 32-row groups are the blocks: full 128-row tiles, and 32-row edge tiles
    full = blocks.view(4, n // 4, 32).permute(0, 2, 1).reshape(128, n // 4)
    for x in (full, blocks.t().contiguous()):
        kw = dict(rule=rule, transpose=True)
        assert_same(deepwell.quantize(x.cuda(), "mxfp4", **kw), deepwell.quantize(x, "mxfp4", **kw),
                    f"{dtype} {rule} transposed {tuple(x.shape)}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_nvfp4_every_16bit_value(dtype, seed):
    """The NVFP4 encoders (row and tile kernels) on every finite input value, rows and columns: the
    tensor amax (given, so one call covers one window of block scales) steps over the format's
    range, so that every value meets block scales from the clamp at 2^-6 to the one at 448, under
    tensor amaxes that are powers of two and ones that are not."""
    gen = torch.Generator().manual_seed(seed)
    blocks = every_16bit_value_in_blocks(dtype, gen, block=16)  # (n, 16)
    n = blocks.shape[0] // 128 * 128
    blocks = blocks[:n]
    rows = blocks.reshape(-1, 2048)  # 128 blocks per row
    full = blocks.view(8, n // 8, 16).permute(0, 2, 1).reshape(128, n // 8)  # 16-row groups
    finfo = torch.finfo(dtype)
    lo, hi = int(math.log2(finfo.smallest_normal)) - 10, int(math.log2(finfo.max))
    for i, k in enumerate(range(lo + 12, hi + 12, 12)):
        mant = 1.0 if i % 2 == 0 else 1.0 + float(torch.rand(1, generator=gen)) * 0.9
        amax = torch.tensor([min(mant * 2.0 ** k, finfo.max)], dtype=torch.float32)
        cols = dict(transpose=True)
        for x, kw in ((rows, {}), (full, cols), (blocks.t().contiguous(), cols)):
            assert_same(deepwell.quantize(x.cuda(), "nvfp4", amax=amax.cuda(), **kw),
                        deepwell.quantize(x, "nvfp4", amax=amax, **kw),
                        f"{dtype} amax {amax.item():.3g} {tuple(x.shape)} {kw}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("magnitude", ["normal", "tiny"])
def test_nvfp4_values_at_code_boundaries(dtype, magnitude, seed):
    """NVFP4 codes of values within two 16-bit steps of the boundaries t_j * S between codes (S =
    s_t * s_b, the block's divisor; the packed encoder, kernels.cuh's Nvfp4Packed, compares with
    those bounds), both signs, block maxima untouched: rows and transposed copies, bit for bit
    against the CPU reference. "tiny" puts the f16 bounds among subnormals and the bf16 divisors
    below the packed encoder's range (its division fallback)."""
    gen = torch.Generator().manual_seed(seed)
    R, K = 128, 1024
    y = torch.randn(R, K, generator=gen) * 2.0 ** torch.randint(-6, 6, (R, 1), generator=gen).float()
    if magnitude == "tiny":
        y *= 2.0 ** (-18 if dtype == torch.float16 else -124)
    y = y.to(dtype)
    amax = torch.tensor([y.float().abs().max().item() * 1.37])  # not a power of two
    _, sb, st = deepwell.quantize(y, "nvfp4", amax=amax)
    div = (st.reshape(()) * sb.view(torch.float8_e4m3fn).float()).repeat_interleave(16, dim=1)
    mids = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
    base = (mids[torch.randint(0, 7, (R, K), generator=gen)] * div).to(dtype)
    step = torch.randint(-2, 3, (R, K), generator=gen, dtype=torch.int16)
    cand = (base.view(torch.int16) + step).view(dtype)
    cand = torch.where(torch.rand(R, K, generator=gen) < 0.5, -cand, cand)
    blk = y.float().abs().view(R, K // 16, 16)
    bmax = blk.amax(-1, keepdim=True)
    ok = (cand.float().abs().view_as(blk) < bmax) & (blk < bmax) & cand.float().isfinite().view_as(blk)
    z = torch.where(ok.view(R, K), cand, y)
    assert ok.float().mean() > 0.5
    assert torch.equal(deepwell.quantize(z, "nvfp4", amax=amax)[1], sb)  # same block scales
    assert_same(deepwell.quantize(z.cuda(), "nvfp4", amax=amax.cuda()),
                deepwell.quantize(z, "nvfp4", amax=amax), f"{dtype} {magnitude} rows")
    zt = z.t().contiguous()  # the transposed copy quantizes the rows of z again (tile kernel)
    kw = dict(amax=amax, transpose=True)
    assert_same(deepwell.quantize(zt.cuda(), "nvfp4", amax=amax.cuda(), transpose=True),
                deepwell.quantize(zt, "nvfp4", **kw), f"{dtype} {magnitude} transposed")
    assert_same(deepwell.quantize(z.cuda(), "nvfp4"), deepwell.quantize(z, "nvfp4"),
                f"{dtype} {magnitude} rows, amax reduced")


@pytest.mark.parametrize("fmt,elem,rule", cases())
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_dequantize_bit_identical(fmt, elem, rule, out_dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    # (33, 512): every warp's 32 chunks full and contiguous (the kernel's staged stores), the last
    # block partly past the end; the other shapes store chunk by chunk (tails, unaligned rows).
    for shape in shapes(fmt)[:3] + [(33, 512)]:
        x = make_input(shape, gen, nonfinite=fmt not in ("fp8_tensor", "nvfp4"))
        kw = dict(rule=rule, elem=elem if fmt not in FP4 else "e4m3")
        q = deepwell.quantize(x, fmt, **kw)
        ts = {"tensor_scale": q[2]} if fmt == "nvfp4" else {}
        cpu = deepwell.dequantize(q[0], q[1], fmt, out_dtype=out_dtype, **ts)
        tsg = {"tensor_scale": q[2].cuda()} if fmt == "nvfp4" else {}
        gpu = deepwell.dequantize(q[0].cuda(), q[1].cuda(), fmt, out_dtype=out_dtype, **tsg)
        assert_same((gpu,), (cpu,), f"dequantize {fmt} {shape} -> {out_dtype}")


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_row", "fp8_block1x128", "fp8_block128x128", "mxfp8"])
@pytest.mark.parametrize("elem", ["e4m3", "e5m2"])
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_dequantize_every_code_and_scale(fmt, elem, out_dtype, seed):
    """Every fp8 code (NaN and infinity codes too) under random scales that include zero, the
    smallest and largest, infinity and NaN: the kernel's fast path (chunks with no NaN code and a
    finite nonzero scale) and its general path must both give the reference's bits."""
    gen = torch.Generator().manual_seed(seed)
    shape = (384, 1024)
    q = deepwell.quantize(torch.randn(shape, generator=gen), fmt, elem=elem)
    codes = torch.arange(256, dtype=torch.uint8).repeat(shape[0] * shape[1] // 256)
    data = codes[torch.randperm(codes.numel(), generator=gen)].view(shape)
    # NaN codes taken out of about two thirds of the rows, so that most chunks take the fast path
    # and the rest the general one
    nan_code = (data & 0x7F) == 0x7F if elem == "e4m3" else (data & 0x7F) > 0x7C
    keep = torch.rand(shape[0], 1, generator=gen) < 0.66
    data = torch.where(nan_code & keep, data & 0x3F, data)
    if q[1].element_size() == 1:  # UE8M0: every byte, 0 (2^-127) and 0xff (NaN) included
        scales = torch.randint(0, 256, q[1].shape, generator=gen, dtype=torch.uint8)
        scales = scales.view(q[1].dtype)
    else:
        scales = 2.0 ** torch.randint(-140, 120, q[1].shape, generator=gen).float()
        scales *= 1 + torch.rand(q[1].shape, generator=gen)
        flat = scales.view(-1)
        special = torch.tensor([0.0, float("inf"), float("nan"), 1e-45, 3.4e38, -1.5])
        pick = torch.randint(0, flat.numel(), (min(flat.numel(), 12),), generator=gen)
        flat[pick] = special[torch.arange(pick.numel()) % special.numel()]
        if flat.numel() == 1:
            flat[0] = 0.75
    cpu = deepwell.dequantize(data, scales, fmt, elem=elem, out_dtype=out_dtype)
    gpu = deepwell.dequantize(data.cuda(), scales.cuda(), fmt, elem=elem, out_dtype=out_dtype)
    assert_same((gpu,), (cpu,), f"dequantize {fmt} {elem} every code -> {out_dtype}")


@pytest.mark.parametrize("fmt", FP4)
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_dequantize_fp4_every_code_and_scale(fmt, out_dtype, seed):
    """Every pair of fp4 codes under every scale byte (UE8M0 0 = 2^-127 and 0xff = NaN; UE4M3
    with its NaN bytes and sign bit) and NVFP4 tensor scales from zero and subnormal to infinity
    and NaN: the kernel's table decode (multipliers that cannot make a NaN) and its general path
    must both give the reference's bits, subnormal and overflowing products included."""
    gen = torch.Generator().manual_seed(seed)
    shape = (192, 1024)
    q = deepwell.quantize(torch.randn(shape, generator=gen), fmt)
    data = torch.randint(0, 256, q[0].shape, generator=gen, dtype=torch.uint8)
    scales = torch.randint(0, 256, q[1].shape, generator=gen, dtype=torch.uint8).view(q[1].dtype)
    tensor_scales = [None]
    if fmt == "nvfp4":
        tensor_scales = [q[2], torch.tensor([0.0]), torch.tensor([1e-45]), torch.tensor([2.0 ** -126]),
                         torch.tensor([3.4e38]), torch.tensor([float("inf")]), torch.tensor([float("nan")]),
                         torch.tensor([-1.5])]
    for ts in tensor_scales:
        kw = {} if ts is None else {"tensor_scale": ts}
        kwg = {} if ts is None else {"tensor_scale": ts.cuda()}
        cpu = deepwell.dequantize(data, scales, fmt, out_dtype=out_dtype, **kw)
        gpu = deepwell.dequantize(data.cuda(), scales.cuda(), fmt, out_dtype=out_dtype, **kwg)
        assert_same((gpu,), (cpu,), f"dequantize {fmt} every code, tensor scale {ts} -> {out_dtype}")


@pytest.mark.parametrize("fmt,elem", [("fp8_tensor", "e4m3"), ("fp8_tensor", "e5m2"), ("nvfp4", "e4m3")])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_onepass_larger_than_chip(fmt, elem, dtype, seed):
    """The one-pass kernel (16-bit x whose rows are whole 16-element chunks, amax reduced on the
    GPU) holds 192 KB of x per SM in shared memory and re-reads the rest: x of 2.6e7 elements is
    about twice what 132 SMs hold, so held and re-read units are both encoded; the other shapes
    give grids smaller than the SM count, units that end mid-row and a last unit of one chunk."""
    gen = torch.Generator().manual_seed(seed)
    binades = 8 if dtype == torch.float16 else 20
    for shape in [(3200, 8192), (4097, 16), (131, 2, 48), (1, 1024 * 16 + 16)]:
        x = make_input(shape, gen, nonfinite=False, binades=binades).to(dtype)
        for kw in ([{}, {"pow2_scales": True}] if fmt == "fp8_tensor" else [{}, {"swizzle": True}]):
            gpu = deepwell.quantize(x.cuda(), fmt, elem=elem, **kw)
            torch.cuda.synchronize()
            assert_same(gpu, deepwell.quantize(x, fmt, elem=elem, **kw), f"{fmt} {elem} {dtype} {shape} {kw}")


@pytest.mark.cuda_graph
@pytest.mark.parametrize("fmt", ["fp8_tensor", "nvfp4"])
def test_onepass_in_cuda_graph(fmt, seed):
    """The one-pass kernel is a cooperative launch: it must capture into a CUDA graph and replay
    (twice: the amax slot is zeroed inside the graph) with the result of the eager call."""
    gen = torch.Generator().manual_seed(seed)
    x = make_input((2048, 4096), gen, nonfinite=False).bfloat16().cuda()
    want = deepwell.quantize(x, fmt)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        deepwell.quantize(x, fmt)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        got = deepwell.quantize(x, fmt)
    for _ in range(2):
        for t in got:  # poison
            t.fill_(float("nan") if t.dtype == torch.float32 else 7)
        graph.replay()
        torch.cuda.synchronize()
        assert_same(got, want, f"{fmt} graph replay")


def test_cuda_input_must_be_contiguous():
    x = torch.randn(64, 128, device="cuda")[:, :64]
    with pytest.raises(ValueError, match="argument 'x'.*contiguous"):
        deepwell.quantize(x, "mxfp8")


def test_runs_on_the_current_stream(seed):
    gen = torch.Generator().manual_seed(seed)
    x = make_input((256, 512), gen, nonfinite=False).cuda()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        a = deepwell.quantize(x, "fp8_tensor")
    s.synchronize()
    assert_same(a, deepwell.quantize(x.cpu(), "fp8_tensor"), "side stream")


# ------------------------------------------------------------ the torch fast path (deepwell._torch)

FAST_CASES = [  # (format, x shape, x dtype, keyword arguments)
    ("mxfp8", (256, 512), torch.bfloat16, {}),
    ("mxfp8", (96, 160), torch.float16, {"transpose": True, "elem": "e5m2", "rule": "rceil"}),
    ("mxfp4", (3, 130, 64), torch.bfloat16, {"swizzle": True}),
    ("nvfp4", (208, 160), torch.bfloat16, {"transpose": True}),
    ("nvfp4", (64, 256), torch.float32, {"amax": "given"}),
    ("fp8_tensor", (1000, 256), torch.bfloat16, {"transpose": True}),  # data_t rows padded
    ("fp8_tensor", (512, 384), torch.float16, {"amax": "given 0-d"}),
    ("fp8_row", (77, 1000), torch.float32, {"pow2_scales": True}),
    ("fp8_block1x128", (300, 520), torch.bfloat16, {"transpose": True}),
    ("fp8_block128x128", (257, 384), torch.bfloat16, {}),
]


def _fast_quantize():
    """deepwell._torch.quantize where this build has it, else skip."""
    from torch_ext_check import torch_ext_op

    return torch_ext_op("quantize")


def _fast_kwargs(kw, x):
    kw = dict(kw)
    if kw.get("amax") == "given":
        kw["amax"] = x.abs().amax().float().reshape(1)
    elif kw.get("amax") == "given 0-d":
        kw["amax"] = x.abs().amax().float()
    return kw


@pytest.mark.parametrize("case", FAST_CASES, ids=lambda c: f"{c[0]}-{'x'.join(map(str, c[1]))}")
def test_torch_fast_path_matches_general_path(case, monkeypatch, seed):
    """The fast path (outputs from at::empty, c10's current stream) returns what the general
    path does: the same number of outputs, dtypes, shapes and strides (FP8 data_t's padded
    rows too), and the same bytes, which equal the CPU reference's."""
    from deepwell import ops

    fmt, shape, dtype, kw = case
    _fast_quantize()
    calls = []
    real = ops._torch_quantize

    def counted(*args):
        calls.append(1)
        return real(*args)

    gen = torch.Generator().manual_seed(seed)
    x = make_input(shape, gen, nonfinite=False, binades=6).to(dtype).cuda()
    kw = _fast_kwargs(kw, x)
    monkeypatch.setattr(ops, "_torch_quantize", counted)
    fast = deepwell.quantize(x, fmt, **kw)
    assert len(calls) == 1
    monkeypatch.setattr(ops, "_torch_quantize", False)
    general = deepwell.quantize(x, fmt, **kw)
    assert len(fast) == len(general)
    for i, (f, g) in enumerate(zip(fast, general)):
        assert f.dtype == g.dtype and f.shape == g.shape and f.stride() == g.stride(), (fmt, i)
    assert_same(fast, general, f"{fmt} fast path")
    if "amax" not in kw:
        cpu = deepwell.quantize(x.cpu(), fmt, **kw)
        assert_same(fast, cpu, f"{fmt} fast path against the CPU reference")


def test_torch_fast_path_errors_match_general_path(monkeypatch):
    """Bad input raises the same exception with the same message on both paths; what the fast
    path does not take (a CPU amax, an x of a dtype it does not map, a shape the library
    rejects) reaches the general path's checks through NotImplemented."""
    from torch_ext_check import assert_errors_match

    _fast_quantize()
    x = torch.randn(64, 128, device="cuda", dtype=torch.bfloat16)
    amax = x.abs().amax().float().reshape(1)
    bad = {
        "not contiguous": lambda: deepwell.quantize(x[:, :64][::2], "mxfp8"),
        "K not a multiple of 32": lambda: deepwell.quantize(x[:, :48].contiguous(), "mxfp8"),
        "int32 x": lambda: deepwell.quantize(x.int(), "fp8_row"),
        "float64 x": lambda: deepwell.quantize(x.double(), "fp8_row"),
        "0-d x": lambda: deepwell.quantize(x[0, 0], "fp8_tensor"),
        "transpose of 3-D x": lambda: deepwell.quantize(x.view(2, 32, 128), "mxfp8",
                                                        transpose=True),
        "amax with a row format": lambda: deepwell.quantize(x, "fp8_row", amax=amax),
        "amax of two elements": lambda: deepwell.quantize(x, "fp8_tensor", amax=amax.repeat(2)),
        "amax in f16": lambda: deepwell.quantize(x, "fp8_tensor", amax=amax.half()),
        "amax on the CPU": lambda: deepwell.quantize(x, "nvfp4", amax=amax.cpu()),
        "swizzle for fp8_row": lambda: deepwell.quantize(x, "fp8_row", swizzle=True),
        "pow2 scales for mxfp8": lambda: deepwell.quantize(x, "mxfp8", pow2_scales=True),
        "rceil for fp8_tensor": lambda: deepwell.quantize(x, "fp8_tensor", rule="rceil"),
    }
    assert_errors_match(bad, monkeypatch, "quantize")


@pytest.mark.cuda_graph
def test_torch_fast_path_streams_and_graphs(monkeypatch, seed):
    """The fast path runs these calls (counted) on the caller's current stream (a side stream
    here), and is capturable: a graph of a call with allocated outputs replays on new x."""
    from deepwell import ops

    fast = _fast_quantize()
    calls = []

    def counted(*args):
        res = fast(*args)
        if res is not NotImplemented:  # the CPU oracle's calls pass here too, and are declined
            calls.append(1)
        return res

    monkeypatch.setattr(ops, "_torch_quantize", counted)
    gen = torch.Generator().manual_seed(seed)
    x = make_input((512, 1024), gen, nonfinite=False).to(torch.bfloat16).cuda()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        got = deepwell.quantize(x, "nvfp4", transpose=True)
    torch.cuda.current_stream().wait_stream(s)
    assert_same(got, deepwell.quantize(x.cpu(), "nvfp4", transpose=True), "side stream")

    with torch.cuda.stream(s):  # warm-up outside the capture
        deepwell.quantize(x, "mxfp8", transpose=True)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        got = deepwell.quantize(x, "mxfp8", transpose=True)
    x.copy_(make_input((512, 1024), gen, nonfinite=False).to(torch.bfloat16))
    graph.replay()
    torch.cuda.synchronize()
    assert_same(got, deepwell.quantize(x.cpu(), "mxfp8", transpose=True), "graph replay")
    assert len(calls) == 3


def _time(fn, iters=20):
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters * 1e-3


def test_bandwidth_report():
    """Prints the logical bandwidth of each kernel (x read once + outputs written, per second) and
    its ratio to a device-to-device copy moving the same number of bytes. kFp8Tensor, kNvfp4 and
    kFp8Row read x twice (amax pass, then encode; fp8_row's second read mostly hits L2), so their
    ratio is bounded by about (in + out) / (2 in + out)."""
    M, K = 8192, 8192
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    n_in = x.numel() * 2
    src = torch.empty(n_in, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    print()
    for fmt, out_per_elem in (("mxfp8", 1 + 1 / 32), ("mxfp4", 0.5 + 1 / 32), ("nvfp4", 0.5 + 1 / 16),
                              ("fp8_block1x128", 1 + 4 / 128), ("fp8_block128x128", 1.0),
                              ("fp8_row", 1.0), ("fp8_tensor", 1.0)):
        for transpose in (False, True):
            moved = n_in + x.numel() * out_per_elem * (2 if transpose else 1)
            t = _time(lambda: deepwell.quantize(x, fmt, transpose=transpose))
            half = int(moved) // 2 // 256 * 256  # whole 256-byte blocks: the vectorized copy
            c = _time(lambda: dst[:half].copy_(src[:half]))
            print(f"quantize {fmt:17s} transpose={transpose!s:5s} {moved / t / 1e9:6.0f} GB/s, "
                  f"copy of as many bytes {2 * half / c / 1e9:6.0f} GB/s, ratio {(moved / t) / (2 * half / c):.2f}")
    q = deepwell.quantize(x, "mxfp8")
    t = _time(lambda: deepwell.dequantize(q[0], q[1], "mxfp8", out_dtype=torch.bfloat16))
    c = _time(lambda: dst[: x.numel() * 3 // 2].copy_(src[: x.numel() * 3 // 2]))
    print(f"dequantize mxfp8 -> bf16 {x.numel() * 3 / t / 1e9:6.0f} GB/s, ratio to copy "
          f"{(x.numel() * 3 / t) / (x.numel() * 3 / c):.2f}")
