"""Zero-copy exchange through DLPack with NumPy 1.24 and PyTorch 1.13, both ways: the same data
pointer, shared writes, strides, lifetimes (tests tools/python/src/dlpack.cpp)."""
import gc

import numpy as np
import pytest
import torch
import torch.utils.dlpack

import genesis


def test_numpy_to_genesis_shares_memory():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = genesis.from_dlpack(a)
    assert t.data_ptr() == a.ctypes.data and t.shape == (3, 4) and t.dtype == genesis.float32
    a[0, 0] = 42
    assert t[0, 0].item() == 42
    del a
    gc.collect()
    assert t.sum().item() == sum(range(12)) + 42  # the array lives as long as the tensor


def test_genesis_to_numpy_shares_memory():
    t = genesis.arange(6, dtype=genesis.float64).reshape(2, 3)
    a = np.from_dlpack(t)
    assert a.ctypes.data == t.data_ptr() and a.dtype == np.float64
    t[1, 2] = -1.0
    assert a[1, 2] == -1.0
    v = t.t()  # strided: NumPy sees the strides, still no copy
    b = np.from_dlpack(v)
    assert b.ctypes.data == v.data_ptr() and b.tolist() == [[0, 3], [1, 4], [2, -1]]


# (PyTorch 1.13 exchanges no bool tensors through DLPack.)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32, torch.float16,
                                   torch.bfloat16, torch.uint8, torch.int8])
def test_torch_round_trip_keeps_the_pointer(dtype):
    x = (torch.arange(10) % 3).to(dtype)
    g = genesis.from_dlpack(x)
    assert g.data_ptr() == x.data_ptr() and g.shape == (10,)
    back = torch.utils.dlpack.from_dlpack(g)
    assert back.data_ptr() == x.data_ptr() and back.dtype == dtype
    assert torch.equal(back, x)


def test_torch_writes_are_seen_and_capsules_work():
    x = torch.zeros(4)
    g = genesis.from_dlpack(torch.utils.dlpack.to_dlpack(x))  # a raw capsule
    x[2] = 7
    assert g.tolist() == [0.0, 0.0, 7.0, 0.0]
    g2 = genesis.randn(3, 5)[:, 1:4]
    t = torch.utils.dlpack.from_dlpack(g2)
    assert t.stride() == (5, 1) and t.data_ptr() == g2.data_ptr()
    assert t.tolist() == g2.tolist()


def test_versioned_capsules_and_device():
    t = genesis.ones(3)
    assert t.__dlpack_device__() == (1, 0)
    cap = t.__dlpack__(max_version=(1, 0))
    u = genesis.from_dlpack(cap)
    assert u.data_ptr() == t.data_ptr()
    with pytest.raises(ValueError, match="unused DLPack capsule"):
        genesis.from_dlpack(cap)  # consumed
    copied = genesis.from_dlpack(t.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=True))
    assert copied.data_ptr() != t.data_ptr() and copied.tolist() == t.tolist()
    with pytest.raises(BufferError, match="dl_device"):
        t.__dlpack__(dl_device=(2, 0))


def test_tensors_that_need_grad_are_not_exported():
    t = genesis.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="require gradient"):  # torch.utils.dlpack.to_dlpack's type and words
        t.__dlpack__()
    assert np.from_dlpack(t.detach()).tolist() == [1.0, 1.0]
