"""genesis.nn.init: in-place initialisers drawing from the default generator (manual_seed makes
them reproducible); fans follow torch."""
import math
import warnings

from genesis import _C
from genesis._grad_mode import no_grad as _no_grad
from genesis._C.nn.init import (  # noqa: F401
    _calculate_fan_in_and_fan_out, calculate_gain, constant_, kaiming_normal_, kaiming_uniform_, normal_, ones_,
    uniform_, xavier_normal_, xavier_uniform_, zeros_,
)


def _work_dtype(t):
    """The dtype to compute an initialiser in: the tensor's, float32 for the 16-bit ones."""
    return _C.dtype.float32 if t.dtype in (_C.dtype.float16, _C.dtype.bfloat16) else t.dtype


# Acklam's rational approximation of the standard normal quantile (relative error below 1.2e-9).
_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
      -3.066479806614716e+01, 2.506628277459239e+00)
_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
      -1.328068155305798e+01, 1.0)
_C_TAIL = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
           4.374664141464968e+00, 2.938163982698783e+00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00, 1.0)


def _reset_weight_and_bias(weight, bias):
    """torch's default reset of Linear and the convolutions: kaiming_uniform_(a=sqrt(5)) weight and, when there is a
    bias, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) bias (zeros for a weight of no elements)."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in = _calculate_fan_in_and_fan_out(weight)[0]
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        uniform_(bias, -bound, bound)


def _poly(coeffs, x):
    out = x * 0.0 + coeffs[0]
    for c in coeffs[1:]:
        out = out * x + c
    return out


def _ndtri(p):
    """The standard normal quantile of each element of p (in (0, 1)), with tensor ops on p's device."""
    tiny = 1e-300 if p.dtype == _C.dtype.float64 else 1e-37
    p = p.clamp(tiny, 1.0 - 1e-16 if p.dtype == _C.dtype.float64 else 1.0 - 1e-7)
    q = p - 0.5
    r = q * q
    central = _poly(_A, r) * q / _poly(_B, r)
    tail_p = _C.where(q < 0, p, 1.0 - p)  # the tail's own probability, below 0.5
    s = (tail_p.log() * -2.0).sqrt()
    tail = _poly(_C_TAIL, s) / _poly(_D, s)
    tail = _C.where(q < 0, tail, -tail)
    return _C.where(tail_p < 0.02425, tail, central)


def _norm_cdf(x):
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    """Fills tensor from N(mean, std^2) truncated to [a, b] (inverse-CDF sampling, as torch)."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                      "be incorrect.", stacklevel=2)
    lo, hi = _norm_cdf((a - mean) / std), _norm_cdf((b - mean) / std)
    if lo > hi:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={2 * lo - 1:g} > "
                           f"to={2 * hi - 1:g}")
    with _no_grad():
        u = _C.empty(tuple(tensor.shape), dtype=_work_dtype(tensor), device=tensor.device)
        uniform_(u, lo, hi)
        x = (_ndtri(u) * std + mean).clamp(a, b)
        tensor.copy_(x.to(tensor.dtype))
    return tensor


def eye_(tensor):
    """Fills a 2-D tensor with the identity (ones on the diagonal)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with _no_grad():
        tensor.copy_(_C.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype, device=tensor.device))
    return tensor


def dirac_(tensor, groups=1):
    """Fills a 3-, 4- or 5-D convolution weight so the convolution is the identity (per group)."""
    if tensor.dim() not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    centre = tuple(s // 2 for s in sizes[2:])
    with _no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min(out_per_group, sizes[1])):
                tensor[(g * out_per_group + d, d) + centre] = 1.0
    return tensor


def _orthonormal_rows(m):
    """Q^T of m^T's QR decomposition (m: rows <= cols) with R's diagonal positive: the rows orthonormalised in order,
    by Gram-Schmidt applied twice (blocks of rows against the rows before them, then row by row inside)."""
    n = m.shape[0]
    out = _C.zeros(tuple(m.shape), dtype=m.dtype, device=m.device)
    block = 32
    for s in range(0, n, block):
        e = min(s + block, n)
        b = m[s:e]
        if s:
            prev = out[:s]
            for _ in range(2):
                b = b - b.matmul(prev.t()).matmul(prev)
        for i in range(e - s):
            v = b[i:i + 1]
            if i:
                done = out[s:s + i]
                for _ in range(2):
                    v = v - v.matmul(done.t()).matmul(done)
            out[s + i:s + i + 1] = v / v.norm()
    return out


def orthogonal_(tensor, gain=1):
    """Fills tensor (2-D or more, trailing dims flattened) with a (semi-)orthogonal matrix, times gain."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with _no_grad():
        flat = _C.empty(rows, cols, dtype=_work_dtype(tensor), device=tensor.device)
        normal_(flat, 0.0, 1.0)
        q = _orthonormal_rows(flat if rows < cols else flat.t().contiguous())
        if rows >= cols:
            q = q.t()
        tensor.copy_((q * gain).reshape(*tensor.shape).to(tensor.dtype))
    return tensor


def sparse_(tensor, sparsity, std=0.01):
    """Fills a 2-D tensor from N(0, std^2), then zeroes ceil(sparsity * rows) random entries of every column."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with _no_grad():
        normal_(tensor, 0.0, std)
        if num_zeros > 0:
            # each column's rank of a uniform draw: a random permutation per column
            rank = _C.rand(rows, cols, device=tensor.device).argsort(0).argsort(0)
            tensor.copy_(tensor.masked_fill(rank < num_zeros, 0.0))
    return tensor


def _deprecated(fn):
    old = fn.__name__[:-1]

    def alias(*args, **kwargs):
        warnings.warn(f"nn.init.{old} is now deprecated in favor of nn.init.{fn.__name__}.", stacklevel=2)
        return fn(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated: {fn.__name__}."
    return alias


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
