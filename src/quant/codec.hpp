// Scalar codecs of the low-precision formats (docs/formats.md, /work/shared/formats.md), usable
// from host code and from CUDA kernels alike, so that the GPU kernels and the CPU reference share
// one definition of every rounding and scale rule.
//
// Bit-exactness across CPU and GPU: every float operation here is a single IEEE-rounded division or
// multiplication (div_rn / mul_rn: no FMA contraction, no fast-math), or integer work on the bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define DW_QHD __host__ __device__ __forceinline__
#else
#define DW_QHD inline
#endif

namespace deepwell::quant {

DW_QHD uint32_t fbits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

DW_QHD float bitsf(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

constexpr uint32_t kF32Inf = 0x7f800000u;
constexpr uint32_t kF32QNaN = 0x7fc00000u;  // the NaN every scale rule writes (positive, quiet)

// A NaN result is written as kF32QNaN: x86 keeps an operand's NaN payload and sign, the GPU
// returns its own canonical NaN, and CPU and GPU outputs must match bit for bit.
DW_QHD float canonical_nan(float r) { return r != r ? bitsf(kF32QNaN) : r; }

DW_QHD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return canonical_nan(__fdiv_rn(a, b));
#else
  return canonical_nan(a / b);
#endif
}

DW_QHD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return canonical_nan(__fmul_rn(a, b));
#else
  return canonical_nan(a * b);
#endif
}

// Single IEEE-rounded fp32 addition and fused multiply-add (no NaN canonicalization: the callers
// feed them non-NaN values only).
DW_QHD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

DW_QHD float fma_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
constexpr uint32_t kF32MinNormal = 0x00800000u;  // 2^-126: the smallest FP32 scale

// ------------------------------------------------------------------------------- element formats

// Canonical NaN codes written by the encoders (the sign of an input NaN is not kept: CPU and GPU
// arithmetic disagree on it).
constexpr uint8_t kE4M3NaN = 0x7f;
constexpr uint8_t kE5M2NaN = 0x7f;
constexpr uint8_t kE4M3Max = 0x7e;  // 448
constexpr uint8_t kE5M2Max = 0x7b;  // 57344
constexpr uint8_t kE2M1Max = 0x7;   // 6

// Round a finite, non-negative fp32 (its bits `a`) to a minifloat with M mantissa bits and the
// given bias: round to nearest, ties to even, saturating at `max_code`. Returns the magnitude code
// (exponent field << M | mantissa); subnormals of the target are handled by sharing the quantum of
// the lowest binade.
template <int M, int BIAS>
DW_QHD uint32_t encode_magnitude(uint32_t a, uint32_t max_code) {
  const int ef = static_cast<int>(a >> 23);
  // fp32 zero or subnormal: below half the smallest subnormal of every target format.
  if (ef == 0) return 0;
  const int e = ef - 127;
  const int eq = e > 1 - BIAS ? e : 1 - BIAS;  // binade of the result (subnormals use the lowest)
  const int shift = eq - e + 23 - M;           // fp32 significand bits below the target's quantum
  if (shift >= 25) return 0;                   // value < half the quantum
  const uint32_t sig = (a & 0x7fffffu) | 0x800000u;
  uint32_t q = sig >> shift;  // number of quanta, truncated
  const uint32_t rem = sig & ((1u << shift) - 1u), half = 1u << (shift - 1);
  q += (rem > half || (rem == half && (q & 1u))) ? 1u : 0u;
  // Normal: (exponent field << M) + mantissa == ((field - 1) << M) + q, and a carry out of the
  // mantissa moves into the exponent by itself.
  const uint32_t code = (static_cast<uint32_t>(eq + BIAS - 1) << M) + q;
  return code > max_code ? max_code : code;
}

// fp32 -> e4m3fn: RNE, finite values and +-Inf saturate to +-448 (there is no Inf), NaN -> 0x7f.
DW_QHD uint8_t encode_e4m3(float x) {
  const uint32_t u = fbits(x), a = u & 0x7fffffffu;
  if (a > kF32Inf) return kE4M3NaN;
  const uint32_t sign = (u >> 24) & 0x80u;
  if (a == kF32Inf) return static_cast<uint8_t>(sign | kE4M3Max);
  return static_cast<uint8_t>(sign | encode_magnitude<3, 7>(a, kE4M3Max));
}

// fp32 -> e5m2: RNE, finite values saturate to +-57344, +-Inf stays +-Inf, NaN -> 0x7f.
DW_QHD uint8_t encode_e5m2(float x) {
  const uint32_t u = fbits(x), a = u & 0x7fffffffu;
  if (a > kF32Inf) return kE5M2NaN;
  const uint32_t sign = (u >> 24) & 0x80u;
  if (a == kF32Inf) return static_cast<uint8_t>(sign | 0x7cu);
  return static_cast<uint8_t>(sign | encode_magnitude<2, 15>(a, kE5M2Max));
}

// fp32 -> e2m1 (a 4-bit code): RNE, saturating at +-6 (Inf too); NaN -> +6 (no NaN in e2m1; this
// is what NVIDIA's cvt.rn.satfinite.e2m1x2 does). The thresholds are the midpoints between the
// eight magnitudes {0, .5, 1, 1.5, 2, 3, 4, 6}: a tie goes to the even code (strict > when the
// lower neighbour has an even code).
DW_QHD uint8_t encode_e2m1(float x) {
  const uint32_t u = fbits(x), a = u & 0x7fffffffu;
  if (a > kF32Inf) return kE2M1Max;
  const float v = bitsf(a);
  const uint32_t code = (v > 0.25f) + (v >= 0.75f) + (v > 1.25f) + (v >= 1.75f) + (v > 2.5f) +
                        (v >= 3.5f) + (v > 5.0f);
  return static_cast<uint8_t>(((u >> 28) & 0x8u) | code);
}

// The e2m1 magnitude code (0..7) of a non-negative, non-NaN a, plus 0x4b000000 (the fp32 bits of
// 2^23): the kernels' compare-free encoder (sm_90 has no fp4 convert). The e2m1 grid has the
// quantum 0.5 below 2, 1 in [2, 4) and 2 from 4 up, and the codes below those binades are 0, 4
// and 6, so the code is min(RNE(2a), RNE(a) + 2, RNE(a / 2) + 4, 7): each term is the code that
// a's binade would give if its quantum held everywhere; the three lines are concave (they cross
// at a = 2 and a = 4), so their minimum picks a's own binade, and the clamp saturates at 6.
// Ties go to the even code: each term rounds to even and adds an even constant. Each term is
// ONE IEEE-rounded fp32 operation with 2^23 (+2, +4) added: the sum lies in [2^23, 2^24), where
// the fp32 ulp is 1, so its rounding is the RNE and its bits are 0x4b000000 + the rounded count;
// larger a only give larger bits (monotone), which the minimum discards. The bits of positive
// floats order like the floats, so the minimum is taken on the bits. Checked against encode_e2m1
// on every non-NaN fp32 once (offline) and in tests/cpp/test_quant_codec.cpp on the binades
// 2^-8..2^6 plus a stride of the rest.
DW_QHD uint32_t e2m1_magnitude_biased(float a) {
  const uint32_t b1 = fbits(fma_rn(a, 2.0f, 8388608.0f));  // 2^23 + RNE(2a)
  const uint32_t b2 = fbits(add_rn(a, 8388610.0f));        // 2^23 + RNE(a) + 2
  const uint32_t b3 = fbits(fma_rn(a, 0.5f, 8388612.0f));  // 2^23 + RNE(a / 2) + 4
  uint32_t m = b1 < b2 ? b1 : b2;
  m = m < b3 ? m : b3;
  return m < 0x4b000007u ? m : 0x4b000007u;
}

// encode_e2m1 for a non-NaN x (a NaN's sign would survive, hence "non-NaN"), through
// e2m1_magnitude_biased; Inf gives 7 like encode_e2m1.
DW_QHD uint8_t encode_e2m1_nonnan(float x) {
  const uint32_t u = fbits(x);
  const uint32_t code = e2m1_magnitude_biased(bitsf(u & 0x7fffffffu)) & 0xffu;
  return static_cast<uint8_t>(((u >> 28) & 0x8u) | code);
}

// PTX prmt.b32 (default mode): byte n of the result is byte (sel >> 4n) & 7 of the pair (b:a),
// a's bytes being 0..3; when bit 3 of that selector nibble is set, the byte's sign bit is
// replicated over all eight bits instead.
DW_QHD uint32_t prmt_b32(uint32_t a, uint32_t b, uint32_t sel) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
#else
  const uint64_t src = (uint64_t{b} << 32) | a;
  uint32_t d = 0;
  for (int n = 0; n < 4; ++n) {
    const uint32_t s = (sel >> (4 * n)) & 0xfu;
    uint32_t byte = static_cast<uint32_t>(src >> (8 * (s & 7u))) & 0xffu;
    if (s & 8u) byte = (byte & 0x80u) ? 0xffu : 0u;
    d |= byte << (8 * n);
  }
  return d;
#endif
}

// Eight values to eight e2m1 codes, packed low nibble first (element k at bits 4k..4k+3): the
// magnitude codes of mag[k] (non-negative, non-NaN) with the signs of sgn[k], i.e.
// encode_e2m1_nonnan(copysign(mag[k], sgn[k])). The kernels pass |v| / s as mag and v as sgn: the
// quotient of |v| needs no sign fix-up and no |.| before the magnitude code, and sgn is the sign
// of the signed quotient v / s (s > 0), zeros included. Byte gathers (PRMT) instead of per-element
// shifts: the magnitude codes are the low bytes of e2m1_magnitude_biased, the signs the
// replicated top bytes of sgn; the even elements fill the low nibbles, the odd ones the high ones.
DW_QHD uint32_t pack_e2m1x8(const float* mag, const float* sgn) {
  uint32_t m[8], s[8];
  for (int k = 0; k < 8; ++k) {
    s[k] = fbits(sgn[k]);
    m[k] = e2m1_magnitude_biased(mag[k]);
  }
  // bytes 0..3 <- byte 0 of x0, x2, x4, x6 (codes), or the replicated sign of byte 3 (signs)
  auto gather = [](uint32_t x0, uint32_t x2, uint32_t x4, uint32_t x6, uint32_t lo, uint32_t hi) {
    return prmt_b32(prmt_b32(x0, x2, lo), prmt_b32(x4, x6, hi), 0x7610u);
  };
  const uint32_t ev = gather(m[0], m[2], m[4], m[6], 0x0040u, 0x4000u);
  const uint32_t od = gather(m[1], m[3], m[5], m[7], 0x0040u, 0x4000u);
  const uint32_t se = gather(s[0], s[2], s[4], s[6], 0x00fbu, 0xfb00u);
  const uint32_t so = gather(s[1], s[3], s[5], s[7], 0x00fbu, 0xfb00u);
  return (ev | (od << 4)) | (se & 0x08080808u) | (so & 0x80808080u);
}

// Packers for e2m1 codes computed two per 32-bit word (kernels.cuh, Mx4Packed): a 16-bit lane
// holds the magnitude code (0..7) of one element in its low byte (the high byte is a constant of
// that arithmetic), and the element's raw 16-bit input (bf16 / f16) in the same lane of w gives
// its sign (bit 15 of the lane). Byte gathers only: prmt selector nibble 8 + b replicates byte b's
// sign bit, so byte 1 (3) of a word becomes 0x00 or 0xff by the sign of its low (high) lane.
//
// Elements 2j (low lane) and 2j + 1 of mag[j], w[j], j = 0..3: eight codes, low nibble first.
DW_QHD uint32_t pack_e2m1_lanes(const uint32_t* mag, const uint32_t* w) {
  const uint32_t t0 = prmt_b32(mag[0], mag[1], 0x6240u);  // codes of elements 0, 2, 1, 3
  const uint32_t t1 = prmt_b32(mag[2], mag[3], 0x6240u);  // 4, 6, 5, 7
  const uint32_t s0 = prmt_b32(w[0], w[1], 0xfbd9u);      // signs of 0, 2, 1, 3
  const uint32_t s1 = prmt_b32(w[2], w[3], 0xfbd9u);
  const uint32_t ev = prmt_b32(t0, t1, 0x5410u), od = prmt_b32(t0, t1, 0x7632u);
  const uint32_t se = prmt_b32(s0, s1, 0x5410u), so = prmt_b32(s0, s1, 0x7632u);
  return (ev | (od << 4)) | (se & 0x08080808u) | (so & 0x80808080u);
}

// Two columns of 16 rows: mag[k], w[k] hold row k of column 0 (low lane) and column 1 (high
// lane); out[h][o] gets the eight codes of rows 8o .. 8o + 7 of column h, low nibble first.
DW_QHD void pack_e2m1_col_pair(const uint32_t* mag, const uint32_t* w, uint32_t (&out)[2][2]) {
  for (int o = 0; o < 2; ++o) {
    const uint32_t* m = mag + 8 * o;
    const uint32_t* s = w + 8 * o;
    uint32_t y[4];
    for (int j = 0; j < 4; ++j) {
      // bytes: (col 0, row 2j), (col 0, row 2j + 1), (col 1, row 2j), (col 1, row 2j + 1);
      // adding t >> 4 puts each odd row's code in the high nibble of its even row's byte (no
      // carries: every byte of t is at most 7)
      const uint32_t t = prmt_b32(m[2 * j], m[2 * j + 1], 0x6240u);
      y[j] = t + (t >> 4);  // byte 0: column 0's byte j of the output, byte 2: column 1's
    }
    const uint32_t z0 = prmt_b32(y[0], y[1], 0x6240u), z1 = prmt_b32(y[2], y[3], 0x6240u);
    // sign bytes of the even rows (0, 2 | 4, 6) and odd rows (1, 3 | 5, 7) of both columns
    const uint32_t ae = prmt_b32(s[0], s[2], 0xfbd9u), be = prmt_b32(s[4], s[6], 0xfbd9u);
    const uint32_t ao = prmt_b32(s[1], s[3], 0xfbd9u), bo = prmt_b32(s[5], s[7], 0xfbd9u);
    for (int h = 0; h < 2; ++h) {
      const uint32_t sel = h ? 0x7632u : 0x5410u;
      out[h][o] = prmt_b32(z0, z1, sel) | (prmt_b32(ae, be, sel) & 0x08080808u) |
                  (prmt_b32(ao, bo, sel) & 0x80808080u);
    }
  }
}

// The same for eight signed non-NaN values q[k]: encode_e2m1_nonnan(q[k]).
DW_QHD uint32_t pack_e2m1x8(const float* q) {
  float mag[8];
  for (int k = 0; k < 8; ++k) mag[k] = bitsf(fbits(q[k]) & 0x7fffffffu);
  return pack_e2m1x8(mag, q);
}

// ------------------------------------------------- NVFP4 codes of 16-bit inputs by comparison
//
// The NVFP4 code of an element a is encode_e2m1(a / S), S = s_t * s_b the block's divisor, which
// compares the rounded quotient q = fl(a / S) with the e2m1 midpoints t_j below (strict > at the
// even j, >= at the odd j). Each comparison moves onto a itself: fl(a/S) > t iff a/S > t + u/2
// (u the fp32 spacing at t; the exact midpoint rounds to t, whose significand is even) iff
// a > B_j = (t + u/2) S, and fl(a/S) >= t iff a >= B_j = (t - u/2) S. B_j is never a float: its
// significand is S's (odd part up to 24 bits) times that of t +- u/2, an odd number of 25 bits,
// so for every float a, a >= B_j iff a > B_j iff a > RD(B_j), the fp32 rounding down of B_j:
// one directed-rounding fma(t, S, +-(u/2) S), (u/2) S being S scaled by a power of two. For an
// input a of a 16-bit format (bf16 or f16) the test is "a > G_j", G_j the largest 16-bit value
// <= RD(B_j), and the magnitude code is the number of bounds a exceeds: seven packed 16-bit
// comparisons per two elements in the kernels (kernels.cuh, Nvfp4Packed), where the division
// path spends ~12 fp32 operations per element. Exact for S in [2^-100, 2^100] (every B_j and
// (u/2) S a normal float); the kernels divide otherwise (a tensor whose scales reach that far).
// (functions rather than arrays: namespace-scope constexpr arrays are not usable in device code)
DW_QHD float e2m1_mid(int j) {
  return j < 4 ? (j < 2 ? (j == 0 ? 0.25f : 0.75f) : (j == 2 ? 1.25f : 1.75f))
               : (j < 6 ? (j == 4 ? 2.5f : 3.5f) : 5.0f);
}
DW_QHD int e2m1_mid_half_ulp_log2(int j) {  // log2(u / 2), u the fp32 spacing at e2m1_mid(j)
  return j == 0 ? -26 : j == 1 ? -25 : j < 4 ? -24 : j < 6 ? -23 : -22;
}
constexpr uint32_t kNvfp4CmpSLo = 0x0d800000u, kNvfp4CmpSHi = 0x71800000u;  // 2^-100, 2^100

DW_QHD bool nvfp4_compare_usable(float s) {
  return fbits(s) - kNvfp4CmpSLo <= kNvfp4CmpSHi - kNvfp4CmpSLo;
}

// RD(B_j) for a usable S: the largest float below B_j.
DW_QHD float nvfp4_bound_f32(float s, int j) {
  const float t = e2m1_mid(j);
#if defined(__CUDA_ARCH__)
  const float half_u = __uint_as_float(static_cast<uint32_t>(127 + e2m1_mid_half_ulp_log2(j)) << 23);
  const float half_u_s = __fmul_rn(s, half_u);
  return __fmaf_rd(t, s, j % 2 == 0 ? half_u_s : -half_u_s);
#else
  // t S +- (u/2) S is exact in double (t has 3 significant bits and u/2 S is S shifted: 52 bits)
  const double half_u_s = std::ldexp(static_cast<double>(s), e2m1_mid_half_ulp_log2(j));
  const double b = static_cast<double>(t) * s + (j % 2 == 0 ? half_u_s : -half_u_s);
  const float r = static_cast<float>(b);
  return static_cast<double>(r) > b ? std::nextafter(r, 0.0f) : r;
#endif
}

// The largest f16 value <= x (x >= 0 finite), as bits: rounding toward zero, 0x7bff above 65504.
DW_QHD uint32_t f16_bits_rz(float x) {
#if defined(__CUDA_ARCH__)
  return __half_as_ushort(__float2half_rz(x));
#else
  const uint32_t u = fbits(x), m = u & 0x7fffffu;
  const int e = static_cast<int>(u >> 23) - 127;
  if (e > 15) return 0x7bffu;
  if (e >= -14) return static_cast<uint32_t>(e + 15) << 10 | m >> 13;
  const int sh = -1 - e;  // f16 subnormal: the value in units of 2^-24, truncated
  return sh > 24 ? 0u : (0x800000u | m) >> sh;
#endif
}

// G_j of a usable S for 16-bit inputs (kBf16: bf16, else f16), the largest 16-bit value <=
// RD(B_j): |x| > G_j (on the 16-bit values) iff fl(|x| / S) passes midpoint j.
template <bool kBf16>
DW_QHD uint32_t nvfp4_bound16(float s, int j) {
  const float b = nvfp4_bound_f32(s, j);
  return kBf16 ? fbits(b) >> 16 : f16_bits_rz(b);
}

DW_QHD float decode_e4m3(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
  const uint32_t e = (b >> 3) & 0xfu, m = b & 0x7u;
  if (e == 0xf && m == 0x7) return bitsf(sign | kF32QNaN);
  if (e == 0) return bitsf(sign | fbits(static_cast<float>(m) * 0.001953125f));  // m * 2^-9, exact
  return bitsf(sign | ((e + 120u) << 23) | (m << 20));
}

DW_QHD float decode_e5m2(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
  const uint32_t e = (b >> 2) & 0x1fu, m = b & 0x3u;
  if (e == 0x1f) return bitsf(sign | (m ? kF32QNaN : kF32Inf));
  if (e == 0) return bitsf(sign | fbits(static_cast<float>(m) * 1.52587890625e-05f));  // m * 2^-16
  return bitsf(sign | ((e + 112u) << 23) | (m << 21));
}

// A 4-bit e2m1 code (the low nibble of `n`).
DW_QHD float decode_e2m1(uint8_t n) {
  const uint32_t sign = static_cast<uint32_t>(n & 0x8u) << 28;
  const uint32_t e = (n >> 1) & 0x3u, m = n & 0x1u;
  if (e == 0) return bitsf(sign | (m ? 0x3f000000u : 0u));  // 0 or 0.5
  return bitsf(sign | ((e + 126u) << 23) | (m << 22));
}

// UE8M0: 2^(b - 127); 0xff is NaN; 0 is 2^-127 (an fp32 subnormal, exact).
DW_QHD float decode_ue8m0(uint8_t b) {
  if (b == 0xff) return bitsf(kF32QNaN);
  if (b == 0) return bitsf(0x00400000u);
  return bitsf(static_cast<uint32_t>(b) << 23);
}

// UE4M3: e4m3 whose sign bit is unused (ignored when decoding).
DW_QHD float decode_ue4m3(uint8_t b) { return decode_e4m3(b & 0x7fu); }

// ------------------------------------------------------------------------------- element traits

enum class Elem : int32_t { kE4M3 = 0, kE5M2 = 1, kE2M1 = 2 };

struct ElemInfo {
  float max_normal;   // 448, 57344, 6
  int emax;           // floor(log2(max_normal)): 8, 15, 2
  uint32_t max_mant;  // fp32 mantissa bits of max_normal: 1.75 -> 0x600000, 1.5 -> 0x400000
};

DW_QHD ElemInfo elem_info(Elem e) {
  switch (e) {
    case Elem::kE4M3: return {448.0f, 8, 0x600000u};
    case Elem::kE5M2: return {57344.0f, 15, 0x600000u};
    default: return {6.0f, 2, 0x400000u};
  }
}

DW_QHD uint8_t encode_elem(Elem e, float x) {
  switch (e) {
    case Elem::kE4M3: return encode_e4m3(x);
    case Elem::kE5M2: return encode_e5m2(x);
    default: return encode_e2m1(x);
  }
}

DW_QHD float decode_elem(Elem e, uint8_t code) {
  switch (e) {
    case Elem::kE4M3: return decode_e4m3(code);
    case Elem::kE5M2: return decode_e5m2(code);
    default: return decode_e2m1(code);
  }
}

// The code every element of a block with a NaN scale is stored as.
DW_QHD uint8_t nan_code(Elem e) { return e == Elem::kE2M1 ? kE2M1Max : kE4M3NaN; }

// --------------------------------------------------------------------------------- scale rules

// |x| as fp32 bits: a max over these is a NaN-propagating amax (every NaN sorts above Inf).
DW_QHD uint32_t abs_bits(float x) { return fbits(x) & 0x7fffffffu; }

// ceil(log2(amax / max_normal)) computed exactly from the bits of a positive normal amax:
// amax = (1 + f) 2^e and max_normal = (1 + f_max) 2^emax give e - emax, plus 1 when f > f_max.
DW_QHD int ceil_log2_ratio(uint32_t amax_bits, const ElemInfo& info) {
  return static_cast<int>(amax_bits >> 23) - 127 - info.emax +
         ((amax_bits & 0x7fffffu) > info.max_mant ? 1 : 0);
}

// MX (UE8M0) scale byte of a block with the given amax (as abs bits).
//   floor: E = floor(log2 amax) - emax_elem;   rceil: E = ceil(log2(amax / max_normal))
// E is clamped to [-127, 127]; a zero (or fp32-subnormal) amax gives E = -127; NaN/Inf -> 0xff.
// Branch-free (selects only; a GPU chunk computes one per group): the byte is E + 127 =
// clamp(exponent field - emax (+ 1), 0, 254); a zero or subnormal amax has field 0, and
// -emax + 1 <= 0 clamps it to byte 0 (E = -127). Checked against the branchy form (early returns
// for NaN/Inf and non-normal amaxes) for every amax bit pattern, rule and element type.
DW_QHD uint8_t mx_scale(uint32_t amax_bits, const ElemInfo& info, bool rceil) {
  const int up = rceil && (amax_bits & 0x7fffffu) > info.max_mant ? 1 : 0;
  int b = static_cast<int>(amax_bits >> 23) - info.emax + up;
  b = b < 0 ? 0 : (b > 254 ? 254 : b);
  return amax_bits >= kF32Inf ? uint8_t{0xff} : static_cast<uint8_t>(b);
}

// 1 / 2^(byte - 127), exact for every byte but 0xff (the caller handles NaN scales); byte 254
// gives the fp32 subnormal 2^-127.
DW_QHD float mx_inv_scale(uint8_t byte) {
  return byte == 254 ? bitsf(0x00400000u) : bitsf(static_cast<uint32_t>(254 - byte) << 23);
}

// FP32 scale of a block: amax / max_normal, at least 2^-126; pow2: 2^ceil(log2(amax / max_normal))
// computed exactly (the MX "rceil" exponent), within [2^-126, 2^127]. NaN/Inf amax -> NaN.
DW_QHD float fp32_scale(uint32_t amax_bits, const ElemInfo& info, bool pow2) {
  if (amax_bits >= kF32Inf) return bitsf(kF32QNaN);
  if (pow2) {
    int e = amax_bits < kF32MinNormal ? -126 : ceil_log2_ratio(amax_bits, info);
    e = e < -126 ? -126 : (e > 127 ? 127 : e);
    return bitsf(static_cast<uint32_t>(e + 127) << 23);
  }
  const float s = div_rn(bitsf(amax_bits), info.max_normal);
  return fbits(s) < kF32MinNormal ? bitsf(kF32MinNormal) : s;
}

// NVFP4 per-tensor scale s_t = amax / (448 * 6), at least 2^-126; NaN/Inf amax -> NaN.
DW_QHD float nvfp4_tensor_scale(uint32_t amax_bits) {
  if (amax_bits >= kF32Inf) return bitsf(kF32QNaN);
  const float s = div_rn(bitsf(amax_bits), 2688.0f);
  return fbits(s) < kF32MinNormal ? bitsf(kF32MinNormal) : s;
}

// The value an NVFP4 block scale rounds: clamp((amax_b / 6) / s_t, 2^-6, 448), or NaN when amax_b
// or s_t is not finite.
DW_QHD float nvfp4_block_scale_value(uint32_t amax_bits, float s_t) {
  if (amax_bits >= kF32Inf || fbits(s_t) >= kF32Inf) return bitsf(kF32QNaN);
  const float v = div_rn(div_rn(bitsf(amax_bits), 6.0f), s_t);
  return v < 0.015625f ? 0.015625f : (v > 448.0f ? 448.0f : v);
}

// NVFP4 block scale s_b = to_e4m3(clamp((amax_b / 6) / s_t, 2^-6, 448)); NaN when either is.
DW_QHD uint8_t nvfp4_block_scale(uint32_t amax_bits, float s_t) {
  const float v = nvfp4_block_scale_value(amax_bits, s_t);
  return v != v ? kE4M3NaN : encode_e4m3(v);
}

// Encoding with an FP32 scale: to_elem(v / scale); a NaN scale stores the NaN code.
DW_QHD uint8_t encode_scaled(Elem e, float v, float scale) {
  if (fbits(scale) >= kF32Inf) return nan_code(e);
  return encode_elem(e, div_rn(v, scale));
}

// Encoding with an MX scale: to_elem(v / 2^E) == to_elem(v * 2^-E) exactly (2^-E is a float).
DW_QHD uint8_t encode_mx(Elem e, float v, uint8_t scale_byte) {
  if (scale_byte == 0xff) return nan_code(e);
  return encode_elem(e, mul_rn(v, mx_inv_scale(scale_byte)));
}

// NVFP4 element: to_e2m1(x / (s_t * s_b)) with the product rounded to fp32 first, as written.
DW_QHD uint8_t encode_nvfp4(float v, float s_t, uint8_t s_b) {
  if (s_b == kE4M3NaN) return kE2M1Max;
  return encode_e2m1(div_rn(v, mul_rn(s_t, decode_ue4m3(s_b))));
}

DW_QHD float decode_nvfp4(uint8_t q, uint8_t s_b, float s_t) {
  return mul_rn(mul_rn(decode_e2m1(q), decode_ue4m3(s_b)), s_t);
}

}  // namespace deepwell::quant
