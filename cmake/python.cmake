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
