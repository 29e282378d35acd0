# Every CUDA source of the library, and so every compiled kernel instance, is listed here and
# nowhere else. Each *_inst_*.cu file instantiates exactly one kernel configuration; keep the list
# short: a clean build with all of them must stay within 20 minutes on 2 cores. (The instances are
# compiled several to a translation unit: bottom of this file.)
set(DEEPWELL_CUDA_SOURCES
  # core: host-side CUDA helpers
  src/core/cuda_utils.cpp
  src/core/cuda_driver.cpp

  # attention forward, sm_90a (src/attention/fwd_sm90*.cuh): dtype x head-dim bucket (x tile)
  src/attention/fwd_dispatch.cpp
  src/attention/fwd_combine.cu
  src/attention/fwd_sm90_inst_bf16_d64.cu
  src/attention/fwd_sm90_inst_bf16_d128.cu
  src/attention/fwd_sm90_inst_bf16_d256.cu
  src/attention/fwd_sm90_inst_f16_d64.cu
  src/attention/fwd_sm90_inst_f16_d128.cu
  src/attention/fwd_sm90_inst_f16_d256.cu
  src/attention/fwd_sm90_inst_bf16_d64_causal_short.cu
  src/attention/fwd_sm90_inst_f16_d64_causal_short.cu
  src/attention/fwd_sm90_inst_bf16_d64_causal.cu
  src/attention/fwd_sm90_inst_f16_d64_causal.cu
  src/attention/fwd_sm90_inst_bf16_d128_short.cu
  src/attention/fwd_sm90_inst_f16_d128_short.cu
  src/attention/fwd_sm90_inst_bf16_d128_long.cu
  src/attention/fwd_sm90_inst_f16_d128_long.cu
  src/attention/fwd_sm90_inst_bf16_d128_wide.cu
  src/attention/fwd_sm90_inst_f16_d128_wide.cu
  src/attention/fwd_sm90_inst_bf16_d256_short.cu
  src/attention/fwd_sm90_inst_f16_d256_short.cu
  src/attention/fwd_sm90_inst_bf16_d64_dense.cu
  src/attention/fwd_sm90_inst_f16_d64_dense.cu
  src/attention/fwd_sm90_inst_bf16_d128_dense.cu
  src/attention/fwd_sm90_inst_f16_d128_dense.cu
  src/attention/fwd_sm90_inst_bf16_d128_long_dense.cu
  src/attention/fwd_sm90_inst_f16_d128_long_dense.cu
  src/attention/fwd_sm90_inst_bf16_d128_fixed.cu
  src/attention/fwd_sm90_inst_f16_d128_fixed.cu
  src/attention/fwd_sm90_inst_bf16_d128_long_fixed.cu
  src/attention/fwd_sm90_inst_f16_d128_long_fixed.cu
  src/attention/fwd_sm90_inst_bf16_d256_fixed.cu
  src/attention/fwd_sm90_inst_f16_d256_fixed.cu

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
  src/gemm/gemm_inst_bf16_kk_bf16_128x64_n4.cu
  src/gemm/gemm_inst_bf16_kk_bf16_pp_64x64_n4.cu
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
  src/gemm/gemm_inst_e4m3_kk_bf16_pp_64x64.cu
  src/gemm/gemm_inst_e4m3_kk_bf16_pp_64x64_n4.cu
  src/gemm/gemm_inst_e4m3_kk_bf16_128x64_n4.cu
  src/gemm/gemm_inst_e4m3_kk_bf16_block_128x128.cu
  src/gemm/gemm_inst_e4m3_kk_f32_128x128.cu
  src/gemm/gemm_inst_e4m3_kk_f32_block_128x128.cu
  src/gemm/gemm_inst_e4m3e5m2_kk_f32_128x128.cu
  src/gemm/gemm_inst_bf16_kk_f16_128x128.cu
  # gemm, sm_90a, deepwell's own fp8 main loop (src/gemm/fp8_sm90_kernel.cuh); rows of the same table
  src/gemm/fp8_sm90_inst_bf16_kk_bf16_ws_128x256.cu
  src/gemm/fp8_sm90_inst_bf16_kk_bf16_ws_128x192.cu
  src/gemm/fp8_sm90_inst_f16_kk_f16_ws_128x256.cu
  src/gemm/fp8_sm90_inst_e4m3_kk_bf16_ws_128x192.cu
  src/gemm/fp8_sm90_inst_e4m3_kk_f16_ws_128x192.cu
  src/gemm/fp8_sm90_inst_e4m3e5m2_kk_bf16_ws_128x192.cu
  src/gemm/fp8_sm90_inst_e4m3e5m2_kk_f16_ws_128x192.cu
  src/gemm/fp8_sm90_inst_e4m3_kk_bf16_block_ws_128x192.cu
  src/gemm/fp8_sm90_inst_e4m3_kk_bf16_block_ws_128x128.cu
  src/gemm/fp8_sm90_inst_e4m3_kk_f16_block_ws_128x192.cu
  src/gemm/fp8_sm90_inst_e4m3_kk_bf16_ws_128x160.cu
  src/gemm/fp8_sm90_inst_e4m3e5m2_kk_bf16_ws_128x160.cu
  # gemm, sm_90a, deepwell's fp8 kernel for few rows of A (src/gemm/skinny_sm90.cuh); rows of the same table
  src/gemm/skinny_sm90_inst_e4m3_kk_bf16_skinny.cu
  src/gemm/skinny_sm90_inst_e4m3_kk_f16_skinny.cu
  src/gemm/skinny_sm90_inst_e4m3_kk_f32_skinny.cu
  src/gemm/skinny_sm90_inst_e4m3e5m2_kk_bf16_skinny.cu
  src/gemm/skinny_sm90_inst_e4m3e5m2_kk_f16_skinny.cu
  src/gemm/skinny_sm90_inst_e4m3e5m2_kk_f32_skinny.cu
  src/gemm/skinny_sm90_inst_e4m3_kk_bf16_block_skinny.cu
  src/gemm/skinny_sm90_inst_e4m3_kk_f16_block_skinny.cu
  src/gemm/skinny_sm90_inst_e4m3_kk_f32_block_skinny.cu

  # quant: memory-bound quantization kernels, one file per kernel family (src/quant/*_sm90.cu)
  src/quant/quantize_sm90.cu
  src/quant/quantize_transpose_sm90.cu
  src/quant/quantize_onepass_sm90.cu
  src/quant/dequantize_sm90.cu
)

# The 64x160 GEMM tile needs wgmma N = 160, which CuTe's GMMA op selectors offer only with the
# extended shape list (76k more header lines, ~30 s more per file, so only where it is needed);
# without it they would silently pick smaller atoms.
set_source_files_properties(src/gemm/gemm_inst_bf16_kk_bf16_pp_64x160.cu
  PROPERTIES COMPILE_DEFINITIONS CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED)
# Likewise wgmma N = 144 for the 144-key d = 128 attention tile (FwdTileD128Wide).
set_source_files_properties(src/attention/fwd_sm90_inst_bf16_d128_wide.cu
  src/attention/fwd_sm90_inst_f16_d128_wide.cu
  PROPERTIES COMPILE_DEFINITIONS CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED)

# Kernel instances compile several to a translation unit: most of a file's build time is the
# headers and the template machinery every instance shares (CUTLASS/CuTe for the GEMMs; for one
# attention instance cicc spends ~28 s of ~43, and a unit of four attention instances takes 53 s,
# not 4 x 43), so grouping cuts the clean build without touching any kernel: each kernel's machine
# code is byte for byte what it is when its file is compiled alone (checked with cuobjdump, GEMM
# in session 17, attention in session 21; docs/perf-notes.md). The unit files
# (build/kernel_units/<family>_unit_<i>.cu) only #include the instance files, which stay the
# source of truth, found by name. Files with their own COMPILE_DEFINITIONS (the extended wgmma
# shapes) share units only with files of the same definitions. The host side of a GEMM instance
# only fills kernel arguments: compiling it at -O1 instead of -O3 saves ~8 % of its build time
# (device code is unaffected); the attention and own fp8 launchers keep -O3.
# Writes kernel_units/<family>_unit_<n>.cu including `files` (only when its text changes, so a
# reconfigure rebuilds nothing) and appends it to the caller's list `list_var`.
function(_dw_write_unit family index files defs list_var)
  set(unit "${CMAKE_CURRENT_BINARY_DIR}/kernel_units/${family}_unit_${index}.cu")
  set(text "// Generated by src/kernel_instances.cmake: one translation unit of ${family} instances.\n")
  foreach(src IN LISTS files)
    string(APPEND text "#include \"${CMAKE_CURRENT_SOURCE_DIR}/${src}\"\n")
  endforeach()
  set(old "")
  if(EXISTS "${unit}")
    file(READ "${unit}" old)
  endif()
  if(NOT old STREQUAL text)
    file(WRITE "${unit}" "${text}")
  endif()
  if(defs)
    set_source_files_properties(${unit} PROPERTIES COMPILE_DEFINITIONS "${defs}")
  endif()
  set(${list_var} ${${list_var}} ${unit} PARENT_SCOPE)
endfunction()
# The instances of DEEPWELL_CUDA_SOURCES matching `regex`, in units of up to `size` files of equal
# COMPILE_DEFINITIONS; the instance files leave the source list, the units join it.
function(_dw_group_instances family regex size host_options)
  set(instances ${DEEPWELL_CUDA_SOURCES})
  list(FILTER instances INCLUDE REGEX "${regex}")
  set(groups)  # distinct definition sets, "-" for none
  foreach(file IN LISTS instances)
    get_source_file_property(defs ${file} COMPILE_DEFINITIONS)
    if(NOT defs)
      set(defs "-")
    endif()
    string(MAKE_C_IDENTIFIER "${defs}" key)
    list(APPEND _dw_files_${key} ${file})
    set(_dw_defs_${key} "${defs}")
    list(APPEND groups ${key})
  endforeach()
  list(REMOVE_DUPLICATES groups)
  set(units)
  set(index 0)
  foreach(key IN LISTS groups)
    set(defs "${_dw_defs_${key}}")
    if(defs STREQUAL "-")
      set(defs "")
    endif()
    set(chunk)
    foreach(file IN LISTS _dw_files_${key})
      list(APPEND chunk ${file})
      list(LENGTH chunk n)
      if(n EQUAL size)
        _dw_write_unit(${family} ${index} "${chunk}" "${defs}" units)
        math(EXPR index "${index} + 1")
        set(chunk)
      endif()
    endforeach()
    if(chunk)
      _dw_write_unit(${family} ${index} "${chunk}" "${defs}" units)
      math(EXPR index "${index} + 1")
    endif()
  endforeach()
  set_source_files_properties(${instances} PROPERTIES HEADER_FILE_ONLY TRUE)
  if(host_options)
    set_source_files_properties(${units} PROPERTIES COMPILE_OPTIONS "${host_options}")
  endif()
  set(sources ${DEEPWELL_CUDA_SOURCES} ${units})
  set(DEEPWELL_CUDA_SOURCES ${sources} PARENT_SCOPE)
endfunction()
# Unit sizes: the GEMM units stay near 2 minutes each so that two cores stay busy to the end.
_dw_group_instances(gemm "^src/gemm/gemm_inst_.*\\.cu$" 3 "-Xcompiler=-O1")
_dw_group_instances(attention "^src/attention/fwd_sm90_inst_.*\\.cu$" 6 "")
_dw_group_instances(fp8 "^src/gemm/fp8_sm90_inst_.*\\.cu$" 4 "")
# The skinny kernels are plain CUDA (no CUTLASS): all nine rows compile in one unit.
_dw_group_instances(skinny "^src/gemm/skinny_sm90_inst_.*\\.cu$" 9 "")
