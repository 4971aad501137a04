"""genesis.Tensor from Python: creation, dtypes, operators with numbers, indexing and slicing,
views, printing and conversions (tests tools/python/src/tensor*.cpp, indexing.cpp, creation.cpp)."""
import numpy as np
import pytest

import genesis


def test_tensor_infers_dtypes_as_torch():
    assert genesis.tensor([1.0, 2.0]).dtype == genesis.float32
    assert genesis.tensor([1, 2]).dtype == genesis.int64
    assert genesis.tensor([True, False]).dtype == genesis.bool
    assert genesis.tensor(3.5).shape == ()
    assert genesis.tensor([[1, 2], [3, 4]], dtype=genesis.float64).dtype == genesis.float64
    assert genesis.tensor(np.zeros((2, 3), dtype=np.float64)).dtype == genesis.float64
    assert genesis.tensor(np.zeros(3, dtype=np.int32)).dtype == genesis.int32
    with pytest.raises(ValueError, match=r"expected sequence of length 2 at dim 1 \(got 1\)"):  # torch's words
        genesis.tensor([[1, 2], [3]])
    assert genesis.Tensor([1, 2]).dtype == genesis.float32  # torch.Tensor(list) is float32
    x = genesis.ones(2)
    assert genesis.Tensor(x).data_ptr() == x.data_ptr()  # Tensor(tensor) shares


def test_creation_functions_take_sizes_and_keywords():
    assert genesis.zeros(2, 3).shape == (2, 3)
    assert genesis.ones((4,)).shape == (4,)
    assert genesis.full((2, 2), 7).dtype == genesis.int64
    assert genesis.full((2, 2), 7.0).tolist() == [[7.0, 7.0], [7.0, 7.0]]
    assert genesis.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert genesis.arange(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert genesis.linspace(0, 1, 3).tolist() == [0.0, 0.5, 1.0]
    assert genesis.eye(2).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    x = genesis.randn(3, 4, dtype=genesis.float64, requires_grad=True)
    assert x.requires_grad and x.dtype == genesis.float64 and x.is_leaf
    assert genesis.zeros_like(x).shape == (3, 4)
    r = genesis.randint(0, 10, (100,))
    assert r.dtype == genesis.int64 and 0 <= r.min().item() and r.max().item() < 10
    assert sorted(genesis.randperm(6).tolist()) == list(range(6))


def test_operators_with_numbers_follow_torch_promotion():
    a = genesis.tensor([1, 2, 3])
    assert (a + 1).dtype == genesis.int64
    assert (a * 1.5).dtype == genesis.float32
    assert (a / 2).tolist() == [0.5, 1.0, 1.5]
    assert (2 - a).tolist() == [1, 0, -1]
    assert (1 / genesis.tensor([2.0, 4.0])).tolist() == [0.5, 0.25]
    assert (genesis.tensor([2.0]) ** 3).item() == 8.0
    assert (2 ** genesis.tensor([3.0])).item() == 8.0
    assert (a > 1).tolist() == [False, True, True]
    assert (a == 2).dtype == genesis.bool
    assert ((a > 1) & (a < 3)).tolist() == [False, True, False]
    assert (-a).tolist() == [-1, -2, -3]
    m = genesis.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert (m @ m).tolist() == [[7.0, 10.0], [15.0, 22.0]]


def test_indexing_and_slicing_are_views_like_torch():
    x = genesis.arange(24).reshape(2, 3, 4)
    n = np.arange(24).reshape(2, 3, 4)
    for key in [1, -1, (0, 1), (slice(None), 1), (0, slice(1, None), slice(None, None, 2)), (None, Ellipsis, -1),
                (Ellipsis, 2), (slice(None), [2, 0])]:
        got = x[key]
        want = n[key]
        assert got.tolist() == want.tolist(), key
    v = x[0, 1:]
    assert v.data_ptr() == x.data_ptr() + 4 * 8  # a view: no copy
    with pytest.raises(IndexError, match="out of bounds"):
        x[5]
    y = genesis.zeros(3, 4)
    y[:, 1] = 5
    y[0] = genesis.ones(4)
    assert y.tolist() == [[1, 1, 1, 1], [0, 5, 0, 0], [0, 5, 0, 0]]
    assert [row.tolist() for row in genesis.tensor([[1, 2], [3, 4]])] == [[1, 2], [3, 4]]


def test_metadata_conversion_and_printing():
    x = genesis.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert x.shape == (2, 2) and x.ndim == 2 and x.numel() == 4 and len(x) == 2
    assert str(x.device) == "cpu" and x.device.type == "cpu"
    assert repr(x) == "tensor([[1., 2.],\n        [3., 4.]], requires_grad=True)"
    assert x.to(genesis.float64).dtype == genesis.float64
    assert x.double().to("cpu").dtype == genesis.float64
    assert genesis.tensor(3).item() == 3 and isinstance(genesis.tensor(3).item(), int)
    assert isinstance(genesis.tensor(True).item(), bool)
    assert x.sum().item() == 10.0 and float(x.sum()) == 10.0
    assert x.T.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert x.detach().numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(RuntimeError, match="requires grad"):  # torch's type and words
        x.numpy()
    assert repr(genesis.float32) == "genesis.float32"
    if genesis.cuda.is_available():
        assert genesis.device("cuda", 0).index == 0


def test_numpy_shares_memory_both_ways():
    x = genesis.zeros(3)
    a = x.numpy()
    a[1] = 5
    assert x.tolist() == [0.0, 5.0, 0.0]
    t = genesis.arange(12, dtype=genesis.float32).reshape(3, 4).t()
    assert t.numpy().tolist() == np.arange(12, dtype=np.float32).reshape(3, 4).T.tolist()


def test_reductions_and_views_match_numpy():
    n = np.random.rand(3, 4, 5)
    x = genesis.tensor(n)
    np.testing.assert_allclose(x.sum(1).numpy(), n.sum(1))
    np.testing.assert_allclose(x.mean((0, 2), keepdim=True).numpy(), n.mean((0, 2), keepdims=True))
    np.testing.assert_allclose(x.var(2).numpy(), n.var(2, ddof=1))
    np.testing.assert_allclose(x.amax(0).numpy(), n.max(0))
    vals, idx = x.max(1)
    np.testing.assert_allclose(vals.numpy(), n.max(1))
    assert idx.tolist() == n.argmax(1).tolist()
    np.testing.assert_allclose(x.permute(2, 0, 1).numpy(), n.transpose(2, 0, 1))
    np.testing.assert_allclose(x.reshape(-1, 5).numpy(), n.reshape(-1, 5))
    np.testing.assert_allclose(genesis.cat([x, x], 1).numpy(), np.concatenate([n, n], 1))
    np.testing.assert_allclose(genesis.stack([x, x]).numpy(), np.stack([n, n]))
    np.testing.assert_allclose(genesis.where(x > 0.5, x, 0.0).numpy(), np.where(n > 0.5, n, 0.0))
    parts = x.split(2, 1)
    assert [p.shape for p in parts] == [(3, 2, 5), (3, 2, 5)]
    np.testing.assert_allclose(genesis.exp(x).numpy(), np.exp(n))


def test_conveniences_flip_array_format():
    x = genesis.arange(6).reshape(2, 3)
    assert x.flip(1).tolist() == [[2, 1, 0], [5, 4, 3]] and x.flip((0, 1)).tolist() == [[5, 4, 3], [2, 1, 0]]
    assert np.asarray(genesis.ones(2, dtype=genesis.float64)).dtype == np.float64
    assert f"{genesis.tensor(0.123456):.3f}" == "0.123"


def _torch_pair(shape, requires_grad=False):
    import torch
    t = torch.randn(*shape, dtype=torch.float64)
    return genesis.tensor(t.numpy(), requires_grad=requires_grad), t.clone().requires_grad_(requires_grad)


@pytest.mark.parametrize("shape, mask_shape, key_of", [
    ((4, 5), (4, 5), lambda m: m),                   # full mask: 1-D result
    ((4, 5, 3), (4,), lambda m: m),                  # leading-dim mask: (n, 5, 3)
    ((4, 5, 3), (4, 5), lambda m: m),                # two leading dims: (n, 3)
    ((4, 5, 3), (5,), lambda m: (slice(None), m)),   # mask after a slice: (4, n, 3)
    ((4, 5, 3), (3,), lambda m: (Ellipsis, m)),      # mask on the last dim: (4, 5, n)
    ((3, 4), (3, 4), lambda m: (None, m)),           # after a new axis: (1, n)
])
def test_bool_mask_read_matches_torch_with_gradients(shape, mask_shape, key_of):
    import torch
    from conftest import close
    gx, tx = _torch_pair(shape, requires_grad=True)
    tm = torch.rand(*mask_shape) > 0.4
    gm = genesis.tensor(tm.numpy())
    got, want = gx[key_of(gm)], tx[key_of(tm)]
    close(got, want)
    w = torch.randn(want.shape, dtype=torch.float64)
    (got * genesis.tensor(w.numpy())).sum().backward()
    (want * w).sum().backward()
    close(gx.grad, tx.grad, rtol=1e-7, atol=1e-7)
    # The same mask as a NumPy bool array, and masked_select / nonzero.
    close(gx.detach()[key_of(tm.numpy())], want)
    if mask_shape == shape:
        close(gx.masked_select(gm), tx.masked_select(tm))
        assert genesis.nonzero(gm).tolist() == torch.nonzero(tm).tolist()


def test_bool_mask_edge_cases_match_torch():
    import torch
    from conftest import close
    gx, tx = _torch_pair((3, 4))
    none = torch.zeros(3, 4, dtype=torch.bool)
    assert gx[genesis.tensor(none.numpy())].shape == (0,)
    close(gx[[True, False, True]], tx[[True, False, True]])  # a list of bools is a mask
    close(gx[genesis.tensor(True)], tx[torch.tensor(True)])  # 0-d mask: a new dim of size 1
    row = torch.tensor([True, False, True, False])
    close(gx.masked_select(genesis.tensor(row.numpy())), tx.masked_select(row))  # broadcast mask
    with pytest.raises(IndexError, match="shape of the mask"):
        gx[genesis.tensor([True, False])]
    with pytest.raises(TypeError):
        gx[genesis.zeros(3, 4) > 0] = "x"


@pytest.mark.parametrize("shape, mask_shape, value_of", [
    ((4, 5), (4, 5), lambda n, torch: 7.5),
    ((4, 5), (4, 5), lambda n, torch: torch.randn(n, dtype=torch.float64)),
    ((4, 5, 3), (4,), lambda n, torch: torch.randn(n, 5, 3, dtype=torch.float64)),
    ((4, 5, 3), (4,), lambda n, torch: torch.randn(3, dtype=torch.float64)),  # broadcast value
    ((4, 5, 3), (4, 5), lambda n, torch: -2.0),
])
def test_bool_mask_write_matches_torch(shape, mask_shape, value_of):
    import torch
    from conftest import close
    gx, tx = _torch_pair(shape)
    tm = torch.rand(*mask_shape) > 0.5
    value = value_of(int(tm.sum()), torch)
    tx[tm] = value
    gx[genesis.tensor(tm.numpy())] = genesis.tensor(value.numpy()) if isinstance(value, torch.Tensor) else value
    close(gx, tx)
    # Through a view and with the mask after a slice: the write lands in the base tensor.
    gy, ty = _torch_pair((3, 4, 2))
    cols = torch.tensor([True, False, False, True])
    ty[1:, cols] = 0.25
    gy[1:, genesis.tensor(cols.numpy())] = 0.25
    close(gy, ty)
