// Kernel instance e4m3e5m2_kk_bf16_skinny (row of gemm_sm90_table.hpp): deepwell's fp8 GEMM for few rows of A
// (skinny_sm90.cuh). W e5m2: true, block scaling: false, output: OutBf16.
#include "gemm/skinny_sm90.cuh"

DW_SM90_SKINNY_INSTANCE(e4m3e5m2_kk_bf16_skinny, /*e5m2 weight*/ true, /*block scales*/ false, OutBf16)
