"""The names of the CUDA kernels a call launches, from torch's profiler: how the GPU tests see
which compiled instance (a dense or plain twin, or the general kernel) ran."""
import torch


def kernel_names(fn, containing):
    """The names of the kernels `fn` launches whose name contains `containing` (empty where the
    profiler sees no CUDA kernels)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if containing in e.name]
