// Kernel instance e4m3_kk_f16_block_skinny (row of gemm_sm90_table.hpp): deepwell's fp8 GEMM for few rows of A
// (skinny_sm90.cuh). W e5m2: false, block scaling: true, output: OutF16.
#include "gemm/skinny_sm90.cuh"

DW_SM90_SKINNY_INSTANCE(e4m3_kk_f16_block_skinny, /*e5m2 weight*/ false, /*block scales*/ true, OutF16)
