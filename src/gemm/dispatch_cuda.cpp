// CUDA dispatch of gemm and gemm_fp8 onto the sm_90a kernels of gemm_sm90_table.hpp:
//   1. the CUDA-only argument checks (dtypes, one unit stride per operand, 16-byte aligned pointers,
//      leading dimensions and batch strides), all before any CUDA call;
//   2. normalization into the kernels' orientation (D row-major: D^T = B^T A^T when D is
//      column-major), the choice of a kernel and of the transposed operand copies (workspace) that
//      the layouts without a kernel of their own need, and the epilogue's source operand;
//   3. the work decomposition (table rules or the tuning cache), then the launches.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/cuda_utils.hpp"
#include "core/validate.hpp"
#include "gemm/gemm_sm90_table.hpp"
#include "gemm/gemm_tuning.hpp"
#include "gemm/problem.hpp"
#include "gemm/sm90_helpers.hpp"

namespace deepwell::matmul {
namespace {

using detail::arg_error;
using sm90::Decomposition;
using sm90::KernelSpec;
using sm90::Operands;
using sm90::Plan;
using sm90::Scaling;

constexpr size_t kAlign = 256;  // workspace sub-buffer alignment
constexpr int64_t kMaxInt32 = 2147483647;

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
int elem_bytes(DType dt) { return dtype_bits(dt) / 8; }
std::string hex_misalignment(const void* p) {
  return "an address " + std::to_string(reinterpret_cast<uintptr_t>(p) % 16) +
         " bytes past a 16-byte boundary";
}

// A (rows, cols) operand per batch, with element strides; bs = 0: the same matrix for every batch.
struct Mat {
  const char* name = "";  // the caller's argument it comes from
  const void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t rows = 0, cols = 0, rs = 0, cs = 0, bs = 0;
};

Mat from(const char* name, const Matrix& x, int64_t rows, int64_t cols) {
  return {name, x.data, x.dtype, rows, cols, x.row_stride, x.col_stride, x.batch_stride};
}

Mat transposed(const Mat& x) {
  Mat t = x;
  t.rows = x.cols;
  t.cols = x.rows;
  t.rs = x.cs;
  t.cs = x.rs;
  return t;
}

// The layout the kernels read: unit stride along the columns (`row_major`) or the rows, and the
// other (leading) stride `ld`. A dimension of size 1 takes whichever unit stride `prefer_row` says.
struct Layout {
  bool row_major = true;
  int64_t ld = 0;
};

Status check_layout(std::string_view op, const Mat& x, bool prefer_row, Layout* out) {
  const int eb = elem_bytes(x.dtype);
  const int64_t align = 16 / eb;
  if (reinterpret_cast<uintptr_t>(x.data) % 16 != 0) {
    return arg_error(op, x.name, "a 16-byte aligned data pointer on CUDA",
                     hex_misalignment(x.data));
  }
  // Row-major: unit stride along the columns, leading stride rs (free when there is one row).
  const bool row_unit = x.cs == 1 || x.cols == 1;
  const bool col_unit = x.rs == 1 || x.rows == 1;
  const bool row_ok = row_unit && (x.rows <= 1 || x.rs % align == 0);
  const bool col_ok = col_unit && (x.cols <= 1 || x.cs % align == 0);
  if (!row_unit && !col_unit) {
    return arg_error(op, x.name, "one unit stride (a row- or column-major matrix) on CUDA",
                     "strides (" + std::to_string(x.rs) + ", " + std::to_string(x.cs) + ")");
  }
  if (!row_ok && !col_ok) {
    return arg_error(op, x.name,
                     "a leading-dimension stride that is a multiple of " + std::to_string(align) +
                         " elements (16 bytes) on CUDA",
                     "stride " + std::to_string(row_unit ? x.rs : x.cs));
  }
  out->row_major = row_ok && col_ok ? prefer_row : row_ok;
  const int64_t lines = out->row_major ? x.rows : x.cols;   // rows of a row-major matrix
  const int64_t length = out->row_major ? x.cols : x.rows;  // their length
  out->ld = lines <= 1 ? round_up(length, align)  // never used to address anything
                       : (out->row_major ? x.rs : x.cs);
  if (x.bs % align != 0) {
    return arg_error(op, x.name,
                     "a batch stride that is a multiple of " + std::to_string(align) +
                         " elements (16 bytes) on CUDA",
                     "batch stride " + std::to_string(x.bs));
  }
  if (out->ld * eb >= (int64_t{1} << 40) || x.bs * eb >= (int64_t{1} << 40)) {
    return arg_error(op, x.name, "strides below 2^40 bytes on CUDA", "larger strides");
  }
  return Status::Ok();
}

// A transposed copy of an operand in the workspace, made before the GEMM.
struct Copy {
  bool decode = false;  // an fp8 -> bf16 decode (`d`) rather than a transpose (`t`)
  bool mx = false;      // an MXFP8 recast onto block scales (`x`)
  sm90::Transpose t;
  sm90::DecodeFp8 d;
  sm90::MxToBlock x;
  size_t offset = 0, bytes = 0;
  // mx: where the block scales, row scales and exponents start, from `offset`
  size_t mx_block_at = 0, mx_rows_at = 0, mx_exps_at = 0;
};

// Everything one call needs, decided without touching the device.
struct Call {
  std::string_view op;
  Operands operands = Operands::kBF16;
  Scaling scaling = Scaling::kNone;
  DType out = DType::kBF16;
  bool a_k_major = true, b_k_major = true;  // after the copies below
  std::vector<const KernelSpec*> candidates;
  std::vector<Copy> copies;
  size_t copies_bytes = 0;
  sm90::Launch launch;     // kernel-oriented problem; pointers into the workspace are offsets
  int64_t loop_batches = 1;  // > 1: one launch per batch (a broadcast operand)
  int64_t a_batch = 0, b_batch = 0, d_batch = 0, s_batch = 0;  // per-launch pointer steps (bytes)
  // index into `copies` whose destination replaces the operand, or -1
  int a_copy = -1, b_copy = -1, sfa_copy = -1, sfb_copy = -1;
  // Block scaling: the copy of scale_a that the TMA-fed kernels need (M % 4 != 0, or other
  // strides) but the skinny kernel, which reads the caller's scales with ordinary loads, does not.
  // Added by plan() once the kernel is known; until then launch.sfa points at the caller's scales.
  bool sfa_copy_pending = false;
  sm90::Transpose sfa_transpose;
  bool post_residual = false;
  sm90::AddInPlace residual_pass;
  Plan plan;
  size_t kernel_workspace = 0;
};

size_t add_copy(Call* call, Copy c) {
  c.offset = call->copies_bytes;
  call->copies_bytes += round_up(static_cast<int64_t>(c.bytes), kAlign);
  call->copies.push_back(c);
  return call->copies.size() - 1;
}

size_t add_copy(Call* call, const sm90::Transpose& t, int64_t batches) {
  Copy c;
  c.t = t;
  c.bytes = static_cast<size_t>(batches * t.cols * t.dst_ld * t.elem_bytes);
  return add_copy(call, c);
}

// A bf16 K-major copy (rows, ld) of a (rows, k) fp8 kernel operand, MX scales applied when given
// (`scales` as (rows, ceil(K/32))).
int decode_copy(Call* call, const Mat& x, const Matrix* scales, int64_t batch) {
  Copy c;
  c.decode = true;
  sm90::DecodeFp8& d = c.d;
  d.src = x.data;
  d.e5m2 = x.dtype == DType::kE5M2;
  d.batch = x.bs == 0 ? 1 : batch;
  d.rows = x.rows;
  d.cols = x.cols;
  d.rs = x.rs;
  d.cs = x.cs;
  d.bs = x.bs;
  if (scales) {
    d.scales = scales->data;
    d.s_rs = scales->row_stride;
    d.s_cs = scales->col_stride;
  }
  d.ld = round_up(x.cols, 8);
  d.dst_bs = x.rows * d.ld;
  c.bytes = static_cast<size_t>(d.batch * d.dst_bs * 2);
  return static_cast<int>(add_copy(call, c));
}

// The MXFP8 e4m3 (rows, k) kernel operand recast for the block kernels (sm90::MxToBlock): e4m3
// data (rows, ld) and the block scales, and on the columns side (kernel B) the row scales and the
// exponents of step 1.
int mx_copy(Call* call, const Mat& x, const Matrix& scales, bool columns) {
  Copy c;
  c.mx = true;
  sm90::MxToBlock& m = c.x;
  m.src = x.data;
  m.rows = x.rows;
  m.cols = x.cols;
  m.rs = x.rs;
  m.scales = scales.data;
  m.s_rs = scales.row_stride;
  m.s_cs = scales.col_stride;
  m.columns = columns;
  m.ld = round_up(x.cols, 16);
  const int64_t kb128 = (x.cols + 127) / 128, nb = (x.rows + 127) / 128;
  m.block_ld = columns ? kb128 : round_up(x.rows, 4);
  c.mx_block_at = static_cast<size_t>(round_up(x.rows * m.ld, kAlign));
  const int64_t block_bytes = 4 * (columns ? nb * kb128 : kb128 * m.block_ld);
  c.mx_rows_at = c.mx_block_at + static_cast<size_t>(round_up(block_bytes, kAlign));
  c.mx_exps_at = c.mx_rows_at + (columns ? static_cast<size_t>(round_up(4 * x.rows, kAlign)) : 0);
  const int64_t kb32 = (x.cols + 31) / 32;
  c.bytes = c.mx_exps_at +
            (columns ? static_cast<size_t>(4 * (x.rows + nb * kb128 + x.rows * kb32)) : 0);
  return static_cast<int>(add_copy(call, c));
}

// Whether MXFP8 runs the exact bf16 path (decode, bf16 GEMM) where the block recast could run:
// DEEPWELL_MX_EXACT set to anything but "" or "0".
bool mx_exact_requested() {
  const char* e = std::getenv("DEEPWELL_MX_EXACT");
  return e != nullptr && *e != '\0' && std::string_view(e) != "0";
}

// Makes a (rows, k) kernel operand K-major in the workspace: dst (rows, ld) with ld a multiple of
// 16 bytes.
int k_major_copy(Call* call, const Mat& x, int64_t batch) {
  const int eb = elem_bytes(x.dtype);
  sm90::Transpose t;
  t.elem_bytes = eb;
  t.src = x.data;
  t.batch = x.bs == 0 ? 1 : batch;
  // src viewed as (k, rows): src(k, r) = x(r, k)
  t.rows = x.cols;
  t.cols = x.rows;
  t.src_row_stride = x.cs;
  t.src_col_stride = x.rs;
  t.src_batch_stride = x.bs;
  t.dst_ld = round_up(x.cols, 16 / eb);
  t.dst_batch_stride = x.rows * t.dst_ld;
  return static_cast<int>(add_copy(call, t, t.batch));
}

bool same(const Matrix& x, const Matrix& y) {
  return x.data == y.data && x.batch_stride == y.batch_stride && x.row_stride == y.row_stride &&
         x.col_stride == y.col_stride && x.dtype == y.dtype;
}

Operands operands_of(DType a, DType b) {
  if (a == DType::kBF16) return Operands::kBF16;
  if (a == DType::kF16) return Operands::kF16;
  return b == DType::kE5M2 ? Operands::kE4M3xE5M2 : Operands::kE4M3;
}

const char* dtype_list(Operands ops, Scaling scaling) {
  static thread_local std::string buf;
  buf.clear();
  for (const KernelSpec& k : sm90::kKernels) {
    if (k.operands != ops || k.scaling != scaling) continue;
    std::string n(dtype_name(k.out));
    if (buf.find(n) == std::string::npos) buf += (buf.empty() ? "" : " or ") + n;
  }
  return buf.c_str();
}

// Steps 1 and 2 of the file comment. `f` is null for the 16-bit gemm.
Status prepare(const Problem& p, const Fp8Problem* f, Call* call) {
  const std::string_view op = f ? "gemm_fp8" : "gemm";
  call->op = op;
  sm90::Launch& l = call->launch;

  // ---- element types
  if (!f && p.a.dtype != DType::kBF16 && p.a.dtype != DType::kF16) {
    return arg_error(op, "a", "bf16 or f16 operands on CUDA (f32 GEMMs run on CPU tensors)",
                     std::string(dtype_name(p.a.dtype)), StatusCode::kNotSupported);
  }
  if (p.k < 1) {
    return arg_error(op, "a", "K >= 1 on CUDA", "K = 0", StatusCode::kNotSupported);
  }
  if (p.m > kMaxInt32 || p.n > kMaxInt32 || p.k > kMaxInt32 || p.batch > kMaxInt32) {
    return arg_error(op, "a", "M, N, K and batch below 2^31 on CUDA", "a larger problem",
                     StatusCode::kNotSupported);
  }

  // ---- orientation: the kernels write a row-major D
  Layout dl;
  Mat d = from("d", p.d, p.m, p.n);
  DW_TRY(check_layout(op, d, true, &dl));
  const bool swap = !dl.row_major;
  Mat a = from("a", p.a, p.m, p.k);
  Mat bt = transposed(from("b", p.b, p.k, p.n));  // (N, K)
  Mat A = swap ? bt : a;                          // kernel A (M', K)
  Mat B = swap ? a : bt;                          // kernel B as (N', K)
  Mat D = swap ? transposed(d) : d;
  l.m = static_cast<int>(D.rows);
  l.n = static_cast<int>(D.cols);
  l.k = static_cast<int>(p.k);
  l.batch = static_cast<int>(p.batch);
  l.d = const_cast<void*>(D.data);
  l.ldd = dl.ld;
  l.batch_d = D.bs;

  // ---- types and scaling
  call->out = p.d.dtype;
  // fp8 calls without a native kernel run on the bf16 kernels: MXFP8 always (no sm_90 main loop
  // promotes every 32 of K), tensor scaling for other outputs or e5m2 first operands. Both
  // operands are decoded to bf16 in the workspace (exact: an fp8 mantissa, times a power of two,
  // fits bf16), the tensor scales go to the epilogue's alpha, and the products accumulate in fp32.
  // MXFP8 e4m3 x e4m3 with one batch and K-contiguous operands instead runs the block kernels
  // (fp8 tensor cores, one promotion per 128 of K) on a recast of both operands (sm90::MxToBlock:
  // sub-block scales folded into the data by powers of two; an element changes only where it is
  // below ~2^-14 of the largest magnitude in its row's 128-block of K (A) or in its column (B),
  // and then by at most ~2^-18 of that). DEEPWELL_MX_EXACT=1 keeps the exact bf16 path.
  bool mx_block = false;
  if (f && f->scaling == Fp8Scaling::kMx && A.dtype == DType::kE4M3 &&
      B.dtype == DType::kE4M3 && p.batch == 1 && (A.cs == 1 || A.cols <= 1) &&
      (B.cs == 1 || B.cols <= 1) && !mx_exact_requested()) {
    // (the own block kernels: CUTLASS's block epilogue has no column scales, so an f32 D,
    // which only CUTLASS's block kernel writes, keeps the exact path)
    for (const KernelSpec& k : sm90::kKernels) {
      mx_block |= k.operands == Operands::kE4M3 && k.scaling == Scaling::kBlock &&
                  k.out == p.d.dtype && k.schedule == sm90::Schedule::kFp8Promoted;
    }
  }
  bool emulate = false;
  if (f && f->scaling == Fp8Scaling::kMx) emulate = !mx_block;
  if (f && f->scaling == Fp8Scaling::kTensor) {
    bool native = false;
    for (const KernelSpec& k : sm90::kKernels) {
      native |= A.dtype == DType::kE4M3 && k.operands == operands_of(A.dtype, B.dtype) &&
                k.scaling == Scaling::kTensorRow && k.out == p.d.dtype;
    }
    emulate = !native;
  }
  if (emulate) {
    const bool mx = f->scaling == Fp8Scaling::kMx;
    // A' rows come from a (no swap) or b; each operand keeps its own scales.
    const Matrix* sa = mx ? (swap ? &f->scale_b : &f->scale_a) : nullptr;
    const Matrix* sb = mx ? (swap ? &f->scale_a : &f->scale_b) : nullptr;
    call->a_copy = decode_copy(call, A, sa, p.batch);
    call->b_copy = decode_copy(call, B, sb, p.batch);
    const sm90::DecodeFp8& da = call->copies[call->a_copy].d;
    const sm90::DecodeFp8& db = call->copies[call->b_copy].d;
    A.dtype = B.dtype = DType::kBF16;
    A.data = B.data = nullptr;  // set to the copies at run time
    A.rs = da.ld, A.cs = 1, A.bs = da.batch > 1 ? da.dst_bs : 0;
    B.rs = db.ld, B.cs = 1, B.bs = db.batch > 1 ? db.dst_bs : 0;
    if (!mx) {
      l.scale_a_tensor = static_cast<const float*>(f->scale_a.data);
      l.scale_b_tensor = static_cast<const float*>(f->scale_b.data);
      if (reinterpret_cast<uintptr_t>(f->scale_a.data) % 4 != 0 ||
          reinterpret_cast<uintptr_t>(f->scale_b.data) % 4 != 0) {
        return arg_error(op, "scale_a", "4-byte aligned scale pointers", "a misaligned pointer");
      }
    }
  } else if (mx_block) {
    // kernel A's rows take 1x128 scales, kernel B's 128x128 ones and the epilogue's scale_n
    call->a_copy = mx_copy(call, A, swap ? f->scale_b : f->scale_a, false);
    call->b_copy = mx_copy(call, B, swap ? f->scale_a : f->scale_b, true);
    A.rs = call->copies[call->a_copy].x.ld, A.cs = 1, A.bs = 0;
    B.rs = call->copies[call->b_copy].x.ld, B.cs = 1, B.bs = 0;
    A.data = B.data = nullptr;  // set to the copies at run time
    call->scaling = Scaling::kBlock;
    l.sfa_ld = round_up(l.m, 4);
    l.sfa_rs = 1;
    l.sfb_ld = (l.k + 127) / 128;
  } else if (f) {
    if (A.dtype != DType::kE4M3) {
      return arg_error(op, A.name,
                       swap ? "e4m3 for 'b' when 'd' is column-major on CUDA (e4m3 x e4m3 and "
                              "e4m3 x e5m2 are compiled; pass the e4m3 operand first)"
                            : "e4m3 for 'a' on CUDA (e4m3 x e4m3 and e4m3 x e5m2 are compiled; "
                              "swap the operands, e.g. with a column-major 'd')",
                       std::string(dtype_name(A.dtype)), StatusCode::kNotSupported);
    }
    call->scaling = f->scaling == Fp8Scaling::kBlock ? Scaling::kBlock : Scaling::kTensorRow;
    if (f->scaling == Fp8Scaling::kBlock && swap) {
      return arg_error(op, "d", "a row-major d (unit stride along N) for block scaling on CUDA",
                       "a column-major d", StatusCode::kNotSupported);
    }
  }
  call->operands = operands_of(A.dtype, B.dtype);
  for (const KernelSpec& k : sm90::kKernels) {
    if (k.operands == call->operands && k.scaling == call->scaling && k.out == call->out &&
        (!mx_block || k.schedule == sm90::Schedule::kFp8Promoted ||
         k.schedule == sm90::Schedule::kSkinny)) {
      call->candidates.push_back(&k);
    }
  }
  if (call->candidates.empty()) {
    const std::string outs = dtype_list(call->operands, call->scaling);
    if (outs.empty()) {
      return arg_error(op, B.name,
                       std::string("e4m3 for '") + B.name + "' with " +
                           (f ? std::string(fp8_scaling_name(f->scaling)) : std::string()) +
                           " scaling on CUDA (the compiled kernels are listed in "
                           "docs/perf-notes.md)",
                       std::string(dtype_name(B.dtype)), StatusCode::kNotSupported);
    }
    return arg_error(op, "d", "a " + outs + " output for these operands on CUDA",
                     std::string(dtype_name(p.d.dtype)), StatusCode::kNotSupported);
  }

  // ---- operand layouts (the decoded copies are K-major and aligned by construction)
  Layout al{true, A.rs}, bl{true, B.rs};
  if (!emulate && !mx_block) {
    DW_TRY(check_layout(op, A, true, &al));
    DW_TRY(check_layout(op, B, true, &bl));
  }
  l.a = A.data;
  l.lda = al.ld;
  l.batch_a = A.bs;
  l.b = B.data;
  l.ldb = bl.ld;
  l.batch_b = B.bs;
  call->a_k_major = true;
  if (!al.row_major) {  // A is M-major: every kernel reads a K-major A
    call->a_copy = k_major_copy(call, A, p.batch);
    const sm90::Transpose& t = call->copies[call->a_copy].t;
    l.lda = t.dst_ld;
    l.batch_a = t.batch > 1 ? t.dst_batch_stride : 0;
  }
  bool have_n_major_b = false;
  for (const KernelSpec* k : call->candidates) have_n_major_b |= !k->b_k_major;
  call->b_k_major = bl.row_major || !have_n_major_b;
  if (!bl.row_major && !have_n_major_b) {
    call->b_copy = k_major_copy(call, B, p.batch);
    const sm90::Transpose& t = call->copies[call->b_copy].t;
    l.ldb = t.dst_ld;
    l.batch_b = t.batch > 1 ? t.dst_batch_stride : 0;
  }
  std::vector<const KernelSpec*> fit;
  for (const KernelSpec* k : call->candidates) {
    if (k->a_k_major && k->b_k_major == call->b_k_major) fit.push_back(k);
  }
  call->candidates = fit;
  if (call->candidates.empty()) {
    return Status(StatusCode::kInternal, std::string(op) + ": no kernel for the normalized layout");
  }

  // ---- epilogue operands (in d's dtype and layout)
  auto source = [&](const Matrix* m) -> Status {
    Mat s = from(m == p.c ? "c" : "residual", *m, p.m, p.n);
    if (s.dtype != p.d.dtype) {
      return arg_error(op, s.name, "the dtype of 'd' (" + std::string(dtype_name(p.d.dtype)) +
                                       ") on CUDA",
                       std::string(dtype_name(s.dtype)), StatusCode::kNotSupported);
    }
    Layout sl;
    DW_TRY(check_layout(op, s, dl.row_major, &sl));
    if (sl.row_major != dl.row_major) {
      return arg_error(op, s.name,
                       std::string("the layout of 'd' (unit stride along ") +
                           (dl.row_major ? "N" : "M") + ") on CUDA",
                       std::string("unit stride along ") + (sl.row_major ? "N" : "M"));
    }
    return Status::Ok();
  };
  const Matrix* src = nullptr;
  if (p.c) DW_TRY(source(p.c));
  if (p.residual) DW_TRY(source(p.residual));
  const bool use_c = p.c != nullptr && p.beta != 0.0f;
  if (use_c) {
    src = p.c;
    l.beta = p.beta;
  }
  if (p.residual) {
    if (!use_c || same(*p.c, *p.residual)) {
      src = p.residual;
      l.gamma = 1.0f;
    } else {
      if (same(*p.residual, p.d)) {
        return arg_error(op, "residual",
                         "a tensor other than 'd' on CUDA when 'c' is a different tensor (the "
                         "epilogue reads one source; pass c = d or add the residual separately)",
                         "residual = d", StatusCode::kNotSupported);
      }
      call->post_residual = true;
      sm90::AddInPlace& r = call->residual_pass;
      r.dtype = p.d.dtype;
      r.d = p.d.data;
      r.r = p.residual->data;
      r.batch = p.batch;
      r.rows = p.m;
      r.cols = p.n;
      r.d_rs = p.d.row_stride;
      r.d_cs = p.d.col_stride;
      r.d_bs = p.d.batch_stride;
      r.r_rs = p.residual->row_stride;
      r.r_cs = p.residual->col_stride;
      r.r_bs = p.residual->batch_stride;
    }
  }
  if (src) {
    Mat s = from(src == p.c ? "c" : "residual", *src, p.m, p.n);
    if (swap) s = transposed(s);
    Layout sl;
    DW_TRY(check_layout(op, s, true, &sl));
    l.s = s.data;
    l.lds = sl.ld;
    l.batch_s = s.bs;
  }
  if (p.bias) {
    const int eb = elem_bytes(p.bias_dtype);
    if (p.bias_dtype != p.d.dtype) {
      return arg_error(op, "bias", "the dtype of 'd' (" + std::string(dtype_name(p.d.dtype)) +
                                       ") on CUDA",
                       std::string(dtype_name(p.bias_dtype)), StatusCode::kNotSupported);
    }
    if (p.n > 1 && p.bias_stride != 1) {
      return arg_error(op, "bias", "a contiguous vector (stride 1) on CUDA",
                       "stride " + std::to_string(p.bias_stride));
    }
    if (reinterpret_cast<uintptr_t>(p.bias) % eb != 0) {
      return arg_error(op, "bias", "an element-aligned data pointer", "a misaligned pointer");
    }
    (swap ? l.bias_m : l.bias_n) = p.bias;
  }
  l.alpha = p.alpha;
  l.activation = static_cast<int32_t>(p.activation);

  // ---- fp8 scales (native kernels)
  if (f && !emulate && !mx_block) {
    auto check_vector = [&](const char* name, const Matrix& s, int64_t len) -> Status {
      const int64_t stride = s.row_stride + s.col_stride;  // one of them is 0
      if (len > 1 && stride != 1) {
        return arg_error(op, name, "a contiguous vector of scales (stride 1) on CUDA",
                         "stride " + std::to_string(stride));
      }
      if (reinterpret_cast<uintptr_t>(s.data) % 4 != 0) {
        return arg_error(op, name, "a 4-byte aligned data pointer", "a misaligned pointer");
      }
      return Status::Ok();
    };
    switch (f->scaling) {
      case Fp8Scaling::kTensor:
        DW_TRY(check_vector("scale_a", f->scale_a, 1));
        DW_TRY(check_vector("scale_b", f->scale_b, 1));
        l.scale_a_tensor = static_cast<const float*>(f->scale_a.data);
        l.scale_b_tensor = static_cast<const float*>(f->scale_b.data);
        break;
      case Fp8Scaling::kRow:
        DW_TRY(check_vector("scale_a", f->scale_a, p.m));
        DW_TRY(check_vector("scale_b", f->scale_b, p.n));
        l.scale_m = static_cast<const float*>(swap ? f->scale_b.data : f->scale_a.data);
        l.scale_n = static_cast<const float*>(swap ? f->scale_a.data : f->scale_b.data);
        break;
      case Fp8Scaling::kBlock: {
        const int64_t kb = (p.k + 127) / 128, nb = (p.n + 127) / 128;
        // A scales: (M, kb), unit stride along M, 16-byte aligned columns (TMA reads columns of
        // M rounded up to 4, so a caller's buffer is used in place only when M % 4 == 0); other
        // layouts are copied, unless plan() picks the skinny kernel.
        const Matrix& sa = f->scale_a;
        const bool sa_ok = p.m % 4 == 0 && sa.row_stride == 1 &&
                           (kb == 1 || (sa.col_stride % 4 == 0 && sa.col_stride >= p.m)) &&
                           reinterpret_cast<uintptr_t>(sa.data) % 16 == 0;
        // The skinny kernel reads them in place with any strides (ordinary 4-byte loads).
        const bool sa_in_place = sa.row_stride >= 0 && sa.col_stride >= 0 &&
                                 reinterpret_cast<uintptr_t>(sa.data) % 4 == 0;
        if (sa_ok) {
          l.sfa = static_cast<const float*>(sa.data);
          l.sfa_ld = kb == 1 ? round_up(p.m, 4) : sa.col_stride;
        } else {
          sm90::Transpose t;
          t.elem_bytes = 4;
          t.src = sa.data;
          t.rows = p.m;
          t.cols = kb;
          t.src_row_stride = sa.row_stride;
          t.src_col_stride = sa.col_stride;
          t.dst_ld = round_up(p.m, 4);
          if (sa_in_place) {
            call->sfa_copy_pending = true;
            call->sfa_transpose = t;
            l.sfa = static_cast<const float*>(sa.data);
            l.sfa_ld = kb == 1 ? 0 : sa.col_stride;
            l.sfa_rs = p.m == 1 ? 0 : sa.row_stride;
          } else {
            call->sfa_copy = static_cast<int>(add_copy(call, t, 1));
            l.sfa_ld = t.dst_ld;
          }
        }
        // B scales: (nb, kb), unit stride along K.
        const Matrix& sb = f->scale_b;
        const bool sb_ok = (sb.col_stride == 1 || kb == 1) &&
                           reinterpret_cast<uintptr_t>(sb.data) % 4 == 0;
        if (sb_ok) {
          l.sfb = static_cast<const float*>(sb.data);
          l.sfb_ld = nb == 1 ? kb : sb.row_stride;
        } else {
          sm90::Transpose t;
          t.elem_bytes = 4;
          t.src = sb.data;
          t.rows = kb;  // src(kb, nb) = scale_b(nb, kb)
          t.cols = nb;
          t.src_row_stride = sb.col_stride;
          t.src_col_stride = sb.row_stride;
          t.dst_ld = kb;
          call->sfb_copy = static_cast<int>(add_copy(call, t, 1));
          l.sfb_ld = t.dst_ld;
        }
        if ((!call->sfa_copy_pending && l.sfa_ld > kMaxInt32) || l.sfb_ld > kMaxInt32) {
          return arg_error(op, "scale_a", "scale strides below 2^31 on CUDA", "larger strides",
                           StatusCode::kNotSupported);
        }
        break;
      }
      case Fp8Scaling::kMx: break;  // the bf16 kernels or the block recast (above)
    }
  }

  // ---- batches: fold a broadcast B into M, or launch once per batch
  if (p.batch > 1) {
    const bool a_bcast = l.batch_a == 0, b_bcast = l.batch_b == 0;
    const bool s_bcast = l.s != nullptr && l.batch_s == 0;
    // M-indexed vectors (scale_m, bias_m) and block scales cannot be folded over the batch.
    const bool per_row = l.scale_m != nullptr || l.bias_m != nullptr;
    if (b_bcast && !a_bcast && !s_bcast && call->a_copy < 0 && !per_row &&
        call->scaling != Scaling::kBlock &&
        l.batch_a == int64_t{l.m} * l.lda && l.batch_d == int64_t{l.m} * l.ldd &&
        (l.s == nullptr || l.batch_s == int64_t{l.m} * l.lds) &&
        int64_t{l.m} * p.batch <= kMaxInt32) {
      l.m = static_cast<int>(l.m * p.batch);
      l.batch = 1;
      l.batch_a = l.batch_d = l.batch_s = 0;
    } else if (a_bcast || b_bcast || s_bcast || call->scaling == Scaling::kBlock) {
      call->loop_batches = p.batch;
      call->a_batch = l.batch_a * elem_bytes(A.dtype);
      call->b_batch = l.batch_b * elem_bytes(B.dtype);
      call->d_batch = l.batch_d * elem_bytes(p.d.dtype);
      call->s_batch = l.batch_s * elem_bytes(p.d.dtype);
      l.batch = 1;
      l.batch_a = l.batch_b = l.batch_d = l.batch_s = 0;
    }
  }
  // A single batch still has a batch mode in the TMA descriptors: give it a non-zero stride that
  // is a multiple of 16 bytes (never used to address anything), as CUTLASS's packed strides do.
  if (l.batch == 1) {
    l.batch_a = l.lda;
    l.batch_b = l.ldb;
    l.batch_d = l.ldd;
    l.batch_s = l.lds;
  }
  return Status::Ok();
}

bool kernel_usable(const KernelSpec& k, const void* ctx) {
  const Call* call = static_cast<const Call*>(ctx);
  for (const KernelSpec* c : call->candidates) {
    if (c == &k) return true;
  }
  return false;
}

// Step 3: the plan and the kernel's workspace. With `workspace_size` too small for a split plan,
// falls back to data-parallel; `*needed` is what the preferred plan would use (copies included).
Status plan(Call* call, int sm_count, size_t workspace_size, size_t* needed) {
  sm90::Launch& l = call->launch;
  l.sm_count = sm_count;
  const std::string group = sm90::group_name(call->operands, call->out, call->a_k_major,
                                             call->b_k_major, call->scaling);
  Plan p;
  if (!sm90::tuned_plan(group, l.m, l.n, l.k, l.batch, &kernel_usable, call, &p)) {
    p = sm90::choose_plan(call->candidates.data(), call->candidates.size(), l.m, l.n, l.k,
                          l.batch, sm_count);
  }
  auto apply = [&](const Plan& q) {
    l.decomposition = q.decomposition;
    l.splits = q.splits;
    l.raster = q.raster;
    l.swizzle = q.swizzle;
  };
  apply(p);
  if (call->sfa_copy_pending) {
    call->sfa_copy_pending = false;
    if (p.kernel->schedule != sm90::Schedule::kSkinny) {
      call->sfa_copy = static_cast<int>(add_copy(call, call->sfa_transpose, 1));
      l.sfa = nullptr;  // the copy's destination, set by run()
      l.sfa_ld = call->sfa_transpose.dst_ld;
      l.sfa_rs = 1;
    }
  }
  size_t kw = p.kernel->workspace(l);
  *needed = call->copies_bytes + kw;
  if (call->copies_bytes + kw > workspace_size && p.decomposition != Decomposition::kDataParallel) {
    p.decomposition = Decomposition::kDataParallel;
    p.splits = 1;
    apply(p);
    kw = p.kernel->workspace(l);
  }
  call->plan = p;
  call->kernel_workspace = kw;
  return Status::Ok();
}

Status run(Call* call, const Context& ctx) {
  const std::string_view op = call->op;
  const size_t total = call->copies_bytes + call->kernel_workspace;
  if (total > ctx.workspace_size || (total > 0 && ctx.workspace == nullptr)) {
    return arg_error(op, "workspace",
                     "at least " + std::to_string(total) + " bytes for this call on CUDA (see " +
                         std::string(op) + "_workspace_size)",
                     std::to_string(ctx.workspace ? ctx.workspace_size : 0) + " bytes");
  }
  if (total > 0 && reinterpret_cast<uintptr_t>(ctx.workspace) % kAlign != 0) {
    return arg_error(op, "workspace", "a 256-byte aligned pointer", "a misaligned pointer");
  }
  auto* ws = static_cast<uint8_t*>(ctx.workspace);
  sm90::Launch& l = call->launch;
  const sm90::MxToBlock* mx_rows = nullptr;  // the MX recasts, launched after the loop: both
  const sm90::MxToBlock* mx_columns = nullptr;  // operands' converts go in one grid
  for (size_t i = 0; i < call->copies.size(); ++i) {
    Copy& c = call->copies[i];
    void* dst = ws + c.offset;
    if (c.decode) {
      c.d.dst = dst;
      DW_TRY(sm90::decode_fp8(c.d, ctx.stream));
    } else if (c.mx) {
      auto* base = static_cast<uint8_t*>(dst);
      c.x.dst = dst;
      c.x.block_scales = reinterpret_cast<float*>(base + c.mx_block_at);
      if (c.x.columns) {
        c.x.row_scales = reinterpret_cast<float*>(base + c.mx_rows_at);
        c.x.exps = reinterpret_cast<int32_t*>(base + c.mx_exps_at);
        l.sfb = c.x.block_scales;
        l.scale_n = c.x.row_scales;
      } else {
        l.sfa = c.x.block_scales;
      }
      (c.x.columns ? mx_columns : mx_rows) = &c.x;
    } else {
      c.t.dst = dst;
      DW_TRY(sm90::transpose(c.t, ctx.stream));
    }
    const int idx = static_cast<int>(i);
    if (idx == call->a_copy) l.a = dst;
    if (idx == call->b_copy) l.b = dst;
    if (idx == call->sfa_copy) l.sfa = static_cast<const float*>(dst);
    if (idx == call->sfb_copy) l.sfb = static_cast<const float*>(dst);
  }
  if (mx_rows || mx_columns) {  // the plan recasts both operands or neither (mx_copy)
    if (!mx_rows || !mx_columns) {
      return Status(StatusCode::kInternal, "gemm_fp8: MX recast planned for one operand only");
    }
    DW_TRY(sm90::mx_to_block(*mx_rows, *mx_columns, ctx.stream));
  }
  l.workspace = call->kernel_workspace ? ws + call->copies_bytes : nullptr;
  l.workspace_size = call->kernel_workspace;
  l.stream = ctx.stream;
  for (int64_t b = 0; b < call->loop_batches; ++b) {
    sm90::Launch lb = l;
    lb.a = static_cast<const uint8_t*>(l.a) + b * call->a_batch;
    lb.b = static_cast<const uint8_t*>(l.b) + b * call->b_batch;
    lb.d = static_cast<uint8_t*>(l.d) + b * call->d_batch;
    if (l.s) lb.s = static_cast<const uint8_t*>(l.s) + b * call->s_batch;
    DW_TRY(call->plan.kernel->launch(lb));
  }
  if (call->post_residual) DW_TRY(sm90::add_inplace(call->residual_pass, ctx.stream));
  return Status::Ok();
}

Status open_device(std::string_view op, const Problem& p, const detail::DeviceInfo** info) {
  DW_TRY(detail::require_sm90(op, p.device.index));
  return detail::device_info(p.device.index, info);
}

Status execute(const Problem& p, const Fp8Problem* f, const Context& ctx) {
  Call call;
  DW_TRY(prepare(p, f, &call));
  detail::DeviceGuard guard(p.device.index);
  DW_TRY(guard.status());
  const detail::DeviceInfo* info = nullptr;
  DW_TRY(open_device(call.op, p, &info));
  // With an allocator and no workspace, the preferred plan gets what it needs from the allocator:
  // one planning pass instead of a size query followed by the call.
  const bool allocate = ctx.workspace == nullptr && ctx.allocate_workspace != nullptr;
  size_t needed = 0;
  DW_TRY(plan(&call, info->sm_count, allocate ? SIZE_MAX : (ctx.workspace ? ctx.workspace_size : 0),
              &needed));
  if (!allocate || needed == 0) return run(&call, ctx);
  Context with_ws = ctx;
  with_ws.workspace = ctx.allocate_workspace(needed, ctx.allocator_user);
  if (with_ws.workspace == nullptr) {
    return Status(StatusCode::kOutOfMemory, std::string(call.op) + ": the workspace allocator "
                                                "returned no memory for " +
                                                std::to_string(needed) + " bytes");
  }
  with_ws.workspace_size = needed;
  return run(&call, with_ws);
}

Status workspace(const Problem& p, const Fp8Problem* f, size_t* bytes) {
  Call call;
  DW_TRY(prepare(p, f, &call));
  detail::DeviceGuard guard(p.device.index);
  DW_TRY(guard.status());
  const detail::DeviceInfo* info = nullptr;
  DW_TRY(open_device(call.op, p, &info));
  size_t needed = 0;
  DW_TRY(plan(&call, info->sm_count, SIZE_MAX, &needed));
  *bytes = needed;
  return Status::Ok();
}

}  // namespace

Status gemm_cuda(const Problem& p, const Context& ctx) { return execute(p, nullptr, ctx); }
Status gemm_fp8_cuda(const Fp8Problem& f, const Context& ctx) { return execute(f.p, &f, ctx); }
Status gemm_cuda_workspace(const Problem& p, size_t* bytes) { return workspace(p, nullptr, bytes); }
Status gemm_fp8_cuda_workspace(const Fp8Problem& f, size_t* bytes) {
  return workspace(f.p, &f, bytes);
}

}  // namespace deepwell::matmul
