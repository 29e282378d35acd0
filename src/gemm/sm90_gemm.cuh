// sm_90a GEMM kernels assembled from CUTLASS 3.x collectives: a TMA warp-specialized main loop
// (cooperative or ping-pong; fp8 with two-level accumulation or with 1x128 / 128x128 block scales
// promoted in the main loop) and a TMA epilogue whose fusion is one epilogue visitor tree (EVT):
//
//   D = gamma * S + act(beta * S + alpha * scale * acc + bias_n[n] + bias_m[m])
//
// with every operand chosen at run time: S (the source, serving as C and/or the residual) is loaded
// only when beta or gamma is non-zero, the bias vectors and fp8 scale vectors may be null (0 resp.
// 1), and the activation is a run-time switch (relu, gelu_erf, gelu_tanh, silu).
// So one compiled instance serves every epilogue of a (types, layouts, tile) configuration.
//
// Include only from gemm_inst_*.cu files; each instantiates one configuration with
// DW_SM90_GEMM_INSTANCE (bottom of this file).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <type_traits>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/detail/blockwise_scale_layout.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/sm90_visitor_tma_warpspecialized.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/kernel/tile_scheduler.hpp"
#include "deepwell/gemm.hpp"
#include "gemm/gemm_sm90_table.hpp"
#include "gemm/sm90_launch.hpp"

namespace deepwell::matmul::sm90 {

using namespace cute;

// ------------------------------------------------------------------------------ run-time activation

struct ActivationArgs {
  int32_t kind = 0;  // deepwell::Activation
};

// The activations run inline, element by element, on MUFU approximations: tanh.approx for
// gelu_tanh (what CUTLASS's GELU_taylor uses; max relative error ~2^-11, below bf16's half ulp)
// and ex2.approx for silu. Until session 6 they ran in one out-of-line function per fragment to
// save compile time; at 8192x4096x4096 that call (fragments through a 128-byte stack frame) made
// bias + gelu_tanh 11% slower than the plain GEMM and silu 21% slower, while the inlined
// gelu_tanh is 3% slower (docs/perf-notes.md, GEMM log). erf has no MUFU form: its CUDA
// implementation stays out of line (a rarer activation, and the longest code).
__device__ __forceinline__ float gelu_tanh(float x) {
  constexpr float k0 = 0.7978845608028654f;             // sqrt(2 / pi)
  constexpr float k1 = 0.7978845608028654f * 0.044715f;
  float t;
  asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(x * fmaf(k1 * x, x, k0)));
  return 0.5f * fmaf(x, t, x);
}

// x * sigmoid(x) = x / (1 + e^-x). __fdividef returns 0 once the denominator passes 2^126
// (x < -87), which is silu's limit there; __expf is ex2.approx on x * log2(e).
__device__ __forceinline__ float silu(float x) { return __fdividef(x, 1.0f + __expf(-x)); }

static __device__ __noinline__ float gelu_erf(float x) {  // static: one copy per instance file
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

// Sm90Compute reads the Arguments type off the scalar instantiation and calls the fragment one,
// with the node's Arguments as its last argument. The switch is uniform over the whole grid.
template <class T>
struct RuntimeActivation {
  using Arguments = ActivationArgs;
};

template <int N>
struct RuntimeActivation<cutlass::Array<float, N>> {
  using Arguments = ActivationArgs;
  using Frag = cutlass::Array<float, N>;
  CUTLASS_DEVICE Frag operator()(Frag const& x, Arguments const& args) const {
    Frag y;
    switch (static_cast<Activation>(args.kind)) {
      case Activation::kReLU:
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < N; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];  // NaN stays NaN, as in torch
        break;
      case Activation::kGeluErf:
        for (int i = 0; i < N; ++i) y[i] = gelu_erf(x[i]);  // not unrolled: one call site
        break;
      case Activation::kGeluTanh:
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < N; ++i) y[i] = gelu_tanh(x[i]);
        break;
      case Activation::kSiLU:
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < N; ++i) y[i] = silu(x[i]);
        break;
      default: y = x; break;  // Activation::kNone
    }
    return y;
  }
};

// ---------------------------------------------------------------------------------- epilogue tree

template <class ElementD, class TileShape, bool kFp8Scales>
struct EpilogueTree {
  static constexpr auto RN = cutlass::FloatRoundStyle::round_to_nearest;
  template <class Op, class... Children>
  using EVT = cutlass::epilogue::fusion::Sm90EVT<Op, Children...>;
  template <template <class> class Fn, class Out = float>
  using Compute = cutlass::epilogue::fusion::Sm90Compute<Fn, Out, float, RN>;
  using Scalar = cutlass::epilogue::fusion::Sm90ScalarBroadcast<float>;
  // alpha * scale_a_tensor * scale_b_tensor (null pointers count as 1)
  using Alpha = cutlass::epilogue::fusion::Sm90ScalarBroadcast<float, Stride<_0, _0, _0>, 3>;
  using Src = cutlass::epilogue::fusion::Sm90SrcFetch<ElementD>;
  using Acc = cutlass::epilogue::fusion::Sm90AccFetch;
  template <class E>
  using PerN = cutlass::epilogue::fusion::Sm90RowBroadcast<0, TileShape, E, float, Stride<_0, _1, _0>>;
  // Scalar loads (alignment 1): the vector along M may have any length and alignment.
  template <class E>
  using PerM = cutlass::epilogue::fusion::Sm90ColBroadcast<0, TileShape, E, float, Stride<_1, _0, _0>, 1>;

  // acc * scale_m[m] * scale_n[n] (fp8 row/column scales)
  using ScaledAcc = std::conditional_t<kFp8Scales,
      EVT<Compute<cutlass::multiplies>, PerM<float>, EVT<Compute<cutlass::multiplies>, PerN<float>, Acc>>,
      Acc>;
  using AlphaAccBias = EVT<Compute<cutlass::homogeneous_multiply_add>, Alpha, ScaledAcc, PerN<ElementD>>;
  using WithBiasM = EVT<Compute<cutlass::plus>, PerM<ElementD>, AlphaAccBias>;
  // beta * S + ... (CUTLASS's specialization skips the S load when the scalar is zero)
  using LinComb = EVT<Compute<cutlass::homogeneous_multiply_add>, Scalar, Src, WithBiasM>;
  using Act = EVT<Compute<RuntimeActivation>, LinComb>;
  using Root = EVT<Compute<cutlass::homogeneous_multiply_add, ElementD>, Scalar, Src, Act>;

  static typename Root::Arguments arguments(const Launch& l) {
    auto scaled_acc = [&] {
      if constexpr (kFp8Scales) {
        return typename ScaledAcc::Arguments{
            {l.scale_m, 1.0f, {}},
            {{l.scale_n, 1.0f, {}}, {}, {}},
            {}};
      } else {
        return typename ScaledAcc::Arguments{};
      }
    }();
    using EB = ElementD;
    return typename Root::Arguments{
        {{l.gamma}, {nullptr}, {}},  // gamma
        {},                          // S
        {                            // act(...)
         {                           // beta * S + ...
          {{l.beta}, {nullptr}, {}},
          {},
          {                          // bias_m + ...
           {static_cast<const EB*>(l.bias_m), EB(0), {}},
           {                         // alpha * scaled acc + bias_n
            {{l.alpha, 1.0f, 1.0f}, {nullptr, l.scale_a_tensor, l.scale_b_tensor}, {}},
            scaled_acc,
            {static_cast<const EB*>(l.bias_n), EB(0), {}},
            {}},
           {}},
          {}},
         ActivationArgs{l.activation}},
        {}};
  }
};

// ------------------------------------------------------------------------------------ the kernel

enum class MainloopKind { kCooperative, kPingpong, kFp8BlockScaled };

template <class ElementA_, class ElementB_, bool kAKMajor, bool kBKMajor, class ElementD_,
          class TileShape_, class ClusterShape_, MainloopKind kMainloop, bool kStreamK>
struct Sm90Gemm {
  using ElementA = ElementA_;
  using ElementB = ElementB_;
  using ElementD = ElementD_;
  using TileShape = TileShape_;
  using ClusterShape = ClusterShape_;
  static constexpr bool kFp8 = sizeof_bits_v<ElementA> == 8;
  static constexpr bool kBlockScaled = kMainloop == MainloopKind::kFp8BlockScaled;

  // Does this configuration implement the kernel table's row `k`?
  static constexpr bool matches(const KernelSpec& k) {
    constexpr Operands ops =
        std::is_same_v<ElementA, cutlass::bfloat16_t> ? Operands::kBF16
        : std::is_same_v<ElementA, cutlass::half_t>   ? Operands::kF16
        : std::is_same_v<ElementB, cutlass::float_e5m2_t> ? Operands::kE4M3xE5M2
                                                          : Operands::kE4M3;
    constexpr DType out = std::is_same_v<ElementD, float>           ? DType::kF32
                          : std::is_same_v<ElementD, cutlass::half_t> ? DType::kF16
                                                                      : DType::kBF16;
    constexpr Scaling scaling = !kFp8 ? Scaling::kNone
                                : kBlockScaled ? Scaling::kBlock
                                               : Scaling::kTensorRow;
    constexpr Schedule schedule =
        kMainloop == MainloopKind::kPingpong ? Schedule::kPingpong : Schedule::kCooperative;
    return k.operands == ops && k.out == out && k.a_k_major == kAKMajor &&
           k.b_k_major == kBKMajor && k.scaling == scaling &&
           k.tile_m == size<0>(TileShape{}) && k.tile_n == size<1>(TileShape{}) &&
           k.tile_k == size<2>(TileShape{}) && k.cluster_m == size<0>(ClusterShape{}) &&
           k.cluster_n == size<1>(ClusterShape{}) && k.schedule == schedule &&
           k.stream_k == kStreamK;
  }

  using LayoutA = std::conditional_t<kAKMajor, cutlass::layout::RowMajor, cutlass::layout::ColumnMajor>;
  using LayoutB = std::conditional_t<kBKMajor, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  using LayoutD = cutlass::layout::RowMajor;
  static constexpr int kAlignA = 128 / sizeof_bits_v<ElementA>;
  static constexpr int kAlignB = 128 / sizeof_bits_v<ElementB>;
  static constexpr int kAlignD = 128 / sizeof_bits_v<ElementD>;

  using MainloopSchedule = std::conditional_t<
      kMainloop == MainloopKind::kPingpong, cutlass::gemm::KernelTmaWarpSpecializedPingpong,
      std::conditional_t<kBlockScaled, cutlass::gemm::KernelTmaWarpSpecializedCooperativeFP8BlockScaledAccum,
                         cutlass::gemm::KernelTmaWarpSpecializedCooperative>>;
  using EpilogueSchedule = std::conditional_t<kMainloop == MainloopKind::kPingpong,
                                              cutlass::epilogue::TmaWarpSpecialized,
                                              cutlass::epilogue::TmaWarpSpecializedCooperative>;
  using TileScheduler =
      std::conditional_t<kStreamK, cutlass::gemm::StreamKScheduler, cutlass::gemm::PersistentScheduler>;

  // fp8 kernels get the row/column scale vectors; 16-bit kernels do not need them.
  using Tree = EpilogueTree<ElementD, TileShape, kFp8 && !kBlockScaled>;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float,
      ElementD, LayoutD, kAlignD, ElementD, LayoutD, kAlignD, EpilogueSchedule,
      typename Tree::Root>::CollectiveOp;

  // 1x128 blocks for A (one scale per row and 128 of K, unit stride along M), 128x128 for B (unit
  // stride along K).
  using ScaleConfig = cutlass::detail::Sm90BlockwiseScaleConfig<1, 128, 128, cute::GMMA::Major::MN,
                                                                cute::GMMA::Major::K>;
  using LayoutSFA = decltype(ScaleConfig::deduce_layoutSFA());
  using LayoutSFB = decltype(ScaleConfig::deduce_layoutSFB());
  using MainloopLayoutA = std::conditional_t<kBlockScaled, cute::tuple<LayoutA, LayoutSFA>, LayoutA>;
  using MainloopLayoutB = std::conditional_t<kBlockScaled, cute::tuple<LayoutB, LayoutSFB>, LayoutB>;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, MainloopLayoutA, kAlignA,
      ElementB, MainloopLayoutB, kAlignB, float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                      CollectiveEpilogue, TileScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using Arguments = typename Gemm::Arguments;

  // Once per device: raise the kernel's dynamic shared-memory limit and ask how many clusters can
  // be resident at once (CUTLASS sizes the persistent grid by it; without it the grid assumes every
  // SM takes a CTA, and a cluster that does not fit waits for a whole tile's time). Returns that
  // count (0 when the query fails: CUTLASS then sizes the grid by the SM count), or -1 when the
  // shared-memory attribute could not be set.
  static int device_setup(int device) {
    constexpr int kMaxDevices = 64;
    static std::atomic<int> cache[kMaxDevices] = {};  // 0: not yet; else clusters + 2
    if (device < 0 || device >= kMaxDevices) return 0;
    int v = cache[device].load(std::memory_order_acquire);
    if (v != 0) return v - 2;
    int result = 0;
    constexpr int smem = Kernel::SharedStorageSize;
    if (smem >= (48 << 10) &&
        cudaFuncSetAttribute(cutlass::device_kernel<Kernel>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
      cudaGetLastError();
      result = -1;
    } else {
      result = cutlass::KernelHardwareInfo::query_device_max_active_clusters<Kernel>();
      if (result <= 0) {
        cudaGetLastError();  // a failed query only costs the hint
        result = 0;
      }
    }
    // Racing threads compute the same values; the attribute call is idempotent.
    cache[device].store(result + 2, std::memory_order_release);
    return result;
  }

  static Arguments arguments(const Launch& l, int device) {
    using StrideA = typename Kernel::StrideA;
    using StrideB = typename Kernel::StrideB;
    using StrideD = typename Kernel::StrideD;
    StrideA da;
    if constexpr (kAKMajor) {
      da = make_stride(l.lda, _1{}, l.batch_a);
    } else {
      da = make_stride(_1{}, l.lda, l.batch_a);
    }
    StrideB db;
    if constexpr (kBKMajor) {
      db = make_stride(l.ldb, _1{}, l.batch_b);
    } else {
      db = make_stride(_1{}, l.ldb, l.batch_b);
    }
    StrideD dd = make_stride(l.ldd, _1{}, l.batch_d);
    // Without a source, S points at D (valid memory for the TMA descriptor, never read).
    const bool has_s = l.s != nullptr;
    StrideD ds = has_s ? make_stride(l.lds, _1{}, l.batch_s) : dd;
    const auto* src = static_cast<const ElementD*>(has_s ? l.s : l.d);

    Arguments args{};
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = make_shape(l.m, l.n, l.k, l.batch);
    if constexpr (kBlockScaled) {
      // The A scales are read by TMA in columns of M rounded up to 4 (16 bytes); the dispatcher
      // guarantees the buffer holds them (sfa_ld >= that), rows past M only scale rows of A that
      // TMA fills with zeros and the epilogue never stores.
      const int m4 = (l.m + 3) / 4 * 4;
      LayoutSFA lsfa = ScaleConfig::tile_atom_to_shape_SFA(make_shape(m4, l.n, l.k, l.batch));
      LayoutSFB lsfb = ScaleConfig::tile_atom_to_shape_SFB(make_shape(l.m, l.n, l.k, l.batch));
      // The caller's leading dimensions (padded for 16-byte TMA rows of the A scales).
      get<1, 1>(lsfa.stride()) = static_cast<int32_t>(l.sfa_ld);
      get<0, 1>(lsfb.stride()) = static_cast<int32_t>(l.sfb_ld);
      args.mainloop = {static_cast<const ElementA*>(l.a), da, static_cast<const ElementB*>(l.b), db,
                       l.sfa, lsfa, l.sfb, lsfb};
    } else {
      args.mainloop = {static_cast<const ElementA*>(l.a), da, static_cast<const ElementB*>(l.b), db};
    }
    args.epilogue = {Tree::arguments(l), src, ds, static_cast<ElementD*>(l.d), dd};
    args.hw_info.device_id = device;
    args.hw_info.sm_count = l.sm_count;
    args.hw_info.max_active_clusters = std::max(device_setup(device), 0);
    using Raster = cutlass::gemm::kernel::detail::RasterOrderOptions;
    args.scheduler.max_swizzle_size = l.swizzle;
    args.scheduler.raster_order = l.raster == 1   ? Raster::AlongM
                                  : l.raster == 2 ? Raster::AlongN
                                                  : Raster::Heuristic;
    if constexpr (kStreamK) {
      using Mode = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90StreamKParams::DecompositionMode;
      switch (l.decomposition) {
        case Decomposition::kDataParallel: args.scheduler.decomposition_mode = Mode::DataParallel; break;
        case Decomposition::kSplitK:
          args.scheduler.decomposition_mode = Mode::SplitK;
          args.scheduler.splits = l.splits;
          break;
        case Decomposition::kStreamK: args.scheduler.decomposition_mode = Mode::StreamK; break;
      }
    }
    return args;
  }

  static Status error(const char* what, cutlass::Status st) {
    return Status(StatusCode::kInternal, std::string("gemm: CUTLASS ") + what + " failed: " +
                                             cutlassGetStatusString(st));
  }

  static int current_device() {
    int device = 0;
    cudaGetDevice(&device);
    return device;
  }

  static size_t workspace(const Launch& l) {
    return Gemm::get_workspace_size(arguments(l, current_device()));
  }

  // GemmUniversalAdapter::initialize + run without their per-call cudaFuncSetAttribute calls (two
  // per launch: the shared-memory limit and, in ClusterLauncher, the non-portable cluster flag,
  // which no cluster of <= 8 CTAs needs): the attribute is set once per device (device_setup).
  static Status launch(const Launch& l) {
    const int device = current_device();
    if (device_setup(device) < 0) {
      return Status(StatusCode::kCudaError,
                    "gemm: could not raise the kernel's shared-memory limit on device " +
                        std::to_string(device));
    }
    Arguments args = arguments(l, device);
    cudaStream_t stream = static_cast<cudaStream_t>(l.stream);
    // Not Gemm::can_implement: its TMA checks ask for M, N, K themselves to be multiples of 16
    // bytes, as if every operand were packed. TMA needs only 16-byte aligned base addresses and
    // strides (checked by the dispatcher), so any M, N, K runs; the scheduler's own check stays.
    if (!Kernel::TileScheduler::can_implement(args.scheduler)) {
      return Status(StatusCode::kInternal, "gemm: invalid work decomposition for the kernel");
    }
    if (Gemm::get_workspace_size(args) > l.workspace_size) {
      return Status(StatusCode::kInternal, "gemm: workspace smaller than the kernel needs");
    }
    cutlass::Status st = Kernel::initialize_workspace(args, l.workspace, stream, nullptr);
    if (st != cutlass::Status::kSuccess) {
      cudaError_t err = cudaGetLastError();
      if (err != cudaSuccess) {
        return Status(StatusCode::kCudaError, std::string("gemm: kernel set-up failed: ") +
                                                  cudaGetErrorName(err) + " (" +
                                                  cudaGetErrorString(err) + ")");
      }
      return error("initialize", st);
    }
    typename Kernel::Params params = Kernel::to_underlying_arguments(args, l.workspace);
    const dim3 grid = Kernel::get_grid_shape(params);
    const dim3 block = Kernel::get_block_shape();
    cudaLaunchAttribute cluster_attr;
    cluster_attr.id = cudaLaunchAttributeClusterDimension;
    cluster_attr.val.clusterDim.x = size<0>(ClusterShape{});
    cluster_attr.val.clusterDim.y = size<1>(ClusterShape{});
    cluster_attr.val.clusterDim.z = size<2>(ClusterShape{});
    cudaLaunchConfig_t config = {};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = Kernel::SharedStorageSize;
    config.stream = stream;
    config.attrs = &cluster_attr;
    config.numAttrs = 1;
    void* kernel_params[] = {&params};
    cudaError_t err = cudaLaunchKernelExC(
        &config, reinterpret_cast<const void*>(cutlass::device_kernel<Kernel>), kernel_params);
    if (err == cudaSuccess) err = cudaGetLastError();
    if (err != cudaSuccess) {
      cudaGetLastError();
      return Status(err == cudaErrorMemoryAllocation ? StatusCode::kOutOfMemory : StatusCode::kCudaError,
                    std::string("gemm: kernel launch failed: ") + cudaGetErrorName(err) + " (" +
                        cudaGetErrorString(err) + ")");
    }
    return Status::Ok();
  }
};

}  // namespace deepwell::matmul::sm90

// Defines the launch and workspace functions `name`_launch / `name`_workspace declared by the
// kernel table (gemm_sm90_table.hpp) for the configuration `Config` (a type in
// deepwell::matmul::sm90), and checks that it is the table's row `name`.
#define DW_SM90_GEMM_INSTANCE(name, Config)                                                     \
  namespace deepwell::matmul::sm90 {                                                           \
  static_assert(find_kernel(#name) != nullptr, "no row " #name " in gemm_sm90_table.hpp");     \
  static_assert(Config::matches(*find_kernel(#name)),                                          \
                #name ": the instance differs from its row in gemm_sm90_table.hpp");           \
  Status name##_launch(const Launch& l) { return Config::launch(l); }                          \
  size_t name##_workspace(const Launch& l) { return Config::workspace(l); }                    \
  }
