# The Python extension deepwell._C (nanobind). It links libdeepwell and holds no torch headers.
find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module)
execute_process(COMMAND ${Python_EXECUTABLE} -m nanobind --cmake_dir
                OUTPUT_VARIABLE _dw_nanobind_dir OUTPUT_STRIP_TRAILING_WHITESPACE)
list(APPEND CMAKE_PREFIX_PATH "${_dw_nanobind_dir}")
find_package(nanobind CONFIG REQUIRED)

nanobind_add_module(_C NB_STATIC python/src/module.cpp)
target_link_libraries(_C PRIVATE deepwell)
target_include_directories(_C PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)

if(SKBUILD)
  # Wheel layout: deepwell/_C*.so next to deepwell/libdeepwell.so.
  set_target_properties(_C deepwell PROPERTIES INSTALL_RPATH "$ORIGIN")
  install(TARGETS _C deepwell LIBRARY DESTINATION deepwell)
else()
  # Build-tree layout used by tools/test: build/python/deepwell holds the package.
  set(_dw_pkg ${CMAKE_BINARY_DIR}/python/deepwell)
  set_target_properties(_C PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${_dw_pkg})
  file(GLOB _dw_py CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/python/deepwell/*.py)
  add_custom_target(deepwell_python_sources ALL
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_dw_pkg}
    COMMAND ${CMAKE_COMMAND} -E copy_if_different ${_dw_py} ${_dw_pkg}
    DEPENDS ${_dw_py})
endif()

# deepwell._torch: deepwell.gemm's host fast path for torch CUDA tensors (python/src/torch_ext.cpp),
# compiled against the torch this Python imports, so only in a CUDA build of the build tree where
# torch (with CUDA) is importable; a wheel's isolated build has no torch and goes without it.
# DEEPWELL_TORCH_EXT=OFF skips it. At run time ops.py uses it only under the torch it was built for.
option(DEEPWELL_TORCH_EXT "Build deepwell._torch when torch is importable (CUDA builds)" ON)
if(DEEPWELL_TORCH_EXT AND DEEPWELL_WITH_CUDA AND NOT SKBUILD)
  execute_process(
    COMMAND ${Python_EXECUTABLE} -c "import os, torch; assert torch.version.cuda; d = os.path.dirname(torch.__file__); print(os.path.join(d, 'include'), os.path.join(d, 'lib'), torch.__version__, int(torch._C._GLIBCXX_USE_CXX11_ABI), sep=';', end='')"
    OUTPUT_VARIABLE _dw_torch RESULT_VARIABLE _dw_torch_rc ERROR_QUIET)
  if(_dw_torch_rc EQUAL 0)
    list(GET _dw_torch 0 _dw_torch_inc)
    list(GET _dw_torch 1 _dw_torch_lib)
    list(GET _dw_torch 2 _dw_torch_version)
    list(GET _dw_torch 3 _dw_torch_abi)
    message(STATUS "deepwell: deepwell._torch against torch ${_dw_torch_version}")
    Python_add_library(_torch MODULE WITH_SOABI python/src/torch_ext.cpp)
    target_include_directories(_torch SYSTEM PRIVATE ${_dw_torch_inc}
                               ${_dw_torch_inc}/torch/csrc/api/include ${CUDAToolkit_INCLUDE_DIRS})
    target_compile_definitions(_torch PRIVATE DEEPWELL_TORCH_VERSION="${_dw_torch_version}"
                               _GLIBCXX_USE_CXX11_ABI=${_dw_torch_abi})
    target_link_libraries(_torch PRIVATE deepwell ${_dw_torch_lib}/libc10.so
                          ${_dw_torch_lib}/libc10_cuda.so ${_dw_torch_lib}/libtorch_cpu.so
                          ${_dw_torch_lib}/libtorch_python.so)
    set_target_properties(_torch PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${_dw_pkg}
                          BUILD_RPATH "${_dw_torch_lib};${CMAKE_BINARY_DIR}/lib")
  else()
    message(STATUS "deepwell: no deepwell._torch (torch with CUDA is not importable)")
  endif()
endif()
