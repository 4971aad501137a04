"""Padding, resampling and pixel shuffling (torch.nn.functional's pad, interpolate, pixel_shuffle,
pixel_unshuffle and their modules), composed from differentiable tensor ops.

Every padding mode and interpolation mode is a gather along one dim at a time (index_select with
indices computed on the host, as torch computes them) followed, for constant padding, by a where
that fills the new positions and, for the linear and cubic modes, by a weighted sum of the gathered
taps, so gradients and every device come from the ops used.
"""
import math

from genesis._numpy import np as np

from genesis import _C
from genesis.nn.modules import Module


def _index(values, like):
    return _C.tensor([int(v) for v in values], dtype=_C.dtype.int64, device=like.device)


def _weights(values, like, dim):
    """A weight per position along dim, laid out over dim and the dims after it (leading dims broadcast)."""
    trailing = list(like.shape[dim + 1:])
    w = _C.tensor(np.asarray(values, dtype=np.float64), dtype=like.dtype, device=like.device)
    return w.reshape([len(values)] + [1] * len(trailing)).expand(len(values), *trailing).contiguous()


# ---------------------------------------------------------------- pad

def _mask(values, like, dim):
    """A bool mask per position along dim, laid out over dim and the dims after it (leading dims broadcast)."""
    trailing = list(like.shape[dim + 1:])
    m = _C.tensor(np.asarray(values, dtype=bool), device=like.device)
    return m.reshape([len(values)] + [1] * len(trailing)).expand(len(values), *trailing).contiguous()


def _spread(x, dim, src, size, value):
    """out[j] = x[src[j]] along dim where 0 <= src[j] < size, value elsewhere (a gather and a where)."""
    inside = [0 <= u < size for u in src]
    if all(inside) and src == list(range(src[0], src[0] + len(src))):
        return x.narrow(dim, src[0], len(src))
    if size == 0 or not any(inside):
        shape = list(x.shape)
        shape[dim] = len(src)
        return _C.full(shape, value, dtype=x.dtype, device=x.device)
    x = x.index_select(dim, _index([u if ok else 0 for u, ok in zip(src, inside)], x))
    return x if all(inside) else _C.where(_mask(inside, x, dim), x, value)


def _pad_constant(x, pad, value):
    for i in range(len(pad) // 2):
        dim = x.dim() - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        size = x.shape[dim]
        if size + left + right < 0:
            raise RuntimeError(f"The input size {size}, plus negative padding {left} and {right} resulted in a "
                               f"negative output size, which is invalid. Check dimension {dim} of your input.")
        if left or right:
            x = _spread(x, dim, list(range(-left, size + right)), size, value)
    return x


def _source(u, size, mode):
    if mode == "reflect":
        return -u if u < 0 else (2 * (size - 1) - u if u >= size else u)
    return min(max(u, 0), size - 1)  # replicate


def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad: (left, right) pairs from the last dim backwards; constant, reflect, replicate or
    circular."""
    pad = [int(p) for p in pad]
    nd = input.dim()
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) > 2 * nd:
        raise RuntimeError("Padding length too large")
    if mode == "constant":
        return _pad_constant(input, pad, 0.0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    k = len(pad) // 2
    if not ((k == 1 and nd in (2, 3)) or (k == 2 and nd in (3, 4)) or (k == 3 and nd in (4, 5))):
        raise NotImplementedError("Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now")
    if mode == "circular" and len(pad) + 4 != 2 * nd:
        raise RuntimeError(f"Invalid padding size, expected {2 * (nd - 2)} but got {len(pad)}")
    x = input
    for i in range(k):
        dim = nd - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        size = x.shape[dim]
        if mode == "reflect" and (left >= size or right >= size):
            raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({left}, {right}) at dimension {dim} of input "
                               f"{list(input.shape)}")
        if mode == "circular" and (left > size or right > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        out = size + left + right
        if out < 0 or (out == 0 and mode != "circular"):
            raise RuntimeError(f"input (size {size} at dimension {dim}) is too small. Calculated output size: {out}")
        if size == 0 and (left or right):
            raise RuntimeError(f"{mode} padding of an empty dimension {dim} of input {list(input.shape)}")
        if mode == "circular":  # torch crops first (negative pads), then wraps around what is left
            lo, hi = max(-left, 0), size - max(-right, 0)
            if hi - lo <= 0 and out > 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
            if left > hi - lo or right > hi - lo:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            src = [lo + (u % (hi - lo)) for u in range(-max(left, 0), hi - lo + max(right, 0))] if out > 0 else []
        else:
            src = [_source(u, size, mode) for u in range(-left, size + right)]
        x = x.index_select(dim, _index(src, x))
    return x


# ---------------------------------------------------------------- interpolate

def _nearest_source(mode, size, out, scale, shortcut):
    """torch's nearest / nearest-exact source indices (single-precision arithmetic, as torch's kernels).  With
    shortcut (torch's channels-last kernel), 'nearest' keeps a dim whose size stays and halves a doubled one."""
    if shortcut and out == size:
        return list(range(out))
    if shortcut and out == 2 * size:
        return [i >> 1 for i in range(out)]
    s = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(size) / np.float32(out)
    if mode == "nearest":
        src = [np.floor(np.float32(i) * s) for i in range(out)]
    else:
        src = [np.floor(np.float32((i + 0.5) * np.float64(s))) for i in range(out)]
    return [min(int(v), size - 1) for v in src]


def _linear_scale(size, out, align_corners, scale):
    if align_corners:
        return (size - 1) / (out - 1) if out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else size / out


def _linear_taps(size, out, align_corners, scale):
    s = _linear_scale(size, out, align_corners, scale)
    i0, i1, w0, w1 = [], [], [], []
    for o in range(out):
        src = s * o if align_corners else max(s * (o + 0.5) - 0.5, 0.0)
        lo = min(int(src), size - 1)
        lam = min(max(src - lo, 0.0), 1.0)
        i0.append(lo)
        i1.append(lo + (1 if lo < size - 1 else 0))
        w0.append(1.0 - lam)
        w1.append(lam)
    return [(i0, w0), (i1, w1)]


def _cubic_taps(size, out, align_corners, scale):
    a = -0.75  # torch's bicubic constant
    s = _linear_scale(size, out, align_corners, scale)
    idx = [[] for _ in range(4)]
    wts = [[] for _ in range(4)]
    for o in range(out):
        src = s * o if align_corners else s * (o + 0.5) - 0.5
        lo = math.floor(src)
        t = src - lo
        x1, x2 = t + 1.0, 1.0 - t
        c = [((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a,
             ((a + 2) * t - (a + 3)) * t * t + 1,
             ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1,
             ((a * (x2 + 1) - 5 * a) * (x2 + 1) + 8 * a) * (x2 + 1) - 4 * a]
        for j in range(4):
            idx[j].append(min(max(lo - 1 + j, 0), size - 1))
            wts[j].append(c[j])
    return list(zip(idx, wts))


def _resample_dim(x, dim, taps):
    """sum_j weight_j[o] * x[index_j[o]] along dim (one tap without weight: a gather)."""
    if len(taps) == 1 and taps[0][1] is None:
        return x.index_select(dim, _index(taps[0][0], x))
    out = None
    for index, weight in taps:
        term = x.index_select(dim, _index(index, x)) * _weights(weight, x, dim)
        out = term if out is None else out + term
    return out


_LINEAR_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """torch.nn.functional.interpolate: nearest, nearest-exact, area, linear, bilinear, bicubic, trilinear."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scales = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got input with spatial "
                    f"dimensions of {list(input.shape[2:])} and output size of {size}. Please provide input tensor "
                    "in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
            out_size = [int(s) for s in size]
        else:
            out_size = [int(size)] * dim
    elif scale_factor is not None:
        out_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but got input with "
                    f"spatial dimensions of {list(input.shape[2:])} and scale_factor of shape {scale_factor}. Please "
                    "provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
                    "format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and out_size is None:
        recompute_scale_factor = True
    if out_size is None:
        out_size = [int(math.floor(float(input.shape[i + 2]) * scales[i])) for i in range(dim)]
    if recompute_scale_factor:
        scales = None
    if antialias:
        raise ValueError("interpolate: antialias=True is not supported")
    known = ("nearest", "nearest-exact", "area", "linear", "bilinear", "bicubic", "trilinear")
    if mode not in known or dim not in (1, 2, 3) or (mode == "bicubic" and dim != 2):
        if mode in _LINEAR_DIMS and dim in (1, 2, 3):
            need = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}[mode]
            raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {need}D input")
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for the modes: nearest | "
            f"linear | bilinear | bicubic | trilinear | area | nearest-exact (got {mode})")
    if mode in _LINEAR_DIMS and _LINEAR_DIMS[mode] != dim:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {_LINEAR_DIMS[mode] + 2}D input")
    in_size = list(input.shape[2:])
    if any(s <= 0 for s in in_size) or any(s <= 0 for s in out_size):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input {tuple(in_size)} "
                           f"output {tuple(out_size)}")
    if mode == "area":
        from genesis.nn.pooling import _adaptive_avg
        return _adaptive_avg(input, out_size)
    # torch runs (N, 1, ...) 4-D/5-D inputs through its channels-last kernel, whose nearest index has shortcuts
    shortcut = mode == "nearest" and dim in (2, 3) and input.shape[1] == 1
    x = input
    for i in range(dim):
        d, n, o = i + 2, in_size[i], out_size[i]
        s = None if scales is None else scales[i]
        if mode in ("nearest", "nearest-exact"):
            taps = [(_nearest_source(mode, n, o, s, shortcut), None)]
        elif n == o and mode != "bicubic":  # torch's linear kernels copy a dim whose size stays, whatever the scale
            continue
        elif mode == "bicubic":
            taps = _cubic_taps(n, o, align_corners, s)
        else:
            taps = _linear_taps(n, o, align_corners, s)
        x = _resample_dim(x, d, taps)
    return x


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of interpolate (torch.nn.functional.upsample)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """interpolate(..., mode='nearest')."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """interpolate(..., mode='bilinear', align_corners=True)."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---------------------------------------------------------------- pixel shuffle

def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError("pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(batch)
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError("pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if h % r:
        raise RuntimeError("pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError("pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    n = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*batch, c * r * r, h // r, w // r)


# ---------------------------------------------------------------- modules

class Upsample(Module):
    """interpolate as a module (size or scale_factor, mode, align_corners)."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) else scale_factor
        if isinstance(self.scale_factor, (list, tuple)):
            self.scale_factor = tuple(float(s) for s in self.scale_factor)
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                           recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Upsample with mode='nearest'."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample with mode='bilinear', align_corners=True."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """pixel_shuffle as a module."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """pixel_unshuffle as a module."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class _PadNd(Module):
    _mode = "constant"
    _n = 1

    def __init__(self, padding, value=None):
        super().__init__()
        self.padding = (padding,) * (2 * self._n) if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != 2 * self._n:
            raise ValueError(f"{type(self).__name__}: padding must be an int or a {2 * self._n}-tuple")
        self.value = value

    def forward(self, input):
        return pad(input, self.padding, self._mode, self.value)

    def extra_repr(self):
        return f"{self.padding}" + (f", value={self.value}" if self._mode == "constant" else "")


def _pad_class(name, mode, n, doc, constant=False):
    if constant:
        def __init__(self, padding, value):
            _PadNd.__init__(self, padding, value)
    else:
        def __init__(self, padding):
            _PadNd.__init__(self, padding)
    return type(name, (_PadNd,), {"_mode": mode, "_n": n, "__init__": __init__, "__doc__": doc})


ConstantPad1d = _pad_class("ConstantPad1d", "constant", 1, "Pads the last dim with a constant.", True)
ConstantPad2d = _pad_class("ConstantPad2d", "constant", 2, "Pads the last 2 dims with a constant.", True)
ConstantPad3d = _pad_class("ConstantPad3d", "constant", 3, "Pads the last 3 dims with a constant.", True)
ReflectionPad1d = _pad_class("ReflectionPad1d", "reflect", 1, "Reflection padding of the last dim.")
ReflectionPad2d = _pad_class("ReflectionPad2d", "reflect", 2, "Reflection padding of the last 2 dims.")
ReflectionPad3d = _pad_class("ReflectionPad3d", "reflect", 3, "Reflection padding of the last 3 dims.")
ReplicationPad1d = _pad_class("ReplicationPad1d", "replicate", 1, "Edge-replicating padding of the last dim.")
ReplicationPad2d = _pad_class("ReplicationPad2d", "replicate", 2, "Edge-replicating padding of the last 2 dims.")
ReplicationPad3d = _pad_class("ReplicationPad3d", "replicate", 3, "Edge-replicating padding of the last 3 dims.")


class ZeroPad2d(_PadNd):
    """Pads the last 2 dims with zeros."""
    _n = 2

    def __init__(self, padding):
        super().__init__(padding, 0.0)
