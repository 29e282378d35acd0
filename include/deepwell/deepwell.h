/* deepwell: the stable C ABI.
 *
 * Conventions
 *  - Every function returns a dw_status (0 = DW_STATUS_OK). On failure, dw_last_error() returns a
 *    thread-local message naming the argument, what was expected and what was given. The library
 *    never aborts or exits.
 *  - Tensors are described by dw_tensor (DLPack-style: data, shape, strides in elements, dtype,
 *    device). Nothing is owned or freed by the library.
 *  - GPU work is enqueued on the given stream (a cudaStream_t, NULL = legacy default stream) and
 *    never synchronized, so calls can be captured into CUDA graphs.
 *  - Argument structs start with `struct_size`; set it to sizeof(the struct) so that later versions
 *    that append fields keep accepting today's callers.
 */
#ifndef DEEPWELL_H_
#define DEEPWELL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define DW_API __declspec(dllexport)
#else
#define DW_API __attribute__((visibility("default")))
#endif

#define DW_VERSION_MAJOR 0
#define DW_VERSION_MINOR 1
#define DW_VERSION_PATCH 0
/* Bumped whenever a struct or signature below changes incompatibly. */
#define DW_ABI_VERSION 1

typedef int32_t dw_status;
enum {
  DW_STATUS_OK = 0,
  DW_STATUS_INVALID_ARGUMENT = 1,
  DW_STATUS_INVALID_DTYPE = 2,
  DW_STATUS_NOT_SUPPORTED = 3,
  DW_STATUS_CUDA_ERROR = 4,
  DW_STATUS_OUT_OF_MEMORY = 5,
  DW_STATUS_INTERNAL = 6
};

typedef int32_t dw_dtype;
enum {
  DW_DTYPE_F32 = 0,
  DW_DTYPE_F16 = 1,
  DW_DTYPE_BF16 = 2,
  DW_DTYPE_E4M3 = 3,
  DW_DTYPE_E5M2 = 4,
  DW_DTYPE_E2M1 = 5,
  DW_DTYPE_UE8M0 = 6,
  DW_DTYPE_UE4M3 = 7,
  DW_DTYPE_I32 = 8,
  DW_DTYPE_U8 = 9
};

/* DLPack device codes. */
enum { DW_DEVICE_CPU = 1, DW_DEVICE_CUDA = 2 };

typedef struct dw_tensor {
  void* data;
  const int64_t* shape;   /* ndim entries */
  const int64_t* strides; /* ndim entries, in elements; NULL means contiguous row-major */
  int32_t ndim;           /* 0..8 */
  dw_dtype dtype;
  int32_t device_type;    /* DW_DEVICE_* */
  int32_t device_id;
} dw_tensor;

/* Version of the library that is loaded, and of the ABI it implements. */
DW_API const char* dw_version(void);
DW_API int32_t dw_abi_version(void);
/* 1 if the library was built with its CUDA kernels. */
DW_API int32_t dw_built_with_cuda(void);
/* The message of the last failed call on this thread ("" if none). */
DW_API const char* dw_last_error(void);

/* ---------------------------------------------------------------- attention */

typedef struct dw_attention_fwd_args {
  size_t struct_size;          /* sizeof(dw_attention_fwd_args) */
  const dw_tensor* q;          /* (B, Sq, Hq, D) or varlen (total_q, Hq, D) */
  const dw_tensor* k;          /* (B, Sk, Hkv, D) or varlen (total_k, Hkv, D) */
  const dw_tensor* v;          /* like k */
  const dw_tensor* out;        /* like q */
  const dw_tensor* lse;        /* optional: fp32 (B, Hq, Sq) or (Hq, total_q) */
  const dw_tensor* cu_seqlens_q; /* optional int32 (B + 1): varlen */
  const dw_tensor* cu_seqlens_k;
  int64_t max_seqlen_q;        /* varlen: bound on q lengths; -1 otherwise */
  int64_t max_seqlen_k;
  const dw_tensor* bias;       /* optional additive bias (B|1, Hq|1, Sq, Sk); CPU only */
  float softmax_scale;         /* <= 0 or NaN: 1/sqrt(D) */
  int32_t causal;              /* bottom-right aligned when Sq != Sk */
  int64_t window_left;         /* < 0: unbounded */
  int64_t window_right;        /* < 0: unbounded */
  /* Appended later (callers passing the older, shorter struct_size get none): scratch memory on
   * the tensors' device, 256-byte aligned, of dw_attention_fwd_workspace_size() bytes, with which
   * a call with too few query tiles to fill the GPU (decoding) splits its keys (split-KV), and a
   * call without a mask splits the keys of the tiles of its last, partly idle round of tiles;
   * without it such a call runs unsplit (same results within rounding, slower). */
  void* workspace;
  size_t workspace_size;
} dw_attention_fwd_args;

DW_API dw_status dw_attention_fwd(const dw_attention_fwd_args* args, void* stream);
/* Workspace bytes dw_attention_fwd can use (0 on CPU, and when it would not split); see
 * deepwell::attention_forward_workspace_size. */
DW_API dw_status dw_attention_fwd_workspace_size(const dw_attention_fwd_args* args,
                                                 size_t* bytes);

typedef struct dw_attention_bwd_args {
  size_t struct_size;          /* sizeof(dw_attention_bwd_args) */
  const dw_tensor* q;
  const dw_tensor* k;
  const dw_tensor* v;
  const dw_tensor* out;
  const dw_tensor* dout;
  const dw_tensor* lse;        /* fp32, from the forward */
  const dw_tensor* dq;
  const dw_tensor* dk;
  const dw_tensor* dv;
  const dw_tensor* cu_seqlens_q;
  const dw_tensor* cu_seqlens_k;
  int64_t max_seqlen_q;
  int64_t max_seqlen_k;
  const dw_tensor* bias;
  float softmax_scale;
  int32_t causal;
  int64_t window_left;
  int64_t window_right;
} dw_attention_bwd_args;

/* CPU only in this version. */
DW_API dw_status dw_attention_bwd(const dw_attention_bwd_args* args, void* stream);

/* The seed interface, in general form: contiguous q, k, v, o in BHSD (layout 0) or BSHD (layout 1),
 * dtype DW_DTYPE_BF16 or DW_DTYPE_F16, pointers on `device_type`. */
DW_API dw_status dw_fmha_forward(const void* q, const void* k, const void* v, void* o,
                                 dw_dtype dtype, int32_t device_type, int64_t batch,
                                 int64_t heads, int64_t seqlen_q, int64_t seqlen_k,
                                 int64_t head_dim, int32_t layout, int32_t causal, void* stream);

/* --------------------------------------------------------------------- gemm */

typedef int32_t dw_activation;
enum {
  DW_ACT_NONE = 0,
  DW_ACT_RELU = 1,
  DW_ACT_GELU_ERF = 2,
  DW_ACT_GELU_TANH = 3,
  DW_ACT_SILU = 4
};

typedef struct dw_gemm_args {
  size_t struct_size;          /* sizeof(dw_gemm_args) */
  const dw_tensor* a;          /* (M, K) or (batch, M, K) */
  const dw_tensor* b;          /* (K, N) or (batch, K, N) */
  const dw_tensor* d;          /* (M, N) or (batch, M, N); its dtype is the output type */
  const dw_tensor* c;          /* optional, like d, scaled by beta */
  const dw_tensor* bias;       /* optional (N) */
  const dw_tensor* residual;   /* optional, like d, added after the activation */
  float alpha;
  float beta;
  dw_activation activation;
  /* Appended in 0.2 (callers passing the older, shorter struct_size get no workspace): scratch
   * memory on the tensors' device, 256-byte aligned, of dw_gemm_workspace_size() bytes or more. */
  void* workspace;
  size_t workspace_size;
} dw_gemm_args;

/* D = act(alpha * A B + beta * C + bias) + residual */
DW_API dw_status dw_gemm(const dw_gemm_args* args, void* stream);
/* Workspace bytes dw_gemm can use for these arguments (0 on CPU); see deepwell::gemm_workspace_size. */
DW_API dw_status dw_gemm_workspace_size(const dw_gemm_args* args, size_t* bytes);
/* Tuning hook: forces the kernel plan of later CUDA dw_gemm / dw_gemm_fp8 calls that can run it;
 * spec as DEEPWELL_GEMM_FORCE ("kernel[,dp|splitk|streamk|tail[,splits[,h|m|n[,swizzle]]]]");
 * NULL or "" restores the shape rules. See deepwell::set_gemm_plan_override. */
DW_API dw_status dw_gemm_set_plan_override(const char* spec);

/* Granularity of dw_gemm_fp8's scales (deepwell::Fp8Scaling). */
enum {
  DW_FP8_SCALING_TENSOR = 0, /* f32 scale_a (1), scale_b (1) */
  DW_FP8_SCALING_ROW = 1,    /* f32 scale_a (M), scale_b (N) */
  DW_FP8_SCALING_BLOCK = 2,  /* f32 scale_a (M, ceil(K/128)), scale_b (ceil(N/128), ceil(K/128)) */
  DW_FP8_SCALING_MX = 3      /* ue8m0 scale_a (M, ceil(K/32)), scale_b (N, ceil(K/32)); CPU only */
};

typedef struct dw_gemm_fp8_args {
  size_t struct_size;          /* sizeof(dw_gemm_fp8_args) */
  const dw_tensor* a;          /* e4m3 / e5m2 (M, K) or (batch, M, K) */
  const dw_tensor* b;          /* e4m3 / e5m2 (K, N) or (batch, K, N) */
  const dw_tensor* scale_a;
  const dw_tensor* scale_b;
  int32_t scaling;             /* DW_FP8_SCALING_* */
  const dw_tensor* d;          /* f32, f16 or bf16 (M, N) or (batch, M, N) */
  const dw_tensor* c;          /* optional, like d, scaled by beta */
  const dw_tensor* bias;       /* optional (N) */
  const dw_tensor* residual;   /* optional, like d, added after the activation */
  float alpha;
  float beta;
  dw_activation activation;
  void* workspace;             /* as in dw_gemm_args */
  size_t workspace_size;
} dw_gemm_fp8_args;

/* D = act(alpha * (scale_a . A) (scale_b . B) + beta * C + bias) + residual; deepwell::gemm_fp8. */
DW_API dw_status dw_gemm_fp8(const dw_gemm_fp8_args* args, void* stream);
DW_API dw_status dw_gemm_fp8_workspace_size(const dw_gemm_fp8_args* args, size_t* bytes);

/* ------------------------------------------------------------- quantization */
/* Formats, scale rules and layouts: include/deepwell/quant.hpp and docs/formats.md. */

enum {
  DW_QUANT_FP8_TENSOR = 0,        /* f32 (1) scale */
  DW_QUANT_FP8_ROW = 1,           /* f32 (..., 1) */
  DW_QUANT_FP8_BLOCK_1X128 = 2,   /* f32 (..., ceil(K/128)) */
  DW_QUANT_FP8_BLOCK_128X128 = 3, /* f32 (..., ceil(R/128), ceil(K/128)) over the last two dims */
  DW_QUANT_MXFP8 = 4,             /* ue8m0 (..., K/32) */
  DW_QUANT_MXFP4 = 5,             /* ue8m0 (..., K/32), e2m1 elements */
  DW_QUANT_NVFP4 = 6              /* ue4m3 (..., K/16) + f32 (1) tensor scale, e2m1 elements */
};
enum { DW_SCALE_RULE_FLOOR = 0, DW_SCALE_RULE_RCEIL = 1 };

typedef struct dw_quantize_args {
  size_t struct_size;          /* sizeof(dw_quantize_args) */
  const dw_tensor* x;          /* f32, f16 or bf16 (..., K) */
  const dw_tensor* data;       /* like x; dtype E4M3/E5M2 (fp8 formats) or E2M1 */
  const dw_tensor* scales;
  const dw_tensor* tensor_scale; /* NVFP4: f32 (1); NULL otherwise */
  const dw_tensor* data_t;     /* optional transposed copy (K, R) of a 2-D x; FP8 formats: its
                                * rows may be padded (strides {ld, 1}, ld >= R; see quant.hpp) */
  const dw_tensor* scales_t;   /* its scales (NULL for DW_QUANT_FP8_TENSOR) */
  int32_t format;              /* DW_QUANT_* */
  int32_t rule;                /* DW_SCALE_RULE_*: MX formats only */
  int32_t pow2_scales;         /* FP32-scale formats: round scales up to powers of two */
  int32_t swizzle;             /* MX / NVFP4: scales in the 128x4 swizzled layout */
  /* Appended after the first release (read only when struct_size covers it). FP8_TENSOR and
   * NVFP4, optional: an f32 (1) amax known beforehand (delayed scaling); the scale comes from
   * |amax| and x is read once, elements above it saturating. NULL: x's own amax (two reads). */
  const dw_tensor* amax;
} dw_quantize_args;

DW_API dw_status dw_quantize(const dw_quantize_args* args, void* stream);

typedef struct dw_dequantize_args {
  size_t struct_size;          /* sizeof(dw_dequantize_args) */
  const dw_tensor* data;
  const dw_tensor* scales;
  const dw_tensor* tensor_scale; /* NVFP4 only */
  const dw_tensor* out;        /* f32, f16 or bf16, data's shape */
  int32_t format;
  int32_t swizzle;
} dw_dequantize_args;

DW_API dw_status dw_dequantize(const dw_dequantize_args* args, void* stream);

/* Shapes of dw_quantize's outputs for an input of shape x_shape[x_ndim], so that callers can
 * allocate them (transpose: also those of the transposed copy). */
typedef struct dw_quant_shapes {
  size_t struct_size;          /* sizeof(dw_quant_shapes) */
  int32_t data_ndim, scales_ndim, data_t_ndim, scales_t_ndim;
  int64_t data[8], scales[8], data_t[8], scales_t[8];
  dw_dtype scale_dtype;        /* DW_DTYPE_F32, _UE8M0 or _UE4M3 */
  int32_t has_tensor_scale;    /* NVFP4: an f32 (1) tensor scale */
} dw_quant_shapes;

DW_API dw_status dw_quantize_shapes(int32_t format, int32_t swizzle, int32_t transpose,
                                    const int64_t* x_shape, int32_t x_ndim, dw_quant_shapes* out);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* DEEPWELL_H_ */
