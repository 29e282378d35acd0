// The scalar codecs of src/quant/codec.hpp: every element format and scale rule, exhaustively where
// the format is small, against independent double-precision oracles written here.
#include <cmath>
#include <set>

#include "helpers.hpp"
#include "core/numeric.hpp"
#include "quant/codec.hpp"

#ifdef DEEPWELL_TEST_CUDA_HEADERS
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#endif

namespace {

using namespace deepwell::quant;

float f(uint32_t bits) { return bitsf(bits); }

// Independent decoders in double precision, straight from the format table.
double oracle_decode(int ebits, int mbits, int bias, uint32_t code) {
  const uint32_t sign = code >> (ebits + mbits) & 1;
  const uint32_t e = (code >> mbits) & ((1u << ebits) - 1), m = code & ((1u << mbits) - 1);
  const double mag = e == 0 ? std::ldexp(static_cast<double>(m), 1 - bias - mbits)
                            : std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -mbits),
                                         static_cast<int>(e) - bias);
  return sign ? -mag : mag;
}

bool is_e4m3_nan(uint8_t b) { return (b & 0x7f) == 0x7f; }
bool is_e5m2_nan(uint8_t b) { return (b & 0x7f) > 0x7c; }
bool is_e5m2_inf(uint8_t b) { return (b & 0x7f) == 0x7c; }

// xorshift64: fixed-seed 32-bit words for the randomized comparisons.
struct XorShift {
  uint64_t state;
  uint32_t operator()() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<uint32_t>(state);
  }
};

// Sorted non-negative finite values of a format with their codes (sign bit clear).
std::vector<std::pair<double, uint8_t>> positive_values(int ebits, int mbits, int bias,
                                                        uint8_t max_code) {
  std::vector<std::pair<double, uint8_t>> v;
  for (uint32_t c = 0; c <= max_code; ++c) v.push_back({oracle_decode(ebits, mbits, bias, c), c});
  return v;
}

template <class Enc>
void check_ties_and_neighbours(const std::vector<std::pair<double, uint8_t>>& vals, Enc encode,
                               uint8_t sign_bit) {
  for (size_t i = 0; i + 1 < vals.size(); ++i) {
    const auto [lo, lo_code] = vals[i];
    const auto [hi, hi_code] = vals[i + 1];
    const double mid = 0.5 * (lo + hi);
    const float mf = static_cast<float>(mid);
    ASSERT_EQ(static_cast<double>(mf), mid) << "midpoint not representable in fp32";
    const uint8_t even = (lo_code & 1) == 0 ? lo_code : hi_code;
    for (int s = 0; s < 2; ++s) {
      const float sg = s ? -1.0f : 1.0f;
      const uint8_t sb = s ? sign_bit : 0;
      EXPECT_EQ(encode(sg * mf), sb | even) << "tie " << mid << " between " << lo << " and " << hi;
      EXPECT_EQ(encode(sg * std::nextafter(mf, 0.0f)), sb | lo_code) << "just below " << mid;
      EXPECT_EQ(encode(sg * std::nextafter(mf, INFINITY)), sb | hi_code) << "just above " << mid;
      EXPECT_EQ(encode(sg * static_cast<float>(lo)), sb | lo_code);
    }
  }
}

TEST(QuantCodec, E4M3EveryByteRoundTrips) {
  int nans = 0;
  for (int b = 0; b < 256; ++b) {
    const uint8_t byte = static_cast<uint8_t>(b);
    const float v = decode_e4m3(byte);
    if (is_e4m3_nan(byte)) {
      ++nans;
      EXPECT_TRUE(std::isnan(v));
      EXPECT_TRUE(is_e4m3_nan(encode_e4m3(v)));
      continue;
    }
    EXPECT_EQ(static_cast<double>(v), oracle_decode(4, 3, 7, byte)) << "byte " << b;
    EXPECT_EQ(encode_e4m3(v), byte) << "byte " << b;
  }
  EXPECT_EQ(nans, 2);
  EXPECT_EQ(decode_e4m3(0x7e), 448.0f);
  EXPECT_EQ(decode_e4m3(0x08), 0.015625f);     // min normal 2^-6
  EXPECT_EQ(decode_e4m3(0x01), 0.001953125f);  // min subnormal 2^-9
  EXPECT_TRUE(std::signbit(decode_e4m3(0x80)));
}

TEST(QuantCodec, E5M2EveryByteRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    const uint8_t byte = static_cast<uint8_t>(b);
    const float v = decode_e5m2(byte);
    if (is_e5m2_nan(byte)) {
      EXPECT_TRUE(std::isnan(v));
      EXPECT_TRUE(is_e5m2_nan(encode_e5m2(v)));
      continue;
    }
    if (is_e5m2_inf(byte)) {
      EXPECT_TRUE(std::isinf(v));
      EXPECT_EQ(encode_e5m2(v), byte);
      continue;
    }
    EXPECT_EQ(static_cast<double>(v), oracle_decode(5, 2, 15, byte)) << "byte " << b;
    EXPECT_EQ(encode_e5m2(v), byte) << "byte " << b;
  }
  EXPECT_EQ(decode_e5m2(0x7b), 57344.0f);
  EXPECT_EQ(decode_e5m2(0x01), std::ldexp(1.0f, -16));
}

TEST(QuantCodec, E2M1AllSixteenCodes) {
  const float expected[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (uint8_t c = 0; c < 16; ++c) {
    const float v = decode_e2m1(c);
    EXPECT_EQ(v, (c & 8 ? -1.0f : 1.0f) * expected[c & 7]) << int(c);
    EXPECT_EQ(std::signbit(v), (c & 8) != 0);
    EXPECT_EQ(encode_e2m1(v), c) << int(c);
    EXPECT_EQ(static_cast<double>(v), oracle_decode(2, 1, 1, c));
  }
}

// The kernels' compare-free e2m1 encoder equals the reference on every non-NaN input of the
// binades that matter (all mantissas, both signs, 2^-8 <= |x| < 2^6) and on a stride of the rest.
TEST(QuantCodec, E2M1FastEncoderMatchesReference) {
  auto check = [](uint32_t bits) {
    const float x = f(bits);
    if (x != x) return true;
    return encode_e2m1_nonnan(x) == encode_e2m1(x);
  };
  uint64_t bad = 0, first = 0;
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t a = 0x3b800000u; a < 0x42800000u; ++a) {  // [2^-8, 2^6)
      if (!check(sign | a) && bad++ == 0) first = sign | a;
    }
  }
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 997) {
    if (!check(static_cast<uint32_t>(b)) && bad++ == 0) first = b;
  }
  for (uint32_t b : {0u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7f7fffffu, 0x00000001u, 0x3e800000u,
                     0x3e800001u, 0x3f400000u, 0x3f3fffffu}) {
    if (!check(b) && bad++ == 0) first = b;
  }
  EXPECT_EQ(bad, 0u) << "first mismatch at bits 0x" << std::hex << first;
}

// The kernels' 8-code packer (byte gathers through prmt, emulated on the host) equals eight
// scalar encodes on random words of every class (both signs, zeros, subnormals, Inf) and on
// values around the e2m1 grid.
TEST(QuantCodec, E2M1PackOfEightMatchesReference) {
  XorShift next{0x9e3779b97f4a7c15ull};
  const float grid[] = {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f,
                        3.5f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 1e30f, INFINITY};
  uint64_t bad = 0;
  for (int it = 0; it < 200000; ++it) {
    float q[8];
    for (int k = 0; k < 8; ++k) {
      const uint32_t r = next();
      float x = it % 3 == 0 ? f(r) : grid[r % 19] * ((r >> 8) % 2 ? -1.0f : 1.0f);
      if (it % 3 == 2) x = std::nextafter(x, (r >> 9) % 2 ? 0.0f : 8.0f);
      q[k] = x != x ? 1.0f : x;
    }
    uint32_t ref = 0;
    for (int k = 0; k < 8; ++k) ref |= uint32_t{encode_e2m1(q[k])} << (4 * k);
    if (pack_e2m1x8(q) != ref) ++bad;
    // the kernels' form: magnitudes |q|, signs from another value of the same sign (their input)
    float mag[8], sgn[8];
    for (int k = 0; k < 8; ++k) {
      mag[k] = std::fabs(q[k]);
      sgn[k] = q[k] * 0.375f;  // same sign as q[k], zeros included
    }
    if (pack_e2m1x8(mag, sgn) != ref) ++bad;
  }
  EXPECT_EQ(bad, 0u);
}

// The packers of codes computed on 16-bit lanes (rows: elements in lane order; column pairs:
// rows of two columns) equal nibble-by-nibble packing of sign << 3 | code, with the lanes' high
// bytes set as the MXFP4 bf16 (0x43) and f16 (0x64) arithmetic leaves them, or clear (NVFP4).
TEST(QuantCodec, E2M1LanePackersMatchNibblePacking) {
  XorShift next{0x243f6a8885a308d3ull};
  uint64_t bad = 0;
  for (int it = 0; it < 100000; ++it) {
    const uint32_t hi = it % 3 == 0 ? 0x4300u : it % 3 == 1 ? 0x6400u : 0u;
    uint32_t code[32], sign[32], mag[16], w[16];
    for (int e = 0; e < 32; ++e) {
      const uint32_t r = next();
      code[e] = r % 8;
      sign[e] = (r >> 3) & 1;
    }
    for (int k = 0; k < 16; ++k) {  // element 2k in the low lane, 2k + 1 in the high lane
      mag[k] = (hi | code[2 * k]) | (hi | code[2 * k + 1]) << 16;
      const uint32_t r = next() & 0x7fff7fffu;  // any other input bits
      w[k] = r | sign[2 * k] << 15 | sign[2 * k + 1] << 31;
    }
    auto nib = [&](int e) { return (sign[e] << 3 | code[e]); };
    for (int o = 0; o < 2; ++o) {  // rows: elements 8o .. 8o + 7
      uint32_t want = 0;
      for (int k = 0; k < 8; ++k) want |= nib(8 * o + k) << (4 * k);
      if (pack_e2m1_lanes(mag + 4 * o, w + 4 * o) != want) ++bad;
    }
    uint32_t out[2][2];  // column pairs: column h of row k is element 2k + h
    pack_e2m1_col_pair(mag, w, out);
    for (int h = 0; h < 2; ++h) {
      for (int o = 0; o < 2; ++o) {
        uint32_t want = 0;
        for (int k = 0; k < 8; ++k) want |= nib(2 * (8 * o + k) + h) << (4 * k);
        if (out[h][o] != want) ++bad;
      }
    }
  }
  EXPECT_EQ(bad, 0u);
}

TEST(QuantCodec, TiesToEvenAtEveryBoundary) {
  check_ties_and_neighbours(positive_values(4, 3, 7, 0x7e), encode_e4m3, 0x80);
  check_ties_and_neighbours(positive_values(5, 2, 15, 0x7b), encode_e5m2, 0x80);
  check_ties_and_neighbours(positive_values(2, 1, 1, 0x7), encode_e2m1, 0x8);
}

TEST(QuantCodec, Saturation) {
  // Above max normal, up to and past the next would-be code, and Inf.
  EXPECT_EQ(encode_e4m3(448.0f), 0x7e);
  EXPECT_EQ(encode_e4m3(464.0f), 0x7e);  // tie 448 | 480: even is 448
  EXPECT_EQ(encode_e4m3(470.0f), 0x7e);
  EXPECT_EQ(encode_e4m3(1e30f), 0x7e);
  EXPECT_EQ(encode_e4m3(-1e30f), 0xfe);
  EXPECT_EQ(encode_e4m3(INFINITY), 0x7e);
  EXPECT_EQ(encode_e4m3(-INFINITY), 0xfe);
  EXPECT_EQ(encode_e4m3(3.4e38f), 0x7e);
  EXPECT_EQ(encode_e5m2(61440.0f), 0x7b);  // tie 57344 | 65536 (Inf): saturates
  EXPECT_EQ(encode_e5m2(1e30f), 0x7b);
  EXPECT_EQ(encode_e5m2(-1e30f), 0xfb);
  EXPECT_EQ(encode_e5m2(INFINITY), 0x7c);  // e5m2 keeps Inf
  EXPECT_EQ(encode_e2m1(7.0f), 0x7);
  EXPECT_EQ(encode_e2m1(-1e30f), 0xf);
  EXPECT_EQ(encode_e2m1(-INFINITY), 0xf);
}

TEST(QuantCodec, SubnormalsAndZeros) {
  EXPECT_EQ(encode_e4m3(0.0f), 0x00);
  EXPECT_EQ(encode_e4m3(-0.0f), 0x80);
  EXPECT_EQ(encode_e4m3(std::ldexp(1.0f, -10)), 0x00);  // half the min subnormal: tie to 0
  EXPECT_EQ(encode_e4m3(std::nextafter(std::ldexp(1.0f, -10), 1.0f)), 0x01);
  EXPECT_EQ(encode_e4m3(-std::ldexp(3.0f, -10)), 0x82);  // 1.5 quanta: tie to even 2
  EXPECT_EQ(encode_e4m3(std::ldexp(7.5f, -9)), 0x08);    // rounds up into the min normal
  EXPECT_EQ(encode_e4m3(1e-40f), 0x00);                  // fp32 subnormal input
  EXPECT_EQ(encode_e4m3(-1e-40f), 0x80);
  EXPECT_EQ(encode_e5m2(std::ldexp(1.0f, -17)), 0x00);
  EXPECT_EQ(encode_e5m2(std::ldexp(3.0f, -17)), 0x02);
  EXPECT_EQ(encode_e5m2(-std::ldexp(1.0f, -16)), 0x81);
  EXPECT_EQ(encode_e2m1(0.25f), 0x0);
  EXPECT_EQ(encode_e2m1(-0.1f), 0x8);
  EXPECT_EQ(encode_e2m1(0.2500001f), 0x1);
}

TEST(QuantCodec, NaNStaysNaN) {
  for (uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xffffffffu}) {
    EXPECT_EQ(encode_e4m3(f(bits)), kE4M3NaN);
    EXPECT_EQ(encode_e5m2(f(bits)), kE5M2NaN);
    EXPECT_EQ(encode_e2m1(f(bits)), kE2M1Max);  // no NaN in e2m1: +6, as NVIDIA's cvt
  }
}

// Every fp32 of a large strided sample (plus all exponents with edge mantissas) against a double
// oracle: nearest representable value, ties to the even code, saturation.
template <class Enc, class Dec>
void check_against_oracle(Enc encode, Dec decode, int ebits, int mbits, int bias, uint8_t max_code,
                          uint8_t sign_bit) {
  const auto vals = positive_values(ebits, mbits, bias, max_code);
  auto expected = [&](float x) -> uint8_t {
    const double a = std::fabs(static_cast<double>(x));
    const uint8_t sb = std::signbit(x) ? sign_bit : 0;
    if (a >= vals.back().first) return sb | vals.back().second;
    size_t i = 0;
    while (vals[i + 1].first <= a) ++i;
    const double lo = vals[i].first, hi = vals[i + 1].first;
    uint8_t c;
    if (a - lo < hi - a) c = vals[i].second;
    else if (a - lo > hi - a) c = vals[i + 1].second;
    else c = (vals[i].second & 1) ? vals[i + 1].second : vals[i].second;
    return sb | c;
  };
  std::mt19937_64 rng(dwtest::test_seed());
  for (int n = 0; n < 200000; ++n) {
    // Exponents near the format's range are the interesting ones.
    const int lo = 127 - bias - mbits - 2, hi = 127 + (1 << ebits) - bias + 2;
    const uint32_t e = static_cast<uint32_t>(lo + static_cast<int>(rng() % (hi - lo + 1)));
    const uint32_t bits = static_cast<uint32_t>(rng() & 0x807fffffu) | (e << 23);
    const float x = f(bits);
    ASSERT_EQ(encode(x), expected(x)) << std::hexfloat << x << " seed " << dwtest::test_seed();
  }
  (void)decode;
}

TEST(QuantCodec, RandomValuesAgainstOracle) {
  check_against_oracle(encode_e4m3, decode_e4m3, 4, 3, 7, 0x7e, 0x80);
  check_against_oracle(encode_e5m2, decode_e5m2, 5, 2, 15, 0x7b, 0x80);
  check_against_oracle(encode_e2m1, decode_e2m1, 2, 1, 1, 0x7, 0x8);
}

#ifdef DEEPWELL_TEST_CUDA_HEADERS
// NVIDIA's host implementation of cvt.rn.satfinite (cuda_fp8.hpp, cuda_fp4.hpp) is the definition
// the GPU kernels' hardware conversions follow; the software encoders must agree with it on every
// input but Inf (docs/formats.md: e5m2 keeps Inf; the quantization paths never encode Inf).
TEST(QuantCodec, MatchesCudaHeaderConversions) {
  uint64_t checked = 0;
  for (uint64_t b = 0; b < (1ull << 32); b += 251) {
    const uint32_t bits = static_cast<uint32_t>(b);
    if ((bits & 0x7fffffffu) == kF32Inf) continue;
    const float x = f(bits);
    ASSERT_EQ(encode_e4m3(x), __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)) << std::hex << bits;
    ASSERT_EQ(encode_e5m2(x), __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2)) << std::hex << bits;
    ASSERT_EQ(encode_e2m1(x), __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest)) << std::hex << bits;
    ++checked;
  }
  EXPECT_GT(checked, 17000000u);
}
#endif

TEST(QuantCodec, Ue8m0AndUe4m3) {
  EXPECT_EQ(decode_ue8m0(127), 1.0f);
  EXPECT_EQ(decode_ue8m0(254), std::ldexp(1.0f, 127));
  EXPECT_EQ(decode_ue8m0(1), std::ldexp(1.0f, -126));
  EXPECT_EQ(decode_ue8m0(0), std::ldexp(1.0f, -127));
  EXPECT_TRUE(std::isnan(decode_ue8m0(255)));
  for (int b = 0; b < 255; ++b) {
    EXPECT_EQ(decode_ue8m0(static_cast<uint8_t>(b)) * mx_inv_scale(static_cast<uint8_t>(b)), 1.0f) << b;
  }
  for (int b = 0; b < 128; ++b) {
    const uint8_t byte = static_cast<uint8_t>(b);
    if (byte == 0x7f) {
      EXPECT_TRUE(std::isnan(decode_ue4m3(byte)));
      continue;
    }
    EXPECT_EQ(decode_ue4m3(byte), decode_e4m3(byte));
    EXPECT_EQ(decode_ue4m3(byte | 0x80), decode_e4m3(byte));  // sign bit unused
  }
}

const ElemInfo kE4 = elem_info(Elem::kE4M3), kE5 = elem_info(Elem::kE5M2), kE2 = elem_info(Elem::kE2M1);

int mx_exp(float amax, const ElemInfo& info, bool rceil) {
  return static_cast<int>(mx_scale(abs_bits(amax), info, rceil)) - 127;
}

TEST(QuantCodec, MxScaleFloorRule) {
  EXPECT_EQ(mx_exp(500.0f, kE4, false), 0);  // formats.md: amax 500 in e4m3 -> E = 0, stores 448
  EXPECT_EQ(encode_mx(Elem::kE4M3, 500.0f, mx_scale(abs_bits(500.0f), kE4, false)), 0x7e);
  EXPECT_EQ(mx_exp(448.0f, kE4, false), 0);
  EXPECT_EQ(mx_exp(255.9f, kE4, false), -1);
  EXPECT_EQ(mx_exp(1.0f, kE4, false), -8);
  EXPECT_EQ(mx_exp(1.0f, kE5, false), -15);
  EXPECT_EQ(mx_exp(6.0f, kE2, false), 0);
  EXPECT_EQ(mx_exp(7.9f, kE2, false), 0);
  EXPECT_EQ(mx_exp(8.0f, kE2, false), 1);
  EXPECT_EQ(mx_exp(0.0f, kE4, false), -127);  // all-zero block
  EXPECT_EQ(mx_exp(1e-40f, kE4, false), -127);
  EXPECT_EQ(mx_exp(std::ldexp(1.0f, -120), kE4, false), -127);  // clamped
  EXPECT_EQ(mx_exp(3.0e38f, kE2, false), 125);
  EXPECT_EQ(mx_scale(abs_bits(NAN), kE4, false), 0xff);
  EXPECT_EQ(mx_scale(abs_bits(INFINITY), kE4, false), 0xff);
}

TEST(QuantCodec, MxScaleRceilRule) {
  EXPECT_EQ(mx_exp(500.0f, kE4, true), 1);  // 500 / 448 > 1: never clips
  EXPECT_EQ(mx_exp(448.0f, kE4, true), 0);
  EXPECT_EQ(mx_exp(std::nextafter(448.0f, 1e9f), kE4, true), 1);
  EXPECT_EQ(mx_exp(224.0f, kE4, true), -1);
  EXPECT_EQ(mx_exp(1.0f, kE4, true), -8);  // 1 / 448 -> 2^ceil(-8.8) = 2^-8
  EXPECT_EQ(mx_exp(6.0f, kE2, true), 0);
  EXPECT_EQ(mx_exp(6.5f, kE2, true), 1);
  EXPECT_EQ(mx_exp(0.0f, kE5, true), -127);
  // Exhaustive over mantissas at one exponent: 2^E is the smallest power of two >= amax / max,
  // checked in double precision, and no element of the block then clips.
  for (const ElemInfo* info : {&kE4, &kE5, &kE2}) {
    for (uint32_t m = 0; m < (1u << 23); m += 7) {
      const float amax = f((130u << 23) | m);
      const int e = mx_exp(amax, *info, true);
      const double ratio = static_cast<double>(amax) / info->max_normal;
      ASSERT_GE(std::ldexp(1.0, e), ratio) << amax;
      ASSERT_LT(std::ldexp(1.0, e - 1), ratio) << amax;
    }
  }
  // ... and for every element format, no element saturates under rceil.
  std::mt19937_64 rng(dwtest::test_seed());
  for (int n = 0; n < 100000; ++n) {
    const float amax = f(static_cast<uint32_t>(rng() % 0x7f000000u) + 0x00800000u);
    for (Elem el : {Elem::kE4M3, Elem::kE5M2, Elem::kE2M1}) {
      const ElemInfo info = elem_info(el);
      const uint8_t s = mx_scale(abs_bits(amax), info, true);
      if (s == 0) continue;  // clamped at 2^-127: tiny amax may still clip
      const double q = decode_elem(el, encode_mx(el, amax, s));
      ASSERT_LE(std::fabs(q * std::ldexp(1.0, s - 127) - amax), std::fabs(amax) * 0.5) << amax;
      ASSERT_LE(static_cast<double>(amax) * std::ldexp(1.0, 127 - s), info.max_normal * 1.0000001);
    }
  }
}

TEST(QuantCodec, Fp32ScaleRules) {
  EXPECT_EQ(fp32_scale(abs_bits(448.0f), kE4, false), 1.0f);
  EXPECT_EQ(fp32_scale(abs_bits(1.0f), kE4, false), 1.0f / 448.0f);
  EXPECT_EQ(fp32_scale(abs_bits(0.0f), kE4, false), std::ldexp(1.0f, -126));  // clamped
  EXPECT_EQ(fp32_scale(abs_bits(1e-36f), kE4, false), std::ldexp(1.0f, -126));
  EXPECT_TRUE(std::isnan(fp32_scale(abs_bits(NAN), kE4, false)));
  EXPECT_TRUE(std::isnan(fp32_scale(abs_bits(INFINITY), kE4, true)));
  EXPECT_EQ(fp32_scale(abs_bits(448.0f), kE4, true), 1.0f);
  EXPECT_EQ(fp32_scale(abs_bits(449.0f), kE4, true), 2.0f);
  EXPECT_EQ(fp32_scale(abs_bits(1.0f), kE4, true), std::ldexp(1.0f, -8));  // 1/448 rounded up
  EXPECT_EQ(fp32_scale(abs_bits(57344.0f), kE5, true), 1.0f);
  EXPECT_EQ(fp32_scale(abs_bits(0.0f), kE4, true), std::ldexp(1.0f, -126));
  // Non-pow2: exactly the IEEE quotient; then v / scale of the amax element never exceeds max.
  std::mt19937_64 rng(dwtest::test_seed());
  for (int n = 0; n < 100000; ++n) {
    const float amax = f(static_cast<uint32_t>(rng() % 0x7e800000u) + 0x01000000u);
    const float s = fp32_scale(abs_bits(amax), kE4, false);
    if (s > std::ldexp(1.0f, -126)) {
      ASSERT_EQ(s, amax / 448.0f);
    }
    ASSERT_LE(std::fabs(decode_e4m3(encode_scaled(Elem::kE4M3, amax, s))), 448.0f);
  }
}

TEST(QuantCodec, Nvfp4Scales) {
  EXPECT_EQ(nvfp4_tensor_scale(abs_bits(2688.0f)), 1.0f);
  EXPECT_EQ(nvfp4_tensor_scale(abs_bits(0.0f)), std::ldexp(1.0f, -126));
  EXPECT_TRUE(std::isnan(nvfp4_tensor_scale(abs_bits(NAN))));
  // amax_block = amax_tensor: (amax / 6) / (amax / 2688) = 448 exactly or one ulp off -> 448.
  EXPECT_EQ(nvfp4_block_scale(abs_bits(2688.0f), 1.0f), 0x7e);
  EXPECT_EQ(nvfp4_block_scale(abs_bits(6.0f), 1.0f), 0x38);  // 1.0
  EXPECT_EQ(nvfp4_block_scale(abs_bits(0.0f), 1.0f), 0x08);  // clamped to 2^-6
  EXPECT_EQ(nvfp4_block_scale(abs_bits(1e9f), 1.0f), 0x7e);  // clamped to 448
  EXPECT_EQ(nvfp4_block_scale(abs_bits(NAN), 1.0f), kE4M3NaN);
  EXPECT_EQ(nvfp4_block_scale(abs_bits(1.0f), NAN), kE4M3NaN);
  // Elements: x / (s_t * s_b).
  const float s_t = 0.5f;
  const uint8_t sb = nvfp4_block_scale(abs_bits(6.0f), s_t);  // (6/6)/0.5 = 2 -> e4m3 2.0
  EXPECT_EQ(decode_ue4m3(sb), 2.0f);
  EXPECT_EQ(encode_nvfp4(6.0f, s_t, sb), 0x7);
  EXPECT_EQ(encode_nvfp4(-1.5f, s_t, sb), 0xb);  // -1.5 / 1 -> -1.5
  EXPECT_EQ(encode_nvfp4(1.25f, s_t, sb), 0x2);  // tie 1 | 1.5 -> 1
  EXPECT_EQ(decode_nvfp4(0x7, sb, s_t), 6.0f);
  EXPECT_EQ(encode_nvfp4(1.0f, s_t, kE4M3NaN), kE2M1Max);
}

// f16_bits_rz (the host side of the f16 bounds): the largest f16 <= x for every f16 value and
// the floats just below the next one, subnormals and the top of the range included.
TEST(QuantCodec, F16RoundTowardZero) {
  using deepwell::detail::f16_to_f32;
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    const float v = f16_to_f32(static_cast<uint16_t>(h));
    ASSERT_EQ(f16_bits_rz(v), h) << std::hex << h;
    const float next = h + 1 < 0x7c00u ? f16_to_f32(static_cast<uint16_t>(h + 1)) : 65536.0f;
    ASSERT_EQ(f16_bits_rz(std::nextafter(next, 0.0f)), h) << std::hex << h;
  }
  EXPECT_EQ(f16_bits_rz(1e30f), 0x7bffu);
  EXPECT_EQ(f16_bits_rz(std::ldexp(1.0f, -25)), 0u);
}

// What the kernels' packed comparisons compute for one element: the e2m1 magnitude code of a
// 16-bit |x| (bits a, not NaN) is the number of its block's bounds g it exceeds (the bits of
// non-negative floats order like the values).
uint32_t e2m1_code_by_bounds(uint32_t a, const uint32_t (&g)[7]) {
  uint32_t code = 0;
  for (int j = 0; j < 7; ++j) code += a > g[j] ? 1u : 0u;
  return code;
}

// The kernels' NVFP4 encoder by comparison (codec.hpp: |x| > G_j on the 16-bit values, G_j from
// directed-rounding FMAs) equals encode_e2m1(|x| / S) for every finite bf16 and f16 magnitude,
// at divisors S = s_t * s_b as the kernels form them (random tensor amaxes, every block scale),
// random usable divisors, and the ends of the usable range; and that range is what it says.
TEST(QuantCodec, Nvfp4CodesByBoundsMatchDivision) {
  using deepwell::detail::bf16_to_f32;
  using deepwell::detail::f16_to_f32;
  XorShift next{0x5bd1e9955bd1e995ull};
  std::vector<float> divisors;
  for (int i = 0; i < 600; ++i) {  // tensor amax in [2^-40, 2^40), block scale byte 1..0x7e
    const float amax = std::ldexp(1.0f + (next() >> 9) * 0x1p-23f, static_cast<int>(next() % 80) - 40);
    const uint8_t sb = static_cast<uint8_t>(1 + next() % 0x7e);
    divisors.push_back(mul_rn(nvfp4_tensor_scale(fbits(amax)), decode_ue4m3(sb)));
  }
  for (int i = 0; i < 300; ++i) {  // any float in [2^-100, 2^100]
    divisors.push_back(f(kNvfp4CmpSLo + next() % (kNvfp4CmpSHi - kNvfp4CmpSLo + 1)));
  }
  for (uint32_t b : {kNvfp4CmpSLo, kNvfp4CmpSLo + 1, kNvfp4CmpSHi, kNvfp4CmpSHi - 1, 0x3f800000u,
                     0x3f7fffffu, 0x3fc00000u, 0x3eaaaaabu}) {
    divisors.push_back(f(b));
  }
  EXPECT_FALSE(nvfp4_compare_usable(f(kNvfp4CmpSLo - 1)));
  EXPECT_FALSE(nvfp4_compare_usable(f(kNvfp4CmpSHi + 1)));
  EXPECT_FALSE(nvfp4_compare_usable(NAN));
  EXPECT_FALSE(nvfp4_compare_usable(0.0f));
  uint64_t checked = 0, bad = 0;
  for (const float s : divisors) {
    if (!nvfp4_compare_usable(s)) continue;
    uint32_t gb[7], gh[7];
    for (int j = 0; j < 7; ++j) {
      gb[j] = nvfp4_bound16<true>(s, j);
      gh[j] = nvfp4_bound16<false>(s, j);
    }
    for (uint32_t a = 0; a < 0x7f80u; ++a) {  // finite bf16 magnitudes
      const uint32_t want = encode_e2m1(div_rn(bf16_to_f32(static_cast<uint16_t>(a)), s));
      if (e2m1_code_by_bounds(a, gb) != want && bad++ < 5) {
        ADD_FAILURE() << "bf16 0x" << std::hex << a << " S bits 0x" << fbits(s);
      }
    }
    for (uint32_t a = 0; a < 0x7c00u; ++a) {  // finite f16 magnitudes
      const uint32_t want = encode_e2m1(div_rn(f16_to_f32(static_cast<uint16_t>(a)), s));
      if (e2m1_code_by_bounds(a, gh) != want && bad++ < 5) {
        ADD_FAILURE() << "f16 0x" << std::hex << a << " S bits 0x" << fbits(s);
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 850u);
  EXPECT_EQ(bad, 0u);
}

TEST(QuantCodec, MxAndScaledEncodingOfNaNScales) {
  EXPECT_EQ(encode_mx(Elem::kE4M3, 1.0f, 0xff), kE4M3NaN);
  EXPECT_EQ(encode_mx(Elem::kE2M1, 1.0f, 0xff), kE2M1Max);
  EXPECT_EQ(encode_scaled(Elem::kE5M2, 1.0f, NAN), kE5M2NaN);
  // Power-of-two scales are applied exactly: v / 2^E == v * 2^-E.
  std::mt19937_64 rng(dwtest::test_seed());
  for (int n = 0; n < 100000; ++n) {
    const float v = f(static_cast<uint32_t>(rng()) & 0xbfffffffu);  // finite, |v| < 2
    const uint8_t s = static_cast<uint8_t>(rng() % 255);
    ASSERT_EQ(encode_mx(Elem::kE4M3, v, s), encode_e4m3(v / decode_ue8m0(s)));
  }
}

}  // namespace
