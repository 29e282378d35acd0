// deepwell C++ API: everything a C++ engine needs, in one include.
#pragma once

#include "deepwell/attention.hpp"
#include "deepwell/core.hpp"
#include "deepwell/gemm.hpp"
#include "deepwell/quant.hpp"
