// CUDA dequantization and scale-layout kernels (sm_90a). Placeholder until the kernels land.
#include "quant/problem.hpp"

namespace deepwell::quant {

Status dequantize_cuda(const DequantProblem&, const Context&) {
  return Status(StatusCode::kNotSupported, "dequantize: CUDA kernels are not in this version yet");
}

Status swizzle_cuda(const uint8_t*, uint8_t*, int64_t, int64_t, bool, Device, const Context&) {
  return Status(StatusCode::kNotSupported, "swizzle_scales: CUDA kernels are not in this version yet");
}

}  // namespace deepwell::quant
