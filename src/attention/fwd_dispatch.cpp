// CUDA dispatch of attention_forward: device checks, the instance for (dtype, head-dim bucket,
// tile), and split-KV (fwd_combine.hpp) when the call has too few tiles to fill the GPU.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "attention/fwd_combine.hpp"
#include "attention/fwd_sm90.hpp"
#include "attention/fwd_sm90_config.hpp"
#include "attention/problem.hpp"
#include "core/cuda_utils.hpp"

namespace deepwell::attention {
namespace {

constexpr std::string_view kOp = "attention_forward";
static_assert(sm90::kMaxSplits <= kMaxCombineSplits, "the combine kernel's split limit");

using RunFn = Status (*)(const Problem&, const Context&, const SplitPlan&);

// The compiled instance a problem runs on, with its tile's shape.
struct Instance {
  RunFn run = nullptr;
  int block_m = 0, block_n = 0, ctas_per_sm = 1;
  bool split_tail = false;  // compiled with the split tail (sm90::kSplitTail)
  RunFn dense = nullptr;    // the tile's DenseOnly twin, if compiled (dense_only_applies)
  RunFn fixed = nullptr;    // the tile's FixedLength twin, if compiled (fixed_length_applies)
};

template <class Tile>
Instance instance(RunFn run, RunFn dense = nullptr, RunFn fixed = nullptr) {
  return {run,   Tile::kBlockM, Tile::kBlockN, Tile::kCtasPerSm, sm90::kSplitTail<Tile>,
          dense, fixed};
}

// Whether a twin switch is on: DEEPWELL_ATTN_DENSE=0 keeps the calls sm90::dense_only_applies
// admits, DEEPWELL_ATTN_FIXED=0 those sm90::fixed_length_applies admits, on the general instance
// (tests, A/B). Read per call, so that a test can flip it between calls.
bool twins_enabled(const char* switch_name) {
  const char* env = std::getenv(switch_name);
  return env == nullptr || std::atoi(env) != 0;
}

// Keys per sequence for a tile choice that pays per sequence (the wide tile's ragged last block):
// a packed batch's average, so that one long sequence does not put many short ones on it.
long long keys_per_sequence(const Problem& p) {
  return p.varlen ? p.total_k / std::max<int64_t>(p.batch, 1) : p.seqlen_k;
}

Instance choose_instance(const Problem& p) {
  using namespace sm90;
  const bool bf16 = p.dtype == DType::kBF16;
  switch (head_dim_bucket(p.head_dim)) {
    case 64:
      if (p.seqlen_q <= kShortQueryTileMaxSeqlenQ ||
          (p.window_right >= 0 && p.seqlen_q <= kD64CausalShortTileMaxSeqlen &&
           p.seqlen_k <= kD64CausalShortTileMaxSeqlen)) {
        return instance<FwdTileD64CausalShort>(bf16 ? fwd_bf16_d64_causal_short
                                                    : fwd_f16_d64_causal_short);
      }
      if (p.window_right >= 0 && p.seqlen_q <= kD64CausalTileMaxSeqlenQ) {
        return instance<FwdTileD64Causal>(bf16 ? fwd_bf16_d64_causal : fwd_f16_d64_causal);
      }
      return instance<FwdTile<64>>(bf16 ? fwd_bf16_d64 : fwd_f16_d64,
                                   bf16 ? fwd_bf16_d64_dense : fwd_f16_d64_dense);
    case 128:
      if (p.seqlen_q <= kShortQueryTileMaxSeqlenQ) {
        return instance<FwdTileD128Short>(bf16 ? fwd_bf16_d128_short : fwd_f16_d128_short);
      }
      if (p.window_left < 0 && p.window_right < 0 &&
          keys_per_sequence(p) >= kD128WideTileMinSeqlenK) {
        return instance<FwdTileD128Wide>(bf16 ? fwd_bf16_d128_wide : fwd_f16_d128_wide);
      }
      if (!use_pingpong(128, p.seqlen_k)) {
        return instance<FwdTileD128Long>(bf16 ? fwd_bf16_d128_long : fwd_f16_d128_long,
                                         bf16 ? fwd_bf16_d128_long_dense : fwd_f16_d128_long_dense,
                                         bf16 ? fwd_bf16_d128_long_fixed : fwd_f16_d128_long_fixed);
      }
      return instance<FwdTile<128>>(bf16 ? fwd_bf16_d128 : fwd_f16_d128,
                                    bf16 ? fwd_bf16_d128_dense : fwd_f16_d128_dense,
                                    bf16 ? fwd_bf16_d128_fixed : fwd_f16_d128_fixed);
    case 256:
      if (p.seqlen_q <= kShortQueryTileMaxSeqlenQ) {
        return instance<FwdTileD256Short>(bf16 ? fwd_bf16_d256_short : fwd_f16_d256_short);
      }
      return instance<FwdTile<256>>(bf16 ? fwd_bf16_d256 : fwd_f16_d256, nullptr,
                                    bf16 ? fwd_bf16_d256_fixed : fwd_f16_d256_fixed);
    default: return {};
  }
}

Status unsupported_head_dim(const Problem& p) {
  return Status(StatusCode::kNotSupported,
                std::string(kOp) + ": head dim " + std::to_string(p.head_dim) +
                    " is not supported on CUDA (multiples of 8 up to 256)");
}

// Key ranges per tile (fwd_sm90_config.hpp, choose_splits); DEEPWELL_ATTN_SPLITS=<n> forces n
// (tests: every path of the split kernels on small problems).
int plan_splits(const Problem& p, const Instance& in, int sm_count) {
  const int64_t m_blocks = (p.seqlen_q + in.block_m - 1) / in.block_m;
  const int64_t key_blocks = (p.seqlen_k + in.block_n - 1) / in.block_n;
  if (const char* env = std::getenv("DEEPWELL_ATTN_SPLITS")) {
    const int forced = std::atoi(env);
    if (forced >= 1) return std::min(forced, sm90::kMaxSplits);
  }
  return sm90::choose_splits(m_blocks * p.heads_q * p.batch, sm_count, key_blocks);
}

// The split tail (fwd_sm90_config.hpp, choose_tail_splits) of a call without split-KV: fixed
// lengths and no mask, so that every tile runs the same key blocks, on an instance compiled with
// it (kSplitTail), on the persistent grid the launcher will use (sms x CTAs per SM,
// DEEPWELL_ATTN_MAX_GRID). DEEPWELL_ATTN_TAIL_SPLITS=<n> forces n ways wherever a tail is
// possible (0 or 1: none; tests and A/B timing).
SplitTail plan_tail(const Problem& p, const Instance& in, int sm_count) {
  SplitTail tail;
  if (!in.split_tail || p.varlen || p.window_left >= 0 || p.window_right >= 0) return tail;
  const int64_t tiles = (p.seqlen_q + in.block_m - 1) / in.block_m * p.heads_q * p.batch;
  const int64_t key_blocks = (p.seqlen_k + in.block_n - 1) / in.block_n;
  int64_t grid = std::min<int64_t>(tiles, int64_t{sm_count} * in.ctas_per_sm);
  if (const int cap = max_grid_override()) grid = std::min<int64_t>(grid, cap);
  if (grid <= 0 || tiles <= grid || tiles % grid == 0 || tiles >= (int64_t{1} << 31) ||
      key_blocks < 2) {
    return tail;
  }
  int splits = sm90::choose_tail_splits(tiles, grid, key_blocks, in.block_n);
  if (const char* env = std::getenv("DEEPWELL_ATTN_TAIL_SPLITS")) {
    splits = static_cast<int>(std::clamp<int64_t>(std::atoi(env), 1, key_blocks));
  }
  if (splits < 2) return tail;
  tail.tiles = static_cast<int>(tiles % grid);
  tail.first = static_cast<int>(tiles) - tail.tiles;
  tail.splits = splits;
  tail.warpgroups = in.block_m / 64;
  tail.head_dim = sm90::head_dim_bucket(p.head_dim);
  return tail;
}

// GQA / MQA decoding steps (one query row, no left window) run packed: the query heads of a K/V
// group become the rows of one tile over their shared K/V head, so every K/V block is read once
// per group instead of once per query head (FlashAttention-3's PackGQA). With one query row the
// packing is an affine view: row j of K/V head h is query head h * g + j, row stride = q's head
// stride, head stride = g times it; the same for out and lse. The row sees every key (a causal
// or right-window bound of one bottom-right aligned row excludes none), so the packed problem
// has no mask, which is what keeps its g rows, which the kernel would otherwise read as g query
// positions, exact. (H200, B=1 Sq=1 Sk=8k Hq=32 Hkv=8 d=128: 33.8 us unpacked, cuDNN 11.4;
// perf-notes attention item 48.)
Problem packed_for_decoding(const Problem& p) {
  const int64_t g = p.group();
  if (p.varlen || p.seqlen_q != 1 || g <= 1 || p.window_left >= 0) return p;
  Problem packed = p;
  packed.heads_q = p.heads_kv;
  packed.seqlen_q = g;
  packed.total_q = p.batch * g;
  packed.q_stride = {p.q_stride.batch, p.q_stride.head, g * p.q_stride.head, 1};
  packed.o_stride = {p.o_stride.batch, p.o_stride.head, g * p.o_stride.head, 1};
  packed.lse_row_stride = p.lse_head_stride;
  packed.lse_head_stride = g * p.lse_head_stride;
  packed.causal = false;
  packed.window_right = -1;
  return packed;
}

// What a call runs: the problem as the kernels see it (packed_for_decoding), its instance and its
// key ranges per tile. forward_cuda and forward_workspace_cuda both plan through here, so the size
// query always matches the call. The caller holds a DeviceGuard for the problem's device.
struct Plan {
  Problem problem;
  Instance instance;
  int splits = 1;
  SplitTail tail;  // only without split-KV
};

Status plan_call(const Problem& problem, Plan* plan) {
  DW_TRY(detail::require_sm90(kOp, problem.device.index));
  plan->problem = packed_for_decoding(problem);
  plan->instance = choose_instance(plan->problem);
  if (plan->instance.run == nullptr) return unsupported_head_dim(problem);
  const detail::DeviceInfo* info = nullptr;
  DW_TRY(detail::device_info(problem.device.index, &info));
  plan->splits = plan_splits(plan->problem, plan->instance, info->sm_count);
  if (plan->splits == 1) plan->tail = plan_tail(plan->problem, plan->instance, info->sm_count);
  const Problem& q = plan->problem;
  if (plan->instance.dense != nullptr && twins_enabled("DEEPWELL_ATTN_DENSE") &&
      sm90::dense_only_applies(q.varlen, q.window_left, q.window_right, q.seqlen_k,
                               plan->instance.block_n, plan->splits, plan->tail.tiles)) {
    plan->instance.run = plan->instance.dense;
  } else if (plan->instance.fixed != nullptr && twins_enabled("DEEPWELL_ATTN_FIXED") &&
             sm90::fixed_length_applies(q.varlen, q.window_right, q.seqlen_q,
                                        plan->instance.block_m, plan->instance.block_n,
                                        plan->splits, plan->tail.tiles)) {
    plan->instance.run = plan->instance.fixed;
  }
  return Status::Ok();
}

}  // namespace

Status forward_cuda(const Problem& problem, const Context& ctx) {
  detail::DeviceGuard guard(problem.device.index);
  DW_TRY(guard.status());
  Plan call;
  DW_TRY(plan_call(problem, &call));
  const Problem& p = call.problem;

  // Split-KV and the split tail need scratch: the caller's workspace when large enough, else its
  // allocator; with neither the call runs unsplit (slower, same results within rounding).
  const size_t bytes = call.splits > 1 ? split_workspace_bytes(p, call.splits) : call.tail.bytes();
  void* ws = nullptr;
  if (bytes > 0) {
    if (ctx.workspace != nullptr) {
      if (ctx.workspace_size >= bytes) ws = ctx.workspace;
    } else if (ctx.allocate_workspace != nullptr) {
      ws = ctx.allocate_workspace(bytes, ctx.allocator_user);
      if (ws == nullptr) {
        return Status(StatusCode::kOutOfMemory,
                      std::string(kOp) + ": the workspace allocator returned no memory (" +
                          std::to_string(bytes) + " bytes asked for " +
                          (call.splits > 1 ? "split-KV)" : "the split tail)"));
      }
    }
  }
  SplitPlan plan;
  if (ws != nullptr && call.splits > 1) plan = split_plan_in(p, call.splits, ws);
  if (ws != nullptr && call.tail.tiles > 0) {
    plan.tail = call.tail;
    plan.tail.carve(ws);
  }
  DW_TRY(call.instance.run(p, ctx, plan));
  if (plan.splits > 1) DW_TRY(combine_splits(p, plan, ctx.stream));
  return Status::Ok();
}

Status forward_workspace_cuda(const Problem& problem, size_t* bytes) {
  *bytes = 0;
  detail::DeviceGuard guard(problem.device.index);
  DW_TRY(guard.status());
  Plan call;
  DW_TRY(plan_call(problem, &call));
  *bytes = call.splits > 1 ? split_workspace_bytes(call.problem, call.splits) : call.tail.bytes();
  return Status::Ok();
}

}  // namespace deepwell::attention
