/* A small C program using deepwell's C ABI: attention over BHSD tensors (the seed's layout)
 * expressed through strides, on the CPU backend, with the error path shown too.
 * Build: part of the CMake project (target c_attention_example). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "deepwell/deepwell.h"

int main(void) {
  enum { B = 1, H = 2, S = 5, D = 8 };
  static float q[B * H * S * D], k[B * H * S * D], v[B * H * S * D], o[B * H * S * D];
  for (int i = 0; i < B * H * S * D; ++i) {
    q[i] = sinf((float)i);
    k[i] = cosf((float)i);
    v[i] = (float)(i % 7) - 3.0f;
  }
  /* Logical BSHD view (B, S, H, D) of BHSD memory: swap the seq and head strides. */
  const int64_t shape[4] = {B, S, H, D};
  const int64_t strides[4] = {H * S * D, D, S * D, 1};
  dw_tensor tq = {q, shape, strides, 4, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_tensor tk = {k, shape, strides, 4, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_tensor tv = {v, shape, strides, 4, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_tensor to = {o, shape, strides, 4, DW_DTYPE_F32, DW_DEVICE_CPU, 0};

  dw_attention_fwd_args args = {0};
  args.struct_size = sizeof args;
  args.q = &tq, args.k = &tk, args.v = &tv, args.out = &to;
  args.causal = 1;
  args.window_left = args.window_right = -1;
  args.max_seqlen_q = args.max_seqlen_k = -1;
  if (dw_attention_fwd(&args, NULL) != DW_STATUS_OK) {
    fprintf(stderr, "attention failed: %s\n", dw_last_error());
    return 1;
  }
  /* Causal row 0 sees only key 0, so o[b=0, h=0, s=0, :] equals v[b=0, h=0, s=0, :]. */
  for (int d = 0; d < D; ++d) {
    if (fabsf(o[d] - v[d]) > 1e-6f) {
      fprintf(stderr, "unexpected output at d=%d: %f vs %f\n", d, o[d], v[d]);
      return 1;
    }
  }
  printf("deepwell %s (ABI %d): causal attention over BHSD ok, o[0][0][1][0] = %f\n",
         dw_version(), dw_abi_version(), o[S * D * 0 + D]);

  /* Errors come back as codes plus a message naming the argument. */
  tk.dtype = DW_DTYPE_BF16;
  dw_status st = dw_attention_fwd(&args, NULL);
  printf("mismatched dtype -> status %d: %s\n", st, dw_last_error());
  return st == DW_STATUS_INVALID_DTYPE ? 0 : 1;
}
