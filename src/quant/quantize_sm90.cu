// CUDA quantization kernels (sm_90a). Placeholder until the kernels land.
#include "quant/problem.hpp"

namespace deepwell::quant {

Status quantize_cuda(const Problem&, const Context&) {
  return Status(StatusCode::kNotSupported, "quantize: CUDA kernels are not in this version yet");
}

}  // namespace deepwell::quant
