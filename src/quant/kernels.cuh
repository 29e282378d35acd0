// Device helpers shared by the quantization kernels (*_sm90.cu): typed loads, the hardware fp8
// conversion, chunk encoding, and the launchers each .cu file provides to the dispatcher.
//
// Every kernel computes scales and codes through codec.hpp, the same functions the CPU reference
// uses, so the GPU output is bit-identical to it. The one substitution: e4m3/e5m2 codes come from
// cvt.rn.satfinite.{e4m3,e5m2}x2.f32, which rounds like codec.hpp's software encoders on every
// input but +-Inf (tests/cpp/test_quant_codec.cpp checks this against cuda_fp8.hpp's emulation),
// and no Inf ever reaches it: a block holding an Inf or NaN has a NaN scale and stores NaN codes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include "core/cuda_utils.hpp"
#include <algorithm>
#include <type_traits>

#include "quant/problem.hpp"

namespace deepwell::quant {

constexpr int kChunk = 16;  // elements per thread and per vector access

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }

// Element k (0..15 / 4) of a 16-byte vector, without taking its address (keeps it in registers).
template <class In>
__device__ __forceinline__ float vec_elem(const uint4& u, int k) {
  const uint32_t word = k / (4 / sizeof(In)) == 0 ? u.x : k / (4 / sizeof(In)) == 1 ? u.y
                        : k / (4 / sizeof(In)) == 2 ? u.z : u.w;
  if constexpr (sizeof(In) == 4) {
    return __uint_as_float(word);
  } else {
    const uint16_t h = static_cast<uint16_t>(word >> (16 * (k % 2)));
    if constexpr (std::is_same_v<In, __half>) {
      return __half2float(__ushort_as_half(h));
    } else {
      return __uint_as_float(static_cast<uint32_t>(h) << 16);  // bf16 -> f32 is exact
    }
  }
}

// L2 eviction priorities for loads of x: a 64-bit policy (createpolicy) for loads with an
// L2::cache_hint. The amax passes load the part of x that the encoder reads last as evict-first,
// so that the part it reads first is what stays in L2 (perf-notes, quantization session 22).
__device__ __forceinline__ uint64_t l2_policy(bool evict_first) {
  uint64_t p;
  if (evict_first) {
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  } else {
    asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(p));
  }
  return p;
}
__device__ __forceinline__ uint4 ldg16(const void* ptr, uint64_t policy) {
  uint4 u;
  asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
               : "l"(ptr), "l"(policy));
  return u;
}

__device__ __forceinline__ bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

// Loads `n` (<= 16) consecutive elements starting at p (stride 1), zero-filling the rest; 16-byte
// vector loads when the whole chunk is there and aligned (kHint: with the L2 policy `policy`).
template <class In, bool kHint = false>
__device__ __forceinline__ void load_chunk(const In* p, int n, float (&v)[kChunk],
                                           uint64_t policy = 0) {
  if (n == kChunk && aligned16(p)) {
    constexpr int kPer = 16 / sizeof(In);  // elements per 16-byte load
#pragma unroll
    for (int i = 0; i < kChunk / kPer; ++i) {
      const uint4* q = reinterpret_cast<const uint4*>(p) + i;
      const uint4 u = kHint ? ldg16(q, policy) : __ldg(q);
#pragma unroll
      for (int k = 0; k < kPer; ++k) v[i * kPer + k] = vec_elem<In>(u, k);
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < kChunk; ++i) v[i] = i < n ? to_f32(p[i]) : 0.0f;
}

// The per-tensor amax (kFp8Tensor, kNvfp4) as the bits of a non-negative float: either reduced
// by amax_kernel (already non-negative) or the caller's amax, whose sign is dropped here.
__device__ __forceinline__ uint32_t tensor_amax_bits(const uint32_t* amax) {
  return *amax & 0x7fffffffu;
}

__device__ __forceinline__ uint32_t chunk_amax(const float (&v)[kChunk]) {
  uint32_t m = 0;
#pragma unroll
  for (int i = 0; i < kChunk; ++i) m = max(m, abs_bits(v[i]));
  return m;
}

// fp32 value of the low / high 16-bit element of a word (bf16 -> f32 is a shift; f16 converts
// exactly), or of a whole f32 word.
template <class In>
__device__ __forceinline__ float lo_f32(uint32_t w) {
  if constexpr (sizeof(In) == 4) {
    return __uint_as_float(w);
  } else if constexpr (std::is_same_v<In, __half>) {
    return __half2float(__ushort_as_half(static_cast<uint16_t>(w & 0xffffu)));
  } else {
    return __uint_as_float(w << 16);
  }
}
template <class In>
__device__ __forceinline__ float hi_f32(uint32_t w) {
  if constexpr (std::is_same_v<In, __half>) {
    return __half2float(__ushort_as_half(static_cast<uint16_t>(w >> 16)));
  } else {
    return __uint_as_float(w & 0xffff0000u);
  }
}

// |x| bits of a 16-bit element (0..0xffff, sign cleared) as the fp32 bits of |x|: the conversion
// is exact and monotone, so a max taken on 16-bit bits equals the max of abs_bits(float(x)).
template <class In>
__device__ __forceinline__ uint32_t abs16_to_f32_bits(uint32_t a) {
  if constexpr (std::is_same_v<In, __half>) {
    return abs_bits(__half2float(__ushort_as_half(static_cast<uint16_t>(a))));
  } else {
    return a << 16;
  }
}

// Packed |x| maxima of 16-bit pairs: element-wise (low halves, high halves) max of w[i] & 0x7fff.
template <int N>
__device__ __forceinline__ uint32_t pair_abs_max(const uint32_t (&w)[N]) {
  uint32_t m = w[0] & 0x7fff7fffu;
#pragma unroll
  for (int i = 1; i < N; ++i) m = __vmaxu2(m, w[i] & 0x7fff7fffu);
  return m;
}

// A 16-element row chunk as raw words (16-bit inputs: element 2j in the low half of w[j]).
template <class In>
struct RowChunk {
  static constexpr int kWords = sizeof(In) == 4 ? 16 : 8;
  uint32_t w[kWords];
  __device__ __forceinline__ uint32_t amax() const {  // fp32 bits of max |x|
    if constexpr (sizeof(In) == 4) {
      uint32_t m = 0;
#pragma unroll
      for (int i = 0; i < kWords; ++i) m = max(m, w[i] & 0x7fffffffu);
      return m;
    } else {
      const uint32_t m = pair_abs_max(w);
      return abs16_to_f32_bits<In>(max(m & 0xffffu, m >> 16));
    }
  }
  // Loads n (<= 16) consecutive elements at p, zero-filling the rest (zeros change no amax);
  // 16-byte loads when the whole chunk is there and aligned.
  __device__ __forceinline__ void load(const In* p, int n) {
    if (n == kChunk && aligned16(p)) {
#pragma unroll
      for (int j = 0; j < kWords / 4; ++j) {
        const uint4 u = __ldg(reinterpret_cast<const uint4*>(p) + j);
        w[4 * j] = u.x;
        w[4 * j + 1] = u.y;
        w[4 * j + 2] = u.z;
        w[4 * j + 3] = u.w;
      }
      return;
    }
    using Bits = std::conditional_t<sizeof(In) == 4, uint32_t, uint16_t>;
    const Bits* b = reinterpret_cast<const Bits*>(p);
#pragma unroll
    for (int j = 0; j < kWords; ++j) {
      if constexpr (sizeof(In) == 4) {
        w[j] = j < n ? b[j] : 0u;
      } else {
        w[j] = (2 * j < n ? uint32_t{b[2 * j]} : 0u) | (2 * j + 1 < n ? uint32_t{b[2 * j + 1]} << 16 : 0u);
      }
    }
  }
  __device__ __forceinline__ void values(float (&v)[kChunk]) const {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      if constexpr (sizeof(In) == 4) {
        v[i] = __uint_as_float(w[i]);
      } else {
        v[i] = i % 2 ? hi_f32<In>(w[i / 2]) : lo_f32<In>(w[i / 2]);
      }
    }
  }
};

// Two finite floats to two fp8 codes (low byte: a), RNE, saturating.
template <Elem E>
__device__ __forceinline__ uint32_t cvt_fp8x2(float a, float b) {
  static_assert(E != Elem::kE2M1, "fp4 has no hardware conversion on sm_90");
  return __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE,
                                  E == Elem::kE4M3 ? __NV_E4M3 : __NV_E5M2);
}

// Division by an FP32 scale s without a division per element. __fdiv_rn(a, s) compiles (sm_90,
// SASS) to y0 = MUFU.RCP(s), y = y0 + y0 (1 - s y0), q0 = a y, q1 = q0 + y (a - s q0), plus an
// FCHK range check that sends operands near the ends of the fp32 range to a slow subroutine; q1
// is the correctly rounded quotient whenever FCHK passes. Here y is computed once per chunk, and
// the slow path is taken for the whole chunk unless 2^-40 <= s <= 2^40 (kDivLo..kDivHi, fp32
// bits). With s in that range:
//  - every value of the chunk has |a| <= 2^56: a scale covers its values (s >= amax / max_normal
//    for the FP32-scale formats; NVFP4's s_t s_b >= amax_block / 6.5), so for 2^-60 <= |a| the
//    operands and the quotient (2^-100 .. 2^100) are far from the fp32 limits, FCHK passes and
//    q1 == __fdiv_rn(a, s) bit for bit;
//  - for |a| < 2^-60 (zeros included) the quotient is below 2^-20, which every element format
//    encodes as a signed zero whatever its exact value: q1 is as tiny, and its sign is forced to
//    a's (q0 + y r loses the sign of a -0 quotient).
constexpr uint32_t kDivLo = 0x2b800000u, kDivHi = 0x53800000u;  // 2^-40, 2^40

__device__ __forceinline__ float rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// a / s as __fdiv_rn(a, s) for every finite a covered by the scale s (s >= 2^-40 there): y is the
// hoisted reciprocal, used when fast (see kDivLo).
struct Fp32Divider {
  float s, y;
  bool fast;
  __device__ __forceinline__ explicit Fp32Divider(float scale) : s(scale), y(0.0f) {
    fast = fbits(scale) - kDivLo <= kDivHi - kDivLo;
    const float y0 = rcp_approx(scale);
    y = __fmaf_rn(y0, __fmaf_rn(-scale, y0, 1.0f), y0);
  }
  __device__ __forceinline__ float fast_div(float a) const {
    const float q0 = __fmul_rn(a, y);
    const float q1 = __fmaf_rn(y, __fmaf_rn(-q0, s, a), q0);
    return __uint_as_float(__float_as_uint(q1) | (__float_as_uint(a) & 0x80000000u));
  }
  // |a| / s for a = |a| >= 0: the same quotient without the sign fix-up (every step of fast_div
  // is sign-symmetric, so this is |fast_div(a)|; zeros come out +0).
  __device__ __forceinline__ float fast_div_mag(float a) const {
    const float q0 = __fmul_rn(a, y);
    return __fmaf_rn(y, __fmaf_rn(-q0, s, a), q0);
  }
};

// decode_ue4m3 by the hardware conversion (exact: every e4m3 value is an f16 value); byte 0x7f
// (NaN) gives a NaN like the software decoder.
__device__ __forceinline__ float decode_ue4m3_hw(uint8_t b) {
  const __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(b & 0x7fu), __NV_E4M3);
  return __half2float(__half(h));
}

// nvfp4_block_scale (codec.hpp) with the e4m3 rounding of the clamped value done by the hardware
// conversion, which equals encode_e4m3 on every finite input (see the top of this file).
__device__ __forceinline__ uint8_t nvfp4_block_scale_hw(uint32_t amax_bits, float s_t) {
  const float v = nvfp4_block_scale_value(amax_bits, s_t);
  return v != v ? kE4M3NaN : static_cast<uint8_t>(cvt_fp8x2<Elem::kE4M3>(v, 0.0f));
}

// nvfp4_block_scale_hw with the two divisions of its value, (amax / 6) / s_t, through dividers
// hoisted out of the chunk loop (Fp32Divider: exactly __fdiv_rn in the range it checks): by6 of 6
// and by_st of s_t. Taken when s_t is in that range and 2^-57 <= amax <= 2^56 (quotients far from
// the fp32 limits); the IEEE divisions otherwise.
__device__ __forceinline__ uint8_t nvfp4_block_scale_hoisted(uint32_t amax_bits, float s_t,
                                                             const Fp32Divider& by6,
                                                             const Fp32Divider& by_st) {
  if (!by_st.fast || amax_bits - 0x23000000u > 0x5b800000u - 0x23000000u) {  // 2^-57 .. 2^56
    return nvfp4_block_scale_hw(amax_bits, s_t);
  }
  float v = by_st.fast_div_mag(by6.fast_div_mag(__uint_as_float(amax_bits)));
  v = v < 0.015625f ? 0.015625f : (v > 448.0f ? 448.0f : v);
  return static_cast<uint8_t>(cvt_fp8x2<Elem::kE4M3>(v, 0.0f));
}

// How the codes of a chunk are derived from its values.
struct ChunkScale {
  enum Kind { kMx, kFp32, kNvfp4 } kind;
  float s;     // kFp32: the scale; kNvfp4: s_t
  uint8_t sb;  // kMx: the ue8m0 byte; kNvfp4: the ue4m3 block scale
};

// q[i] = __fdiv_rn(v[i], div) (kMag: of |v[i]|), the slow path of a chunk whose scale is outside
// kDivLo..kDivHi (an all-zero or tiny block). One division in a loop that is not unrolled, the 16
// values rotating through registers (static indices only, so nothing goes to local memory): 16
// unrolled divisions, each with its FCHK branch to the slow subroutine, were ~160 instructions
// per inlined chunk site of code that almost never runs, spread through the hot loops (the tile
// kernels of the fp32-scale formats: 41-88 KB of SASS, 24-30 % less looped).
//
// SlowDivision picks the form per kernel, as measured (H200, session 58, one process, ratio to
// copy, unrolled -> looped): 1x128 +T 8192² 0.693 -> 0.725 (instruction-fetch stalls 2.69 ->
// 1.79 warps per issue), 4097x8192 0.684 -> 0.705; fp8_row rows 0.886 -> 0.938; 128x128 +T
// 0.871 -> 0.886, rows 0.966 -> 0.972; fp8_tensor `amax=` +T 0.875 -> 0.883; nvfp4 `amax=` +T
// 0.479 -> 0.485. The row kernel of the e2m1 formats keeps the unrolled form: looped, its mxfp4
// rows lost 1.4 % (0.806 -> 0.795) and nvfp4 rows moved +0.1 %.
enum class SlowDivision { kLooped, kUnrolled };
template <bool kMag>
__device__ __forceinline__ void div_chunk_cold(const float (&v)[kChunk], float div,
                                               float (&q)[kChunk]) {
  float a[kChunk];
#pragma unroll
  for (int i = 0; i < kChunk; ++i) a[i] = v[i];
#pragma unroll 1
  for (int n = 0; n < kChunk; ++n) {
    const float r = __fdiv_rn(kMag ? fabsf(a[0]) : a[0], div);
#pragma unroll
    for (int i = 0; i + 1 < kChunk; ++i) a[i] = a[i + 1];
    a[kChunk - 1] = r;
  }
#pragma unroll
  for (int i = 0; i < kChunk; ++i) q[i] = a[i];
}

// Encodes 16 values into 16 fp8 codes (packed little-endian into 4 words) or 16 fp4 codes (2
// words, low nibble first), exactly as codec.hpp's encode_mx / encode_scaled / encode_nvfp4.
template <Elem E, SlowDivision kSlow = SlowDivision::kLooped>
__device__ __forceinline__ void encode_chunk(const float (&v)[kChunk], const ChunkScale& cs,
                                             uint32_t (&out)[4]) {
  bool nan_scale;
  float mult = 1.0f, div = 1.0f;
  if (cs.kind == ChunkScale::kMx) {
    nan_scale = cs.sb == 0xff;
    mult = mx_inv_scale(cs.sb);
  } else if (cs.kind == ChunkScale::kFp32) {
    nan_scale = abs_bits(cs.s) >= kF32Inf;
    div = cs.s;
  } else {
    nan_scale = cs.sb == kE4M3NaN;
    div = mul_rn(cs.s, decode_ue4m3_hw(cs.sb));
  }
  // The raw __fmul_rn / __fdiv_rn (not codec.hpp's mul_rn / div_rn, which canonicalize a NaN
  // result): with a finite scale every value here is finite and so is every quotient (a scale is
  // >= 2^-126 and >= the amax it covers / max_normal), so no NaN can arise, and a block with a
  // non-finite value has a NaN scale and is written as NaN codes below.
  float q[kChunk];
  if constexpr (E == Elem::kE2M1) {
    // Quotients of |v| (multiplication and division round sign-symmetrically, so these are the
    // magnitudes of v / s), the signs taken from v by the packer: no |.| or sign fix-up per element.
    if (cs.kind == ChunkScale::kMx) {
#pragma unroll
      for (int i = 0; i < kChunk; ++i) q[i] = __fmul_rn(fabsf(v[i]), mult);
    } else if (const Fp32Divider d(div); d.fast) {
#pragma unroll
      for (int i = 0; i < kChunk; ++i) q[i] = d.fast_div_mag(fabsf(v[i]));
    } else if constexpr (kSlow == SlowDivision::kUnrolled) {
#pragma unroll
      for (int i = 0; i < kChunk; ++i) q[i] = __fdiv_rn(fabsf(v[i]), div);
    } else {
      div_chunk_cold<true>(v, div, q);
    }
#pragma unroll
    for (int w = 0; w < 2; ++w) out[w] = nan_scale ? 0x77777777u : pack_e2m1x8(q + 8 * w, v + 8 * w);
    out[2] = out[3] = 0;
  } else {
    if (cs.kind == ChunkScale::kMx) {
#pragma unroll
      for (int i = 0; i < kChunk; ++i) q[i] = __fmul_rn(v[i], mult);
    } else if (const Fp32Divider d(div); d.fast) {  // the fast path of __fdiv_rn (see kDivLo)
#pragma unroll
      for (int i = 0; i < kChunk; ++i) q[i] = d.fast_div(v[i]);
    } else if constexpr (kSlow == SlowDivision::kUnrolled) {
#pragma unroll
      for (int i = 0; i < kChunk; ++i) q[i] = __fdiv_rn(v[i], div);
    } else {
      div_chunk_cold<false>(v, div, q);
    }
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const uint32_t lo = cvt_fp8x2<E>(q[4 * w], q[4 * w + 1]);
      const uint32_t hi = cvt_fp8x2<E>(q[4 * w + 2], q[4 * w + 3]);
      out[w] = nan_scale ? 0x7f7f7f7fu : (lo | hi << 16);
    }
  }
}

// a * b + c on the two 16-bit lanes of bf16 / f16 words, rounded to nearest even once.
template <class In>
__device__ __forceinline__ uint32_t fma2(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  if constexpr (std::is_same_v<In, __nv_bfloat16>) {
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  } else {
    static_assert(std::is_same_v<In, __half>, "16-bit inputs only");
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  }
  return d;
}

// MXFP4 codes of bf16 / f16 inputs, two elements per instruction. With the power-of-two scale
// 2^e, e2m1_magnitude_biased's three terms of q = |x| 2^-e, RNE(2q), RNE(q) + 2 and RNE(q/2) + 4,
// are each ONE fused multiply-add of |x| (the 16-bit input itself) by 2^(1-e), 2^-e or 2^(-1-e)
// plus a magic constant M in the input's own 16-bit format, rounded once to nearest even: M is 128
// (bf16) or 1024 (f16), the format's ulp is 1 on [M, 2M) and 2q < 16, so the result is M + the
// same integer as the fp32 term, and the code is the low byte of the lanes' packed minimum (the
// order of the lanes' bits is the order of the values, as in fp32). fma.rn.{bf16x2,f16x2} on the
// two lanes of a word: 3 HFMA2 + 2 VIMNMX per two elements where the fp32 path spends ~12
// instructions. Exact when the multipliers are normal 16-bit numbers and no subnormal input can
// reach a nonzero code (so the hardware's subnormal handling never matters): e in [-124, 125]
// for bf16 (a subnormal |x| < 2^-126 gives q < 1/4: code 0 either way), [-12, 13] for f16
// (|x| < 2^-14); other scales take the fp32 path (encode_chunk), as do NaN scales.
template <class In>
struct Mx4Packed {
  static_assert(sizeof(In) == 2, "16-bit inputs only");
  static constexpr bool kBf16 = std::is_same_v<In, __nv_bfloat16>;
  static constexpr uint32_t kMagic = kBf16 ? 0x4300u : 0x6400u;  // 128 / 1024
  static constexpr int kBias = kBf16 ? 127 : 15, kMantBits = kBf16 ? 7 : 10;
  static constexpr int kEMin = kBf16 ? -124 : -12, kEMax = kBf16 ? 125 : 13;
  uint32_t m1, m2, m3;  // per lane: 2^(1-e), 2^-e, 2^(-1-e)

  // The scale byte sb = e + 127 is in range (NaN's 0xff is not).
  static __device__ __forceinline__ bool usable(uint32_t sb) {
    return sb - static_cast<uint32_t>(127 + kEMin) <= static_cast<uint32_t>(kEMax - kEMin);
  }
  // 16-bit bits of 2^(k - e) for a lane with scale byte sb
  static __device__ __forceinline__ uint32_t pow2(uint32_t sb, int k) {
    return static_cast<uint32_t>(k + 127 + kBias - static_cast<int>(sb)) << kMantBits;
  }
  __device__ __forceinline__ Mx4Packed(uint32_t sb_lo, uint32_t sb_hi)
      : m1(pow2(sb_lo, 1) | pow2(sb_hi, 1) << 16),
        m2(pow2(sb_lo, 0) | pow2(sb_hi, 0) << 16),
        m3(pow2(sb_lo, -1) | pow2(sb_hi, -1) << 16) {}

  // Lanes M + (magnitude code) of the two elements of the raw word w.
  __device__ __forceinline__ uint32_t magnitudes(uint32_t w) const {
    constexpr uint32_t kTwice = 0x00010001u;
    const uint32_t a = w & 0x7fff7fffu;
    const uint32_t b1 = fma2<In>(a, m1, kMagic * kTwice);
    const uint32_t b2 = fma2<In>(a, m2, (kMagic + 2) * kTwice);
    const uint32_t b3 = fma2<In>(a, m3, (kMagic + 4) * kTwice);
    return __vminu2(__vminu2(__vminu2(b1, b2), b3), (kMagic + 7) * kTwice);
  }
};

// NVFP4 codes of bf16 / f16 inputs, two elements per word, by comparison with the 16-bit bounds
// of their blocks (codec.hpp, nvfp4_bound16): per word seven set.gt.{bf16x2,f16x2} of |x| with
// the bounds (1.0 in a lane where |x| exceeds the bound) summed onto the magic constant M of
// Mx4Packed by fma.rn, so that each lane ends as M + its magnitude code (exact: small integers).
// The comparisons take the integer/logic pipe that limits these kernels, the sums the FMA pipe
// (ncu, perf-notes quantization session 31). The bounds cost two FMA-pipe operations and a byte
// permute each per block. Taken where the block's divisor S passes nvfp4_compare_usable (a NaN
// scale does not: its blocks keep their NaN codes on the fp32 path).
template <class In>
struct Nvfp4Packed {
  static_assert(sizeof(In) == 2, "16-bit inputs only");
  static constexpr bool kBf16 = std::is_same_v<In, __nv_bfloat16>;
  static constexpr uint32_t kMagic2 = kBf16 ? 0x43004300u : 0x64006400u;  // 128 / 1024 per lane
  static constexpr uint32_t kOne2 = kBf16 ? 0x3f803f80u : 0x3c003c00u;    // 1.0 per lane
  uint32_t g[7];  // per lane: the bound of the lane's block

  // S of a block: s_t times the decoded block scale, as encode_chunk divides by.
  static __device__ __forceinline__ float divisor(const ChunkScale& cs) {
    return __fmul_rn(cs.s, decode_ue4m3_hw(cs.sb));
  }
  // Both lanes in one block (rows). bf16 bounds are the high halves of the fp32 ones.
  __device__ __forceinline__ explicit Nvfp4Packed(float s) {
#pragma unroll
    for (int j = 0; j < 7; ++j) {
      if constexpr (kBf16) {
        const uint32_t b = fbits(nvfp4_bound_f32(s, j));
        g[j] = __byte_perm(b, b, 0x3232);
      } else {
        g[j] = nvfp4_bound16<false>(s, j) * 0x10001u;
      }
    }
  }
  // Low lane in the block of s_lo, high lane in that of s_hi (column pairs).
  __device__ __forceinline__ Nvfp4Packed(float s_lo, float s_hi) {
#pragma unroll
    for (int j = 0; j < 7; ++j) {
      if constexpr (kBf16) {
        g[j] = __byte_perm(fbits(nvfp4_bound_f32(s_lo, j)), fbits(nvfp4_bound_f32(s_hi, j)), 0x7632);
      } else {
        g[j] = nvfp4_bound16<false>(s_lo, j) | nvfp4_bound16<false>(s_hi, j) << 16;
      }
    }
  }
  static __device__ __forceinline__ uint32_t abs_gt(uint32_t w, uint32_t bound) {
    uint32_t d;
    if constexpr (kBf16) {
      asm("{.reg .b32 a;\n abs.bf16x2 a, %1;\n set.gt.bf16x2.bf16x2 %0, a, %2;}"
          : "=r"(d) : "r"(w), "r"(bound));
    } else {
      asm("{.reg .b32 a;\n abs.f16x2 a, %1;\n set.gt.f16x2.f16x2 %0, a, %2;}"
          : "=r"(d) : "r"(w), "r"(bound));
    }
    return d;
  }
  // Lanes M + (magnitude code) of the two elements of the raw word w.
  __device__ __forceinline__ uint32_t magnitudes(uint32_t w) const {
    uint32_t s = kMagic2;
#pragma unroll
    for (int j = 0; j < 7; ++j) s = fma2<In>(abs_gt(w, g[j]), kOne2, s);
    return s;
  }
};

// The e2m1 codes of 16 elements held as 8 words of 16-bit pairs by a packed encoder (Mx4Packed,
// Nvfp4Packed), packed low nibble first into out[0..1].
template <class Enc>
__device__ __forceinline__ void encode_e2m1_words(const Enc& enc, const uint32_t (&w)[8],
                                                  uint32_t (&out)[4]) {
  uint32_t mag[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) mag[j] = enc.magnitudes(w[j]);
  out[0] = pack_e2m1_lanes(mag, w);
  out[1] = pack_e2m1_lanes(mag + 4, w + 4);
  out[2] = out[3] = 0;
}

// The same for a column pair of 16 rows (w[k]: row k of both columns) into out[column][half].
template <class Enc>
__device__ __forceinline__ void encode_e2m1_col_pair(const Enc& enc, const uint32_t (&w)[kChunk],
                                                     uint32_t (&out)[2][2]) {
  uint32_t mag[kChunk];
#pragma unroll
  for (int k = 0; k < kChunk; ++k) mag[k] = enc.magnitudes(w[k]);
  pack_e2m1_col_pair(mag, w, out);
}

// encode_chunk of a row chunk held as raw words: MXFP4 and NVFP4 of bf16 / f16 on packed halves
// where the scale allows (Mx4Packed, Nvfp4Packed), the fp32 path otherwise.
template <class In, Elem E, SlowDivision kSlow = SlowDivision::kLooped>
__device__ __forceinline__ void encode_row_chunk(const RowChunk<In>& x, const ChunkScale& cs,
                                                 uint32_t (&out)[4]) {
  if constexpr (E == Elem::kE2M1 && sizeof(In) == 2) {
    if (cs.kind == ChunkScale::kMx && Mx4Packed<In>::usable(cs.sb)) {
      encode_e2m1_words(Mx4Packed<In>(cs.sb, cs.sb), x.w, out);
      return;
    }
    if (cs.kind == ChunkScale::kNvfp4) {
      const float s = Nvfp4Packed<In>::divisor(cs);  // NaN for a NaN scale: not usable
      if (nvfp4_compare_usable(s)) {
        encode_e2m1_words(Nvfp4Packed<In>(s), x.w, out);
        return;
      }
    }
  }
  float v[kChunk];
  x.values(v);
  encode_chunk<E, kSlow>(v, cs, out);
}

// Stores the codes of `n` (even for fp4) elements at element offset `e` of a code buffer.
template <Elem E>
__device__ __forceinline__ void store_chunk(uint8_t* data, int64_t e, int n,
                                            const uint32_t (&w)[4]) {
  constexpr bool kFp4 = E == Elem::kE2M1;
  uint8_t* dst = data + (kFp4 ? e / 2 : e);
  if (n == kChunk) {
    if (!kFp4 && aligned16(dst)) {
      *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
      return;
    }
    if (kFp4 && (reinterpret_cast<uintptr_t>(dst) & 7u) == 0) {
      *reinterpret_cast<uint2*>(dst) = make_uint2(w[0], w[1]);
      return;
    }
  }
  // Tail: byte stores, unrolled with static indices so that w stays in registers.
  const int bytes = kFp4 ? n / 2 : n;
#pragma unroll
  for (int i = 0; i < (kFp4 ? 8 : 16); ++i) {
    if (i < bytes) dst[i] = static_cast<uint8_t>(w[i / 4] >> (8 * (i % 4)));
  }
}

// Block-wide (blockDim.x == 256) max of a value; every thread gets the result.
__device__ __forceinline__ uint32_t block_max_256(uint32_t v, uint32_t* smem8) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();  // smem8 may still be read from a previous call
  if ((threadIdx.x & 31) == 0) smem8[threadIdx.x >> 5] = v;
  __syncthreads();
  v = smem8[0];
#pragma unroll
  for (int i = 1; i < 8; ++i) v = max(v, smem8[i]);
  return v;
}

// Division by a runtime constant with a multiply-high (as CUTLASS's FastDivmod): exact for
// 0 <= n < 2^31 and 1 <= d < 2^31. 64-bit division by a runtime value costs ~80 instructions, a
// large share of a memory-bound kernel's budget per 16 elements, so launches are split such that
// thread indices stay below 2^31.
struct FastDiv {
  uint32_t d = 1, mul = 0, shift = 0;
  FastDiv() = default;
  explicit FastDiv(int64_t divisor) : d(static_cast<uint32_t>(divisor)) {
    if (d == 1) return;  // mul == 0 marks division by 1
    uint32_t l = 0;
    while ((uint64_t{1} << l) < d) ++l;  // ceil(log2 d)
    mul = static_cast<uint32_t>(((uint64_t{1} << (31 + l)) + d - 1) / d);
    shift = l - 1;
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const {
    return mul == 0 ? n : __umulhi(n, mul) >> shift;
  }
};

constexpr int64_t kMaxLaunchThreads = int64_t{1} << 31;

// Scale offset of group g (= c >> block_shift) of row r for the group formats (MX, NVFP4, 1x128),
// as scale_index() but without divisions: C scale columns per row.
__device__ __forceinline__ int64_t group_scale_offset(bool swizzle, int64_t C, int64_t r, int64_t g) {
  return swizzle ? swizzled_scale_offset(r, g, C) : r * C + g;
}

inline int log2_exact(int v) {
  int l = 0;
  while ((1 << l) < v) ++l;
  return l;
}

inline unsigned grid_for(int64_t threads, int block = 256) {
  return static_cast<unsigned>((threads + block - 1) / block);
}

// Bytes of x that a two-read format's amax pass leaves evict-normal in L2 (the encoder's first
// ones; the rest loads as evict-first): half the L2, about what survives the pass (H200,
// session 22: 24 MB kept +2-4 % against no hints, 40 MB kept no better than none).
inline int64_t l2_keep_bytes(const detail::DeviceInfo& dev) {
  return static_cast<int64_t>(dev.l2_bytes / 2);
}

// Launchers provided by the kernel files to the dispatcher (quantize_sm90.cu).
// A call with the transposed copy (quantize_transpose_sm90.cu), every format but 128x128: writes
// data, its scales, data_t and its scales from one read of x (kFp8Row: two). tensor_scale_out:
// where to write the tensor scale from `amax` (the caller's amax), or null.
Status launch_transposed(const Problem& p, const uint32_t* amax, float* tensor_scale_out,
                         const detail::DeviceInfo& dev, cudaStream_t stream);
// 128x128 blocks, any batch, with the optional transposed copy (the same tile kernel).
Status launch_block128(const Problem& p, int sm_count, cudaStream_t stream);
// kFp8Tensor / kNvfp4 along rows with the amax reduced here (quantize_onepass_sm90.cu): one
// cooperative launch that reads x once for the share of it that fits on chip. Zeroes amax_slot
// (the tensor-scale output), reduces the amax bits into it and writes data and its scales; sets
// *launched to false (and launches nothing) where the call does not qualify (16-bit x, rows of
// whole 16-element chunks, no transposed copy, no given amax) or the GPU cannot keep one CTA per
// SM resident, and the two-pass path runs instead.
Status launch_onepass(const Problem& p, uint32_t* amax_slot, const detail::DeviceInfo& dev,
                      cudaStream_t stream, bool* launched);

}  // namespace deepwell::quant
