// The two CUDA driver functions that CUTLASS / CuTe call to build TMA descriptors, resolved once.
//
// Without CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL, CUTLASS looks each driver function up with
// cudaGetDriverEntryPointByVersion on every call: four lookups per GEMM launch (A, B, C, D
// descriptors), three per attention launch. The library is built with that macro defined (see
// CMakeLists.txt), so CUTLASS calls cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col directly,
// and these definitions (hidden: -fvisibility=hidden, never exported) forward to the driver's
// entry point, looked up once. Linking libcuda itself would make the library fail to load on
// machines without an NVIDIA driver.
#include <cuda.h>
#include <cuda_runtime.h>

namespace {

template <class Fn>
Fn driver_entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}

}  // namespace

extern "C" CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void* globalAddress, const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
    const cuuint32_t* boxDim, const cuuint32_t* elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  using Fn = decltype(&cuTensorMapEncodeTiled);
  static const Fn fn = driver_entry<Fn>("cuTensorMapEncodeTiled");
  if (fn == nullptr) return CUDA_ERROR_NOT_FOUND;
  return fn(tensorMap, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides, boxDim,
            elementStrides, interleave, swizzle, l2Promotion, oobFill);
}

extern "C" CUresult CUDAAPI cuTensorMapEncodeIm2col(
    CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void* globalAddress, const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
    const int* pixelBoxLowerCorner, const int* pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
    cuuint32_t pixelsPerColumn, const cuuint32_t* elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  using Fn = decltype(&cuTensorMapEncodeIm2col);
  static const Fn fn = driver_entry<Fn>("cuTensorMapEncodeIm2col");
  if (fn == nullptr) return CUDA_ERROR_NOT_FOUND;
  return fn(tensorMap, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides,
            pixelBoxLowerCorner, pixelBoxUpperCorner, channelsPerPixel, pixelsPerColumn,
            elementStrides, interleave, swizzle, l2Promotion, oobFill);
}
