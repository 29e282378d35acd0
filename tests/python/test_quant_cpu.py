"""deepwell.quantize / dequantize on CPU against an independent numpy oracle of docs/formats.md.

The oracle below is written from the format tables (float64 arithmetic, nearest value by search,
ties to the even code), not from the library; it applies the scale rules with numpy float32
arithmetic where formats.md prescribes FP32 operations.
"""
import math

import numpy as np
import pytest
import torch

import deepwell

# ------------------------------------------------------------------------------------ the oracle

SPEC = {  # ebits, mbits, bias, max normal, emax
    "e4m3": (4, 3, 7, 448.0, 8),
    "e5m2": (5, 2, 15, 57344.0, 15),
    "e2m1": (2, 1, 1, 6.0, 2),
}


def table(elem):
    """Value of every code (NaN / Inf where the format has them)."""
    eb, mb, bias, _, _ = SPEC[elem]
    codes = np.arange(2 ** (1 + eb + mb))
    s, e, m = codes >> (eb + mb), (codes >> mb) & ((1 << eb) - 1), codes & ((1 << mb) - 1)
    mag = np.where(e == 0, m / 2.0 ** mb * 2.0 ** (1 - bias), (1 + m / 2.0 ** mb) * 2.0 ** (e - bias))
    if elem == "e4m3":
        mag = np.where((e == 15) & (m == 7), np.nan, mag)
    if elem == "e5m2":
        mag = np.where(e == 31, np.where(m == 0, np.inf, np.nan), mag)
    return np.where(s == 1, -mag, mag)


def encode(v, elem):
    """Round to nearest, ties to the even code, saturate finite values; NaN -> 0x7f (fp8) or
    +6 (e2m1); Inf -> Inf in e5m2, saturated otherwise."""
    eb, mb, _, mx, _ = SPEC[elem]
    t = table(elem)
    sign_bit = 1 << (eb + mb)
    pos = [(t[c], c) for c in range(sign_bit) if np.isfinite(t[c])]
    vals = np.array([p[0] for p in pos])
    codes = np.array([p[1] for p in pos])
    v = np.asarray(v, dtype=np.float64)
    a = np.abs(v)
    i = np.clip(np.searchsorted(vals, a, side="right") - 1, 0, len(vals) - 1)
    j = np.minimum(i + 1, len(vals) - 1)
    lo, hi = vals[i], vals[j]
    up = (a - lo > hi - a) | ((a - lo == hi - a) & (codes[i] % 2 == 1))
    c = np.where(up & (j > i), codes[j], codes[i])
    c = np.where(a >= mx, codes[-1], c)
    if elem == "e5m2":
        c = np.where(np.isinf(a), 0x7C, c)
    c = c | np.where(np.signbit(v), sign_bit, 0)
    c = np.where(np.isnan(v), 0x7 if elem == "e2m1" else 0x7F, c)
    return c.astype(np.uint8)


def amax(v):
    return np.max(np.abs(v)) if v.size else np.float32(0)  # NaN propagates


F32_MIN = np.float32(2.0 ** -126)
QNAN = np.frombuffer(np.uint32(0x7FC00000).tobytes(), np.float32)[0]


def ceil_log2(r):
    """ceil(log2 r) for r > 0, exactly (float64 frexp)."""
    m, e = np.frexp(np.float64(r))
    return int(e - 1) if m == 0.5 else int(e)


def fp32_scale(a, elem, pow2):
    a = np.float32(a)
    if not np.isfinite(a):
        return QNAN
    mx = SPEC[elem][3]
    if pow2:
        e = -126 if a < F32_MIN else ceil_log2(np.float64(a) / mx)
        return np.float32(2.0 ** min(max(e, -126), 127))
    s = np.float32(a / np.float32(mx))
    return max(s, F32_MIN)


def mx_scale_exp(a, elem, rule):
    """Biased UE8M0 byte."""
    a = np.float32(a)
    if not np.isfinite(a):
        return 255
    if a < F32_MIN:
        return 0
    mx, emax = SPEC[elem][3], SPEC[elem][4]
    e = (int(np.frexp(np.float64(a))[1]) - 1 - emax) if rule == "floor" else ceil_log2(np.float64(a) / mx)
    return min(max(e, -127), 127) + 127


def encode_f32_scaled(v, s, elem):
    if not np.isfinite(s):
        return np.full(v.shape, 0x7 if elem == "e2m1" else 0x7F, np.uint8)
    return encode(np.float32(v) / np.float32(s), elem)


def oracle_quantize(x, fmt, elem="e4m3", rule="floor", pow2=False, given_amax=None):
    """Codes (unpacked, x's shape), scales (row-major), tensor scale. given_amax: the caller's
    tensor amax (fp8_tensor, nvfp4), used by its magnitude instead of x's."""
    x = np.asarray(x, dtype=np.float32)
    if fmt in ("mxfp4", "nvfp4"):
        elem = "e2m1"
    K = x.shape[-1]
    lead = x.shape[:-1]
    x2 = x.reshape(-1, K)
    R = x2.shape[0]
    codes = np.zeros((R, K), np.uint8)
    ts = None
    if fmt == "fp8_tensor":
        s = fp32_scale(amax(x2) if given_amax is None else abs(np.float32(given_amax)), elem, pow2)
        codes = encode_f32_scaled(x2, s, elem)
        scales = np.array([s], np.float32)
    elif fmt == "fp8_row":
        scales = np.zeros((R, 1), np.float32)
        for r in range(R):
            scales[r, 0] = fp32_scale(amax(x2[r]), elem, pow2)
            codes[r] = encode_f32_scaled(x2[r], scales[r, 0], elem)
        scales = scales.reshape(lead + (1,))
    elif fmt == "fp8_block1x128":
        C = -(-K // 128)
        scales = np.zeros((R, C), np.float32)
        for r in range(R):
            for g in range(C):
                blk = x2[r, g * 128:(g + 1) * 128]
                scales[r, g] = fp32_scale(amax(blk), elem, pow2)
                codes[r, g * 128:(g + 1) * 128] = encode_f32_scaled(blk, scales[r, g], elem)
        scales = scales.reshape(lead + (C,))
    elif fmt == "fp8_block128x128":
        R2 = x.shape[-2]
        xb = x.reshape(-1, R2, K)
        BR, BC = -(-R2 // 128), -(-K // 128)
        scales = np.zeros((xb.shape[0], BR, BC), np.float32)
        cb = np.zeros(xb.shape, np.uint8)
        for b in range(xb.shape[0]):
            for i in range(BR):
                for j in range(BC):
                    blk = xb[b, i * 128:(i + 1) * 128, j * 128:(j + 1) * 128]
                    s = fp32_scale(amax(blk), elem, pow2)
                    scales[b, i, j] = s
                    cb[b, i * 128:(i + 1) * 128, j * 128:(j + 1) * 128] = encode_f32_scaled(blk, s, elem)
        codes = cb.reshape(R, K)
        scales = scales.reshape(x.shape[:-2] + (BR, BC))
    elif fmt in ("mxfp8", "mxfp4"):
        C = K // 32
        scales = np.zeros((R, C), np.uint8)
        for r in range(R):
            for g in range(C):
                blk = x2[r, g * 32:(g + 1) * 32]
                b = mx_scale_exp(amax(blk), elem, rule)
                scales[r, g] = b
                if b == 255:
                    codes[r, g * 32:(g + 1) * 32] = 0x7 if elem == "e2m1" else 0x7F
                else:
                    codes[r, g * 32:(g + 1) * 32] = encode(np.float64(blk) * 2.0 ** (127 - b), elem)
        scales = scales.reshape(lead + (C,))
    else:  # nvfp4
        a_t = np.float32(amax(x2) if given_amax is None else abs(np.float32(given_amax)))
        ts = QNAN if not np.isfinite(a_t) else max(np.float32(a_t / np.float32(2688.0)), F32_MIN)
        C = K // 16
        scales = np.zeros((R, C), np.uint8)
        e4 = table("e4m3")
        for r in range(R):
            for g in range(C):
                blk = x2[r, g * 16:(g + 1) * 16]
                ab = np.float32(amax(blk))
                if not (np.isfinite(ab) and np.isfinite(ts)):
                    scales[r, g] = 0x7F
                    codes[r, g * 16:(g + 1) * 16] = 0x7
                    continue
                v = np.float32(np.float32(ab / np.float32(6.0)) / ts)
                sb = encode(np.clip(v, np.float32(2.0 ** -6), np.float32(448.0)), "e4m3")
                scales[r, g] = sb
                d = np.float32(ts * np.float32(e4[sb]))
                codes[r, g * 16:(g + 1) * 16] = encode(blk / d, "e2m1")
        scales = scales.reshape(lead + (C,))
        ts = np.array([ts], np.float32)
    return codes.reshape(x.shape), scales, ts


def oracle_dequantize(codes, scales, fmt, elem="e4m3", ts=None):
    """Floats from unpacked codes and row-major scales (float32 products, as formats.md)."""
    if fmt in ("mxfp4", "nvfp4"):
        elem = "e2m1"
    shape = codes.shape
    K = shape[-1]
    vals = table(elem)[codes.reshape(-1, K).astype(np.int64)].astype(np.float32)
    R = vals.shape[0]
    if fmt == "fp8_tensor":
        per = np.broadcast_to(scales.reshape(1, 1), (R, K))
    elif fmt == "fp8_row":
        per = np.broadcast_to(scales.reshape(R, 1), (R, K))
    elif fmt == "fp8_block1x128":
        per = np.repeat(scales.reshape(R, -1), 128, axis=1)[:, :K]
    elif fmt == "fp8_block128x128":
        R2 = shape[-2]
        s3 = scales.reshape(-1, scales.shape[-2], scales.shape[-1])
        per = np.repeat(np.repeat(s3, 128, axis=1)[:, :R2], 128, axis=2)[:, :, :K].reshape(R, K)
    elif fmt in ("mxfp8", "mxfp4"):
        b = scales.reshape(R, -1).astype(np.float64)
        f = np.where(b == 255, np.nan, 2.0 ** (b - 127))
        per = np.repeat(f, 32, axis=1).astype(np.float32)
    else:
        sb = table("e4m3")[(scales.reshape(R, -1) & 0x7F).astype(np.int64)].astype(np.float32)
        per_b = np.repeat(sb, 16, axis=1)
        out = (vals * per_b).astype(np.float32) * np.float32(ts[0])
        return out.reshape(shape)
    return (vals * per.astype(np.float32)).astype(np.float32).reshape(shape)


def to_blocked(s):
    """torchao's to_blocked(): the 128x4 tiles of Blackwell block-scaled MMA, via reshapes."""
    R, C = s.shape
    Rp, Cp = -(-R // 128) * 128, -(-C // 4) * 4
    pad = np.zeros((Rp, Cp), np.uint8)
    pad[:R, :C] = s
    blocks = pad.reshape(Rp // 128, 128, Cp // 4, 4).transpose(0, 2, 1, 3)
    blocks = blocks.reshape(-1, 4, 32, 4).transpose(0, 2, 1, 3)
    return blocks.reshape(Rp // 128, Cp // 4, 32, 16)


# ------------------------------------------------------------------------------------- helpers

def as_bytes(t):
    """uint8 numpy view of a torch / numpy byte tensor."""
    if isinstance(t, torch.Tensor):
        return t.contiguous().view(torch.uint8).numpy()
    return np.asarray(t, np.uint8)


def unpack_fp4(b):
    b = as_bytes(b)
    out = np.empty(b.shape[:-1] + (b.shape[-1] * 2,), np.uint8)
    out[..., 0::2] = b & 0xF
    out[..., 1::2] = b >> 4
    return out


def f32_bits(a):
    return np.ascontiguousarray(np.asarray(a, np.float32)).view(np.uint32)


def codes_of(data, fmt):
    return unpack_fp4(data) if fmt in ("mxfp4", "nvfp4") else as_bytes(data)


def scales_of(s):
    if isinstance(s, torch.Tensor):
        return s.view(torch.uint8).numpy() if s.element_size() == 1 else s.numpy()
    return s


def make_input(shape, rng, specials=True, nonfinite=True):
    """Random values over many binades, with special blocks planted along the last dim."""
    x = rng.standard_normal(shape).astype(np.float32)
    x *= np.float32(2.0) ** rng.integers(-20, 20, size=shape[:-1] + (1,)).astype(np.float32)
    flat = x.reshape(-1, shape[-1])
    K = shape[-1]
    if specials and flat.shape[0] >= 6 and K >= 32:
        flat[0, :32] = 0.0                      # zero block
        flat[1, :32] = -2.75                    # all-equal block
        flat[2, :32] = 1e-3
        flat[2, 5] = 3.0e4                      # single outlier
        flat[3, :32] = np.float32(2.0 ** -133)  # bf16/fp32 subnormals
        flat[4, :16] = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0] * 2, np.float32)
        if nonfinite:
            flat[5, 3] = np.nan                 # NaN block
            flat[-1, K - 1] = np.inf            # Inf block
    return x


FP8_FORMATS = ["fp8_tensor", "fp8_row", "fp8_block1x128", "fp8_block128x128", "mxfp8"]


def cases():
    out = []
    for fmt in FP8_FORMATS:
        for elem in ("e4m3", "e5m2"):
            for rule in (("floor", "rceil") if fmt == "mxfp8" else ("floor",)):
                out.append((fmt, elem, rule))
    for fmt in ("mxfp4", "nvfp4"):
        for rule in (("floor", "rceil") if fmt == "mxfp4" else ("floor",)):
            out.append((fmt, "e4m3", rule))
    return out


def shapes_for(fmt):
    if fmt in ("mxfp8", "mxfp4"):
        return [(8, 64), (3, 5, 96), (130, 32)]
    if fmt == "nvfp4":
        return [(8, 48), (2, 7, 16), (130, 64)]
    return [(8, 64), (3, 7, 300), (130, 129), (1, 1)]


# --------------------------------------------------------------------------------------- tests

@pytest.mark.parametrize("elem", ["e4m3", "e5m2"])
def test_every_fp8_code_decodes(elem):
    codes = np.arange(256, dtype=np.uint8).reshape(8, 32)
    scales = np.ones((1,), np.float32)
    out = deepwell.dequantize(codes, scales, "fp8_tensor", elem=elem)
    ref = table(elem).reshape(8, 32)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    fin = ~np.isnan(ref)
    np.testing.assert_array_equal(out[fin], ref[fin])
    # ... and re-encodes to itself (scale 1 for e4m3 only works below 448: use fp8_tensor with
    # amax 448 / 57344 so that the scale is exactly 1).
    vals = ref[fin & np.isfinite(ref)].astype(np.float32)
    vals = np.concatenate([vals, [SPEC[elem][3]]]).astype(np.float32)
    data, s = deepwell.quantize(vals.reshape(1, -1), "fp8_tensor", elem=elem)
    assert s[0] == 1.0
    np.testing.assert_array_equal(as_bytes(data)[0], encode(vals, elem))
    np.testing.assert_array_equal(table(elem)[as_bytes(data)[0]], vals)


def test_every_fp4_code_decodes():
    codes = np.arange(16, dtype=np.uint8)
    packed = np.tile((codes[0::2] | (codes[1::2] << 4)).astype(np.uint8), 4).reshape(1, 32)
    scales = np.full((1, 2), 127, np.uint8)
    out = deepwell.dequantize(packed, scales, "mxfp4")
    np.testing.assert_array_equal(out[0, :16], table("e2m1"))
    assert np.signbit(out[0, 8])


def test_oracle_sanity():
    """The oracle itself: formats.md's worked example and a few ties."""
    assert encode(np.float32(500.0), "e4m3") == 0x7E
    assert mx_scale_exp(500.0, "e4m3", "floor") == 127
    assert mx_scale_exp(500.0, "e4m3", "rceil") == 128
    assert list(encode(np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]), "e2m1")) == [0, 2, 2, 4, 4, 6, 6]
    assert encode(np.float32(61440.0), "e5m2") == 0x7B


@pytest.mark.parametrize("fmt,elem,rule", cases())
@pytest.mark.parametrize("dtype", [np.float32, "bfloat16", "float16"])
def test_quantize_matches_oracle(fmt, elem, rule, dtype, seed):
    rng = np.random.default_rng(seed)
    for shape in shapes_for(fmt):
        x = make_input(shape, rng, nonfinite=fmt not in ("fp8_tensor", "nvfp4"))
        if dtype == np.float32:
            xin = x
        else:
            xin = torch.from_numpy(x).to(getattr(torch, dtype))
            x = xin.float().numpy()
        res = deepwell.quantize(xin, fmt, rule=rule, elem=elem if fmt not in ("mxfp4", "nvfp4") else "e4m3")
        codes, scales, ts = oracle_quantize(x, fmt, elem, rule)
        got = codes_of(res[0], fmt)
        np.testing.assert_array_equal(got, codes, err_msg=f"{fmt} {elem} {rule} {shape}")
        s = scales_of(res[1])
        if s.dtype == np.float32:
            np.testing.assert_array_equal(f32_bits(s), f32_bits(scales))
        else:
            np.testing.assert_array_equal(s, scales)
        if fmt == "nvfp4":
            np.testing.assert_array_equal(f32_bits(scales_of(res[2])), f32_bits(ts))
        # dequantize matches the oracle's decode bit for bit (NaN where the oracle has NaN)
        kw = {"tensor_scale": res[2]} if fmt == "nvfp4" else {}
        if fmt not in ("mxfp4", "nvfp4"):
            kw["elem"] = elem
        back = deepwell.dequantize(res[0], res[1], fmt, **kw)
        back = back.numpy() if isinstance(back, torch.Tensor) else back
        ref = oracle_dequantize(codes, scales, fmt, elem, ts)
        np.testing.assert_array_equal(np.isnan(back), np.isnan(ref))
        np.testing.assert_array_equal(np.nan_to_num(back), np.nan_to_num(ref))


def tie_input(fmt, elem):
    """Every midpoint between adjacent values of the element grid (both signs), in blocks whose
    scale is exactly 1: each block of 32 (16 for nvfp4) starts with the max normal (nvfp4: the
    tensor amax is 2688 = 448 * 6 so s_t = 1, and each block's amax is 6 so s_b = 1)."""
    if fmt in ("mxfp4", "nvfp4"):
        elem = "e2m1"
    t = table(elem)
    vals = np.unique(t[np.isfinite(t) & (t >= 0)])
    mids = (vals[:-1] + vals[1:]) / 2
    mids = np.concatenate([mids, -mids, np.nextafter(mids, 0), np.nextafter(mids, np.inf)])
    mx = SPEC[elem][3]
    per = 15 if fmt == "nvfp4" else 31
    blocks = []
    for i in range(0, len(mids), per):
        chunk = mids[i:i + per]
        blocks.append(np.concatenate([[mx], chunk, np.zeros(per - len(chunk))]))
    x = np.concatenate(blocks).astype(np.float32)
    if fmt == "nvfp4":
        x = np.concatenate([x, [2688.0], np.zeros(15)]).astype(np.float32)
    pad = (-len(x)) % 128
    return np.concatenate([x, np.zeros(pad, np.float32)]).reshape(1, -1)


@pytest.mark.parametrize("fmt,elem", [("fp8_tensor", "e4m3"), ("fp8_tensor", "e5m2"),
                                      ("nvfp4", "e4m3")])
@pytest.mark.parametrize("factor", [1.0, 3.0, -2.0, 0.25, 0.0])
def test_given_amax_matches_oracle(fmt, elem, factor, seed):
    """amax= (delayed scaling): the scale comes from |amax|; x's own amax gives the default
    result; a smaller one saturates; 0 gives the smallest scale."""
    rng = np.random.default_rng(seed)
    x = make_input((37, 96), rng, nonfinite=False)
    own = amax(x)
    given = np.array([own * factor], np.float32)
    for xin, am in ((x, given), (torch.from_numpy(x), torch.from_numpy(given)),
                    (torch.from_numpy(x), torch.tensor(float(given[0])))):  # 0-d accepted
        res = deepwell.quantize(xin, fmt, elem=elem, amax=am)
        with np.errstate(over="ignore"):  # amax 0: x / 2^-126 overflows, then saturates
            codes, scales, ts = oracle_quantize(x, fmt, elem, given_amax=given[0])
        np.testing.assert_array_equal(codes_of(res[0], fmt), codes, err_msg=f"{fmt} {factor}")
        if fmt == "nvfp4":
            np.testing.assert_array_equal(scales_of(res[1]), scales)
            np.testing.assert_array_equal(f32_bits(scales_of(res[2])), f32_bits(ts))
        else:
            np.testing.assert_array_equal(f32_bits(scales_of(res[1])), f32_bits(scales))
    if factor == 1.0:
        default = deepwell.quantize(x, fmt, elem=elem)
        for a, b in zip(res, default):
            np.testing.assert_array_equal(scales_of(a) if isinstance(a, torch.Tensor) else a,
                                          scales_of(b))
        xt = np.ascontiguousarray(x[:32])  # the transposed copy of nvfp4 needs R % 16 == 0
        t = deepwell.quantize(xt, fmt, elem=elem, amax=np.array([amax(xt)]), transpose=True)
        t0 = deepwell.quantize(xt, fmt, elem=elem, transpose=True)
        for a, b in zip(t, t0):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("fmt,elem,rule", cases())
def test_ties_round_to_even_in_every_format(fmt, elem, rule):
    x = tie_input(fmt, elem)
    e = elem if fmt not in ("mxfp4", "nvfp4") else "e4m3"
    res = deepwell.quantize(x, fmt, rule=rule, elem=e)
    codes, scales, _ = oracle_quantize(x, fmt, elem, rule)
    if scales.dtype == np.float32:
        assert np.all(scales == 1.0)
    np.testing.assert_array_equal(codes_of(res[0], fmt), codes)


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_row", "fp8_block1x128"])
def test_power_of_two_scales(fmt, seed):
    rng = np.random.default_rng(seed)
    x = make_input((6, 200), rng, nonfinite=False)
    data, scales = deepwell.quantize(x, fmt, pow2_scales=True)
    codes, ref_scales, _ = oracle_quantize(x, fmt, "e4m3", pow2=True)
    np.testing.assert_array_equal(f32_bits(scales), f32_bits(ref_scales))
    np.testing.assert_array_equal(as_bytes(data), codes)
    m, _ = np.frexp(scales)
    assert np.all(m == 0.5)


@pytest.mark.parametrize("fmt,elem,rule", cases())
def test_transposed_copy_matches_oracle_of_transpose(fmt, elem, rule, seed):
    rng = np.random.default_rng(seed)
    R = 64 if fmt in ("mxfp8", "mxfp4", "nvfp4") else 70
    K = 96 if fmt in ("mxfp8", "mxfp4", "nvfp4") else 150
    x = make_input((R, K), rng, nonfinite=fmt not in ("fp8_tensor", "nvfp4"))
    e = elem if fmt not in ("mxfp4", "nvfp4") else "e4m3"
    res = deepwell.quantize(torch.from_numpy(x), fmt, rule=rule, elem=e, transpose=True)
    codes_t, scales_t, _ = oracle_quantize(np.ascontiguousarray(x.T), fmt, elem, rule)
    n = 3 if fmt == "nvfp4" else 2
    np.testing.assert_array_equal(codes_of(res[n], fmt), codes_t)
    if fmt == "fp8_tensor":
        assert len(res) == 3
    else:
        s = scales_of(res[n + 1])
        if s.dtype == np.float32:
            np.testing.assert_array_equal(f32_bits(s), f32_bits(scales_t))
        else:
            np.testing.assert_array_equal(s, scales_t)


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_row", "fp8_block1x128", "fp8_block128x128"])
@pytest.mark.parametrize("lib", ["torch", "numpy"])
def test_transposed_copy_rows_padded_to_32_bytes(fmt, lib, seed):
    """R % 32 != 0: data_t is a (K, R) view whose rows start round_up(R, 32) codes apart (GEMMs'
    TMA loads need 16-byte rows; 32-byte ones are written fastest); its codes are the oracle's
    for x^T, and dequantize reads the view in place. R % 32 == 0 keeps a contiguous data_t."""
    rng = np.random.default_rng(seed)
    for R, ld in ((37, 64), (32, 32), (48, 64), (1, 32)):
        x = make_input((R, 64), rng, nonfinite=False)
        res = deepwell.quantize(torch.from_numpy(x) if lib == "torch" else x, fmt, transpose=True)
        data_t = res[2]
        if lib == "torch":
            strides = data_t.stride()
        else:
            strides = tuple(n // data_t.itemsize for n in data_t.strides)
        assert tuple(data_t.shape) == (64, R) and strides[0] == ld, (R, strides)
        assert R == 1 or strides[1] == 1
        codes_t, _, _ = oracle_quantize(np.ascontiguousarray(x.T), fmt, "e4m3", "floor")
        np.testing.assert_array_equal(codes_of(data_t, fmt), codes_t)
        scales_t = res[1] if fmt == "fp8_tensor" else res[3]
        dense = data_t.contiguous() if lib == "torch" else np.ascontiguousarray(data_t)
        got = deepwell.dequantize(data_t, scales_t, fmt)
        want = deepwell.dequantize(dense, scales_t, fmt)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_padded_rows_rejected_for_fp4_and_column_strides():
    """dequantize reads FP8 data with padded rows; fp4 data and other layouts get a clear error."""
    x = torch.randn(64, 64)
    data, scales, ts = deepwell.quantize(x, "nvfp4")
    wide = torch.zeros(64, 48, dtype=torch.uint8)
    wide[:, :32] = data
    with pytest.raises(ValueError, match="data.*contiguous"):
        deepwell.dequantize(wide[:, :32], scales, "nvfp4", tensor_scale=ts)
    q, s = deepwell.quantize(x, "fp8_block1x128")
    with pytest.raises(ValueError, match="data.*unit stride along its rows"):
        deepwell.dequantize(q.t().contiguous().t(), s, "fp8_block1x128")


@pytest.mark.parametrize("fmt", ["mxfp8", "mxfp4", "nvfp4"])
def test_swizzled_scales(fmt, seed):
    rng = np.random.default_rng(seed)
    for shape in [(130, 160), (2, 100, 64), (7, 32)]:
        x = make_input(shape, rng, nonfinite=False)
        plain = deepwell.quantize(x, fmt)
        swz = deepwell.quantize(x, fmt, swizzle=True)
        np.testing.assert_array_equal(as_bytes(swz[0]), as_bytes(plain[0]))
        rm = plain[1].reshape(-1, plain[1].shape[-1])
        np.testing.assert_array_equal(swz[1], to_blocked(rm))
        np.testing.assert_array_equal(deepwell.swizzle_scales(plain[1]), swz[1])
        np.testing.assert_array_equal(deepwell.unswizzle_scales(swz[1], plain[1].shape), plain[1])
        kw = {"tensor_scale": swz[2]} if fmt == "nvfp4" else {}
        a = deepwell.dequantize(swz[0], swz[1], fmt, swizzle=True, **kw)
        b = deepwell.dequantize(plain[0], plain[1], fmt, **kw)
        np.testing.assert_array_equal(a, b)


def test_torch_and_numpy_agree_and_dtypes(seed):
    rng = np.random.default_rng(seed)
    x = make_input((16, 64), rng, nonfinite=False)
    for fmt in ("mxfp8", "nvfp4", "fp8_block1x128"):
        a = deepwell.quantize(x, fmt)
        b = deepwell.quantize(torch.from_numpy(x), fmt)
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, as_bytes(v) if v.element_size() == 1 else v.numpy())
    d, s = deepwell.quantize(torch.from_numpy(x), "mxfp8", elem="e5m2")
    assert d.dtype == torch.float8_e5m2
    assert s.dtype == getattr(torch, "float8_e8m0fnu", torch.uint8)
    d, s, t = deepwell.quantize(torch.from_numpy(x), "nvfp4")
    assert d.dtype == torch.uint8 and d.shape == (16, 32)
    assert s.dtype == torch.float8_e4m3fn and t.dtype == torch.float32 and t.shape == (1,)
    out = deepwell.dequantize(d, s, "nvfp4", tensor_scale=t, out_dtype=torch.bfloat16)
    assert out.dtype == torch.bfloat16 and out.shape == (16, 64)


def test_round_trip_error_is_bounded(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((32, 256)).astype(np.float32)
    for fmt, bound in (("mxfp8", 1 / 8), ("fp8_row", 1 / 16), ("nvfp4", 1 / 3), ("mxfp4", 1 / 2)):
        res = deepwell.quantize(x, fmt, rule="rceil" if fmt == "mxfp4" else "floor")
        kw = {"tensor_scale": res[2]} if fmt == "nvfp4" else {}
        y = deepwell.dequantize(res[0], res[1], fmt, **kw)
        assert np.max(np.abs(y - x)) <= bound * np.max(np.abs(x)), fmt


# ---------------------------------------------------------------------------------- validation

X = np.zeros((4, 64), np.float32)


@pytest.mark.parametrize("call,exc,name", [
    (lambda: deepwell.quantize(X, "fp9"), ValueError, "format"),
    (lambda: deepwell.quantize(X, 4), TypeError, "format"),
    (lambda: deepwell.quantize(X, rule="round"), ValueError, "rule"),
    (lambda: deepwell.quantize(X, elem="e3m4"), ValueError, "elem"),
    (lambda: deepwell.quantize(X, "nvfp4", elem="e5m2"), ValueError, "elem"),
    (lambda: deepwell.quantize(X, transpose=1), TypeError, "transpose"),
    (lambda: deepwell.quantize(X, swizzle="yes"), TypeError, "swizzle"),
    (lambda: deepwell.quantize([[1.0]]), TypeError, "x"),
    (lambda: deepwell.quantize(X.astype(np.int32)), TypeError, "x"),
    (lambda: deepwell.quantize(np.zeros((4, 48), np.float32)), ValueError, "x"),
    (lambda: deepwell.quantize(np.zeros((4, 40), np.float32), "nvfp4"), ValueError, "x"),
    (lambda: deepwell.quantize(np.zeros((2, 4, 64), np.float32), transpose=True), ValueError, "x"),
    (lambda: deepwell.quantize(np.zeros((48, 64), np.float32), transpose=True), ValueError, "x"),
    (lambda: deepwell.quantize(X, "fp8_row", swizzle=True), ValueError, "swizzle"),
    (lambda: deepwell.quantize(X, "fp8_row", rule="rceil"), ValueError, "rule"),
    (lambda: deepwell.quantize(X, "mxfp8", pow2_scales=True), ValueError, "pow2_scales"),
    (lambda: deepwell.quantize(np.zeros((64,), np.float32), "128x128"), ValueError, "x"),
    (lambda: deepwell.quantize(X, "mxfp8", amax=np.ones(1, np.float32)), ValueError, "amax"),
    (lambda: deepwell.quantize(X, "fp8_tensor", amax=np.ones(2, np.float32)), ValueError, "amax"),
    (lambda: deepwell.quantize(X, "fp8_tensor", amax=np.ones(1, np.float16)), TypeError, "amax"),
    (lambda: deepwell.quantize(X, "fp8_tensor", amax=1.0), TypeError, "amax"),
    (lambda: deepwell.dequantize(np.zeros((4, 64), np.uint8), np.zeros((4, 3), np.uint8)),
     ValueError, "scales"),
    (lambda: deepwell.dequantize(np.zeros((4, 32), np.uint8), np.zeros((4, 4), np.uint8), "nvfp4"),
     ValueError, "tensor_scale"),
    (lambda: deepwell.dequantize(np.zeros((4, 64), np.uint8), np.zeros((4, 2), np.uint8),
                                 out_dtype="int8"), TypeError, "out_dtype"),
    (lambda: deepwell.dequantize(np.zeros((4, 64), np.float32), np.zeros((4, 2), np.uint8)),
     TypeError, "data"),
    (lambda: deepwell.dequantize(np.zeros((4, 64), np.uint8), np.zeros((4, 2), np.float32)),
     TypeError, "scales"),
    (lambda: deepwell.dequantize(np.zeros((4, 64), np.uint8), np.zeros((1,), np.float32), "fp8_tensor",
                                 swizzle=True), ValueError, "swizzle"),
])
def test_bad_arguments_name_the_argument(call, exc, name):
    with pytest.raises(exc, match=f"argument '{name}'"):
        call()


def test_output_shape_errors_are_reported_as_quantize():
    """What is rejected while sizing the outputs (the native quantize_shapes) reads as quantize's
    error, naming the caller's argument."""
    with pytest.raises(ValueError, match=r"^quantize: argument 'swizzle'"):
        deepwell.quantize(X, "fp8_row", swizzle=True)
    with pytest.raises(ValueError, match=r"^quantize: argument 'x'"):
        deepwell.quantize(np.zeros((4, 48), np.float32))
