"""1-D and 3-D convolution and the transposed convolutions (torch.nn.functional's conv1d, conv3d,
conv_transpose1d/2d/3d and their modules), composed from the fused conv2d op.

conv1d is conv2d on a unit height.  conv3d sums, over the kernel's depth, conv2d of the depth slices
that kernel plane meets (strided slices, batched into one conv2d each).  A transposed convolution is
the convolution of the input with zeros inserted between its elements (stride), padded by
dilation * (kernel - 1) - padding (plus output_padding on the far side), with the weight's in/out
channels swapped per group and its kernel flipped: the same sums torch forms, so gradients come from
conv2d's.  Parameter shapes, names and initialisation are torch's, so state dicts load either way.
"""

from genesis import _C
from genesis.nn import init
from genesis.nn.modules import Module, Parameter
from genesis.nn.sampling import _pad_constant, _spread, pad as _pad

_F = _C.functional
_DIM_NAMES = {1: ["width"], 2: ["height", "width"], 3: ["depth", "height", "width"]}


def _ntuple(v, n):
    if isinstance(v, int):
        return (v,) * n
    v = tuple(int(e) for e in v)
    return v * n if len(v) == 1 and n > 1 else v


def _fmt(values):
    return " x ".join(str(v) for v in values)


def _resolve_padding(padding, nd, kernel, stride, dilation):
    """(left, right) per spatial dim from an int, a tuple, 'valid' or 'same'."""
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * nd
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        pads = []
        for d, k in zip(dilation, kernel):
            total = d * (k - 1)
            pads.append((total // 2, total - total // 2))
        return pads
    return [(p, p) for p in _ntuple(padding, nd)]


def _check_common(x, w, nd, stride, pads, dilation, groups):
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if w.dim() != nd + 2 or x.dim() != nd + 2:
        raise RuntimeError(f"Expected {w.dim()}-dimensional input for {w.dim()}-dimensional weight {list(w.shape)}, "
                           f"but got {x.dim()}-dimensional input of size {list(x.shape)} instead")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if w.shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {list(w.shape)} instead")
    if w.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size {list(w.shape)} instead")


def _check_conv(x, w, bias, nd, stride, pads, dilation, groups):
    _check_common(x, w, nd, stride, pads, dilation, groups)
    if x.shape[1] != w.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(w.shape)}, expected input{list(x.shape)} to "
                           f"have {w.shape[1] * groups} channels, but got {x.shape[1]} channels instead")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != w.shape[0]):
        raise RuntimeError(f"Given weight of size {list(w.shape)}, expected bias to be 1-dimensional with "
                           f"{w.shape[0]} elements, but got bias of size {list(bias.shape)} instead")
    padded = [x.shape[2 + i] + pads[i][0] + pads[i][1] for i in range(nd)]
    kernel = [dilation[i] * (w.shape[2 + i] - 1) + 1 for i in range(nd)]
    if any(k > p for k, p in zip(kernel, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: ({_fmt(padded)}). Kernel size: "
                           f"({_fmt(kernel)}). Kernel size can't be greater than actual input size")


def _batched(name, input, nd):
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input "
                           f"of size: {list(input.shape)}")
    return input.dim() == nd + 1


def _conv_core(x, w, bias, stride, padding, dilation, groups):
    """Batched convolution over len(stride) in (1, 2, 3) spatial dims with symmetric padding."""
    nd = len(stride)
    if nd == 2:
        return _F.conv2d(x, w, bias, stride, padding, dilation, groups)
    if nd == 1:
        return _F.conv2d(x.unsqueeze(2), w.unsqueeze(2), bias, (1, stride[0]), (0, padding[0]), (1, dilation[0]),
                         groups).squeeze(2)
    # 3-D: per kernel depth plane, conv2d of the depth slices it meets, batched over the output depth
    sd, sh, sw = stride
    pd, ph, pw = padding
    dd, dh, dw = dilation
    if pd:
        x = _pad_constant(x, [0, 0, 0, 0, pd, pd], 0.0)
    n, c, depth = x.shape[0], x.shape[1], x.shape[2]
    kd = w.shape[2]
    out_d = (depth - dd * (kd - 1) - 1) // sd + 1
    out = None
    for i in range(kd):
        xs = x[:, :, i * dd:i * dd + sd * (out_d - 1) + 1:sd]  # (N, C, Do, H, W)
        xs = xs.permute(0, 2, 1, 3, 4).reshape(n * out_d, c, x.shape[3], x.shape[4])
        y = _F.conv2d(xs, w[:, :, i], bias if i == 0 else None, (sh, sw), (ph, pw), (dh, dw), groups)
        out = y if out is None else out + y
    return out.reshape(n, out_d, *out.shape[1:]).permute(0, 2, 1, 3, 4)


def _conv_nd(name, nd, input, weight, bias, stride, padding, dilation, groups):
    unbatched = _batched(name, input, nd)
    x = input.unsqueeze(0) if unbatched else input
    stride, dilation = _ntuple(stride, nd), _ntuple(dilation, nd)
    pads = _resolve_padding(padding, nd, tuple(weight.shape[2:]) if weight.dim() == nd + 2 else (1,) * nd, stride,
                            dilation)
    _check_conv(x, weight, bias, nd, stride, pads, dilation, groups)
    if any(lo != hi for lo, hi in pads):  # 'same' with an even dilated kernel: the extra zero goes on the right
        x = _pad_constant(x, [e for lo, hi in reversed(pads) for e in (0, hi - lo)], 0.0)
    y = _conv_core(x, weight, bias, stride, tuple(lo for lo, _ in pads), dilation, groups)
    return y.squeeze(0) if unbatched else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Convolution over the last dim of (N, C, L) or (C, L); weight (O, C/groups, k)."""
    return _conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Convolution over the last 3 dims of (N, C, D, H, W) or (C, D, H, W); weight (O, C/groups, kd, kh, kw)."""
    return _conv_nd("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _zero_insert(x, dim, s):
    """s - 1 zeros between neighbours along dim."""
    if s == 1 or x.shape[dim] == 0:
        return x
    size = x.shape[dim]
    return _spread(x, dim, [j // s if j % s == 0 else -1 for j in range((size - 1) * s + 1)], size, 0.0)


def _conv_transpose_nd(name, nd, input, weight, bias, stride, padding, output_padding, groups, dilation):
    unbatched = _batched(name, input, nd)
    x = input.unsqueeze(0) if unbatched else input
    stride, padding = _ntuple(stride, nd), _ntuple(padding, nd)
    output_padding, dilation = _ntuple(output_padding, nd), _ntuple(dilation, nd)
    w = weight
    _check_common(x, w, nd, stride, [(p, p) for p in padding], dilation, groups)
    if x.shape[1] != w.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected input{list(x.shape)} to "
                           f"have {w.shape[0]} channels, but got {x.shape[1]} channels instead")
    out_channels = w.shape[1] * groups
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != out_channels):
        raise RuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected bias to be 1-dimensional "
                           f"with {out_channels} elements, but got bias of size {list(bias.shape)} instead")
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)) or any(
            op < 0 for op in output_padding):
        names = _DIM_NAMES[nd]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but got " + " ".join(
            [f"output_padding_{n}: {v}" for n, v in zip(names, output_padding)] +
            [f"stride_{n}: {v}" for n, v in zip(names, stride)] +
            [f"dilation_{n}: {v}" for n, v in zip(names, dilation)]))
    ks = list(w.shape[2:])
    sizes = list(x.shape[2:])
    out = [(sizes[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (ks[i] - 1) + output_padding[i] + 1
           for i in range(nd)]
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size per channel: ({_fmt(sizes)}). Calculated output size per channel: "
                           f"({_fmt(out)}). Output size is too small")
    for i in range(nd):
        x = _zero_insert(x, 2 + i, stride[i])
    pads = []
    for i in reversed(range(nd)):
        edge = dilation[i] * (ks[i] - 1) - padding[i]
        pads += [edge, edge + output_padding[i]]
    if any(pads):
        x = _pad_constant(x, pads, 0.0)
    # (C_in, C_out/g, k...) -> (C_out, C_in/g, k...) per group, kernel flipped
    c_in = w.shape[0]
    w = w.reshape(groups, c_in // groups, w.shape[1], *ks).transpose(1, 2).reshape(out_channels, c_in // groups, *ks)
    w = w.flip(list(range(2, 2 + nd)))
    y = _conv_core(x, w, bias, (1,) * nd, (0,) * nd, dilation, groups)
    return y.squeeze(0) if unbatched else y


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed convolution over the last dim; weight (C_in, C_out/groups, k)."""
    return _conv_transpose_nd("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed convolution over the last 2 dims; weight (C_in, C_out/groups, kh, kw)."""
    return _conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed convolution over the last 3 dims; weight (C_in, C_out/groups, kd, kh, kw)."""
    return _conv_transpose_nd("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


# ---------------------------------------------------------------- modules

class _ConvNd(Module):
    _nd = 1
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, groups, bias,
                 padding_mode, device, dtype):
        super().__init__()
        nd = self._nd
        kernel_size, stride, dilation = _ntuple(kernel_size, nd), _ntuple(stride, nd), _ntuple(dilation, nd)
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'same', 'valid'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _ntuple(padding, nd)
        modes = ("zeros", "reflect", "replicate", "circular")
        if padding_mode not in modes:
            raise ValueError(f"padding_mode must be one of {set(modes)}, but got padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.transposed, self.output_padding = self._transposed, _ntuple(output_padding, nd)
        self.groups, self.padding_mode = groups, padding_mode
        pads = _resolve_padding(padding, nd, kernel_size, stride, dilation)
        self._reversed_padding_repeated_twice = [e for lo, hi in reversed(pads) for e in (lo, hi)]
        factory = {"device": device, "dtype": dtype}
        if self._transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(_C.empty(shape, **factory))
        if bias:
            self.bias = Parameter(_C.empty(out_channels, **factory))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """kaiming_uniform_(a=sqrt(5)) weight, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) bias, as torch."""
        init._reset_weight_and_bias(self.weight, self.bias)

    def extra_repr(self):
        nd = self._nd
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * nd:
            s += f", padding={self.padding!r}" if isinstance(self.padding, str) else f", padding={self.padding}"
        if self.dilation != (1,) * nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, 0, groups, bias,
                         padding_mode, device, dtype)

    def forward(self, input):
        fn = type(self)._fn
        if self.padding_mode != "zeros":
            x = _pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return fn(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """Convolution over (N, C, L): weight (out_channels, in_channels/groups, k), bias (out_channels)."""
    _nd = 1
    _fn = staticmethod(conv1d)


class Conv3d(_Conv):
    """Convolution over (N, C, D, H, W): weight (out_channels, in_channels/groups, kd, kh, kw)."""
    _nd = 3
    _fn = staticmethod(conv3d)


class _ConvTranspose(_ConvNd):
    _transposed = True
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, groups,
                         bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size):
        """torch's rule: the output_padding that makes the output output_size (checked against the valid range)."""
        nd = self._nd
        if output_size is None:
            return self.output_padding
        lead = 2 if input.dim() == nd + 2 else 1
        output_size = [int(s) for s in output_size]
        if len(output_size) == lead + nd:
            output_size = output_size[lead:]
        if len(output_size) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.dim()}D input, output_size must have {nd} or "
                             f"{lead + nd} elements (got {len(output_size)})")
        mins = [(input.shape[lead + d] - 1) * self.stride[d] - 2 * self.padding[d] +
                self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(nd)]
        maxs = [mins[d] + self.stride[d] - 1 for d in range(nd)]
        for d in range(nd):
            if not mins[d] <= output_size[d] <= maxs[d]:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {mins} to "
                                 f"{maxs} (for an input of {list(input.shape[lead:])})")
        return tuple(output_size[d] - mins[d] for d in range(nd))

    def forward(self, input, output_size=None):
        if isinstance(self.padding, str):
            raise ValueError(f"padding={self.padding!r} is not supported for {type(self).__name__}")
        op = self._output_padding(input, output_size)
        return type(self)._fn(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                              self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """Transposed convolution over (N, C, L): weight (in_channels, out_channels/groups, k)."""
    _nd = 1
    _fn = staticmethod(conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """Transposed convolution over (N, C, H, W): weight (in_channels, out_channels/groups, kh, kw)."""
    _nd = 2
    _fn = staticmethod(conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """Transposed convolution over (N, C, D, H, W): weight (in_channels, out_channels/groups, kd, kh, kw)."""
    _nd = 3
    _fn = staticmethod(conv_transpose3d)
