"""Shared helpers of the Python suite: conversions to and from PyTorch 1.13 (the reference) and
value/gradient comparisons."""
import os
import sys

import numpy as np
import pytest

import genesis

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

BUILD_DIR = os.environ.get("GENESIS_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
SOURCE_DIR = os.environ.get("GENESIS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
PYTHON = sys.executable


def to_torch(t, requires_grad=False):
    """A torch copy of a genesis tensor (float64 stays float64)."""
    x = torch.from_numpy(np.array(t.detach().numpy()))
    return x.requires_grad_(requires_grad)


def from_torch(x, requires_grad=False):
    """A genesis copy of a torch tensor."""
    return genesis.tensor(x.detach().numpy(), requires_grad=requires_grad)


def close(g, t, rtol=1e-10, atol=1e-10):
    """Asserts that a genesis tensor equals a torch tensor (shape and values)."""
    assert g is not None and t is not None, f"missing value: genesis {g is not None}, torch {t is not None}"
    a = g.detach().numpy() if not isinstance(g, np.ndarray) else g
    b = t.detach().numpy()
    assert tuple(a.shape) == tuple(b.shape), f"shape {a.shape} vs torch {b.shape}"
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol)


@pytest.fixture(autouse=True)
def _seed():
    genesis.manual_seed(0)
    torch.manual_seed(0)
    np.random.seed(0)
