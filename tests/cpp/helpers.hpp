// Test helpers: random tensors in any float dtype, float64 oracles, error measures.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/numeric.hpp"
#include "deepwell/deepwell.hpp"

namespace dwtest {

using deepwell::DType;
using deepwell::TensorView;

// Fresh seed per process run unless DEEPWELL_TEST_SEED is set; printed on failure via SCOPED_TRACE.
inline uint64_t test_seed() {
  static const uint64_t seed = [] {
    if (const char* s = std::getenv("DEEPWELL_TEST_SEED")) {
      return static_cast<uint64_t>(std::strtoull(s, nullptr, 10));
    }
    return static_cast<uint64_t>(std::random_device{}()) << 32 | std::random_device{}();
  }();
  return seed;
}

// Owning host buffer of `n` elements of `dt`, viewed as a tensor.
struct Buffer {
  DType dtype;
  std::vector<uint8_t> bytes;
  Buffer(DType dt, int64_t n) : dtype(dt), bytes(static_cast<size_t>(n * deepwell::dtype_bits(dt) / 8 + 16)) {}
  void* data() { return bytes.data(); }
  double get(int64_t i) const { return deepwell::detail::load_float(bytes.data(), dtype, i); }
  void set(int64_t i, double v) {
    deepwell::detail::store_float(bytes.data(), dtype, i, static_cast<float>(v));
  }
  // Poison every element with NaN so unwritten outputs show up.
  void poison() {
    for (int64_t i = 0; i < static_cast<int64_t>(bytes.size() * 8 / deepwell::dtype_bits(dtype)) - 8; ++i) {
      set(i, std::numeric_limits<double>::quiet_NaN());
    }
  }
};

inline void fill_random(Buffer& b, int64_t n, std::mt19937_64& rng, double scale = 1.0) {
  std::normal_distribution<double> dist(0.0, scale);
  for (int64_t i = 0; i < n; ++i) b.set(i, dist(rng));
}

struct ErrorStats {
  double rel_l2 = 0, max_abs = 0;
  int64_t nonfinite = 0;
};

// Relative L2 error and max abs error of `got` against `ref`.
template <class GetFn>
ErrorStats compare(int64_t n, GetFn&& got, const std::vector<double>& ref) {
  double num = 0, den = 0;
  ErrorStats e;
  for (int64_t i = 0; i < n; ++i) {
    double g = got(i), r = ref[i];
    if (!std::isfinite(g)) {
      if (!(std::isinf(g) && g == r)) ++e.nonfinite;
      continue;
    }
    if (!std::isfinite(r)) { ++e.nonfinite; continue; }
    num += (g - r) * (g - r);
    den += r * r;
    e.max_abs = std::max(e.max_abs, std::abs(g - r));
  }
  e.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return e;
}

// The GEMM epilogue activations in float64 (the oracle of gemm and gemm_fp8).
inline double act64(deepwell::Activation a, double x) {
  using deepwell::Activation;
  switch (a) {
    case Activation::kNone: return x;
    case Activation::kReLU: return x > 0 ? x : 0;
    case Activation::kGeluErf: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case Activation::kGeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case Activation::kSiLU: return x / (1 + std::exp(-x));
  }
  return x;
}

// Tolerance on relative L2 error for an output rounded to `dt`.
inline double output_tolerance(DType dt) {
  switch (dt) {
    case DType::kF32: return 2e-5;
    case DType::kF16: return 2e-3;
    default: return 1e-2;
  }
}

}  // namespace dwtest
