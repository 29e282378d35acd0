"""A planted out-of-bounds read for tools/gpu-sanitize: proves that compute-sanitizer instruments
deepwell's kernels on this machine (a clean report means nothing if they were never checked).

dequantize is told that `data` and `scales` have 64x their rows (their descriptors inflated
after the library's Python layer built them), so its kernel reads far past both allocations.
Run it only under the sanitizer: without one the reads may fault or return garbage.
"""
import torch

import deepwell
from deepwell import quant

x = torch.randn(128, 256, device="cuda", dtype=torch.bfloat16)
data, scales = deepwell.quantize(x, format="mxfp8")
torch.cuda.synchronize()
describe = quant.T.describe


def inflated(t, name):
    d = describe(t, name)
    if d is not None and name in ("data", "scales"):
        d = (d[0], d[1], d[2], d[3], (d[4][0] * 64,) + tuple(d[4][1:]), d[5])
    return d


quant.T.describe = inflated
out = deepwell.dequantize(data, scales, format="mxfp8")
torch.cuda.synchronize()
print("planted call returned", tuple(out.shape))
