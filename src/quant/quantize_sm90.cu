// CUDA quantization along rows (sm_90a) and the dispatcher for every format.
//
// Kernels here (each memory-bound: 16-element chunks, 16-byte loads and stores, amax fused):
//  - quantize_groups_kernel: formats whose scale covers a group of 16, 32 or 128 consecutive
//    elements of a row (NVFP4, MX, 1x128) and kFp8Tensor. A group is held by block/16 adjacent
//    lanes that combine their amax with shuffles, so x is read once.
//  - quantize_chunks_kernel: the same for 16-bit x whose rows are whole groups (the common case),
//    x walked as one flat run of chunks, several per thread, with 32-bit indices, one instance
//    per format.
//  - quantize_per_row_kernel: kFp8Row. tpr threads per row (a power of two up to 256) reduce the
//    row's amax, then re-read the row (from L1/L2) to encode it.
//  - amax_kernel + finalize_tensor_scale: the per-tensor amax of kFp8Tensor and kNvfp4, two
//    passes: the amax is reduced with atomicMax into the tensor-scale output itself (as the bits of
//    a non-negative float, whose integer order is the float order, NaN above Inf), the encoding
//    kernels read it, and a last one-thread kernel turns it into the scale. No workspace needed.
//    The amax pass reads x in the reverse of the encoder's order, so the encoder's first reads
//    hit what is left of x in L2.
//    Row calls of 16-bit x whose rows are whole chunks take the one-pass kernel instead
//    (quantize_onepass_sm90.cu: the same output from one read of x for what fits on chip).
//    With the caller's amax (QuantizeArgs::amax) the reduction is skipped: one pass over x, and
//    the encoding kernel's first thread writes the tensor scale (one launch in all).
// Calls with the transposed copy (both outputs from one tiled pass) and 128x128 blocks live in
// quantize_transpose_sm90.cu.
#include <type_traits>

#include "core/validate.hpp"
#include "quant/kernels.cuh"

namespace deepwell::quant {
namespace {

struct GroupParams {
  const void* x;
  int64_t rows, cols, row_stride;  // x rows are contiguous along cols
  uint8_t* data;                   // (rows, cols) codes
  void* scales;
  const uint32_t* amax;            // per-tensor amax bits (kFp8Tensor, kNvfp4)
  float* tensor_scale_out;         // the caller's amax: thread 0 writes the tensor scale, else null
  QuantFormat format;
  bool rceil, pow2, swizzle;
  bool hold_rows;   // kFp8Row: rows fit quantize_per_row_kernel's registers (16-byte aligned)
  int block;        // 16, 32, 128; 16 for kFp8Tensor (no group scale)
  int block_shift;  // log2(block)
  int tpg;          // threads per group: block / 16
  int64_t tpr;      // threads per row: a multiple of tpg
  int64_t C;        // scale columns per row
  int64_t row0, launch_rows;  // the rows of this launch (thread indices stay below 2^31)
  int64_t row_half;           // quantize_groups_kernel: ceil(launch_rows / kGroupRows)
  FastDiv tpr_div;
  // quantize_chunks_kernel: x as one run of n_chunks 16-element chunks, tpr of them per row
  uint32_t n_chunks;
};

// A thread encodes the chunk at column c0 of two rows, rl and rl + row_half: both chunks' loads
// are in flight together, and the per-tensor scale is computed once for the two (ncu, H100, bf16
// 8192^2: NVFP4 rows 73.8 -> 70.9 us and MXFP4 rows 60.1 -> 57.2 us against one chunk per
// thread, with the same instruction count: the gain is the loads in flight).
constexpr int kGroupRows = 2;

// Helpers shared by both row kernels take the format as `int kF`: a QuantFormat fixed at compile
// time (quantize_chunks_kernel), or -1 for p.format at run time (quantize_groups_kernel).
// The call's format.
template <int kF>
__device__ __forceinline__ QuantFormat format_of(const GroupParams& p) {
  return kF >= 0 ? static_cast<QuantFormat>(kF) : p.format;
}
// Chunks per scale group (group_params' tpg): fixed by kF, else p.tpg.
template <int kF>
__device__ __forceinline__ int tpg_of(const GroupParams& p) {
  if constexpr (kF < 0) {
    return p.tpg;
  } else {
    constexpr int block = format_traits(static_cast<QuantFormat>(kF)).block;
    return block == 0 ? 1 : block / kChunk;
  }
}

// kFp8Tensor: the tensor scale; kNvfp4: s_t; 0 for the other formats. `first`: the thread that
// writes it where the caller gave the amax.
template <Elem E, int kF = -1>
__device__ __forceinline__ float group_tensor_scale(const GroupParams& p, bool first) {
  float tensor_s = 0.0f;
  const QuantFormat f = format_of<kF>(p);
  if (f == QuantFormat::kFp8Tensor) {
    tensor_s = fp32_scale(tensor_amax_bits(p.amax), elem_info(E), p.pow2);
  } else if (f == QuantFormat::kNvfp4) {
    tensor_s = nvfp4_tensor_scale(tensor_amax_bits(p.amax));
  }
  if (p.tensor_scale_out != nullptr && first) *p.tensor_scale_out = tensor_s;
  return tensor_s;
}

// The amax bits of a chunk's group: the tpg adjacent, aligned lanes of the group combine theirs.
// Every lane of the warp must call it (shuffles).
template <class In, int kF = -1>
__device__ __forceinline__ uint32_t group_amax(const GroupParams& p, const RowChunk<In>& x) {
  uint32_t amax = x.amax();
  const int tpg = tpg_of<kF>(p);
  for (int o = 1; o < tpg; o <<= 1) amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  return amax;
}

// The scale of a chunk of row r in group g (scale column) from its group's amax, written once per
// group (by its `writer` lane), and the chunk's codes in w. kSlow: the form of the exact-division
// fallback (kernels.cuh, SlowDivision), as measured per kernel.
template <class In, Elem E,
          SlowDivision kSlow = E == Elem::kE2M1 ? SlowDivision::kUnrolled : SlowDivision::kLooped,
          int kF = -1>
__device__ __forceinline__ void scale_and_encode(const GroupParams& p, const RowChunk<In>& x,
                                                 uint32_t amax, int64_t r, int64_t g, bool writer,
                                                 float tensor_s, const Fp32Divider& by6,
                                                 const Fp32Divider& by_st, uint32_t (&w)[4]) {
  const ElemInfo info = elem_info(E);
  ChunkScale cs{ChunkScale::kFp32, tensor_s, 0};
  const QuantFormat f = format_of<kF>(p);
  switch (f) {
    case QuantFormat::kFp8Tensor:
      break;
    case QuantFormat::kFp8Block1x128:
      cs.s = fp32_scale(amax, info, p.pow2);
      break;
    case QuantFormat::kNvfp4:
      cs = {ChunkScale::kNvfp4, tensor_s,
            sizeof(In) == 2 ? nvfp4_block_scale_hoisted(amax, tensor_s, by6, by_st)
                            : nvfp4_block_scale_hw(amax, tensor_s)};
      break;
    default:  // MX
      cs = {ChunkScale::kMx, 0.0f, mx_scale(amax, info, p.rceil)};
      break;
  }
  if (writer && f != QuantFormat::kFp8Tensor) {  // the group's scale, once per group
    const int64_t si = group_scale_offset(p.swizzle, p.C, r, g);
    if (f == QuantFormat::kFp8Block1x128) {
      static_cast<float*>(p.scales)[si] = cs.s;
    } else {
      static_cast<uint8_t*>(p.scales)[si] = cs.sb;
    }
  }
  encode_row_chunk<In, E, kSlow>(x, cs, w);
}

// At most 64 registers (4 CTAs per SM) for every instance.
template <class In, Elem E>
__global__ void __launch_bounds__(256, 4) quantize_groups_kernel(const GroupParams p) {
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t rl = p.tpr_div.div(t);
  const int64_t c0 = (int64_t{t} - int64_t{rl} * p.tpr) * kChunk;
  const int ncols = static_cast<int>(std::min<int64_t>(std::max<int64_t>(p.cols - c0, 0), kChunk));
  RowChunk<In> x[kGroupRows];
  int n[kGroupRows];
#pragma unroll
  for (int i = 0; i < kGroupRows; ++i) {
    const int64_t rli = rl + int64_t{i} * p.row_half;
    n[i] = rl < p.row_half && rli < p.launch_rows ? ncols : 0;
    x[i].load(static_cast<const In*>(p.x) + (n[i] ? (p.row0 + rli) * p.row_stride + c0 : 0), n[i]);
  }
  const float tensor_s = group_tensor_scale<E>(p, t == 0);
  // kNvfp4's block-scale divisions, hoisted for 16-bit inputs (f32 keeps the IEEE divisions: its
  // instance would need a stack frame at 64 registers)
  const Fp32Divider by6(6.0f), by_st(tensor_s);
  const bool writer = ((c0 / kChunk) & (p.tpg - 1)) == 0;
#pragma unroll
  for (int i = 0; i < kGroupRows; ++i) {
    const uint32_t amax = group_amax(p, x[i]);
    if (n[i] == 0) continue;
    const int64_t r = p.row0 + rl + int64_t{i} * p.row_half;
    uint32_t w[4];
    // e2m1: the unrolled slow path measured faster here (kernels.cuh, SlowDivision)
    scale_and_encode<In, E>(p, x[i], amax, r, c0 >> p.block_shift, writer, tensor_s, by6, by_st, w);
    store_chunk<E>(p.data, r * p.cols + c0, n[i], w);
  }
}

// Rows of whole groups of 16-bit x (cols % block == 0) as one run of chunks, chunk i at element
// 16 i of x and of the codes: CTA b encodes chunks (b U + k) 256 + threadIdx.x for k < U
// (stream_chunks), so a warp reads 1 KB of x per step, a thread's loads are all in flight before
// its first code, and the per-thread setup (parameters, the tensor scale) is shared by U chunks.
// The format F is a template parameter (one instance per format and element type), so the
// chunk's scale rule, group width and scale store are straight-line code.
// quantize_groups_kernel, which any shape takes, spends 745 instructions per thread on two
// chunks of NVFP4 (ncu, H200, bf16 8192^2 `amax=`): the encoders 356, the rest row and column
// arithmetic in 64 bits, bounds, and the setup. With the format read at run time this kernel
// took 1231 for four chunks (19 per element against 23): NVFP4 `amax=` rows 0.67 -> 0.78 of copy;
// with the format fixed 0.78 -> 0.87 (mxfp4 0.94 -> 0.97, 1x128 0.96 -> 0.97; perf-notes,
// quantization session 59). Needs x 16-byte aligned, codes 16-byte (fp8) / 8-byte (fp4) aligned
// and fewer than 2^31 chunks (chunk_run). The exact-division fallback is looped (SlowDivision):
// unrolled, NVFP4 and MXFP4 were 1-2 % slower here.
//
// U = 4 chunks per thread (32 registers of x), 3 for NVFP4: at 4 its instances spill at the 64
// registers of 4 CTAs per SM (bf16 4 bytes; three measured within 0.5-1 % of four: 0.870 / 0.874
// at 8192², 0.830 / 0.838 at 16384x8192).
constexpr int stream_chunks(QuantFormat f) { return f == QuantFormat::kNvfp4 ? 3 : 4; }

template <class In, QuantFormat F, Elem E>
__global__ void __launch_bounds__(256, 4) quantize_chunks_kernel(const GroupParams p) {
  static_assert(sizeof(In) == 2, "16-bit inputs: a chunk is two 16-byte loads");
  static_assert(F != QuantFormat::kFp8Row && F != QuantFormat::kFp8Block128x128,
                "group formats and kFp8Tensor");
  constexpr int kF = static_cast<int>(F), kU = stream_chunks(F);
  const uint32_t first = blockIdx.x * (256u * kU) + threadIdx.x;
  RowChunk<In> x[kU];
#pragma unroll
  for (int k = 0; k < kU; ++k) {
    const uint32_t i = first + k * 256u;
    const uint4* src = static_cast<const uint4*>(p.x) + 2 * int64_t{i};
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint4 u = i < p.n_chunks ? __ldg(src + h) : make_uint4(0, 0, 0, 0);
      x[k].w[4 * h] = u.x;
      x[k].w[4 * h + 1] = u.y;
      x[k].w[4 * h + 2] = u.z;
      x[k].w[4 * h + 3] = u.w;
    }
  }
  const float tensor_s = group_tensor_scale<E, kF>(p, first == 0);
  const Fp32Divider by6(6.0f), by_st(tensor_s);
  const int tpg = tpg_of<kF>(p);
#pragma unroll
  for (int k = 0; k < kU; ++k) {
    const uint32_t amax = group_amax<In, kF>(p, x[k]);
    const uint32_t i = first + k * 256u;
    if (i >= p.n_chunks) continue;
    const uint32_t r = p.tpr_div.div(i);
    const uint32_t c = i - r * static_cast<uint32_t>(p.tpr);  // chunk within the row
    uint32_t w[4];
    scale_and_encode<In, E, SlowDivision::kLooped, kF>(p, x[k], amax, r, c / tpg,
                                                       (i & (tpg - 1)) == 0, tensor_s, by6, by_st, w);
    if constexpr (E == Elem::kE2M1) {
      reinterpret_cast<uint2*>(p.data)[i] = make_uint2(w[0], w[1]);
    } else {
      reinterpret_cast<uint4*>(p.data)[i] = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
}

// kFp8Row: blockDim 256 = (256 / tpr) rows of tpr threads. A row of at most tpr * 16 * kHold
// elements that is 16-byte aligned (p.hold_rows) is loaded once into registers, all loads of a
// thread issued before the first use, and encoded from there; longer rows re-read their chunks
// (from L1 / L2) after the amax pass. Before the register path (ncu, H100, 8192 x 8192 bf16: two
// dependent load rounds per thread and a re-read) the warps stalled mostly on those loads
// (long scoreboard 7.8 cycles per issued instruction; 0.77 of copy bandwidth on the H200).
constexpr int kRowHold = 2;  // chunks per thread that quantize_per_row_kernel holds in registers

template <class In, Elem E>
__global__ void __launch_bounds__(256) quantize_per_row_kernel(const GroupParams p) {
  constexpr int kHold = kRowHold;
  constexpr int kU = kChunk * int{sizeof(In)} / 16;  // 16-byte loads per chunk
  __shared__ uint32_t partial[8];
  const int tpr = static_cast<int>(p.tpr);
  const int sub = threadIdx.x / tpr, j = threadIdx.x % tpr;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * (256 / tpr) + sub;
  const bool active = r < p.rows;
  const In* row = static_cast<const In*>(p.x) + (active ? r * p.row_stride : 0);
  float v[kChunk];
  uint32_t amax = 0;
  uint4 raw[kHold][kU];
  if (p.hold_rows) {
#pragma unroll
    for (int h = 0; h < kHold; ++h) {
      const int64_t c0 = (j + int64_t{h} * tpr) * kChunk;
#pragma unroll
      for (int i = 0; i < kU; ++i) {
        raw[h][i] = active && c0 < p.cols ? __ldg(reinterpret_cast<const uint4*>(row + c0) + i)
                                          : make_uint4(0, 0, 0, 0);  // zeros: no amax change
      }
    }
#pragma unroll
    for (int h = 0; h < kHold; ++h) {
#pragma unroll
      for (int i = 0; i < kU; ++i) {
#pragma unroll
        for (int k = 0; k < 16 / int{sizeof(In)}; ++k) {
          amax = max(amax, abs_bits(vec_elem<In>(raw[h][i], k)));
        }
      }
    }
  } else {
    for (int64_t c0 = j * kChunk; active && c0 < p.cols; c0 += int64_t{tpr} * kChunk) {
      load_chunk(row + c0, static_cast<int>(std::min<int64_t>(p.cols - c0, kChunk)), v);
      amax = max(amax, chunk_amax(v));
    }
  }
  const int lanes = tpr < 32 ? tpr : 32;
  for (int o = 1; o < lanes; o <<= 1) amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  if (tpr > 32) {  // the row spans tpr / 32 warps
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = amax;
    __syncthreads();
    const int w0 = (sub * tpr) >> 5;
    for (int w = 0; w < tpr / 32; ++w) amax = max(amax, partial[w0 + w]);
  }
  if (!active) return;
  const ChunkScale cs{ChunkScale::kFp32, fp32_scale(amax, elem_info(E), p.pow2), 0};
  if (j == 0) static_cast<float*>(p.scales)[r] = cs.s;
  if (p.hold_rows) {
#pragma unroll
    for (int h = 0; h < kHold; ++h) {
      const int64_t c0 = (j + int64_t{h} * tpr) * kChunk;
      if (c0 >= p.cols) break;
#pragma unroll
      for (int i = 0; i < kU; ++i) {
#pragma unroll
        for (int k = 0; k < 16 / int{sizeof(In)}; ++k) {
          v[i * (16 / int{sizeof(In)}) + k] = vec_elem<In>(raw[h][i], k);
        }
      }
      uint32_t w[4];
      encode_chunk<E>(v, cs, w);
      store_chunk<E>(p.data, r * p.cols + c0, kChunk, w);
    }
    return;
  }
  for (int64_t c0 = j * kChunk; c0 < p.cols; c0 += int64_t{tpr} * kChunk) {
    const int n = static_cast<int>(std::min<int64_t>(p.cols - c0, kChunk));
    load_chunk(row + c0, n, v);
    uint32_t w[4];
    encode_chunk<E>(v, cs, w);
    store_chunk<E>(p.data, r * p.cols + c0, n, w);
  }
}

// Reads x in the reverse of the order the encoding kernel reads it, so that the part of x this
// pass leaves in L2 (its last ~L2-size bytes) is what the encoder reads first: x = [0, split)
// and [split, n) as two streams walked backwards together (quantize_groups_kernel reads rows rl
// and rl + row_half together, forwards; split = n for the single forward stream of the tile
// kernel). A warp still reads 32 adjacent chunks (512 contiguous elements) per step. Steps from
// keep_steps on (read first here, last by the encoder) load as L2 evict-first.
template <class In>
__global__ void __launch_bounds__(256) amax_kernel(const In* x, int64_t n, int64_t split,
                                                   int64_t keep_steps, uint32_t* amax) {
  const uint64_t keep = l2_policy(false), drop = l2_policy(true);
  __shared__ uint32_t partial[8];
  const int64_t chunks_a = (split + kChunk - 1) / kChunk;
  const int64_t chunks_b = (n - split + kChunk - 1) / kChunk;
  const int64_t steps = std::max(chunks_a, chunks_b);
  uint32_t m = 0;
  float v[kChunk];
  for (int64_t s = steps - 1 - (static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x); s >= 0;
       s -= static_cast<int64_t>(gridDim.x) * 256) {
    const uint64_t policy = s < keep_steps ? keep : drop;
    if (s < chunks_a) {
      load_chunk<In, true>(x + s * kChunk,
                           static_cast<int>(std::min<int64_t>(split - s * kChunk, kChunk)), v,
                           policy);
      m = max(m, chunk_amax(v));
    }
    if (s < chunks_b) {
      const int64_t e = split + s * kChunk;
      load_chunk<In, true>(x + e, static_cast<int>(std::min<int64_t>(n - e, kChunk)), v, policy);
      m = max(m, chunk_amax(v));
    }
  }
  m = block_max_256(m, partial);
  if (threadIdx.x == 0 && m != 0) atomicMax(amax, m);
}

// The amax (the bits reduced into `slot`, or the caller's `given`) becomes the scale (kFp8Tensor)
// or s_t (kNvfp4) in `slot`.
__global__ void finalize_tensor_scale(float* slot, const float* given, QuantFormat f, Elem e,
                                      bool pow2) {
  const uint32_t amax = fbits(given ? fabsf(*given) : *slot);
  *slot = f == QuantFormat::kNvfp4 ? nvfp4_tensor_scale(amax) : fp32_scale(amax, elem_info(e), pow2);
}

template <class T>
struct Tag {
  using type = T;
};
template <Elem E>
using ElemTag = std::integral_constant<Elem, E>;

// Calls fn(Tag<In>, ElemTag<E>) for the runtime input dtype and element format.
template <class Fn>
void with_types(DType in, Elem e, Fn&& fn) {
  auto with_in = [&](auto in_tag) {
    switch (e) {
      case Elem::kE4M3: fn(in_tag, ElemTag<Elem::kE4M3>{}); break;
      case Elem::kE5M2: fn(in_tag, ElemTag<Elem::kE5M2>{}); break;
      default: fn(in_tag, ElemTag<Elem::kE2M1>{}); break;
    }
  };
  switch (in) {
    case DType::kF32: with_in(Tag<float>{}); break;
    case DType::kF16: with_in(Tag<__half>{}); break;
    default: with_in(Tag<__nv_bfloat16>{}); break;
  }
}

GroupParams group_params(const Problem& p, const Target& t, const uint32_t* amax,
                         float* tensor_scale_out) {
  GroupParams g{};
  g.tensor_scale_out = tensor_scale_out;
  g.x = t.x.data;
  g.rows = t.x.rows;
  g.cols = t.x.cols;
  g.row_stride = t.x.cols;  // CUDA inputs are contiguous
  g.data = t.data;
  g.scales = t.scales;
  g.amax = amax;
  g.format = p.format;
  g.rceil = p.rule == ScaleRule::kRceil;
  g.pow2 = p.pow2;
  g.swizzle = p.swizzle;
  g.block = p.traits.block == 0 ? kChunk : p.traits.block;
  g.block_shift = log2_exact(g.block);
  g.tpg = g.block / kChunk;
  g.C = (g.cols + g.block - 1) / g.block;
  g.tpr = g.C * g.tpg;
  return g;
}

// Whether a row call runs quantize_chunks_kernel: a group format or kFp8Tensor on 16-bit x whose
// rows are whole groups, x 16-byte and the codes 16-byte (fp8) / 8-byte (fp4) aligned, and fewer
// than 2^31 chunks (32-bit chunk indices and FastDiv).
bool chunk_run(const Problem& p) {
  const Matrix& x = p.main.x;
  if (p.format == QuantFormat::kFp8Row || p.format == QuantFormat::kFp8Block128x128 ||
      x.dtype == DType::kF32) {
    return false;
  }
  const int64_t block = p.traits.block == 0 ? kChunk : p.traits.block;
  const uintptr_t code_align = p.elem == Elem::kE2M1 ? 8 : 16;
  return x.cols > 0 && x.cols % block == 0 && x.rows * (x.cols / kChunk) < (int64_t{1} << 31) &&
         (reinterpret_cast<uintptr_t>(x.data) & 15u) == 0 &&
         (reinterpret_cast<uintptr_t>(p.main.data) & (code_align - 1)) == 0;
}

// The quantize_chunks_kernel instance of the call's format and element type (16-bit In).
template <class In, QuantFormat F>
void launch_chunks_of(Elem e, const GroupParams& g, cudaStream_t stream) {
  auto go = [&](auto el) {
    constexpr Elem E = decltype(el)::value;
    quantize_chunks_kernel<In, F, E>
        <<<grid_for(g.n_chunks, 256 * stream_chunks(F)), 256, 0, stream>>>(g);
  };
  if constexpr (F == QuantFormat::kMxfp4 || F == QuantFormat::kNvfp4) {
    go(ElemTag<Elem::kE2M1>{});
  } else if (e == Elem::kE5M2) {
    go(ElemTag<Elem::kE5M2>{});
  } else {
    go(ElemTag<Elem::kE4M3>{});
  }
}
template <class In>
void launch_chunks(QuantFormat f, Elem e, const GroupParams& g, cudaStream_t stream) {
  switch (f) {
    case QuantFormat::kFp8Tensor: launch_chunks_of<In, QuantFormat::kFp8Tensor>(e, g, stream); break;
    case QuantFormat::kFp8Block1x128:
      launch_chunks_of<In, QuantFormat::kFp8Block1x128>(e, g, stream);
      break;
    case QuantFormat::kMxfp8: launch_chunks_of<In, QuantFormat::kMxfp8>(e, g, stream); break;
    case QuantFormat::kMxfp4: launch_chunks_of<In, QuantFormat::kMxfp4>(e, g, stream); break;
    case QuantFormat::kNvfp4: launch_chunks_of<In, QuantFormat::kNvfp4>(e, g, stream); break;
    default: break;  // chunk_run() excludes kFp8Row and kFp8Block128x128
  }
}

Status launch_rows(const Problem& p, const uint32_t* amax, float* tensor_scale_out,
                   cudaStream_t stream) {
  GroupParams g = group_params(p, p.main, amax, tensor_scale_out);
  if (g.rows == 0) return Status::Ok();
  if (p.format == QuantFormat::kFp8Row) {
    int tpr = 1;
    while (tpr < 256 && int64_t{tpr} * kChunk < g.cols) tpr *= 2;
    g.tpr = tpr;
    const int in_size = p.main.x.dtype == DType::kF32 ? 4 : 2;
    g.hold_rows = g.cols <= int64_t{tpr} * kChunk * kRowHold && g.cols % kChunk == 0 &&
                  (reinterpret_cast<uintptr_t>(g.x) & 15u) == 0 && (g.row_stride * in_size) % 16 == 0;
    const int64_t rows_per_block = 256 / tpr;
    with_types(p.main.x.dtype, p.elem, [&](auto in, auto el) {
      using In = typename decltype(in)::type;
      if constexpr (decltype(el)::value != Elem::kE2M1) {
        quantize_per_row_kernel<In, decltype(el)::value>
            <<<grid_for(g.rows, static_cast<int>(rows_per_block)), 256, 0, stream>>>(g);
      }
    });
    return detail::last_launch_status("quantize");
  }
  if (g.cols == 0) return Status::Ok();
  if (chunk_run(p)) {
    g.tpr_div = FastDiv(g.tpr);
    g.n_chunks = static_cast<uint32_t>(g.rows * g.tpr);
    if (p.main.x.dtype == DType::kF16) {
      launch_chunks<__half>(p.format, p.elem, g, stream);
    } else {
      launch_chunks<__nv_bfloat16>(p.format, p.elem, g, stream);
    }
    return detail::last_launch_status("quantize");
  }
  if (g.tpr > kMaxLaunchThreads / 2) {
    return Status(StatusCode::kNotSupported, "quantize: rows longer than 2^34 elements on CUDA");
  }
  g.tpr_div = FastDiv(g.tpr);
  const int64_t rows_per_launch = (kMaxLaunchThreads - 256) / g.tpr;
  for (g.row0 = 0; g.row0 < g.rows; g.row0 += rows_per_launch) {
    g.launch_rows = std::min(rows_per_launch, g.rows - g.row0);
    g.row_half = (g.launch_rows + kGroupRows - 1) / kGroupRows;
    with_types(p.main.x.dtype, p.elem, [&](auto in, auto el) {
      using In = typename decltype(in)::type;
      quantize_groups_kernel<In, decltype(el)::value>
          <<<grid_for(g.row_half * g.tpr), 256, 0, stream>>>(g);
    });
    DW_TRY(detail::last_launch_status("quantize"));
  }
  return Status::Ok();
}

// The tensor amax of x, reduced into `amax` in the reverse of the encoder's read order (see
// amax_kernel): quantize_groups_kernel's two streams (one launch: rows [0, row_half) and
// [row_half, rows)), or the single stream (`tiled`) of the tile kernel and of
// quantize_chunks_kernel.
Status launch_amax(const Problem& p, bool tiled, uint32_t* amax, cudaStream_t stream,
                   const detail::DeviceInfo& dev) {
  const Matrix& x = p.main.x;
  const int64_t n = x.rows * x.cols;
  DW_CUDA_TRY("quantize", cudaMemsetAsync(amax, 0, sizeof(uint32_t), stream));
  if (n == 0) return Status::Ok();
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  const unsigned grid =
      static_cast<unsigned>(std::min<int64_t>(grid_for(chunks), dev.sm_count * 8LL));
  static_assert(kGroupRows == 2, "amax_kernel walks the two rows of an encoder thread");
  const int64_t split = tiled ? n : (x.rows + kGroupRows - 1) / kGroupRows * x.cols;
  // The encoder's first l2_keep_bytes of x stay evict-normal (steps count one chunk per stream).
  const int64_t in_size = x.dtype == DType::kF32 ? 4 : 2;
  const int64_t keep_steps = l2_keep_bytes(dev) / (in_size * kChunk) / (tiled ? 1 : 2);
  switch (x.dtype) {
    case DType::kF32:
      amax_kernel<<<grid, 256, 0, stream>>>(static_cast<const float*>(x.data), n, split,
                                            keep_steps, amax);
      break;
    case DType::kF16:
      amax_kernel<<<grid, 256, 0, stream>>>(static_cast<const __half*>(x.data), n, split,
                                            keep_steps, amax);
      break;
    default:
      amax_kernel<<<grid, 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(x.data), n, split,
                                            keep_steps, amax);
      break;
  }
  return detail::last_launch_status("quantize");
}

Status zero_swizzle_padding(const Problem& p, const Target& t, cudaStream_t stream) {
  if (!p.swizzle) return Status::Ok();
  const int64_t bytes = swizzled_bytes(t.x.rows, scale_cols(p.traits, t.x.cols));
  if (bytes == 0) return Status::Ok();
  DW_CUDA_TRY("quantize", cudaMemsetAsync(t.scales, 0, static_cast<size_t>(bytes), stream));
  return Status::Ok();
}

}  // namespace

Status quantize_cuda(const Problem& p, const Context& ctx) {
  DW_TRY(detail::require_sm90("quantize", p.device.index));
  detail::DeviceGuard guard(p.device.index);
  DW_TRY(guard.status());
  const detail::DeviceInfo* info = nullptr;
  DW_TRY(detail::device_info(p.device.index, &info));
  auto stream = static_cast<cudaStream_t>(ctx.stream);

  DW_TRY(zero_swizzle_padding(p, p.main, stream));
  if (p.has_transposed) DW_TRY(zero_swizzle_padding(p, p.transposed, stream));
  const bool tensor_amax = p.format == QuantFormat::kFp8Tensor || p.format == QuantFormat::kNvfp4;
  // The encoding kernels read the amax bits from the tensor-scale output, where launch_amax
  // reduces them, or straight from the caller's amax (one read of x).
  auto* amax = reinterpret_cast<uint32_t*>(p.tensor_scale);
  bool encoded = false;  // by the one-pass kernel (amax and codes in one launch)
  if (tensor_amax && p.given_amax == nullptr) {
    DW_TRY(launch_onepass(p, amax, *info, stream, &encoded));
    if (!encoded) DW_TRY(launch_amax(p, p.has_transposed || chunk_run(p), amax, stream, *info));
  }
  const uint32_t* amax_in = p.given_amax ? reinterpret_cast<const uint32_t*>(p.given_amax) : amax;
  // With the caller's amax the encoding kernel writes the tensor scale (the reduced amax, by
  // contrast, lives in that output until every encoder has read it). An empty x launches no
  // encoder: the one-thread kernel below writes it then.
  const bool fused_scale = tensor_amax && p.given_amax != nullptr && p.main.x.rows > 0 &&
                           p.main.x.cols > 0;
  float* scale_out = fused_scale ? p.tensor_scale : nullptr;

  if (encoded) {
    // data and its scales are written; the slot holds the amax bits for the finalize below
  } else if (p.format == QuantFormat::kFp8Block128x128) {
    DW_TRY(launch_block128(p, info->sm_count, stream));  // writes the transposed copy too
  } else if (p.has_transposed) {  // data and data_t, one pass
    DW_TRY(launch_transposed(p, amax_in, scale_out, *info, stream));
  } else {
    DW_TRY(launch_rows(p, amax_in, scale_out, stream));
  }
  if (tensor_amax && !fused_scale) {
    finalize_tensor_scale<<<1, 1, 0, stream>>>(p.tensor_scale, p.given_amax, p.format, p.elem,
                                               p.pow2);
    DW_TRY(detail::last_launch_status("quantize"));
  }
  return Status::Ok();
}

}  // namespace deepwell::quant
