// The two CUDA driver functions the kernels' host code needs (TMA descriptor encoding), resolved
// once through the runtime's driver entry point: the library does not link libcuda, so it loads
// on machines without a driver and answers there with the CPU backend.
//
// CUTLASS/CuTe call cuTensorMapEncodeTiled / Im2col for every TMA descriptor they build. Left to
// itself (no CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL) each such call first looks the function up
// with cudaGetDriverEntryPointByVersion, a symbol search that costs microseconds of host time per
// descriptor, 3-4 descriptors per GEMM or attention launch. The build therefore compiles every
// library source with CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL and renames the two driver symbols
// to the deepwell_* functions below (CMakeLists.txt), which forward to the cached pointers.
#pragma once

#include <cuda.h>

namespace deepwell::detail {

using TensorMapEncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                            const cuuint64_t*, const cuuint64_t*,
                                            const cuuint32_t*, const cuuint32_t*,
                                            CUtensorMapInterleave, CUtensorMapSwizzle,
                                            CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled of the installed driver, or nullptr when the driver has none.
TensorMapEncodeTiledFn driver_encode_tiled();

}  // namespace deepwell::detail
