# Every CUDA source of the library, and so every compiled kernel instance, is listed here and
# nowhere else. Each *_inst_*.cu file instantiates exactly one kernel configuration; keep the list
# short: a clean build with all of them must stay within 20 minutes on 2 cores.
set(DEEPWELL_CUDA_SOURCES
  # core: host-side CUDA helpers
  src/core/cuda_utils.cpp

  # attention forward, sm_90a (src/attention/fwd_sm90*.cuh): dtype x head-dim bucket
  src/attention/fwd_dispatch.cpp
  src/attention/fwd_sm90_inst_bf16_d64.cu
  src/attention/fwd_sm90_inst_bf16_d128.cu
  src/attention/fwd_sm90_inst_bf16_d256.cu
  src/attention/fwd_sm90_inst_f16_d64.cu
  src/attention/fwd_sm90_inst_f16_d128.cu
  src/attention/fwd_sm90_inst_f16_d256.cu

  # gemm
  src/gemm/dispatch_cuda.cpp

  # quant: memory-bound quantization kernels, one file per kernel family (src/quant/*_sm90.cu)
  src/quant/quantize_sm90.cu
  src/quant/quantize_transpose_sm90.cu
  src/quant/quantize_block128_sm90.cu
  src/quant/dequantize_sm90.cu
)
