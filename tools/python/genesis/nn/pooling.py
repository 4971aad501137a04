"""1-D pooling, adaptive pooling and pooling with indices (torch.nn.functional's names and modules).

max_pool1d / avg_pool1d run the fused 2-D pooling ops on a unit height.  Adaptive averages are one
matmul per spatial dim with an averaging matrix (torch's start = floor(i*in/out), end = ceil((i+1)*in/out)
windows); adaptive maxima and pooling with return_indices gather every window with index_select and
take the max over the window, so the indices come from the same reduction.
"""
from genesis._numpy import np as np

from genesis import _C
from genesis.nn.modules import Module
from genesis.nn.sampling import _index, _pad_constant

_F = _C.functional


def _tuple(v, n, name="", what=""):
    if isinstance(v, int):
        return (v,) * n
    v = tuple(int(e) for e in v)
    if len(v) == 1 and n > 1:
        return v * n
    if len(v) != n:
        raise RuntimeError(f"{name}() {what} must be an int, list of ints or tuple of ints of size {n} "
                           f"but got size {len(v)}")
    return v


def _pool_out(size, k, s, p, d, ceil_mode):
    """torch's pooling_output_shape."""
    num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _check_pool(name, x, dims, k, s, p, d, ceil_mode, allow_empty=False):
    if x.dim() not in (dims + 1, dims + 2):
        raise RuntimeError(f"{name}() Expected {dims + 1}D or {dims + 2}D input tensor, but got {list(x.shape)}")
    outs = []
    for i in range(dims):
        if k[i] <= 0:
            raise RuntimeError(f"{name}() kernel_size must be greater than zero, but got {k[i]}")
        if s[i] <= 0:
            raise RuntimeError(f"{name}() stride must be greater than zero, but got {s[i]}")
        if p[i] < 0:
            raise RuntimeError(f"{name}() padding must be non-negative, but got {p[i]}")
        if p[i] > k[i] // 2:
            raise RuntimeError(f"{name}() padding should be at most half of kernel size, but got padding={p[i]} "
                               f"and kernel_size={k[i]}")
        if d[i] <= 0:
            raise RuntimeError(f"{name}() dilation must be greater than zero, but got {d[i]}")
        outs.append(_pool_out(x.shape[x.dim() - dims + i], k[i], s[i], p[i], d[i], ceil_mode))
    if any(o < 0 for o in outs) or (not allow_empty and any(o == 0 for o in outs)):
        sizes = list(x.shape[x.dim() - dims:])
        raise RuntimeError(f"{name}(): given input size {sizes}, the calculated output size {outs} is too small")
    return outs


def _window_max(x, windows, return_indices):
    """Max over windows of the trailing len(windows) dims; windows[i] lists, per output position, the k source
    indices along dim i (-1 = padding).  Returns the values and, when asked, the flat indices into those dims."""
    n, nd = len(windows), x.dim()
    sizes = list(x.shape[nd - n:])
    if any(j < 0 for w in windows for row in w for j in row):
        x = _pad_constant(x, [0, 1] * n, float("-inf"))  # the extra slot `size` of each dim is -inf
    base = nd - n
    for i, w in enumerate(windows):
        dim = base + 2 * i  # each earlier dim became (out, k)
        flat = [j if j >= 0 else sizes[i] for row in w for j in row]
        x = x.index_select(dim, _index(flat, x))
        shape = list(x.shape)
        x = x.reshape(shape[:dim] + [len(w), len(w[0])] + shape[dim + 1:])
    outs = list(range(base, base + 2 * n, 2))
    ks = list(range(base + 1, base + 2 * n, 2))
    x = x.permute(*range(base), *outs, *ks)
    out_shape = list(x.shape[:base + n])
    kk = int(np.prod([len(w[0]) for w in windows]))
    x = x.reshape(out_shape + [kk])
    prev = _C.is_grad_enabled()
    _C.set_grad_enabled(False)
    try:
        arg = x.max(dim=-1)[1].unsqueeze(-1)  # the first maximum of each window, as torch picks
    finally:
        _C.set_grad_enabled(prev)
    values = x.gather(-1, arg).squeeze(-1)  # the gradient flows to that element only
    arg = arg.squeeze(-1)
    if not return_indices:
        return values
    table = np.zeros([len(w) for w in windows] + [len(w[0]) for w in windows], dtype=np.int64)
    stride = 1
    for i in reversed(range(n)):
        rows = np.maximum(np.asarray(windows[i], dtype=np.int64), 0)
        shape = [1] * (2 * n)
        shape[i], shape[n + i] = rows.shape
        table = table + rows.reshape(shape) * stride
        stride *= sizes[i]
    table = _C.tensor(table.reshape([len(w) for w in windows] + [kk]), dtype=_C.dtype.int64, device=values.device)
    table = table.expand(*out_shape, kk)
    return values, table.gather(-1, arg.unsqueeze(-1)).squeeze(-1)


def _pool_windows(size, out, k, s, p, d):
    rows = []
    for o in range(out):
        row = [o * s - p + j * d for j in range(k)]
        rows.append([u if 0 <= u < size else -1 for u in row])
    return rows


# ---------------------------------------------------------------- max / avg pooling

def _max_pool_nd(name, dims, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    k = _tuple(kernel_size, dims, name, "kernel_size")
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else _tuple(stride, dims, name,
                                                                                                 "stride")
    p, d = _tuple(padding, dims, name, "padding"), _tuple(dilation, dims, name, "dilation")
    outs = _check_pool(name, input, dims, k, s, p, d, ceil_mode, allow_empty=not return_indices)
    if not return_indices:
        if 0 in outs:  # torch allows an empty result here
            return input.narrow(-1, 0, 0).clone()
        if dims == 1:
            return _F.max_pool2d(input.unsqueeze(-2), (1, k[0]), (1, s[0]), (0, p[0]), (1, d[0]),
                                 ceil_mode).squeeze(-2)
        return _F.max_pool2d(input, k, s, p, d, ceil_mode)
    sizes = input.shape[input.dim() - dims:]
    windows = [_pool_windows(sizes[i], outs[i], k[i], s[i], p[i], d[i]) for i in range(dims)]
    return _window_max(input, windows, True)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over windows of the last dim of (N, C, L) or (C, L); with return_indices, (values, indices)."""
    return _max_pool_nd("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """max_pool1d returning (values, indices)."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """Max over windows of the last 2 dims of (N, C, H, W) or (C, H, W): (values, flat indices into H*W)."""
    return _max_pool_nd("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over windows of the last dim of (N, C, L) or (C, L)."""
    k = _tuple(kernel_size, 1, "avg_pool1d", "kernel_size")
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else _tuple(stride, 1, "avg_pool1d",
                                                                                                 "stride")
    p = _tuple(padding, 1, "avg_pool1d", "padding")
    _check_pool("avg_pool1d", input, 1, k, s, p, (1,), ceil_mode)
    return _F.avg_pool2d(input.unsqueeze(-2), (1, k[0]), (1, s[0]), (0, p[0]), ceil_mode,
                         count_include_pad).squeeze(-2)


# ---------------------------------------------------------------- adaptive pooling

def _adaptive_bounds(size, out):
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def _adaptive_sizes(name, x, output_size, dims, check_all=False):
    if x.dim() not in (dims + 1, dims + 2):
        raise RuntimeError(f"{name}(): Expected {dims + 1}D or {dims + 2}D tensor, but got {list(x.shape)}")
    if isinstance(output_size, int) or output_size is None:
        output_size = (output_size,) * dims
    output_size = tuple(output_size)
    if len(output_size) != dims:
        if dims == 1:
            raise RuntimeError(f"{name}() argument 'output_size' should contain one int (got {len(output_size)})")
        if len(output_size) >= x.dim():
            raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
        raise RuntimeError(f"{name}(): internal error: output_size.size() must be {dims}")
    sizes = x.shape[x.dim() - dims:]
    out = [sizes[i] if o is None else int(o) for i, o in enumerate(output_size)]
    if any(o < 0 for o in out):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 but received "
                           f"{tuple(out)}")
    first = 1 if check_all and x.dim() == dims + 2 else x.dim() - dims  # torch: max checks channels too, avg not
    for i in range(first, x.dim()):
        if x.shape[i] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(x.shape)} with dimension {i} being empty")
    return out


def _divisible_kernel(x, sizes, out):
    """The kernel (= stride) of the fused 2-D pools when every output size divides its input size."""
    n = len(out)
    if n <= 2 and x.dim() in (n + 1, n + 2) and x.numel() > 0 and all(o > 0 and s % o == 0
                                                                          for s, o in zip(sizes, out)):
        return [s // o for s, o in zip(sizes, out)]
    return None


def _adaptive_avg(x, out):
    """Adaptive mean over the trailing len(out) dims: a mean for output 1, the fused average pool when every size
    divides, else one matmul with an averaging matrix per dim."""
    n = len(out)
    sizes = list(x.shape[x.dim() - n:])
    if all(o == 1 for o in out):
        return x.mean(dim=tuple(range(x.dim() - n, x.dim())), keepdim=True)
    k = _divisible_kernel(x, sizes, out)
    if k is not None:
        if n == 2:
            return _F.avg_pool2d(x, k, k)
        return _F.avg_pool2d(x.unsqueeze(-2), (1, k[0]), (1, k[0])).squeeze(-2)
    for i in range(n):
        dim = x.dim() - n + i
        size = x.shape[dim]
        a = np.zeros((size, out[i]), dtype=np.float64)
        for o, (lo, hi) in enumerate(_adaptive_bounds(size, out[i])):
            a[lo:hi, o] = 1.0 / (hi - lo)
        a = _C.tensor(a, dtype=x.dtype, device=x.device)
        if dim == x.dim() - 1:
            x = x.matmul(a)
        else:
            x = x.transpose(dim, -1).matmul(a).transpose(dim, -1)
    return x


def adaptive_avg_pool1d(input, output_size):
    """Mean over torch's adaptive windows of the last dim."""
    return _adaptive_avg(input, _adaptive_sizes("adaptive_avg_pool1d", input, output_size, 1))


def adaptive_avg_pool2d(input, output_size):
    """Mean over torch's adaptive windows of the last 2 dims (None in output_size keeps that size)."""
    return _adaptive_avg(input, _adaptive_sizes("adaptive_avg_pool2d", input, output_size, 2))


def adaptive_avg_pool3d(input, output_size):
    """Mean over torch's adaptive windows of the last 3 dims."""
    return _adaptive_avg(input, _adaptive_sizes("adaptive_avg_pool3d", input, output_size, 3))


def _adaptive_max(name, dims, input, output_size, return_indices):
    out = _adaptive_sizes(name, input, output_size, dims, check_all=True)
    sizes = input.shape[input.dim() - dims:]
    k = None if return_indices else _divisible_kernel(input, sizes, out)
    if k is not None:  # equal windows: the fused max pool
        if dims == 2:
            return _F.max_pool2d(input, k, k)
        return _F.max_pool2d(input.unsqueeze(-2), (1, k[0]), (1, k[0])).squeeze(-2)
    windows = []
    for i in range(dims):
        bounds = _adaptive_bounds(sizes[i], out[i])
        k = max((hi - lo for lo, hi in bounds), default=1)
        # short windows repeat their last index: a duplicate changes neither the max nor its first position
        windows.append([[min(lo + j, hi - 1) for j in range(k)] for lo, hi in bounds])
    return _window_max(input, windows, return_indices)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max over torch's adaptive windows of the last dim; with return_indices, (values, indices)."""
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over torch's adaptive windows of the last 2 dims; with return_indices, (values, flat indices)."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool1d returning (values, indices)."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool2d returning (values, indices)."""
    return adaptive_max_pool2d(input, output_size, True)


# ---------------------------------------------------------------- modules

class MaxPool1d(Module):
    """max_pool1d as a module."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                          self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool1d(Module):
    """avg_pool1d as a module."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode, self.count_include_pad = padding, ceil_mode, count_include_pad

    def forward(self, input):
        return avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptivePool(Module):
    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    """adaptive_avg_pool1d as a module."""

    def forward(self, input):
        return adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePool):
    """adaptive_avg_pool2d as a module."""

    def forward(self, input):
        return adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(_AdaptivePool):
    """adaptive_avg_pool3d as a module."""

    def forward(self, input):
        return adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool1d(_AdaptivePool):
    """adaptive_max_pool1d as a module."""

    def forward(self, input):
        return adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptivePool):
    """adaptive_max_pool2d as a module."""

    def forward(self, input):
        return adaptive_max_pool2d(input, self.output_size, self.return_indices)
