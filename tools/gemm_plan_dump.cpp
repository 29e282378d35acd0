// Prints the GEMM plan (kernel, decomposition, splits) that choose_plan makes for every group of
// the compiled table over a fixed grid of shapes and SM counts, one line per case. Pure host code;
// tools/gemm-plan-diff builds it against two revisions of src/gemm/gemm_sm90_table.hpp and
// compares the outputs.
#include <cstdio>
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

}  // namespace

int main() {
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
              const Plan p = choose_plan(group, count, m, n, k, batch, sms);
              const std::string kernel = p.kernel ? std::string(p.kernel->name) : "-";
              std::printf("group=%s sms=%d m=%ld n=%ld k=%ld batch=%ld -> %s decomposition=%d "
                          "splits=%d\n",
                          name.c_str(), sms, m, n, k, batch, kernel.c_str(),
                          static_cast<int>(p.decomposition), p.splits);
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
