// Host-side conversions between fp32 and the 16-bit float formats, bit-exact (round to nearest,
// ties to even; NaN stays NaN; overflow to fp16 gives inf as IEEE requires).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "deepwell/core.hpp"

namespace deepwell::detail {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float bf16_to_f32(uint16_t h) { return bits_f32(static_cast<uint32_t>(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13));  // inf / NaN
  if (exp == 0) {
    // zero or subnormal: man * 2^-24
    float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

inline uint16_t f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (a < 0x38800000u) {
    // Result is subnormal or zero in fp16: value * 2^24 rounded to an integer, ties to even.
    float v = bits_f32(a) * 16777216.0f;  // exact: a < 2^-14 so v < 2^10
    float r = std::nearbyint(v);          // default rounding mode is to-nearest-even
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(r));
  }
  // Normal: rebias exponent, round mantissa from 23 to 10 bits.
  uint32_t rounded = a + 0xfffu + ((a >> 13) & 1u);
  uint32_t h = (rounded >> 13) - (112u << 10);
  return static_cast<uint16_t>(sign | h);
}

// Element access for the float types the references accept (f32, f16, bf16).
inline float load_float(const void* base, DType dt, int64_t offset) {
  switch (dt) {
    case DType::kF32: return static_cast<const float*>(base)[offset];
    case DType::kF16: return f16_to_f32(static_cast<const uint16_t*>(base)[offset]);
    case DType::kBF16: return bf16_to_f32(static_cast<const uint16_t*>(base)[offset]);
    default: return NAN;
  }
}

inline void store_float(void* base, DType dt, int64_t offset, float v) {
  switch (dt) {
    case DType::kF32: static_cast<float*>(base)[offset] = v; break;
    case DType::kF16: static_cast<uint16_t*>(base)[offset] = f32_to_f16(v); break;
    case DType::kBF16: static_cast<uint16_t*>(base)[offset] = f32_to_bf16(v); break;
    default: break;
  }
}

// Converts a float tensor's strided row of `n` elements to fp32.
inline void load_row(const void* base, DType dt, int64_t offset, int64_t stride, int64_t n,
                     float* dst) {
  if (n <= 0) return;  // an empty row may come with a null base pointer
  if (dt == DType::kF32 && stride == 1) {
    std::memcpy(dst, static_cast<const float*>(base) + offset, n * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = load_float(base, dt, offset + i * stride);
}

}  // namespace deepwell::detail
