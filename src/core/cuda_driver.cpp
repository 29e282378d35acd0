#include "core/cuda_driver.hpp"

#include <cuda_runtime.h>

#if !defined(cuTensorMapEncodeTiled) || !defined(CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL)
#error "compile with the driver-symbol renames of CMakeLists.txt (see core/cuda_driver.hpp)"
#endif

namespace deepwell::detail {
namespace {

// The driver's function `name` (introduced in CUDA 12.0), looked up once per name by the caller's
// static; nullptr when the driver lacks it.
void* resolve(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();  // a missing entry point is not the caller's error
    return nullptr;
  }
  return fn;
}

using TensorMapEncodeIm2colFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                             const cuuint64_t*, const cuuint64_t*, const int*,
                                             const int*, cuuint32_t, cuuint32_t,
                                             const cuuint32_t*, CUtensorMapInterleave,
                                             CUtensorMapSwizzle, CUtensorMapL2promotion,
                                             CUtensorMapFloatOOBfill);

}  // namespace

TensorMapEncodeTiledFn driver_encode_tiled() {
  static const auto fn = reinterpret_cast<TensorMapEncodeTiledFn>(resolve("cuTensorMapEncodeTiled"));
  return fn;
}

}  // namespace deepwell::detail

// The renamed driver symbols that CUTLASS/CuTe call (CMakeLists.txt maps cuTensorMapEncodeTiled
// and cuTensorMapEncodeIm2col to these; cuda.h declares them extern "C"). Hidden like every
// library symbol, so they never interpose on the real driver functions of another library.
CUresult CUDAAPI deepwell_cuTensorMapEncodeTiled(
    CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* base,
    const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
    const cuuint32_t* elem_strides, CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
    CUtensorMapL2promotion promotion, CUtensorMapFloatOOBfill fill) {
  const auto fn = deepwell::detail::driver_encode_tiled();
  if (fn == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return fn(map, type, rank, base, dims, strides, box, elem_strides, interleave, swizzle,
            promotion, fill);
}

CUresult CUDAAPI deepwell_cuTensorMapEncodeIm2col(
    CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* base,
    const cuuint64_t* dims, const cuuint64_t* strides, const int* lower, const int* upper,
    cuuint32_t channels, cuuint32_t pixels, const cuuint32_t* elem_strides,
    CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion promotion,
    CUtensorMapFloatOOBfill fill) {
  using deepwell::detail::TensorMapEncodeIm2colFn;
  static const auto fn = reinterpret_cast<TensorMapEncodeIm2colFn>(
      deepwell::detail::resolve("cuTensorMapEncodeIm2col"));
  if (fn == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return fn(map, type, rank, base, dims, strides, lower, upper, channels, pixels, elem_strides,
            interleave, swizzle, promotion, fill);
}
