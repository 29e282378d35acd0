"""Shared pytest setup: fresh seeds, the `gpu` marker, float64 oracles."""
import os
import random

import pytest


def _gpu_reason():
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU"
    if torch.cuda.get_device_capability() != (9, 0):
        return f"GPU is sm_{''.join(map(str, torch.cuda.get_device_capability()))}, kernels need sm_90"
    import deepwell

    if not deepwell.built_with_cuda():
        return "deepwell was built without CUDA kernels"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _gpu_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"GPU test skipped: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def seed(request):
    """A fresh seed per test (override with DEEPWELL_TEST_SEED), printed on failure."""
    s = int(os.environ.get("DEEPWELL_TEST_SEED", random.randrange(2**31)))
    request.node.user_properties.append(("seed", s))
    print(f"seed={s}")
    return s
