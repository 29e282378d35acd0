# Locates the CUTLASS/CuTe headers. They come from the pinned PyPI wheel nvidia-cutlass==4.2.0.0
# (installed with --no-deps; only its headers are used), never from a vendored copy.
if(NOT DEEPWELL_CUTLASS_DIR)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c
        "import importlib.util as u, os; s = u.find_spec('cutlass_library'); print(os.path.join(s.submodule_search_locations[0], 'source', 'include') if s else '')"
      OUTPUT_VARIABLE _dw_cutlass OUTPUT_STRIP_TRAILING_WHITESPACE)
    set(DEEPWELL_CUTLASS_DIR "${_dw_cutlass}" CACHE PATH "CUTLASS include dir" FORCE)
  endif()
endif()
if(NOT EXISTS "${DEEPWELL_CUTLASS_DIR}/cute/tensor.hpp")
  message(FATAL_ERROR
    "CUTLASS headers not found (DEEPWELL_CUTLASS_DIR='${DEEPWELL_CUTLASS_DIR}'). Install them with\n"
    "  python3 -m pip install --no-deps nvidia-cutlass==4.2.0.0\n"
    "or pass -DDEEPWELL_CUTLASS_DIR=<dir containing cute/ and cutlass/>.")
endif()
# CUDA 13 moved the CCCL headers (cuda/std/...) that CUTLASS includes under include/cccl.
set(DEEPWELL_CUTLASS_INCLUDE ${DEEPWELL_CUTLASS_DIR} ${CUDAToolkit_INCLUDE_DIRS}/cccl)
message(STATUS "deepwell: CUTLASS headers from ${DEEPWELL_CUTLASS_DIR}")
