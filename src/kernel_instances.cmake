# Every CUDA source of the library, and so every compiled kernel instance, is listed here and
# nowhere else. Each *_inst_*.cu file instantiates exactly one kernel configuration; keep the list
# short: a clean build with all of them must stay within 20 minutes on 2 cores.
set(DEEPWELL_CUDA_SOURCES
  # core: host-side CUDA helpers
  src/core/cuda_utils.cpp
  src/core/cuda_driver.cpp

  # attention forward, sm_90a (src/attention/fwd_sm90*.cuh): dtype x head-dim bucket (x tile)
  src/attention/fwd_dispatch.cpp
  src/attention/fwd_sm90_inst_bf16_d64.cu
  src/attention/fwd_sm90_inst_bf16_d128.cu
  src/attention/fwd_sm90_inst_bf16_d256.cu
  src/attention/fwd_sm90_inst_f16_d64.cu
  src/attention/fwd_sm90_inst_f16_d128.cu
  src/attention/fwd_sm90_inst_f16_d256.cu
  src/attention/fwd_sm90_inst_bf16_d64_causal.cu
  src/attention/fwd_sm90_inst_f16_d64_causal.cu
  src/attention/fwd_sm90_inst_bf16_d64_causal_long.cu
  src/attention/fwd_sm90_inst_f16_d64_causal_long.cu
  src/attention/fwd_sm90_inst_bf16_d256_long.cu
  src/attention/fwd_sm90_inst_f16_d256_long.cu

  # gemm, sm_90a (src/gemm/sm90_gemm.cuh): one file per row of src/gemm/gemm_sm90_table.hpp
  src/gemm/dispatch_cuda.cpp
  src/gemm/gemm_tuning.cpp
  src/gemm/sm90_helpers.cu
  src/gemm/gemm_inst_bf16_kk_bf16_128x256.cu
  src/gemm/gemm_inst_bf16_kk_bf16_128x128.cu
  src/gemm/gemm_inst_bf16_kk_bf16_128x64.cu
  src/gemm/gemm_inst_bf16_kk_bf16_pp_128x128.cu
  src/gemm/gemm_inst_bf16_kk_bf16_pp_64x64.cu
  src/gemm/gemm_inst_bf16_kk_bf16_pp_64x96.cu
  src/gemm/gemm_inst_bf16_kk_bf16_pp_64x160.cu
  src/gemm/gemm_inst_bf16_kn_bf16_128x256.cu
  src/gemm/gemm_inst_bf16_kn_bf16_128x128.cu
  src/gemm/gemm_inst_bf16_kn_bf16_128x64.cu
  src/gemm/gemm_inst_bf16_kn_bf16_pp_128x128.cu
  src/gemm/gemm_inst_bf16_kn_bf16_pp_64x64.cu
  src/gemm/gemm_inst_f16_kk_f16_128x256.cu
  src/gemm/gemm_inst_f16_kk_f16_128x128.cu
  src/gemm/gemm_inst_f16_kk_f16_128x64.cu
  src/gemm/gemm_inst_f16_kk_f16_pp_128x128.cu
  src/gemm/gemm_inst_f16_kk_f16_pp_64x64.cu
  src/gemm/gemm_inst_f16_kn_f16_128x256.cu
  src/gemm/gemm_inst_f16_kn_f16_128x128.cu
  src/gemm/gemm_inst_f16_kn_f16_128x64.cu
  src/gemm/gemm_inst_f16_kn_f16_pp_128x128.cu
  src/gemm/gemm_inst_f16_kn_f16_pp_64x64.cu
  src/gemm/gemm_inst_bf16_kk_f32_128x128.cu
  src/gemm/gemm_inst_f16_kk_f32_128x128.cu
  src/gemm/gemm_inst_e4m3_kk_bf16_128x128.cu
  src/gemm/gemm_inst_e4m3e5m2_kk_bf16_128x128.cu
  src/gemm/gemm_inst_e4m3_kk_bf16_block_128x128.cu
  src/gemm/gemm_inst_e4m3_kk_f32_128x128.cu
  src/gemm/gemm_inst_e4m3_kk_f32_block_128x128.cu
  src/gemm/gemm_inst_e4m3e5m2_kk_f32_128x128.cu
  src/gemm/gemm_inst_bf16_kk_f16_128x128.cu
  # gemm, sm_90a, deepwell's own fp8 main loop (src/gemm/fp8_sm90_kernel.cuh); rows of the same table
  src/gemm/fp8_sm90_inst_e4m3_kk_bf16_ws_128x192.cu
  src/gemm/fp8_sm90_inst_e4m3_kk_f16_ws_128x192.cu
  src/gemm/fp8_sm90_inst_e4m3e5m2_kk_bf16_ws_128x192.cu
  src/gemm/fp8_sm90_inst_e4m3e5m2_kk_f16_ws_128x192.cu
  src/gemm/fp8_sm90_inst_e4m3_kk_bf16_block_ws_128x192.cu
  src/gemm/fp8_sm90_inst_e4m3_kk_f16_block_ws_128x192.cu
  src/gemm/fp8_sm90_inst_e4m3_kk_bf16_ws_128x160.cu
  src/gemm/fp8_sm90_inst_e4m3e5m2_kk_bf16_ws_128x160.cu

  # quant: memory-bound quantization kernels, one file per kernel family (src/quant/*_sm90.cu)
  src/quant/quantize_sm90.cu
  src/quant/quantize_transpose_sm90.cu
  src/quant/dequantize_sm90.cu
)

# The 80-key tiles of d = 256 need wgmma N = 80, which CuTe's GMMA op selectors offer only with the
# extended shape list (76k more header lines, ~30 s more per file, so only where it is needed);
# without it they would silently pick 64x16 atoms (five per k-step).
set_source_files_properties(src/attention/fwd_sm90_inst_bf16_d256_long.cu
  src/attention/fwd_sm90_inst_f16_d256_long.cu src/gemm/gemm_inst_bf16_kk_bf16_pp_64x160.cu
  PROPERTIES COMPILE_DEFINITIONS CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED)

# The host side of a GEMM instance only fills kernel arguments: compiling it at -O1 instead of -O3
# saves ~8 % of each instance's build time (device code is unaffected).
set(_dw_gemm_instances ${DEEPWELL_CUDA_SOURCES})
list(FILTER _dw_gemm_instances INCLUDE REGEX "^src/gemm/gemm_inst_.*\\.cu$")
set_source_files_properties(${_dw_gemm_instances} PROPERTIES COMPILE_OPTIONS "-Xcompiler=-O1")
