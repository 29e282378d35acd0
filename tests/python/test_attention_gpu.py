"""The sm_90 attention forward kernel against float64 references and the CPU backend.

Every output is poisoned (NaN) before the call, so an unwritten element fails the comparison.
"""
import math

import pytest

torch = pytest.importorskip("torch")
import deepwell  # noqa: E402
from attention_oracle import dense, rel_l2, varlen  # noqa: E402
from kernel_names import kernel_names  # noqa: E402
from torch_ext_check import assert_errors_match, torch_ext_op  # noqa: E402

pytestmark = pytest.mark.gpu

TOL = {torch.bfloat16: 1e-2, torch.float16: 5e-3}
LSE_TOL = 1e-4


def rand(shape, dtype, gen, scale=1.0):
    return (torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32) * scale).to(dtype)


def run(q, k, v, **kw):
    """deepwell on poisoned outputs: returns (out, lse)."""
    varlen_ = kw.get("cu_seqlens_q") is not None
    out = torch.full_like(q, float("nan"))
    lse_shape = (q.shape[1], q.shape[0]) if varlen_ else (q.shape[0], q.shape[2], q.shape[1])
    lse = torch.full(lse_shape, float("nan"), device=q.device, dtype=torch.float32)
    deepwell.ops.forward_into(q, k, v, out, lse, **kw)
    return out, lse


def check(q, k, v, dtype=None, **kw):
    out, lse = run(q, k, v, **kw)
    ref_kw = {x: kw[x] for x in ("causal", "window", "scale") if x in kw}
    if kw.get("cu_seqlens_q") is not None:
        ref_out, ref_lse = varlen(q, k, v, kw["cu_seqlens_q"], kw["cu_seqlens_k"], **ref_kw)
    else:
        ref_out, ref_lse = dense(q, k, v, **ref_kw)
    assert not torch.isnan(out).any(), "unwritten (poisoned) output elements"
    assert not torch.isnan(lse).any(), "unwritten (poisoned) lse elements"
    e_out = rel_l2(out, ref_out)
    e_lse = rel_l2(lse, ref_lse)
    assert e_out <= TOL[q.dtype], f"out rel L2 {e_out:.3e}"
    assert e_lse <= LSE_TOL, f"lse rel L2 {e_lse:.3e}"
    return out, lse


def check_masks(Sq, Sk, D, gen, window, bitwise=False):
    """Both dtypes, 4 query heads on 2 K/V heads: no mask (bitwise repeatable if asked), causal,
    and `window`."""
    for dtype in (torch.bfloat16, torch.float16):
        q = rand((1, Sq, 4, D), dtype, gen)
        k, v = rand((1, Sk, 2, D), dtype, gen), rand((1, Sk, 2, D), dtype, gen)
        check(q, k, v)
        if bitwise:
            a, b = deepwell.attention(q, k, v), deepwell.attention(q, k, v)
            assert torch.equal(a, b), "not bitwise repeatable"
        check(q, k, v, causal=True)
        check(q, k, v, window=window)


def check_varlen(lens_q, lens_k, hq, hkv, D, gen, masks=({}, {"causal": True})):
    """A packed bf16 batch of sequences of these lengths (cu_seqlens from them), checked under
    each mask in `masks`."""
    cu_q, cu_k = (torch.tensor([0] + list(torch.tensor(n).cumsum(0)), dtype=torch.int32,
                               device="cuda") for n in (lens_q, lens_k))
    q = rand((sum(lens_q), hq, D), torch.bfloat16, gen)
    k, v = (rand((sum(lens_k), hkv, D), torch.bfloat16, gen) for _ in range(2))
    for kw in masks:
        check(q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=max(lens_q),
              max_seqlen_k=max(lens_k), **kw)


def check_side_stream_and_graph(q, k, v, expected, gen):
    """The call on a side stream gives `expected` bit for bit; captured in a CUDA graph and
    replayed on new queries, it gives what an eager call on them does."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        on_side = deepwell.attention(q, k, v)
    torch.cuda.current_stream().wait_stream(s)
    assert torch.equal(on_side, expected)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = deepwell.attention(q, k, v)
    q.copy_(rand(q.shape, q.dtype, gen))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(captured, deepwell.attention(q, k, v))


SHAPES = [  # (B, Sq, Sk, Hq, Hkv, D)
    (2, 128, 128, 4, 4, 128),
    (1, 1, 1, 2, 2, 64),
    (2, 17, 17, 4, 2, 128),
    (1, 1000, 1000, 2, 1, 64),
    (1, 4097, 4097, 2, 2, 128),
    (2, 300, 77, 8, 1, 256),
    (2, 77, 300, 8, 8, 256),
    (3, 200, 513, 6, 3, 128),
    (1, 513, 200, 2, 2, 64),
]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_dense_shapes(shape, causal, dtype, seed):
    B, Sq, Sk, Hq, Hkv, D = shape
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = rand((B, Sq, Hq, D), dtype, g), rand((B, Sk, Hkv, D), dtype, g), rand((B, Sk, Hkv, D), dtype, g)
    check(q, k, v, causal=causal)


@pytest.mark.parametrize("D", [8, 40, 72, 96, 136, 200])
def test_head_dims_between_buckets(D, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (rand((2, 150, 4, D), torch.bfloat16, g) for _ in range(3))
    check(q, k, v, causal=True)
    check(q, k, v)


@pytest.mark.parametrize("window", [(0, 0), (5, 3), (16, -1), (-1, 7), (100, 100), (300, 0)])
@pytest.mark.parametrize("sq_sk", [(500, 500), (300, 700), (700, 300)])
def test_sliding_windows(window, sq_sk, seed):
    Sq, Sk = sq_sk
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = rand((2, Sq, 4, 128), torch.bfloat16, g)
    k, v = rand((2, Sk, 2, 128), torch.bfloat16, g), rand((2, Sk, 2, 128), torch.bfloat16, g)
    check(q, k, v, window=window)
    check(q, k, v, window=(window[0], 0), causal=True)


@pytest.mark.parametrize(
    "sq_sk", [(300, 700), (1024, 700), (1408, 1408), (1000, 1500), (1409, 1100), (3001, 2990)])
def test_d64_right_bounded_tiles(sq_sk, seed):
    """d <= 64 with keys bounded on the right runs 64x64 tiles three CTAs per SM while seqlen_q
    and seqlen_k are both <= 1408, 128x128 tiles up to seqlen_q 1024 (longer keys), the unmasked
    192x128 tile after (partial last key tiles, Sq != Sk both ways)."""
    Sq, Sk = sq_sk
    g = torch.Generator(device="cuda").manual_seed(seed)
    for dtype in (torch.bfloat16, torch.float16):
        q = rand((1, Sq, 4, 64), dtype, g)
        k, v = rand((1, Sk, 2, 64), dtype, g), rand((1, Sk, 2, 64), dtype, g)
        check(q, k, v, causal=True)
        check(q, k, v, window=(40, 5))


@pytest.mark.parametrize(
    "sq_sk", [(2047, 2047), (2049, 2049), (333, 2100), (2100, 333), (6143, 6143), (700, 6145)])
def test_d256_long_key_tiles(sq_sk, seed):
    """d = 256 runs 64-key tiles that store O in two passes of 128 columns at every length (80-key
    tiles ran from 2k keys until session 33): odd lengths around the old thresholds, partial last
    key tiles, GQA, causal bottom-right aligned, windows narrower than a tile, both dtypes."""
    Sq, Sk = sq_sk
    g = torch.Generator(device="cuda").manual_seed(seed)
    check_masks(Sq, Sk, 256, g, window=(37, 5))
    # varlen with long and empty sequences.
    check_varlen([5, 0, 1300, 77], [2100, 3, 0, 90], 4, 1, 256, g)


@pytest.mark.parametrize("D, sq_sk", [
    (64, (1537, 1537)), (64, (1600, 1700)), (64, (4096, 4096)), (64, (1500, 1400)),
    (256, (700, 700)), (256, (129, 2000)), (256, (4097, 4097)), (256, (6180, 6180))])
def test_partial_first_tile(D, sq_sk, monkeypatch, seed):
    """With a right bound (causal, windows) the m-blocks are cut from the end of the sequence
    where that moves a partial tile's idle rows to the first tile (SeqInfo::q_pad): the 192x128
    d = 64 tile (q_pad 128 at 1537, 1600, 4096; none at 1500) and d = 256's 128x64 / 128x80
    tiles (q_pad 64 at 700, 129, 4097; 80 at 6180). The first tile stores only its own rows, by
    row; every other tile by TMA. Many tiles per CTA, varlen with a q_pad per sequence."""
    Sq, Sk = sq_sk
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = rand((2, Sq, 2, D), torch.bfloat16, g)
    k, v = rand((2, Sk, 1, D), torch.bfloat16, g), rand((2, Sk, 1, D), torch.bfloat16, g)
    check(q, k, v, causal=True)
    check(q, k, v, window=(150, 3))
    check(q.half(), k.half(), v.half(), causal=True)
    monkeypatch.setenv("DEEPWELL_ATTN_MAX_GRID", "3")
    check(q, k, v, causal=True)
    monkeypatch.delenv("DEEPWELL_ATTN_MAX_GRID")
    check_varlen([Sq, 5, 0, 300, 129, 1600 if D == 64 else 77],
                 [Sk, 40, 7, 300, 129, 1500 if D == 64 else 90], 2, 1, D, g,
                 masks=({"causal": True},))


@pytest.mark.parametrize("D", [64, 128, 256])
def test_varlen_with_empty_sequences(D, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    lens_q = [5, 0, 300, 1, 129, 0, 64]
    lens_k = [9, 3, 0, 1, 400, 0, 64]  # third sequence: queries but no keys
    check_varlen(lens_q, lens_k, 8, 2, D, g, masks=({}, {"causal": True}, {"window": (20, 10)}))


def test_rows_with_nothing_to_attend(seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = rand((2, 400, 2, 64), torch.bfloat16, g)
    k, v = rand((2, 50, 2, 64), torch.bfloat16, g), rand((2, 50, 2, 64), torch.bfloat16, g)
    out, lse = check(q, k, v, causal=True)  # rows 0..349 see no key
    assert (out[:, :350] == 0).all() and torch.isinf(lse[:, :, :350]).all()
    out, lse = check(q, k, v, window=(3, 0))
    q2 = rand((1, 70, 2, 64), torch.bfloat16, g)
    k2 = rand((1, 0, 2, 64), torch.bfloat16, g)
    out, lse = check(q2, k2, k2)  # no keys at all
    assert (out == 0).all()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_large_magnitude_inputs(dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = rand((2, 333, 4, 128), dtype, g, scale=1e3)
    k = rand((2, 333, 4, 128), dtype, g, scale=1e3)
    v = rand((2, 333, 4, 128), dtype, g)
    check(q, k, v, causal=True)
    check(q, k, v)


@pytest.mark.parametrize("D", [64, 128, 256])
@pytest.mark.parametrize("rise", [6.0, 60.0, 600.0])
def test_rising_scores_conditional_rescale(D, rise, seed):
    """Scores that rise by `rise` (log2 units) from the last key to the first, the order in which
    the kernel visits key blocks: the subtracted row max lags the true one by up to
    kRescaleLog2 (8) and moves only past it (fwd_sm90_softmax.cuh): never after the first block
    (6), every few blocks (60), at every block (600). Noise makes the rows of a warp differ."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    B, Sq, Sk, H = 1, 300, 1000, 2
    u = torch.nn.functional.normalize(torch.randn(H, D, generator=g, device="cuda"), dim=-1)
    ramp = torch.linspace(1.0, 0.0, Sk, device="cuda")  # key 0 scores highest
    b = ramp * rise * math.sqrt(D) / math.log2(math.e)  # scale 1/sqrt(D): s * log2(e) spans rise
    q = (u[None, None] + 0.05 * torch.randn(B, Sq, H, D, generator=g, device="cuda"))
    k = b[None, :, None, None] * u[None, None] + torch.randn(B, Sk, H, D, generator=g, device="cuda")
    v = torch.randn(B, Sk, H, D, generator=g, device="cuda")
    q, k, v = (t.to(torch.bfloat16) for t in (q, k, v))
    check(q, k, v)
    check(q, k, v, causal=True)
    check(q, k, v, window=(200, 0))
    check(q, k, v, window=(200, -1))  # left bound only: the unmasked tiles with a mask


def test_scale_and_strided_layouts(seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    # q, k, v as slices of one packed (B, S, 3, H, D) projection, and a BHSD out.
    qkv = rand((2, 257, 3, 4, 128), torch.bfloat16, g)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    check(q, k, v, scale=0.05, causal=True)
    # BHSD tensors seen as BSHD through strides.
    qb, kb, vb = (rand((2, 4, 191, 64), torch.bfloat16, g) for _ in range(3))
    check(qb.transpose(1, 2), kb.transpose(1, 2), vb.transpose(1, 2))


def test_against_cpu_backend(seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = rand((2, 131, 4, 64), torch.bfloat16, g), rand((2, 97, 2, 64), torch.bfloat16, g), rand((2, 97, 2, 64), torch.bfloat16, g)
    out, lse = run(q, k, v, causal=True)
    out_cpu, lse_cpu = deepwell.attention(q.cpu(), k.cpu(), v.cpu(), causal=True, return_lse=True)
    assert rel_l2(out.cpu(), out_cpu) <= 1e-2
    assert rel_l2(lse.cpu(), lse_cpu) <= LSE_TOL


def test_bitwise_deterministic(seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (rand((4, 1024, 8, 128), torch.bfloat16, g) for _ in range(3))
    a = deepwell.attention(q, k, v, causal=True)
    b = deepwell.attention(q, k, v, causal=True)
    assert torch.equal(a, b)


def test_against_sdpa(seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (rand((2, 512, 8, 128), torch.bfloat16, g) for _ in range(3))
    for causal in (False, True):
        ours = deepwell.attention(q, k, v, causal=causal)
        ref = torch.nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal).transpose(1, 2)
        assert rel_l2(ours, ref) <= 1e-2


@pytest.mark.cuda_graph
def test_side_stream_and_cuda_graph(seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (rand((2, 256, 4, 64), torch.bfloat16, g) for _ in range(3))
    expected = deepwell.attention(q, k, v, causal=True)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        on_side = deepwell.attention(q, k, v, causal=True)
    torch.cuda.current_stream().wait_stream(s)
    assert torch.equal(on_side, expected)

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = deepwell.attention(q, k, v, causal=True)
    q.copy_(rand(q.shape, q.dtype, g))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(captured, deepwell.attention(q, k, v, causal=True))


def test_torch_compile_custom_op(seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (rand((2, 128, 4, 64), torch.bfloat16, g) for _ in range(3))

    @torch.compile(fullgraph=True)
    def f(q, k, v):
        return deepwell.attention(q, k, v, causal=True) * 2

    assert torch.equal(f(q, k, v), deepwell.attention(q, k, v, causal=True) * 2)


def test_cuda_errors():
    x = torch.zeros((1, 8, 2, 264), device="cuda", dtype=torch.bfloat16)
    with pytest.raises(NotImplementedError, match="multiple of 8 and at most 256"):
        deepwell.attention(x, x, x)
    x = torch.zeros((1, 8, 2, 64), device="cuda", dtype=torch.float32)
    with pytest.raises(TypeError, match="bf16 or f16"):
        deepwell.attention(x, x, x)
    base = torch.zeros(1 * 8 * 2 * 64 + 4, device="cuda", dtype=torch.bfloat16)
    mis = base[4:].view(1, 8, 2, 64)  # 8-byte offset: not 16-byte aligned
    with pytest.raises(ValueError, match="aligned to 16 bytes"):
        deepwell.attention(mis, mis, mis)
    q = torch.zeros((1, 8, 2, 64), device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="argument 'k'"):
        deepwell.attention(q, q.cpu(), q)


@pytest.mark.parametrize("max_grid", [1, 3, 20])
def test_many_tiles_per_cta(max_grid, monkeypatch, seed):
    """The persistent loop: cap the grid so every CTA runs many consecutive tiles."""
    monkeypatch.setenv("DEEPWELL_ATTN_MAX_GRID", str(max_grid))
    g = torch.Generator(device="cuda").manual_seed(seed)
    for D in (64, 128, 256):
        q, k, v = (rand((2, 700, 3, D), torch.bfloat16, g) for _ in range(3))
        check(q, k, v)
        check(q, k, v, causal=True)
    # Causal head groups of grid / 4 heads (5 at max_grid 20), the last one partial (14 heads).
    q, k, v = (rand((2, 300, 7, 128), torch.bfloat16, g) for _ in range(3))
    check(q, k, v, causal=True)
    lens = [300, 0, 129, 5]
    check_varlen(lens, lens, 4, 2, 128, g, masks=({"causal": True},))


@pytest.mark.parametrize("max_grid", [0, 2])
@pytest.mark.parametrize("sq_sk", [(2047, 2047), (2048, 2048), (300, 2049), (2049, 300)])
def test_pingpong_threshold(sq_sk, max_grid, monkeypatch, seed):
    """d = 128 drops the warpgroups' turn-taking from seqlen_k 2048 on (d = 256 keeps it) and
    runs its pinned long-key instance there (fwd_sm90_config.hpp use_pingpong, FwdTileD128Long):
    both sides of the threshold, both dtypes, causal, windows, GQA, many tiles per CTA (max_grid
    2: the warpgroups drift apart across tiles without turns), and bitwise repeatable."""
    if max_grid:
        monkeypatch.setenv("DEEPWELL_ATTN_MAX_GRID", str(max_grid))
    Sq, Sk = sq_sk
    g = torch.Generator(device="cuda").manual_seed(seed)
    for D in (128, 256):
        check_masks(Sq, Sk, D, g, window=(100, 3), bitwise=True)



@pytest.mark.parametrize("max_grid", [0, 2])
@pytest.mark.parametrize("sq_sk", [(8191, 8191), (8192, 8192), (130, 8209), (8209, 300), (2000, 12345)])
def test_d128_wide_key_tiles(sq_sk, max_grid, monkeypatch, seed):
    """d = 128 with no mask runs 144-key tiles from seqlen_k 8192 (FwdTileD128Wide): both sides
    of the threshold, key lengths that leave a ragged last block (8192 = 56 x 144 + 128), Sq != Sk
    both ways, GQA, both dtypes, many tiles per CTA, bitwise repeatable; causal and windowed
    calls on the same inputs run the 128-key tile. A packed batch takes it when its sequences
    average 8k keys (short sequences ride along), not when only its longest has 8k."""
    if max_grid:
        monkeypatch.setenv("DEEPWELL_ATTN_MAX_GRID", str(max_grid))
    Sq, Sk = sq_sk
    g = torch.Generator(device="cuda").manual_seed(seed)
    check_masks(Sq, Sk, 128, g, window=(3000, 50), bitwise=True)
    check_varlen([77, 0, 1000, 5], [20000, 9, 12500, 300], 4, 1, 128, g)  # average 8202: wide
    check_varlen([77, 0, 1000, 5], [8300, 9, 0, 144], 4, 1, 128, g)  # average 2113: 128 keys


SPLIT_SHAPES = [  # (B, Sq, Sk, Hq, Hkv, D): decoding steps and short query blocks on long keys
    (2, 1, 3000, 8, 2, 128),
    (2, 45, 2200, 3, 1, 128),
    (1, 17, 1000, 4, 4, 64),
    (3, 130, 700, 2, 1, 256),
    (1, 1, 4097, 4, 1, 64),
    (2, 64, 2500, 2, 2, 256),
]


@pytest.mark.parametrize("splits", [2, 3, 7])
@pytest.mark.parametrize("shape", SPLIT_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_split_kv_forced(shape, splits, monkeypatch, seed):
    """Split-KV (fwd_combine.hpp) forced on: every tile's keys in `splits` ranges, some of them
    empty (7 ranges of few key blocks, causal diagonals, windows), merged by the combine kernel;
    poisoned outputs, LSE, both dtypes, GQA, bitwise repeatable."""
    monkeypatch.setenv("DEEPWELL_ATTN_SPLITS", str(splits))
    B, Sq, Sk, Hq, Hkv, D = shape
    g = torch.Generator(device="cuda").manual_seed(seed)
    for dtype in (torch.bfloat16, torch.float16):
        q = rand((B, Sq, Hq, D), dtype, g)
        k, v = rand((B, Sk, Hkv, D), dtype, g), rand((B, Sk, Hkv, D), dtype, g)
        check(q, k, v)
        check(q, k, v, causal=True)
        check(q, k, v, window=(200, 0))
        a, b = deepwell.attention(q, k, v), deepwell.attention(q, k, v)
        assert torch.equal(a, b), "not bitwise repeatable"


@pytest.mark.parametrize("splits", [40, 500])
def test_split_kv_capped(splits, monkeypatch, seed):
    """A forced range count above kMaxSplits (32, one per lane of the combine's warp) runs at the
    cap: MQA / GQA / MHA decoding steps and a short query block with many key blocks, LSE, both
    dtypes; and the default plan of a long one-row MQA step (one tile: 32 ranges)."""
    monkeypatch.setenv("DEEPWELL_ATTN_SPLITS", str(splits))
    g = torch.Generator(device="cuda").manual_seed(seed)
    for B, Sq, Sk, Hq, Hkv, D in ((1, 1, 20000, 8, 1, 128), (2, 3, 9000, 4, 4, 64),
                                  (1, 1, 7000, 4, 2, 256), (1, 40, 3000, 2, 1, 128)):
        for dtype in (torch.bfloat16, torch.float16):
            q = rand((B, Sq, Hq, D), dtype, g)
            k, v = rand((B, Sk, Hkv, D), dtype, g), rand((B, Sk, Hkv, D), dtype, g)
            check(q, k, v)
            check(q, k, v, causal=True)
    monkeypatch.delenv("DEEPWELL_ATTN_SPLITS")
    q = rand((1, 1, 32, 128), torch.bfloat16, g)
    k, v = rand((1, 32768, 1, 128), torch.bfloat16, g), rand((1, 32768, 1, 128), torch.bfloat16, g)
    out, _ = check(q, k, v)
    assert torch.equal(out, deepwell.attention(q, k, v)), "not bitwise repeatable"


def test_split_kv_varlen_and_empty_rows(monkeypatch, seed):
    """Split ranges of sequences with no keys, rows that see no key at all (lse -inf, O 0) and
    ranges that only some rows see."""
    monkeypatch.setenv("DEEPWELL_ATTN_SPLITS", "4")
    g = torch.Generator(device="cuda").manual_seed(seed)
    for D in (64, 128, 256):
        check_varlen([5, 0, 300, 1, 129, 0, 64], [900, 3, 0, 1, 400, 0, 640], 4, 2, D, g,
                     masks=({}, {"causal": True}, {"window": (20, 10)}))
    q = rand((2, 1200, 2, 128), torch.bfloat16, g)
    k, v = rand((2, 900, 2, 128), torch.bfloat16, g), rand((2, 900, 2, 128), torch.bfloat16, g)
    out, lse = check(q, k, v, causal=True)  # rows 0..299 see no key
    assert (out[:, :300] == 0).all() and torch.isinf(lse[:, :, :300]).all()


def attention_kernel_names(fn):
    """The names of the attention forward kernels `fn` launches (empty where the profiler sees no
    CUDA kernels)."""
    return kernel_names(fn, "attention_fwd_kernel")


def check_dense_twin(q, k, v, monkeypatch):
    """A dense call on its DenseOnly twin: checked against the oracle, bitwise repeatable and
    bitwise equal to the general instance (DEEPWELL_ATTN_DENSE=0: the same arithmetic with less
    code, tile by tile). Returns the twin's (out, lse)."""
    out, lse = check(q, k, v)
    again = run(q, k, v)
    assert torch.equal(out, again[0]) and torch.equal(lse, again[1]), "not bitwise repeatable"
    monkeypatch.setenv("DEEPWELL_ATTN_DENSE", "0")
    general = run(q, k, v)
    monkeypatch.delenv("DEEPWELL_ATTN_DENSE")
    assert torch.equal(out, general[0]), "the dense twin's O differs from the general one's"
    assert torch.equal(lse, general[1]), "the dense twin's LSE differs from the general one's"
    return out, lse


DENSE_SHAPES = [  # (B, Sq, Sk, Hq, Hkv, D): no mask, keys a multiple of the 128-key tile
    (2, 512, 512, 4, 4, 64),     # d = 64's 192-row tile, its last m-block 128 rows
    (1, 1000, 1024, 4, 2, 64),   # a partial last m-block, Sq != Sk, GQA 2:1
    (3, 65, 256, 2, 2, 64),      # 65 rows: the smallest Sq past the 64-row short-query tile
    (2, 700, 1024, 8, 1, 128),   # MQA on d = 128's tile
    (1, 1500, 2048, 2, 2, 128),  # 2k keys: d = 128's long-key tile
    (1, 129, 4096, 3, 3, 96),    # head dim 96 on the d = 128 bucket (columns zero-filled)
]


@pytest.mark.parametrize("shape", DENSE_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_dense_twin(shape, monkeypatch, seed):
    """Dense calls (fixed lengths, no mask or window, keys a multiple of the key tile) run the
    DenseOnly twin of their tile (fwd_sm90_config.hpp): checked against the oracle, bitwise equal
    to the general instance (DEEPWELL_ATTN_DENSE=0; the same arithmetic with less code) and
    repeatable, also on strided views (q, k, v and out interleaved with other tensors). Masked
    calls of the same shape keep the general instance."""
    B, Sq, Sk, Hq, Hkv, D = shape
    monkeypatch.setenv("DEEPWELL_ATTN_SPLITS", "1")  # these few tiles would take split-KV
    g = torch.Generator(device="cuda").manual_seed(seed)
    for dtype in (torch.bfloat16, torch.float16):
        q = rand((B, Sq, Hq, D), dtype, g)
        kv = rand((B, Sk, 2, Hkv, D), dtype, g)
        k, v = kv[:, :, 0], kv[:, :, 1]  # strided views
        out, lse = check_dense_twin(q, k, v, monkeypatch)
        wide = torch.full((B, Sq, Hq, 2 * D), float("nan"), device="cuda", dtype=dtype)
        o_view = wide[..., D:]  # out with a row stride of 2 * Hq * D
        deepwell.ops.forward_into(q, k, v, o_view, None)
        assert torch.equal(o_view, out) and torch.isnan(wide[..., :D]).all()
        check(q, k, v, causal=True)
        names = attention_kernel_names(lambda: run(q, k, v))
        if names:  # the profiler sees kernels: the dense call ran the twin, the causal one not
            assert all("DenseOnly" in n for n in names), names
            masked = attention_kernel_names(lambda: run(q, k, v, causal=True))
            assert masked and not any("DenseOnly" in n for n in masked), masked


CROSS_TILE_SHAPES = [  # (B, Sq, Sk, Hq, Hkv, D): dense calls on the three back-to-back twins
    (1, 1000, 2048, 2, 1, 128),  # d = 128's long-key tile: the last m-block of each head partial
    (3, 300, 2176, 6, 2, 128),   # the same tile, GQA 3:1, 17 key blocks
    (2, 129, 4096, 3, 3, 96),    # head dim 96, every second m-block one row
    (2, 700, 1024, 4, 2, 128),   # d = 128's tile below 2k keys (turn-taking warpgroups)
    (3, 65, 128, 5, 5, 128),     # one key block per tile: every step is a boundary
    (1, 1000, 1024, 4, 2, 64),   # d = 64's 192-row tile (three warpgroups, turns)
    (2, 400, 512, 3, 1, 48),     # head dim 48 on it, MQA
]


@pytest.mark.parametrize("max_grid", [1, 3, 7])
@pytest.mark.parametrize("shape", CROSS_TILE_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_dense_twin_tiles_back_to_back(shape, max_grid, monkeypatch, seed):
    """The DenseOnly twins run a CTA's tiles back to back (kCrossTile, fwd_sm90_config.hpp: each
    tile's last P V under the next tile's first Q K^T and softmax). On a capped grid every CTA
    runs several tiles, so every boundary case is taken (a tile's first block after another
    tile, partial and one-row m-blocks, the next tile on another head, one-block tiles, the last
    tile alone): checked against the oracle, bitwise equal to the general instance, which runs
    its tiles one by one (DEEPWELL_ATTN_DENSE=0), and repeatable; both dtypes."""
    B, Sq, Sk, Hq, Hkv, D = shape
    monkeypatch.setenv("DEEPWELL_ATTN_SPLITS", "1")
    monkeypatch.setenv("DEEPWELL_ATTN_MAX_GRID", str(max_grid))
    g = torch.Generator(device="cuda").manual_seed(seed)
    for dtype in (torch.bfloat16, torch.float16):
        q = rand((B, Sq, Hq, D), dtype, g, scale=3.0)
        k, v = rand((B, Sk, Hkv, D), dtype, g), rand((B, Sk, Hkv, D), dtype, g)
        check_dense_twin(q, k, v, monkeypatch)
        names = attention_kernel_names(lambda: run(q, k, v))
        if names:
            assert all("DenseOnly" in n for n in names), names


@pytest.mark.cuda_graph
@pytest.mark.parametrize("shape", [(2, 1536, 1536, 16, 8, 64), (4, 1024, 2048, 8, 8, 128)],
                         ids=lambda s: "x".join(map(str, s)))
def test_dense_twin_chosen_by_default(shape, seed):
    """The default plan of a dense call with enough tiles for the GPU (no split-KV) runs the
    twin; also on a side stream and captured in a CUDA graph."""
    B, Sq, Sk, Hq, Hkv, D = shape
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = rand((B, Sq, Hq, D), torch.bfloat16, g)
    k, v = rand((B, Sk, Hkv, D), torch.bfloat16, g), rand((B, Sk, Hkv, D), torch.bfloat16, g)
    out, _ = check(q, k, v)
    names = attention_kernel_names(lambda: run(q, k, v))
    assert all("DenseOnly" in n for n in names), names
    check_side_stream_and_graph(q, k, v, out, g)


def test_dense_twin_not_for_ragged_keys(monkeypatch, seed):
    """Keys not a multiple of the key tile need the key-bound mask: the general instance."""
    monkeypatch.setenv("DEEPWELL_ATTN_SPLITS", "1")
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = rand((1, 512, 2, 64), torch.bfloat16, g)
    k, v = rand((1, 1000, 2, 64), torch.bfloat16, g), rand((1, 1000, 2, 64), torch.bfloat16, g)
    check(q, k, v)
    names = attention_kernel_names(lambda: run(q, k, v))
    assert not any("DenseOnly" in n for n in names), names


FIXED_CASES = [  # (B, Sq, Sk, Hq, Hkv, D, mask): fixed lengths the DenseOnly twins do not take
    (2, 700, 700, 4, 2, 128, {"causal": True}),           # d = 128's tile, a partial m-block
    (1, 1000, 1500, 2, 2, 128, {"window": (200, 0)}),     # a sliding window, Sq != Sk
    (1, 300, 1000, 3, 3, 128, {}),                        # no mask, keys not a multiple of 128
    (1, 1500, 2500, 4, 1, 128, {"causal": True}),         # 2.5k keys: d = 128's long-key tile
    (1, 2100, 2048, 2, 2, 96, {"window": (300, 40)}),     # head dim 96, long keys, a window
    (2, 1000, 1000, 2, 2, 256, {"causal": True}),         # d = 256: 24 idle rows, none shifted
    (1, 512, 512, 4, 4, 256, {}),                         # dense d = 256 (no DenseOnly twin)
    (1, 840, 400, 2, 1, 256, {"window": (64, 64)}),       # d = 256 left and right bounds
]


@pytest.mark.parametrize("case", FIXED_CASES, ids=lambda c: "x".join(map(str, c[:6])) + "-" +
                         ("-".join(c[6]) or "nomask"))
def test_fixed_twin(case, monkeypatch, seed):
    """Fixed-length calls that the DenseOnly twins do not take run the FixedLength twin of their
    tile (fwd_sm90_config.hpp): checked against the oracle, bitwise equal to the general instance
    (DEEPWELL_ATTN_FIXED=0; the same arithmetic with less code) and repeatable, also into a
    strided output."""
    B, Sq, Sk, Hq, Hkv, D, mask = case
    monkeypatch.setenv("DEEPWELL_ATTN_SPLITS", "1")  # these few tiles would take split-KV
    g = torch.Generator(device="cuda").manual_seed(seed)
    for dtype in (torch.bfloat16, torch.float16):
        q = rand((B, Sq, Hq, D), dtype, g, scale=3.0)
        kv = rand((B, Sk, 2, Hkv, D), dtype, g)
        k, v = kv[:, :, 0], kv[:, :, 1]  # strided views
        out, lse = check(q, k, v, **mask)
        again = run(q, k, v, **mask)
        assert torch.equal(out, again[0]) and torch.equal(lse, again[1]), "not bitwise repeatable"
        monkeypatch.setenv("DEEPWELL_ATTN_FIXED", "0")
        general = run(q, k, v, **mask)
        general_names = attention_kernel_names(lambda: run(q, k, v, **mask))
        monkeypatch.delenv("DEEPWELL_ATTN_FIXED")
        assert torch.equal(out, general[0]), "the fixed-length twin's O differs from the general one's"
        assert torch.equal(lse, general[1]), "the fixed-length twin's LSE differs from the general one's"
        wide = torch.full((B, Sq, Hq, 2 * D), float("nan"), device="cuda", dtype=dtype)
        o_view = wide[..., D:]  # out with a row stride of 2 * Hq * D
        deepwell.ops.forward_into(q, k, v, o_view, None, **mask)
        assert torch.equal(o_view, out) and torch.isnan(wide[..., :D]).all()
        names = attention_kernel_names(lambda: run(q, k, v, **mask))
        if names:  # the profiler sees kernels: the twin ran, and with the switch off it did not
            assert all("FixedLength" in n for n in names), names
            assert general_names and not any("FixedLength" in n for n in general_names)


def test_fixed_twin_not_taken(monkeypatch, seed):
    """Calls the FixedLength twins have no code for keep the general instance: packed batches,
    split-KV, and a right-bounded mask that shifts rows into the first tile (d = 256 with 124 idle
    rows: 64 shifted). Dense d = 128 calls keep their DenseOnly twin."""
    g = torch.Generator(device="cuda").manual_seed(seed)

    def ran(q, k, v, **kw):
        check(q, k, v, **kw)
        return attention_kernel_names(lambda: run(q, k, v, **kw))

    q = rand((1, 900, 2, 256), torch.bfloat16, g)
    k, v = rand((1, 900, 2, 256), torch.bfloat16, g), rand((1, 900, 2, 256), torch.bfloat16, g)
    monkeypatch.setenv("DEEPWELL_ATTN_SPLITS", "1")
    names = ran(q, k, v, causal=True)
    assert not any("FixedLength" in n for n in names), names
    names = ran(q, k, v)  # the same call unmasked shifts nothing: the twin
    assert not names or all("FixedLength" in n for n in names), names
    monkeypatch.setenv("DEEPWELL_ATTN_SPLITS", "3")
    names = ran(q, k, v, causal=True)
    assert not any("FixedLength" in n for n in names), names
    monkeypatch.setenv("DEEPWELL_ATTN_SPLITS", "1")
    lens = [300, 0, 700]
    cu = torch.tensor([0, 300, 300, 1000], dtype=torch.int32, device="cuda")
    q = rand((1000, 4, 128), torch.bfloat16, g)
    k, v = rand((1000, 2, 128), torch.bfloat16, g), rand((1000, 2, 128), torch.bfloat16, g)
    names = ran(q, k, v, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=max(lens),
                max_seqlen_k=max(lens), causal=True)
    assert not any("FixedLength" in n for n in names), names
    q = rand((1, 1024, 2, 128), torch.bfloat16, g)
    k, v = rand((1, 1024, 2, 128), torch.bfloat16, g), rand((1, 1024, 2, 128), torch.bfloat16, g)
    names = ran(q, k, v)
    assert not names or all("DenseOnly" in n for n in names), names


TAIL_SHAPES = [  # (B, Sq, Sk, Hq, Hkv, D, max_grid): tiles % max_grid tiles in the last round
    (1, 1000, 8300, 2, 1, 128, 6),  # 16 tiles of 8 m-blocks, 4 in the tail, 58 key blocks
    (2, 700, 8193, 3, 3, 128, 8),   # 36 tiles (the last m-block partial), 4 in the tail, 57 blocks
    (3, 129, 9000, 2, 2, 128, 5),   # 12 tiles, 2 m-blocks each (the second one row), 2 in the tail
    (1, 300, 8192, 8, 2, 128, 7),   # GQA 4:1, 24 tiles, 3 in the tail
]


@pytest.mark.parametrize("splits", [0, 2, 3, 40])
@pytest.mark.parametrize("shape", TAIL_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_split_tail_forced(shape, splits, monkeypatch, seed):
    """The split tail (fwd_sm90_tail.cuh) on a capped grid: the last round's tiles run their keys
    in `splits` ranges (0: the default plan's count) on CTAs that would idle, merged inside the
    kernel by split 0; 40 ranges of 57-63 key blocks leave many empty. The tile compiled with it
    (kSplitTail): d = 128's 144-key tile, no mask, from 8k keys. Both dtypes, GQA, LSE, partial
    last m-blocks, Sq != Sk, bitwise repeatable; causal and windowed calls in the same setting
    run other tiles, without a tail."""
    B, Sq, Sk, Hq, Hkv, D, max_grid = shape
    monkeypatch.setenv("DEEPWELL_ATTN_MAX_GRID", str(max_grid))
    if splits:
        monkeypatch.setenv("DEEPWELL_ATTN_TAIL_SPLITS", str(splits))
    g = torch.Generator(device="cuda").manual_seed(seed)
    for dtype in (torch.bfloat16, torch.float16):
        q = rand((B, Sq, Hq, D), dtype, g)
        k, v = rand((B, Sk, Hkv, D), dtype, g), rand((B, Sk, Hkv, D), dtype, g)
        out, lse = check(q, k, v)
        again = run(q, k, v)
        assert torch.equal(out, again[0]) and torch.equal(lse, again[1]), "not bitwise repeatable"
        check(q, k, v, causal=True)
        check(q, k, v, window=(300, 20))


@pytest.mark.cuda_graph
def test_split_tail_chosen_by_default(monkeypatch, seed):
    """The default plan on the whole GPU: d = 128, S = 8k, 3 heads (192 tiles of 57 key blocks,
    60 past the first round of 132 SMs) takes a tail, so its bits differ from the untailed run's
    (DEEPWELL_ATTN_TAIL_SPLITS=0); both are checked. Also on a side stream and captured in a CUDA
    graph (the scratch comes from torch's caching allocator)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (rand((1, 8192, 3, 128), torch.bfloat16, g) for _ in range(3))
    out, lse = check(q, k, v)
    monkeypatch.setenv("DEEPWELL_ATTN_TAIL_SPLITS", "0")
    _, lse0 = check(q, k, v)
    monkeypatch.delenv("DEEPWELL_ATTN_TAIL_SPLITS")
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        assert not torch.equal(lse, lse0), "no split tail on 132 SMs"
    check_side_stream_and_graph(q, k, v, out, g)


@pytest.mark.cuda_graph
def test_split_kv_chosen_for_decoding(seed):
    """The default plan splits a decoding step (8 (batch, head) tiles on long keys); also with
    strided views, on a side stream and captured in a CUDA graph (the partial buffers come from
    torch's caching allocator)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = rand((2, 1, 4, 128), torch.bfloat16, g)
    kv = rand((2, 8192, 2, 2, 128), torch.bfloat16, g)  # k and v interleaved: strided views
    k, v = kv[:, :, 0], kv[:, :, 1]
    expected, _ = check(q, k, v)
    check(q, k, v, causal=True)
    check_side_stream_and_graph(q, k, v, expected, g)


@pytest.mark.parametrize("max_grid", [0, 3])
@pytest.mark.parametrize("sq", [1, 37, 64, 65])
def test_short_query_tiles(sq, max_grid, monkeypatch, seed):
    """d = 128 and d = 256 (and the dims of their buckets) with <= 64 query rows run 64-row tiles
    with one consumer warpgroup (fwd_sm90_config.hpp FwdTileD128Short, one Q stage, and
    FwdTileD256Short): both sides of the threshold, causal (bottom-right), windows, GQA, varlen,
    many tiles per CTA (max_grid 3: Q buffers reused tile after tile), split and unsplit, both
    dtypes, bitwise repeatable."""
    if max_grid:
        monkeypatch.setenv("DEEPWELL_ATTN_MAX_GRID", str(max_grid))
    g = torch.Generator(device="cuda").manual_seed(seed)
    for dtype in (torch.bfloat16, torch.float16):
        for D, Sk in ((128, 1500), (96, 333), (256, 900), (200, 130)):
            q = rand((3, sq, 4, D), dtype, g)
            k, v = rand((3, Sk, 2, D), dtype, g), rand((3, Sk, 2, D), dtype, g)
            check(q, k, v)
            check(q, k, v, causal=True)
            check(q, k, v, window=(70, 5))
            for splits in ("1", "5"):
                monkeypatch.setenv("DEEPWELL_ATTN_SPLITS", splits)
                a, b = deepwell.attention(q, k, v), deepwell.attention(q, k, v)
                assert torch.equal(a, b), "not bitwise repeatable"
                check(q, k, v, causal=True)
            monkeypatch.delenv("DEEPWELL_ATTN_SPLITS")
    for D in (128, 256):
        check_varlen([1, 0, 64, 17], [700, 5, 64, 0], 4, 1, D, g)


@pytest.mark.parametrize("D", [64, 128, 256])
@pytest.mark.parametrize("hq_hkv", [(8, 4), (32, 8), (16, 2), (32, 1)])
def test_gqa_decoding_packed(hq_hkv, D, seed):
    """One query row with GQA / MQA runs packed (fwd_dispatch.cpp packed_for_decoding: a group's
    query heads as one tile's rows, out and lse through the same view): causal and not, q, out and
    lse with non-unit head strides, both dtypes; a left window runs unpacked."""
    Hq, Hkv = hq_hkv
    g = torch.Generator(device="cuda").manual_seed(seed)
    for dtype in (torch.bfloat16, torch.float16):
        for B, Sk in ((1, 4000), (3, 777)):
            q = rand((B, 1, 2 * Hq, D), dtype, g)[:, :, ::2]  # head stride 2 D
            k, v = rand((B, Sk, Hkv, D), dtype, g), rand((B, Sk, Hkv, D), dtype, g)
            check(q, k, v)
            check(q, k, v, causal=True)
            check(q, k, v, window=(300, 0))
            out = torch.full((B, 1, 2 * Hq, D), float("nan"), device="cuda", dtype=dtype)
            lse = torch.full((B, 2 * Hq, 1), float("nan"), device="cuda", dtype=torch.float32)
            deepwell.ops.forward_into(q, k, v, out[:, :, 1::2], lse[:, 1::2])
            ref_out, ref_lse = dense(q, k, v)
            assert rel_l2(out[:, :, 1::2], ref_out) <= TOL[dtype]
            assert rel_l2(lse[:, 1::2], ref_lse) <= LSE_TOL
            assert torch.isnan(out[:, :, ::2]).all() and torch.isnan(lse[:, ::2]).all()


# ------------------------------------------------------------ the torch fast path (deepwell._torch)


def _fast_attention():
    """deepwell._torch.attention where this build has it, else skip."""
    return torch_ext_op("attention")


FAST_CASES = [  # (B, Sq, Sk, Hq, Hkv, D, dtype, keyword arguments)
    (2, 128, 128, 4, 4, 128, torch.bfloat16, {}),
    (2, 17, 300, 8, 2, 64, torch.float16, {"causal": True}),
    (1, 1000, 1000, 2, 1, 256, torch.bfloat16, {"window": (100, 5), "scale": 0.07}),
    (3, 1, 4000, 32, 8, 128, torch.bfloat16, {}),  # decoding: split-KV, a workspace
    (2, 513, 200, 4, 4, 64, torch.float16, {"causal": True, "window": (50, None)}),
]


@pytest.mark.parametrize("case", FAST_CASES, ids=lambda c: "x".join(map(str, c[:6])))
def test_torch_fast_path_matches_general_path(case, monkeypatch, seed):
    """The fast path (at::Tensor read directly, out and lse from at::empty, c10's current stream)
    returns what the general path does, bit for bit (lse too), and both match float64."""
    from deepwell import ops

    B, Sq, Sk, Hq, Hkv, D, dtype, kw = case
    fast = _fast_attention()
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = rand((B, Sq, Hq, D), dtype, g)
    k, v = rand((B, Sk, Hkv, D), dtype, g), rand((B, Sk, Hkv, D), dtype, g)
    wl, wr = ops._window(kw.get("window"), kw.get("causal", False))
    direct = fast(q, k, v, kw.get("causal", False), wl, wr, ops._scale(kw.get("scale")), True)
    via_api = deepwell.attention(q, k, v, return_lse=True, **kw)
    plain = deepwell.attention(q, k, v, **kw)
    monkeypatch.setattr(ops, "_torch_attention", False)
    general = deepwell.attention(q, k, v, return_lse=True, **kw)
    ref_out, ref_lse = dense(q, k, v, **kw)
    for out, lse in (direct, via_api, general):
        assert out.shape == q.shape and out.dtype == dtype and out.is_contiguous()
        assert lse.shape == (B, Hq, Sq) and lse.dtype == torch.float32
        assert rel_l2(out, ref_out) <= TOL[dtype]
        assert rel_l2(lse, ref_lse) <= LSE_TOL
    for x, y in ((direct, general), (via_api, general)):
        assert torch.equal(x[0], y[0]) and torch.equal(x[1], y[1])
    assert isinstance(plain, torch.Tensor) and torch.equal(plain, general[0])


def test_torch_fast_path_errors_match_general_path(monkeypatch):
    """Bad input raises the same exception with the same message on both paths; what the fast
    path does not take (a tensor on the CPU, a numpy array, packed 3-D q) reaches the general
    path's checks through NotImplemented."""
    import numpy as np

    _fast_attention()
    q = torch.zeros((1, 8, 2, 64), device="cuda", dtype=torch.bfloat16)
    base = torch.zeros(1 * 8 * 2 * 64 + 4, device="cuda", dtype=torch.bfloat16)
    bad = {
        "head dim 264": lambda: deepwell.attention(
            *[torch.zeros((1, 8, 2, 264), device="cuda", dtype=torch.bfloat16)] * 3),
        "f32": lambda: deepwell.attention(q.float(), q.float(), q.float()),
        "misaligned": lambda: deepwell.attention(*[base[4:].view(1, 8, 2, 64)] * 3),
        "k on the CPU": lambda: deepwell.attention(q, q.cpu(), q),
        "v a numpy array": lambda: deepwell.attention(q, q,
                                                      np.zeros((1, 8, 2, 64), np.float32)),
        "k of another dtype": lambda: deepwell.attention(q, q.half(), q.half()),
        "heads not a multiple": lambda: deepwell.attention(
            torch.zeros((1, 8, 3, 64), device="cuda", dtype=torch.bfloat16), q, q),
        "head dims differ": lambda: deepwell.attention(
            q, torch.zeros((1, 8, 2, 128), device="cuda", dtype=torch.bfloat16), q),
        "3-D q without cu_seqlens": lambda: deepwell.attention(q[0], q[0], q[0]),
        "5-D q": lambda: deepwell.attention(q[None], q[None], q[None]),
        "strided last dim": lambda: deepwell.attention(
            torch.zeros((1, 8, 2, 128), device="cuda", dtype=torch.bfloat16)[..., ::2], q, q),
        "window not a pair": lambda: deepwell.attention(q, q, q, window=3),
        "negative scale": lambda: deepwell.attention(q, q, q, scale=-1.0),
    }

    assert_errors_match(bad, monkeypatch, "attention")


@pytest.mark.cuda_graph
def test_torch_fast_path_streams_and_graphs(monkeypatch, seed):
    """The fast path runs these calls (counted) on the caller's current stream (a side stream
    here), and is capturable: a graph of a call with allocated out and lse replays on new q."""
    from deepwell import ops

    fast = _fast_attention()
    calls = []

    def counted(*args):
        calls.append(1)
        return fast(*args)

    monkeypatch.setattr(ops, "_torch_attention", counted)
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (rand((2, 300, 4, 128), torch.bfloat16, g) for _ in range(3))
    expected = dense(q, k, v, causal=True)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        out, lse = deepwell.attention(q, k, v, causal=True, return_lse=True)
    torch.cuda.current_stream().wait_stream(s)
    assert rel_l2(out, expected[0]) <= TOL[q.dtype] and rel_l2(lse, expected[1]) <= LSE_TOL

    with torch.cuda.stream(s):  # warm-up outside the capture
        deepwell.attention(q, k, v, causal=True, return_lse=True)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, lse = deepwell.attention(q, k, v, causal=True, return_lse=True)
    q.copy_(rand(q.shape, q.dtype, g))
    graph.replay()
    torch.cuda.synchronize()
    expected = dense(q, k, v, causal=True)
    assert rel_l2(out, expected[0]) <= TOL[q.dtype] and rel_l2(lse, expected[1]) <= LSE_TOL
    assert len(calls) == 3
