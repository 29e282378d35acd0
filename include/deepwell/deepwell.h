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
} dw_attention_fwd_args;

DW_API dw_status dw_attention_fwd(const dw_attention_fwd_args* args, void* stream);

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
} dw_gemm_args;

/* D = act(alpha * A B + beta * C + bias) + residual */
DW_API dw_status dw_gemm(const dw_gemm_args* args, void* stream);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* DEEPWELL_H_ */
