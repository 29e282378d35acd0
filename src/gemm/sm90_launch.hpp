// The host-side interface between the CUDA GEMM dispatcher (dispatch_cuda.cpp) and the compiled
// sm_90a kernel instances (gemm_inst_*.cu). No CUTLASS or CUDA headers here: the dispatcher is plain
// C++, and every instance file includes this header to export its launch functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "deepwell/core.hpp"

namespace deepwell::matmul::sm90 {

// How the output tiles are distributed over the CTAs of the persistent grid. Only CUTLASS kernels
// built with the stream-K tile scheduler accept kSplitK and kStreamK; only deepwell's own fp8-loop
// kernels (Schedule::kFp8Promoted, no cluster) accept kSplitTail.
enum class Decomposition : int32_t {
  kDataParallel = 0,  // one CTA per output tile
  kSplitK = 1,        // `splits` CTAs per tile, partial sums reduced through the workspace
  kStreamK = 2,       // CUTLASS's stream-K: K iterations balanced over the SMs
  kSplitTail = 3,     // deepwell's fp8-loop kernels: whole rounds of tiles data-parallel, each
                      // tile of the last, partial round split along K over `splits` CTAs
};

// One GEMM in the kernels' orientation, after the dispatcher has normalized the caller's problem
// (possibly computing D^T = B^T A^T):
//   D (M, N)    row-major: unit stride along N, leading dimension ldd
//   A (M, K)    unit stride along K (a_k_major) or along M; lda is the other stride
//   B as (N, K) unit stride along K (b_k_major) or along N; ldb is the other stride
//   S (M, N)    optional source ("C" and/or residual) in D's dtype and layout
// Every batch stride is a real stride (a broadcast operand is handled by the dispatcher).
//   D = gamma * S + act(alpha * scale * A B + beta * S + bias_n[n] + bias_m[m])
// where scale = scale_a_tensor * scale_b_tensor * scale_m[m] * scale_n[n] (each factor 1 when null)
// for the fp8 kernels; the block-scaled fp8 kernels apply sfa/sfb inside the main loop instead.
struct Launch {
  int m = 0, n = 0, k = 0, batch = 1;
  const void* a = nullptr;
  int64_t lda = 0, batch_a = 0;
  const void* b = nullptr;
  int64_t ldb = 0, batch_b = 0;
  void* d = nullptr;
  int64_t ldd = 0, batch_d = 0;
  const void* s = nullptr;  // nullptr: no source; then beta = gamma = 0
  int64_t lds = 0, batch_s = 0;
  const void* bias_n = nullptr;  // (N) contiguous, dtype of D
  const void* bias_m = nullptr;  // (M) contiguous, dtype of D
  float alpha = 1.0f, beta = 0.0f, gamma = 0.0f;
  int32_t activation = 0;  // deepwell::Activation

  // fp8 scales (fp32, device memory)
  const float* scale_a_tensor = nullptr;  // 1 element
  const float* scale_b_tensor = nullptr;  // 1 element
  const float* scale_m = nullptr;         // (M), one per row of A
  const float* scale_n = nullptr;         // (N), one per column of B
  const float* sfa = nullptr;  // blockwise: (M, ceil(K/128)), unit stride along M, K-block stride sfa_ld
  int64_t sfa_ld = 0;
  int64_t sfa_rs = 1;  // sfa's stride along M: 1, except for the skinny kernel (any stride)
  const float* sfb = nullptr;  // blockwise: (ceil(N/128), ceil(K/128)), unit stride along K, row stride sfb_ld
  int64_t sfb_ld = 0;

  // Work decomposition (stream-K kernels only) and rasterization.
  Decomposition decomposition = Decomposition::kDataParallel;
  int32_t splits = 1;
  int32_t raster = 0;   // 0: heuristic, 1: along M, 2: along N
  int32_t swizzle = 1;  // 1, 2, 4 or 8
  int32_t sm_count = 0;

  void* workspace = nullptr;
  size_t workspace_size = 0;
  void* stream = nullptr;  // cudaStream_t
};

// Launches the kernel on l.stream. Never synchronizes.
using LaunchFn = Status (*)(const Launch& l);
// Workspace bytes the launch needs (0 for data-parallel launches of most kernels).
using WorkspaceFn = size_t (*)(const Launch& l);

}  // namespace deepwell::matmul::sm90
