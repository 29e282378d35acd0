// The GEMM tuning cache and forced-kernel override (gemm_tuning.hpp).
#include "gemm/gemm_tuning.hpp"

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "deepwell/gemm.hpp"

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
  else if (s == "tail") *d = Decomposition::kSplitTail;
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

// A whole field as a decimal int (no sign, no trailing characters, no overflow).
bool parse_int(const std::string& s, int32_t* v) {
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, *v);
  return ec == std::errc() && ptr == end && !s.empty() && s[0] != '-';
}

// kernel[,dp|splitk|streamk|tail[,splits[,h|m|n[,swizzle]]]] (DEEPWELL_GEMM_FORCE's syntax).
// On failure returns false and, when `why` is given, says which field was wrong.
bool parse_force(const std::string& spec, Entry* out, std::string* why) {
  std::istringstream ss(spec);
  std::string field;
  Entry e;
  int i = 0;
  auto fail = [&](const std::string& what) {
    if (why != nullptr) *why = what;
    return false;
  };
  while (std::getline(ss, field, ',')) {
    switch (i++) {
      case 0:
        e.kernel = find_kernel(field);
        if (e.kernel == nullptr) return fail("no kernel named '" + field + "' in the table");
        break;
      case 1:
        if (!parse_decomposition(field, &e.decomposition)) {
          return fail("decomposition '" + field + "' is not dp, splitk, streamk or tail");
        }
        break;
      case 2:
        if (!parse_int(field, &e.splits) || e.splits < 1) {
          return fail("splits '" + field + "' is not a positive integer");
        }
        break;
      case 3:
        if (!parse_raster(field, &e.raster)) return fail("raster '" + field + "' is not h, m or n");
        break;
      case 4:
        if (!parse_int(field, &e.swizzle) ||
            (e.swizzle != 1 && e.swizzle != 2 && e.swizzle != 4 && e.swizzle != 8)) {
          return fail("swizzle '" + field + "' is not 1, 2, 4 or 8");
        }
        break;
      default:
        return fail("more than 5 comma-separated fields");
    }
  }
  if (e.kernel == nullptr) return fail("no kernel name");
  *out = e;
  return true;
}

// set_gemm_plan_override's plan: read under the mutex by calls once `set` is true.
struct RuntimeOverride {
  std::mutex mutex;
  std::atomic<bool> set{false};
  Entry entry;
};

RuntimeOverride& runtime_override() {
  static RuntimeOverride r;
  return r;
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
      o.forced = parse_force(f, &o.force, nullptr);
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
  Entry runtime;
  if (RuntimeOverride& r = runtime_override(); r.set.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(r.mutex);
    runtime = r.entry;
  }
  if (runtime.kernel != nullptr && usable(*runtime.kernel, ctx)) {
    e = &runtime;
  } else if (o.forced && usable(*o.force.kernel, ctx)) {
    e = &o.force;
  } else if (!o.cache.empty()) {
    auto it = o.cache.find(Key{group, m, n, k, batch});
    if (it != o.cache.end() && usable(*it->second.kernel, ctx)) e = &it->second;
  }
  if (e == nullptr) return false;
  plan->kernel = e->kernel;
  // A decomposition the kernel cannot run falls back to data-parallel: split-K and stream-K need
  // CUTLASS's stream-K scheduler, the split tail deepwell's own loop without a cluster.
  const bool own = e->kernel->schedule == Schedule::kFp8Promoted && e->kernel->cluster_m == 1;
  const bool tail = e->decomposition == Decomposition::kSplitTail;
  plan->decomposition = (tail ? own : e->kernel->stream_k) ? e->decomposition
                                                           : Decomposition::kDataParallel;
  plan->splits = e->splits < 1 ? 1 : e->splits;
  plan->raster = e->raster;
  plan->swizzle = e->swizzle == 2 || e->swizzle == 4 || e->swizzle == 8 ? e->swizzle : 1;
  return true;
}

}  // namespace deepwell::matmul::sm90

namespace deepwell {

Status set_gemm_plan_override(std::string_view spec) {
  using namespace matmul::sm90;
  RuntimeOverride& r = runtime_override();
  Entry e;
  if (!spec.empty()) {
    std::string why;
    if (!parse_force(std::string(spec), &e, &why)) {
      return Status(StatusCode::kInvalidArgument,
                    "set_gemm_plan_override: argument 'spec': expected kernel[,dp|splitk|"
                    "streamk|tail[,splits[,h|m|n[,swizzle]]]] naming a row of the kernel table, "
                    "got '" +
                        std::string(spec) + "' (" + why + ")");
    }
  }
  std::lock_guard<std::mutex> lock(r.mutex);
  r.entry = e;
  r.set.store(e.kernel != nullptr, std::memory_order_release);
  return Status::Ok();
}

}  // namespace deepwell
