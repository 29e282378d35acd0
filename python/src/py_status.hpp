// The Python exception type of a library status, shared by deepwell._C and deepwell._torch:
// invalid argument -> ValueError, wrong dtype -> TypeError, not supported -> NotImplementedError,
// out of memory -> MemoryError, anything else -> RuntimeError.
#pragma once

#include <Python.h>

#include "deepwell/core.hpp"

namespace deepwell::python {

inline PyObject* exception_type(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument: return PyExc_ValueError;
    case StatusCode::kInvalidDType: return PyExc_TypeError;
    case StatusCode::kNotSupported: return PyExc_NotImplementedError;
    case StatusCode::kOutOfMemory: return PyExc_MemoryError;
    default: return PyExc_RuntimeError;
  }
}

}  // namespace deepwell::python
