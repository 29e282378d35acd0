// Prints the GEMM plan (kernel, decomposition, splits, raster, swizzle) that choose_plan makes for
// every group of the compiled table over a fixed grid of shapes and SM counts, one line per case.
// Pure host code; tools/gemm-plan-diff builds it against two revisions of
// src/gemm/gemm_sm90_table.hpp and compares the outputs.
//
// With arguments, prints the plans of the given shapes instead:
//   gemm_plan_dump GROUP SMS MxNxK[xBATCH] ...
//   e.g. gemm_plan_dump bf16.kk.bf16.none 132 16384x6144x4096
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gemm/gemm_sm90_table.hpp"

using namespace deepwell;
using namespace deepwell::matmul::sm90;

namespace {

// The table's rows without launch functions. Kept here, like same_group below, rather than shared
// with the table header: this file must also compile against older revisions of that header.
#define DW_DUMP_ROW(name, ops, out, ak, bk, sc, tm, tn, tk, cm, cn, sched, sk)                      \
  KernelSpec{#name, Operands::ops, DType::out, ak, bk, Scaling::sc, tm, tn, tk, cm, cn,             \
             Schedule::sched, sk, nullptr, nullptr},
constexpr KernelSpec kRows[] = {DW_SM90_GEMM_KERNELS(DW_DUMP_ROW)};
#undef DW_DUMP_ROW
constexpr size_t kRowCount = sizeof(kRows) / sizeof(kRows[0]);

bool same_group(const KernelSpec& x, const KernelSpec& y) {
  return x.operands == y.operands && x.out == y.out && x.a_k_major == y.a_k_major &&
         x.b_k_major == y.b_k_major && x.scaling == y.scaling;
}

// A group's name from its key (not from its first row, which a new row may displace), e.g.
// "bf16.kk.bf16.none": operands, layouts, output, scaling.
std::string group_name(const KernelSpec& k) {
  static const char* const kOperands[] = {"bf16", "f16", "e4m3", "e4m3xe5m2"};
  static const char* const kScaling[] = {"none", "tensor_row", "block"};
  const char* out = k.out == DType::kF32 ? "f32" : k.out == DType::kF16 ? "f16" : "bf16";
  return std::string(kOperands[static_cast<int>(k.operands)]) + "." + (k.a_k_major ? "k" : "m") +
         (k.b_k_major ? "k" : "n") + "." + out + "." + kScaling[static_cast<int>(k.scaling)];
}

void print_plan(const std::string& name, const KernelSpec* const* group, size_t count, int sms,
                long m, long n, long k, long batch) {
  const Plan p = choose_plan(group, count, m, n, k, batch, sms);
  const std::string kernel = p.kernel ? std::string(p.kernel->name) : "-";
  std::printf("group=%s sms=%d m=%ld n=%ld k=%ld batch=%ld -> %s decomposition=%d splits=%d "
              "raster=%d swizzle=%d\n",
              name.c_str(), sms, m, n, k, batch, kernel.c_str(), static_cast<int>(p.decomposition),
              p.splits, p.raster, p.swizzle);
}

// The plans of the shapes named on the command line (see the top of the file).
int dump_shapes(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: gemm_plan_dump [GROUP SMS MxNxK[xBATCH] ...]\n");
    return 2;
  }
  const std::string wanted = argv[1];
  const int sms = std::atoi(argv[2]);
  const KernelSpec* group[kRowCount];
  size_t count = 0;
  for (size_t h = 0; h < kRowCount; ++h) {
    if (group_name(kRows[h]) == wanted) group[count++] = &kRows[h];
  }
  if (count == 0 || sms <= 0) {
    std::fprintf(stderr,
                 "gemm_plan_dump: no group '%s' in the table, or SMS '%s' is not positive\n",
                 argv[1], argv[2]);
    return 2;
  }
  for (int i = 3; i < argc; ++i) {
    long m = 0, n = 0, k = 0, batch = 1;
    if (std::sscanf(argv[i], "%ldx%ldx%ldx%ld", &m, &n, &k, &batch) < 3 || m < 1 || n < 1 ||
        k < 1 || batch < 1) {
      std::fprintf(stderr, "gemm_plan_dump: shape '%s' is not MxNxK[xBATCH]\n", argv[i]);
      return 2;
    }
    print_plan(wanted, group, count, sms, m, n, k, batch);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) return dump_shapes(argc, argv);
  long cases = 0;
  for (size_t g = 0; g < kRowCount; ++g) {
    bool first = true;  // g is the first row of its group
    for (size_t h = 0; h < g; ++h) first = first && !same_group(kRows[h], kRows[g]);
    if (!first) continue;
    const KernelSpec* group[kRowCount];
    size_t count = 0;
    for (size_t h = 0; h < kRowCount; ++h) {
      if (same_group(kRows[h], kRows[g])) group[count++] = &kRows[h];
    }
    const std::string name = group_name(kRows[g]);
    for (int sms : {132, 114, 78}) {
      for (long m = 1; m <= 20000; m = m < 300 ? m + 1 : m * 5 / 4 + 7) {
        for (long n : {1L, 7L, 64L, 96L, 160L, 1000L, 2048L, 4096L, 4097L, 5120L, 6144L, 7168L,
                       8192L, 10240L, 14336L, 28672L, 57344L}) {
          for (long k : {16L, 1000L, 4096L, 8192L, 14336L, 16384L, 28672L}) {
            for (long batch : {1L, 3L}) {
              print_plan(name, group, count, sms, m, n, k, batch);
              ++cases;
            }
          }
        }
      }
    }
  }
  std::fprintf(stderr, "%ld cases\n", cases);
  return 0;
}
