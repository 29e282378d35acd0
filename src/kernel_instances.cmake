# Every CUDA source of the library, and so every compiled kernel instance, is listed here and
# nowhere else. Each *_inst_*.cu file instantiates exactly one kernel configuration; keep the list
# short: a clean build with all of them must stay within 20 minutes on 2 cores. (The CUTLASS GEMM
# instances are compiled three to a unit: bottom of this file.)
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

# The CUTLASS GEMM instances compile three to a translation unit: the CUTLASS/CuTe headers alone
# cost ~29 s of each instance's ~84 s (preprocessing, cudafe++, cicc and the host compiler, on the
# 2-core build machine); 31 files in 11 units took 1580 instead of 2611 CPU-s (docs/perf-notes.md,
# session 17). The unit files (build/kernel_units/gemm_unit_<i>.cu) only #include the instance
# files, which stay the source of truth, found by name; each kernel's machine code is byte for
# byte what it is when its file is compiled alone. A file with its own COMPILE_DEFINITIONS (the
# 64x160 row) keeps a unit of its own. The host side of a GEMM instance only fills kernel arguments:
# compiling it at -O1 instead of -O3 saves ~8 % of its build time (device code is unaffected).
set(_dw_gemm_instances ${DEEPWELL_CUDA_SOURCES})
list(FILTER _dw_gemm_instances INCLUDE REGEX "^src/gemm/gemm_inst_.*\\.cu$")
set(_dw_gemm_unit_size 3)
set(_dw_units)
set(_dw_chunk)
# Writes kernel_units/gemm_unit_<n>.cu including `files` (only when its text changes, so a
# reconfigure rebuilds nothing) and appends it to _dw_units. A macro: it updates the caller's lists.
macro(_dw_add_unit files)
  list(LENGTH _dw_units _dw_index)
  set(_dw_unit "${CMAKE_CURRENT_BINARY_DIR}/kernel_units/gemm_unit_${_dw_index}.cu")
  set(_dw_text "// Generated by src/kernel_instances.cmake: one translation unit of GEMM instances.\n")
  foreach(_dw_src IN LISTS ${files})
    string(APPEND _dw_text "#include \"${CMAKE_CURRENT_SOURCE_DIR}/${_dw_src}\"\n")
  endforeach()
  set(_dw_old "")
  if(EXISTS "${_dw_unit}")
    file(READ "${_dw_unit}" _dw_old)
  endif()
  if(NOT _dw_old STREQUAL _dw_text)
    file(WRITE "${_dw_unit}" "${_dw_text}")
  endif()
  list(APPEND _dw_units "${_dw_unit}")
endmacro()
foreach(_dw_file IN LISTS _dw_gemm_instances)
  get_source_file_property(_dw_defs ${_dw_file} COMPILE_DEFINITIONS)
  if(_dw_defs)  # its own definitions: a unit of its own, with them
    set(_dw_single ${_dw_file})
    _dw_add_unit(_dw_single)
    set_source_files_properties(${_dw_unit} PROPERTIES COMPILE_DEFINITIONS "${_dw_defs}")
    continue()
  endif()
  list(APPEND _dw_chunk ${_dw_file})
  list(LENGTH _dw_chunk _dw_n)
  if(_dw_n EQUAL _dw_gemm_unit_size)
    _dw_add_unit(_dw_chunk)
    set(_dw_chunk)
  endif()
endforeach()
if(_dw_chunk)
  _dw_add_unit(_dw_chunk)
endif()
set_source_files_properties(${_dw_gemm_instances} PROPERTIES HEADER_FILE_ONLY TRUE)
set_source_files_properties(${_dw_units} PROPERTIES COMPILE_OPTIONS "-Xcompiler=-O1")
list(APPEND DEEPWELL_CUDA_SOURCES ${_dw_units})
