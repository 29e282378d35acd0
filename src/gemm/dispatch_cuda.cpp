// CUDA dispatch for gemm. The sm_90 GEMM kernels are not in this version yet.
#include "gemm/problem.hpp"

namespace deepwell::matmul {

Status gemm_cuda(const Problem&, const Context&) {
  return Status(StatusCode::kNotSupported,
                "gemm: CUDA GEMM kernels are not in this version; use CPU tensors");
}

}  // namespace deepwell::matmul
