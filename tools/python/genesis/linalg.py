"""genesis.linalg: linear algebra with torch.linalg's names (norm, vector_norm, matrix_norm).

The norms are composed from differentiable genesis ops, so they run on every device and autograd
gives torch's gradients (zero where the norm is zero, the gradient of an inf norm shared evenly
between the tied maxima). The matrix norms from singular values ('nuc', 2, -2) use svdvals.
"""
import math as _math
import numbers as _numbers

from genesis import _C
from genesis.functional import _dims, _tname

_dt = _C.dtype


def _check_float(x, name):
    if not x.is_floating_point():
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {_tname(x.dtype)}")


def _convert(x, dtype, name):
    if dtype is None or dtype == x.dtype:
        return x
    if not dtype.is_floating_point or dtype.itemsize < x.dtype.itemsize:
        raise RuntimeError(f"{name}: the dtype of the input ({_tname(x.dtype)}) should be convertible without "
                           f"narrowing to the specified dtype ({_tname(dtype)})")
    return x.to(dtype)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ord-norm of x over dim (all dims when None) as a vector: sum(|x|**ord)**(1/ord); ord inf/-inf the
    largest/smallest |x|, ord 0 the number of nonzeros, as torch.linalg.vector_norm."""
    _check_float(x, "linalg.vector_norm")
    if isinstance(ord, str) or not isinstance(ord, _numbers.Real):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not "
                        f"{type(ord).__name__}")
    x = _convert(x, dtype, "linalg.vector_norm")
    dims = list(_dims(dim, x.dim()))
    if x.dim() == 0:
        x, dims = x.reshape(1), [0]
    reduced = 1
    for d in dims:
        reduced *= x.shape[d]
    if reduced == 0 and (ord < 0 or _math.isinf(ord)):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because the "
                           "operation does not have an identity")

    def done(t):
        return t if keepdim or x.dim() != 1 or dims != [0] or t.dim() == 0 else t.reshape(())

    if ord == _math.inf:
        return done(x.abs().amax(dims, keepdim))
    if ord == -_math.inf:
        return done(x.abs().amin(dims, keepdim))
    if ord == 0:
        nonzero = (x != 0).to(x.dtype).sum(dims, keepdim)
        return done(nonzero + _C.where(_C.zeros_like(x, dtype=_dt.bool), x, 0.0).sum(dims, keepdim))
    if ord == 1:
        return done(x.abs().sum(dims, keepdim))
    if ord == 2:
        s = (x * x).sum(dims, keepdim)
    else:
        a = x.abs()
        zero = a == 0
        powered = _C.where(zero, 1.0, a).pow(float(ord))
        s = _C.where(zero, 0.0 if ord > 0 else _math.inf, powered).sum(dims, keepdim)
    # the root, with a zero gradient (not NaN) where the norm is zero, as torch
    empty = s == 0
    root = _C.where(empty, 1.0, s)
    root = root.sqrt() if ord == 2 else root.pow(1.0 / ord)
    return done(_C.where(empty, 0.0, root))


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The ord-norm of the matrices in dims dim of A: 'fro', 1/-1 (max/min column abs sum), inf/-inf (max/min row
    abs sum); 'nuc' and 2/-2 need singular values, as torch.linalg.matrix_norm."""
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    _check_float(A, "linalg.matrix_norm")
    if isinstance(dim, _numbers.Integral) or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    d0, d1 = _dims(dim[0], A.dim())[0], _dims(dim[1], A.dim())[0]
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    A = _convert(A, dtype, "linalg.matrix_norm")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord == "nuc" or ord in (2, -2):
        svdvals = globals().get("svdvals")
        if svdvals is None:
            raise NotImplementedError(f"linalg.matrix_norm: ord={ord!r} needs singular values (linalg.svdvals), which "
                                      "genesis does not have yet")
        rest = [i for i in range(A.dim()) if i not in (d0, d1)]
        s = svdvals(A.permute(*rest, d0, d1))
        out = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
        return out.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1)) if keepdim else out
    if isinstance(ord, str) or ord not in (1, -1, _math.inf, -_math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord in (1, -1):  # column sums (over d0), then the max/min over d1
        sums, over = A.abs().sum(d0, True), d1
    else:  # row sums (over d1), then the max/min over d0
        sums, over = A.abs().sum(d1, True), d0
    out = sums.amax(over, True) if ord > 0 else sums.amin(over, True)
    if not keepdim:
        out = out.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    return out


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector norm (dim an int or 1-tuple, or a 1-D A) or a matrix norm (dim a 2-tuple, or a 2-D A with ord
    given); the 2-norm of all elements when ord and dim are None, as torch.linalg.norm."""
    if isinstance(dim, _numbers.Integral):
        dim = (dim,)
    if dim is not None:
        if len(dim) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
        if isinstance(ord, str):
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim[0] if len(dim) == 1 else dim}")
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.dim() == 1 and not isinstance(ord, str):
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if A.dim() == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.dim()}D.")


# ---- factorizations and solves (genesis._C.linalg: tools/python/src/linalg.cpp)
LinAlgError = _C.linalg.LinAlgError
cholesky, cholesky_ex, det, eigh, eigvalsh = (_C.linalg.cholesky, _C.linalg.cholesky_ex, _C.linalg.det,
                                              _C.linalg.eigh, _C.linalg.eigvalsh)
inv, lu_factor, lu_factor_ex, lu_solve, qr = (_C.linalg.inv, _C.linalg.lu_factor, _C.linalg.lu_factor_ex,
                                              _C.linalg.lu_solve, _C.linalg.qr)
slogdet, solve, solve_triangular, svd, svdvals = (_C.linalg.slogdet, _C.linalg.solve, _C.linalg.solve_triangular,
                                                  _C.linalg.svd, _C.linalg.svdvals)
