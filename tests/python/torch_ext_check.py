"""Shared pieces of the GPU tests of deepwell._torch, the host fast path for torch CUDA tensors
(python/src/torch_ext.cpp): finding one of its ops, and comparing its errors with the general
path's."""
import os

import pytest

import deepwell
from deepwell import ops


def torch_ext_op(name: str):
    """deepwell._torch.<name> (gemm, gemm_fp8, attention) where this build has it (a CUDA build
    tree where torch imports), else skip."""
    pkg = os.path.dirname(deepwell.__file__)
    if not any(f.startswith("_torch") and f.endswith(".so") for f in os.listdir(pkg)):
        pytest.skip("deepwell._torch is not built here")
    if os.environ.get("DEEPWELL_TORCH_EXT") == "0":
        pytest.skip("DEEPWELL_TORCH_EXT=0")
    cached = getattr(ops, "_torch_" + name)
    fast = cached if cached is not None else ops._load_torch_op(name)
    assert fast, f"deepwell._torch is built but its {name} is not used (built for another torch?)"
    return fast


def _outcome(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and message are what is compared
        return type(e), str(e)
    return None


def assert_errors_match(bad: dict, monkeypatch, name: str) -> None:
    """Every call of `bad` raises on the fast path, and the same exception with the same message
    once deepwell._torch.<name> is turned off (the general path; it stays off for the test)."""
    fast = {case: _outcome(fn) for case, fn in bad.items()}
    monkeypatch.setattr(ops, "_torch_" + name, False)
    general = {case: _outcome(fn) for case, fn in bad.items()}
    for case in bad:
        assert fast[case] is not None, f"{case}: no error on the fast path"
        assert fast[case] == general[case], case
