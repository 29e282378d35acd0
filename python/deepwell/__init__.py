"""deepwell: fused transformer kernels (attention, low-precision GEMMs) for NVIDIA Hopper.

Ops accept torch tensors (CPU or CUDA), numpy arrays and other DLPack tensors. CPU tensors run
on the library's reference backend; CUDA tensors on the sm_90a kernels.
"""
from . import _C
from .ops import attention, attention_backward, gemm, gemm_fp8
from .quant import dequantize, quantize, swizzle_scales, unswizzle_scales

__version__ = _C.version()


def built_with_cuda() -> bool:
    """True when this build contains the CUDA kernels (they need an sm_90 GPU to run)."""
    return _C.built_with_cuda()


__all__ = ["attention", "attention_backward", "gemm", "gemm_fp8", "built_with_cuda", "__version__",
           "quantize", "dequantize", "swizzle_scales", "unswizzle_scales"]
