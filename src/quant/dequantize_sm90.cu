// CUDA dequantization and scale-layout conversion kernels (sm_90a).
//
// dequantize_kernel: one thread per 16 codes of a row (16 or 8 bytes loaded at once). Every scale
// block is a multiple of 16 along K and chunks start at multiples of 16, so a chunk has exactly
// one scale. fp8 codes are decoded two at a time by the hardware (cvt.rn.f16x2.{e4m3,e5m2}x2:
// every fp8 value is an f16 value, so the decode is exact), fp4 codes by codec.hpp; products are
// exact (mul_rn, NaN canonicalized) and rounded to the output dtype with the same bit rules as the
// CPU reference (core/numeric.hpp), NaN included. A chunk of fp8 codes with no NaN code and a
// finite nonzero scale cannot make a NaN, and there the hardware's packs round exactly as those
// rules: decode_fp8_plain (bf16 / f16 output 0.63 -> 0.86-0.91 of copy on the H200). fp4 codes
// under multipliers that cannot make a NaN decode by a byte table (decode_fp4_plain: mxfp4 / nvfp4
// -> bf16 at 8192² 0.36 / 0.30 -> 0.83 / 0.81 of copy on the H200, session 60).
//
// Stores: a lane's chunk is 32 (2-byte out) or 64 (fp32 out) bytes of output, so lane-by-lane
// 16-byte stores leave every warp store instruction writing half (or a quarter) of 32 sectors;
// ncu showed the L2 saturating on those partial-sector writes (89 % with hardware decoding, which
// made the kernel slower, session 5). When the 32 chunks of a warp are full and contiguous in the
// output (any packed output whose rows are multiples of 16 elements), the warp stages them in
// shared memory and writes them back as whole 512-byte spans; other warps store lane by lane.
#include "core/validate.hpp"
#include "quant/kernels.cuh"

namespace deepwell::quant {
namespace {

struct DequantParams {
  const uint8_t* data;  // rows ld codes apart
  int64_t ld;
  const void* scales;
  const float* tensor_scale;
  void* out;
  int64_t rows, cols, rows2, cpr;  // cpr: chunks per row
  QuantFormat format;
  bool swizzle;
  int block_shift;  // log2 of the scale block (group formats)
  int64_t C;        // scale columns per row (group formats and 128x128)
  int64_t row0, launch_rows;  // the rows of this launch (thread indices stay below 2^31)
  FastDiv cpr_div, rows2_div;
};

// fp32 -> bf16 / f16 bits exactly as core/numeric.hpp (f32_to_bf16, f32_to_f16).
__device__ __forceinline__ uint16_t to_bf16_bits(float f) {
  uint32_t u = fbits(f);
  if ((u & 0x7fffffffu) > kF32Inf) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

__device__ __forceinline__ uint16_t to_f16_bits(float f) {
  const uint32_t u = fbits(f);
  if ((u & 0x7fffffffu) > kF32Inf) return static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7e00u);
  return __half_as_ushort(__float2half_rn(f));
}

// Output bytes of one lane's chunk (32 for 2-byte outputs, 64 for fp32) and its 16-byte words.
template <DType Out>
constexpr int kOutBytes = kChunk * (Out == DType::kF32 ? 4 : 2);
template <DType Out>
constexpr int kOutWords = kOutBytes<Out> / 16;

// Lane-by-lane store of one chunk (n valid elements at dst), for warps that cannot stage.
template <DType Out>
__device__ __forceinline__ void store_lane(void* out, int n, const uint4 (&w)[kOutWords<Out>]) {
  constexpr int kWords = kOutWords<Out>;
  if (n == kChunk && aligned16(out)) {
#pragma unroll
    for (int j = 0; j < kWords; ++j) static_cast<uint4*>(out)[j] = w[j];
    return;
  }
  const uint32_t* u = reinterpret_cast<const uint32_t*>(w);
  if constexpr (Out == DType::kF32) {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      if (i < n) static_cast<uint32_t*>(out)[i] = u[i];
    }
  } else {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      if (i < n) static_cast<uint16_t*>(out)[i] = static_cast<uint16_t>(u[i / 2] >> (16 * (i % 2)));
    }
  }
}

// Output pair i (elements 2i, 2i + 1) of a chunk from two products that are not NaN: two fp32
// words, or one word of two 16-bit values rounded to nearest even by the hardware's pack (equal to
// to_bf16_bits / to_f16_bits off NaN).
template <DType Out>
__device__ __forceinline__ void put_pair(float a, float b, uint32_t* ou, int i) {
  if constexpr (Out == DType::kF32) {
    ou[2 * i] = fbits(a);
    ou[2 * i + 1] = fbits(b);
  } else if constexpr (Out == DType::kBF16) {
    const __nv_bfloat162 p = __floats2bfloat162_rn(a, b);
    ou[i] = *reinterpret_cast<const uint32_t*>(&p);
  } else {
    const __half2 p = __floats2half2_rn(a, b);
    ou[i] = *reinterpret_cast<const uint32_t*>(&p);
  }
}

// No NaN among 16 fp8 codes (4 words): e4m3 NaN is 0x7f / 0xff, e5m2 NaN has |code| > 0x7c.
template <Elem E>
__device__ __forceinline__ bool fp8_codes_finite_or_inf(const uint32_t (&w)[4]) {
  uint32_t bad = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t m = w[j] & 0x7f7f7f7fu;
    bad |= E == Elem::kE4M3 ? __vcmpeq4(m, 0x7f7f7f7fu) : __vcmpgtu4(m, 0x7c7c7c7cu);
  }
  return bad == 0;
}

// The output words of a chunk of fp8 codes with no NaN code and a finite nonzero scale: every
// product is a number or an infinity (never NaN), where the hardware's round-to-nearest-even
// packs (cvt.rn.{bf16x2,f16x2}.f32) give exactly the bits of to_bf16_bits / to_f16_bits. One
// decode, two multiplies and one pack per two elements, against ~20 integer instructions of the
// general path (whose NaN handling the reference's bits need).
template <Elem E, DType Out>
__device__ __forceinline__ void decode_fp8_plain(const uint32_t (&w)[4], float scale,
                                                 uint32_t* ou) {
#pragma unroll
  for (int i = 0; i < kChunk / 2; ++i) {
    const auto pair = static_cast<__nv_fp8x2_storage_t>(w[i / 2] >> (16 * (i % 2)));
    const __half2_raw h =
        __nv_cvt_fp8x2_to_halfraw2(pair, E == Elem::kE4M3 ? __NV_E4M3 : __NV_E5M2);
    put_pair<Out>(__fmul_rn(__half2float(__ushort_as_half(h.x)), scale),
                  __fmul_rn(__half2float(__ushort_as_half(h.y)), scale), ou, i);
  }
}

__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t d;  // the default mode: a selector nibble with bit 3 set replicates its byte's msb
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

__device__ __forceinline__ uint32_t mul_bf16x2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// e2m1 magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 (index = code & 7) as bf16: their high and low
// bytes, as byte tables for PRMT (byte i of the pair of words = entry i).
constexpr uint32_t kE2m1Hi[2] = {0x3f3f3f00u, 0x40404040u};
constexpr uint32_t kE2m1Lo[2] = {0xc0800000u, 0xc0804000u};

// The four codes in the low 16 bits of c (code i in bits 4i..4i+3) as signed bf16 values, two
// per word: e[0] = codes 0, 1; e[1] = codes 2, 3 (low half first). Eight instructions for four.
__device__ __forceinline__ void e2m1x4_to_bf16(uint32_t c, uint32_t (&e)[2]) {
  const uint32_t idx = c & 0x7777u;  // PRMT reads the low 16 bits: one selector nibble per code
  const uint32_t lo = prmt(kE2m1Lo[0], kE2m1Lo[1], idx);
  // code i's sign (bit 3 of its nibble) replicated over byte i: the msb of byte 0 of c << 4
  // (code 0), of c (code 1), then of byte 1 of each (codes 2, 3)
  const uint32_t sign = prmt(c << 4, c, 0xd9c8u);
  const uint32_t hi = prmt(kE2m1Hi[0], kE2m1Hi[1], idx) | (sign & 0x80808080u);
  e[0] = prmt(lo, hi, 0x5140u);
  e[1] = prmt(lo, hi, 0x7362u);
}

// The output words of a chunk of 16 fp4 codes (w[0..1], code i in bits 4i.. of the 64) whose
// multipliers make no NaN: v = e2m1 * m1 (MX, m1 = 2^(b - 127) with b != 0xff) or e2m1 * m1 * m2
// (NVFP4, m1 = the decoded ue4m3 block scale (not NaN), m2 = a finite s_t), rounded exactly as
// the general path (mul_rn, to_bf16_bits / to_f16_bits: they differ from the plain IEEE
// operations only on NaN). The codes are decoded to bf16 by table, and every product that is
// exact in bf16 is taken there, two per instruction: e2m1 * ue4m3 always (at most 6 significant
// bits, 2^-10 .. 2688), e2m1 * 2^e when exact16 (2^-125 <= 2^e <= 2^125: normal bf16 products).
// MX to bf16 then costs ~2.5 instructions per element against ~18 on the general path.
template <DType Out, bool kNv>
__device__ __forceinline__ void decode_fp4_plain(const uint32_t (&w)[4], float m1, float m2,
                                                 bool exact16, uint32_t* ou) {
  uint32_t e[kChunk / 2];
#pragma unroll
  for (int h = 0; h < 4; ++h) {  // codes 4h .. 4h + 3
    uint32_t p[2];
    e2m1x4_to_bf16(w[h / 2] >> (16 * (h % 2)), p);
    e[2 * h] = p[0];
    e[2 * h + 1] = p[1];
  }
  const uint32_t m1_16 = fbits(m1) >> 16;  // m1 in bf16, exact where it is used
  if constexpr (!kNv && Out != DType::kF16) {
    if (exact16) {
#pragma unroll
      for (int i = 0; i < kChunk / 2; ++i) {
        const uint32_t q = mul_bf16x2(e[i], m1_16 | m1_16 << 16);
        if constexpr (Out == DType::kBF16) {
          ou[i] = q;
        } else {
          ou[2 * i] = q << 16;
          ou[2 * i + 1] = q & 0xffff0000u;
        }
      }
      return;
    }
  }
  if constexpr (kNv) {
#pragma unroll
    for (int i = 0; i < kChunk / 2; ++i) e[i] = mul_bf16x2(e[i], m1_16 | m1_16 << 16);
  }
  const float m = kNv ? m2 : m1;
#pragma unroll
  for (int i = 0; i < kChunk / 2; ++i) {
    put_pair<Out>(__fmul_rn(__uint_as_float(e[i] << 16), m),
                  __fmul_rn(__uint_as_float(e[i] & 0xffff0000u), m), ou, i);
  }
}

// A lane's chunk between its loads and its decode.
struct DequantChunk {
  int64_t r, c0;
  int n;             // codes of the chunk inside its row; 0: a lane past the end
  uint32_t w[4];     // the codes
  float scale, s_t;  // the decoded scale (fp8 formats, MX); NVFP4's tensor scale
  uint8_t sb;        // NVFP4's block scale byte
};

// Chunk t of the launch: its codes and its scale.
template <Elem E>
__device__ __forceinline__ DequantChunk load_chunk(const DequantParams& p, uint32_t t) {
  constexpr bool kFp4 = E == Elem::kE2M1;
  DequantChunk c{};
  const uint32_t rl = p.cpr_div.div(t);
  // Lanes past the end stay until the warp's store decision (it takes all 32 lanes).
  const bool valid = rl < p.launch_rows;
  c.r = p.row0 + rl;
  c.c0 = (int64_t{t} - int64_t{rl} * p.cpr) * kChunk;
  c.n = valid ? static_cast<int>(std::min<int64_t>(p.cols - c.c0, kChunk)) : 0;
  if (!valid) return c;
  const int n = c.n;
  uint32_t(&w)[4] = c.w;
  const int64_t d0 = c.r * p.ld + c.c0;
  const uint8_t* src = p.data + (kFp4 ? d0 / 2 : d0);
  if (n == kChunk && !kFp4 && aligned16(src)) {
    const uint4 u = __ldg(reinterpret_cast<const uint4*>(src));
    w[0] = u.x; w[1] = u.y; w[2] = u.z; w[3] = u.w;
  } else if (n == kChunk && kFp4 && (reinterpret_cast<uintptr_t>(src) & 7u) == 0) {
    const uint2 u = __ldg(reinterpret_cast<const uint2*>(src));
    w[0] = u.x; w[1] = u.y;
  } else {  // tail: unrolled with static indices so that w stays in registers
    const int bytes = kFp4 ? n / 2 : n;
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      if (i < bytes) w[i / 4] |= static_cast<uint32_t>(src[i]) << (8 * (i % 4));
    }
  }

  const int64_t r = c.r, c0 = c.c0;
  int64_t si;
  if (p.format == QuantFormat::kFp8Tensor) {
    si = 0;
  } else if (p.format == QuantFormat::kFp8Row) {
    si = r;
  } else if (p.format == QuantFormat::kFp8Block128x128) {  // (batch, r / 128, c / 128)
    int64_t b, i;
    if (r < kMaxLaunchThreads) {
      b = p.rows2_div.div(static_cast<uint32_t>(r));
      i = r - b * p.rows2;
    } else {
      b = r / p.rows2;
      i = r % p.rows2;
    }
    si = (b * ((p.rows2 + 127) / 128) + i / 128) * p.C + (c0 >> 7);
  } else {
    si = group_scale_offset(p.swizzle, p.C, r, c0 >> p.block_shift);
  }
  if (p.format == QuantFormat::kNvfp4) {
    c.sb = static_cast<const uint8_t*>(p.scales)[si];
    c.s_t = *p.tensor_scale;
  } else if (p.format == QuantFormat::kMxfp8 || p.format == QuantFormat::kMxfp4) {
    c.scale = decode_ue8m0(static_cast<const uint8_t*>(p.scales)[si]);
  } else {
    c.scale = static_cast<const float*>(p.scales)[si];
  }
  return c;
}

// Decodes a loaded chunk and stores it (the warp's 32 chunks staged through `stage` when they are
// full and contiguous in the output). Every lane of the warp calls it.
template <Elem E, DType Out>
__device__ __forceinline__ void decode_store_chunk(const DequantParams& p, const DequantChunk& c,
                                                   uint4* stage) {
  constexpr bool kFp4 = E == Elem::kE2M1;
  constexpr int kBytes = kOutBytes<Out>, kWords = kOutWords<Out>;  // one lane's output
  const bool valid = c.n > 0;
  const int n = c.n;
  const float scale = c.scale, s_t = c.s_t;
  const uint8_t sb = c.sb;
  const int64_t e0 = c.r * p.cols + c.c0;  // of the element in out

  float v[kChunk];
  uint4 o[kWords];     // the chunk's output bytes
  bool plain = false;  // o already holds them (decode_fp8_plain, decode_fp4_plain)
  if (valid) {
    if constexpr (!kFp4) {
      plain = fp8_codes_finite_or_inf<E>(c.w) && scale != 0.0f && abs_bits(scale) < kF32Inf;
    }
    if constexpr (kFp4) {
      // Plain unless a multiplier is NaN or infinite (an infinite one times a zero code is NaN):
      // e2m1 codes are all finite. An MX scale is 2^-127 .. 2^127 or NaN (byte 0xff).
      if (p.format == QuantFormat::kNvfp4) {
        plain = (sb & 0x7fu) != 0x7fu && abs_bits(s_t) < kF32Inf;
        if (plain) {
          decode_fp4_plain<Out, true>(c.w, decode_ue4m3(sb), s_t, false,
                                      reinterpret_cast<uint32_t*>(o));
        }
      } else {
        plain = abs_bits(scale) < kF32Inf;
        if (plain) {
          const uint32_t eb = fbits(scale) >> 23;  // 2^-125 .. 2^125: bf16 products exact
          decode_fp4_plain<Out, false>(c.w, scale, 0.0f, eb >= 2 && eb <= 252,
                                       reinterpret_cast<uint32_t*>(o));
        }
      }
      if (!plain) {
#pragma unroll
        for (int i = 0; i < kChunk; ++i) {
          const uint8_t q = (c.w[i / 8] >> (4 * (i % 8))) & 0xfu;
          v[i] = p.format == QuantFormat::kNvfp4 ? decode_nvfp4(q, sb, s_t)
                                                 : mul_rn(decode_elem(E, q), scale);
        }
      }
    } else if (plain) {
      decode_fp8_plain<E, Out>(c.w, scale, reinterpret_cast<uint32_t*>(o));
    } else {
      // The software decoders (~10 integer instructions per element) left this kernel ALU-bound
      // (ncu, H100, mxfp8 -> bf16: ALU pipe at 85 % of peak). A NaN code decodes to some NaN,
      // which mul_rn canonicalizes as the reference's decode does.
#pragma unroll
      for (int i = 0; i < kChunk / 2; ++i) {
        const auto pair = static_cast<__nv_fp8x2_storage_t>(c.w[i / 2] >> (16 * (i % 2)));
        const __half2_raw h =
            __nv_cvt_fp8x2_to_halfraw2(pair, E == Elem::kE4M3 ? __NV_E4M3 : __NV_E5M2);
        v[2 * i] = mul_rn(__half2float(__ushort_as_half(h.x)), scale);
        v[2 * i + 1] = mul_rn(__half2float(__ushort_as_half(h.y)), scale);
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) v[i] = 0.0f;
  }

  uint32_t* ou = reinterpret_cast<uint32_t*>(o);
  if (!plain) {
    if constexpr (Out == DType::kF32) {
#pragma unroll
      for (int i = 0; i < kChunk; ++i) ou[i] = fbits(v[i]);
    } else {
#pragma unroll
      for (int i = 0; i < kChunk / 2; ++i) {  // two 16-bit values per word, low half first
        const uint32_t lo = Out == DType::kBF16 ? to_bf16_bits(v[2 * i]) : to_f16_bits(v[2 * i]);
        const uint32_t hi =
            Out == DType::kBF16 ? to_bf16_bits(v[2 * i + 1]) : to_f16_bits(v[2 * i + 1]);
        ou[i] = lo | hi << 16;
      }
    }
  }

  char* dst = static_cast<char*>(p.out) + e0 * (kBytes / kChunk);
  const int lane = threadIdx.x & 31;
  char* dst0 = reinterpret_cast<char*>(__shfl_sync(0xffffffffu, reinterpret_cast<uintptr_t>(dst), 0));
  const bool contiguous = valid && n == kChunk && aligned16(dst0) && dst == dst0 + lane * kBytes;
  if (__all_sync(0xffffffffu, contiguous)) {
    uint4* s = stage + (threadIdx.x & ~31u) * kWords;  // this warp's 32 * kBytes
    // Word j of lane l is kept at s[l * kWords + (j ^ swz(l))]: the XOR puts the 8 lanes of each
    // 128-bit store phase on distinct banks (a plain l * kWords + j layout conflicts 2- or 4-way).
    auto swz = [](int l) { return (l * kWords / 8) % kWords; };
#pragma unroll
    for (int j = 0; j < kWords; ++j) s[lane * kWords + (j ^ swz(lane))] = o[j];
    __syncwarp();
#pragma unroll
    for (int j = 0; j < kWords; ++j) {  // linear word L = lane + 32 j of the warp's output
      const int L = lane + 32 * j, ls = L / kWords;
      reinterpret_cast<uint4*>(dst0)[L] = s[ls * kWords + ((L % kWords) ^ swz(ls))];
    }
  } else if (valid) {
    store_lane<Out>(dst, n, o);
  }
}

// One thread per chunk. (Two chunks per thread, both loads issued before the first decode,
// measured slower: mxfp4 -> bf16 at 8192² 0.829 -> 0.729 of copy, H200, session 60.)
template <Elem E, DType Out>
__global__ void __launch_bounds__(256) dequantize_kernel(const DequantParams p) {
  __shared__ uint4 stage[256 * kOutWords<Out>];
  decode_store_chunk<E, Out>(p, load_chunk<E>(p, blockIdx.x * blockDim.x + threadIdx.x), stage);
}

__global__ void __launch_bounds__(256) swizzle_kernel(const uint8_t* in, uint8_t* out, int64_t rows,
                                                      int64_t C, bool to_swizzled) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t r = t / C, c = t % C;
  if (r >= rows) return;
  const int64_t s = swizzled_scale_offset(r, c, C);
  if (to_swizzled) {
    out[s] = in[r * C + c];
  } else {
    out[r * C + c] = in[s];
  }
}

template <Elem E>
void launch_dequant(const DequantParams& d, DType out, cudaStream_t stream) {
  const unsigned grid = grid_for(d.launch_rows * d.cpr);
  switch (out) {
    case DType::kF32: dequantize_kernel<E, DType::kF32><<<grid, 256, 0, stream>>>(d); break;
    case DType::kF16: dequantize_kernel<E, DType::kF16><<<grid, 256, 0, stream>>>(d); break;
    default: dequantize_kernel<E, DType::kBF16><<<grid, 256, 0, stream>>>(d); break;
  }
}

}  // namespace

Status dequantize_cuda(const DequantProblem& p, const Context& ctx) {
  DW_TRY(detail::require_sm90("dequantize", p.device.index));
  detail::DeviceGuard guard(p.device.index);
  DW_TRY(guard.status());
  DequantParams d{};
  d.data = p.data;
  d.ld = p.ld;
  d.scales = p.scales;
  d.tensor_scale = p.tensor_scale;
  d.out = p.out;
  d.rows = p.rows;
  d.cols = p.cols;
  d.rows2 = p.rows2;
  d.cpr = (p.cols + kChunk - 1) / kChunk;
  d.format = p.format;
  d.swizzle = p.swizzle;
  const int block = p.traits.block == 0 ? kChunk : p.traits.block;
  d.block_shift = log2_exact(block);
  d.C = (p.cols + block - 1) / block;
  if (d.cpr > kMaxLaunchThreads / 2 || d.rows2 >= kMaxLaunchThreads) {
    return Status(StatusCode::kNotSupported, "dequantize: rows longer than 2^34 elements on CUDA");
  }
  d.cpr_div = FastDiv(d.cpr);
  d.rows2_div = FastDiv(std::max<int64_t>(d.rows2, 1));
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  const int64_t rows_per_launch = (kMaxLaunchThreads - 256) / d.cpr;
  for (d.row0 = 0; d.row0 < d.rows; d.row0 += rows_per_launch) {
    d.launch_rows = std::min(rows_per_launch, d.rows - d.row0);
    switch (p.elem) {
      case Elem::kE4M3: launch_dequant<Elem::kE4M3>(d, p.out_dtype, stream); break;
      case Elem::kE5M2: launch_dequant<Elem::kE5M2>(d, p.out_dtype, stream); break;
      default: launch_dequant<Elem::kE2M1>(d, p.out_dtype, stream); break;
    }
    DW_TRY(detail::last_launch_status("dequantize"));
  }
  return Status::Ok();
}

Status swizzle_cuda(const uint8_t* in, uint8_t* out, int64_t rows, int64_t C, bool to_swizzled,
                    Device device, const Context& ctx) {
  const char* op = to_swizzled ? "swizzle_scales" : "unswizzle_scales";
  DW_TRY(detail::require_sm90(op, device.index));
  detail::DeviceGuard guard(device.index);
  DW_TRY(guard.status());
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  if (to_swizzled && rows * C > 0) {
    DW_CUDA_TRY(op, cudaMemsetAsync(out, 0, static_cast<size_t>(swizzled_bytes(rows, C)), stream));
  }
  if (rows * C == 0) return Status::Ok();
  swizzle_kernel<<<grid_for(rows * C), 256, 0, stream>>>(in, out, rows, C, to_swizzled);
  return detail::last_launch_status(op);
}

}  // namespace deepwell::quant
