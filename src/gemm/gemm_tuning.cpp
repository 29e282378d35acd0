// The GEMM tuning cache and forced-kernel override (gemm_tuning.hpp).
#include "gemm/gemm_tuning.hpp"

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

namespace deepwell::matmul::sm90 {
namespace {

struct Entry {
  const KernelSpec* kernel = nullptr;
  Decomposition decomposition = Decomposition::kDataParallel;
  int32_t splits = 1, raster = 0, swizzle = 1;
};

using Key = std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>;

bool parse_decomposition(const std::string& s, Decomposition* d) {
  if (s == "dp") *d = Decomposition::kDataParallel;
  else if (s == "splitk") *d = Decomposition::kSplitK;
  else if (s == "streamk") *d = Decomposition::kStreamK;
  else return false;
  return true;
}

bool parse_raster(const std::string& s, int32_t* r) {
  if (s == "h") *r = 0;
  else if (s == "m") *r = 1;
  else if (s == "n") *r = 2;
  else return false;
  return true;
}

struct Overrides {
  std::map<Key, Entry> cache;
  bool forced = false;
  Entry force;
};

const Overrides& overrides() {
  static Overrides o;
  static std::once_flag once;
  std::call_once(once, [] {
    if (const char* path = std::getenv("DEEPWELL_GEMM_TUNING")) {
      std::ifstream in(path);
      std::string line;
      while (std::getline(in, line)) {
        if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
        std::istringstream ls(line);
        std::string group, kernel, decomposition, raster;
        int64_t m, n, k, batch;
        Entry e;
        if (!(ls >> group >> m >> n >> k >> batch >> kernel >> decomposition >> e.splits >> raster >>
              e.swizzle)) {
          continue;
        }
        e.kernel = find_kernel(kernel);
        if (e.kernel == nullptr || !parse_decomposition(decomposition, &e.decomposition) ||
            !parse_raster(raster, &e.raster)) {
          continue;
        }
        o.cache[Key{group, m, n, k, batch}] = e;
      }
    }
    if (const char* f = std::getenv("DEEPWELL_GEMM_FORCE")) {
      std::string spec(f);
      std::istringstream ss(spec);
      std::string field;
      int i = 0;
      bool ok = true;
      while (ok && std::getline(ss, field, ',')) {
        switch (i++) {
          case 0: o.force.kernel = find_kernel(field); ok = o.force.kernel != nullptr; break;
          case 1: ok = parse_decomposition(field, &o.force.decomposition); break;
          case 2: o.force.splits = std::atoi(field.c_str()); break;
          case 3: ok = parse_raster(field, &o.force.raster); break;
          case 4: o.force.swizzle = std::atoi(field.c_str()); break;
          default: break;
        }
      }
      o.forced = ok && o.force.kernel != nullptr;
    }
  });
  return o;
}

const char* operands_name(Operands ops) {
  switch (ops) {
    case Operands::kBF16: return "bf16";
    case Operands::kF16: return "f16";
    case Operands::kE4M3: return "e4m3";
    case Operands::kE4M3xE5M2: return "e4m3e5m2";
  }
  return "?";
}

const char* scaling_name(Scaling s) {
  switch (s) {
    case Scaling::kNone: return "none";
    case Scaling::kTensorRow: return "tensorrow";
    case Scaling::kBlock: return "block";
  }
  return "?";
}

}  // namespace

std::string group_name(Operands ops, DType out, bool a_k_major, bool b_k_major, Scaling scaling) {
  std::string s = operands_name(ops);
  s += ':';
  s += out == DType::kF32 ? "f32" : out == DType::kF16 ? "f16" : "bf16";
  s += ':';
  s += a_k_major ? 'k' : 'm';
  s += b_k_major ? 'k' : 'n';
  s += ':';
  s += scaling_name(scaling);
  return s;
}

bool tuned_plan(const std::string& group, int64_t m, int64_t n, int64_t k, int64_t batch,
                bool (*usable)(const KernelSpec&, const void*), const void* ctx, Plan* plan) {
  const Overrides& o = overrides();
  const Entry* e = nullptr;
  if (o.forced && usable(*o.force.kernel, ctx)) {
    e = &o.force;
  } else if (!o.cache.empty()) {
    auto it = o.cache.find(Key{group, m, n, k, batch});
    if (it != o.cache.end() && usable(*it->second.kernel, ctx)) e = &it->second;
  }
  if (e == nullptr) return false;
  plan->kernel = e->kernel;
  plan->decomposition = e->kernel->stream_k ? e->decomposition : Decomposition::kDataParallel;
  plan->splits = e->splits < 1 ? 1 : e->splits;
  plan->raster = e->raster;
  plan->swizzle = e->swizzle == 2 || e->swizzle == 4 || e->swizzle == 8 ? e->swizzle : 1;
  return true;
}

}  // namespace deepwell::matmul::sm90
