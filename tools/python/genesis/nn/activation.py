"""Activation layers and their functional forms (torch.nn / torch.nn.functional names and arguments).

Each is composed of differentiable tensor ops, so autograd and every device work; gradients at the
kinks follow torch (e.g. leaky_relu at 0 takes the negative slope, hardtanh's edges get none).
``inplace=True`` writes the result into the input when autograd records nothing about it; an input
that is part of a graph gets a new tensor (a leaf that requires grad is refused, as in torch).
"""
import warnings

from genesis import _C
from genesis.nn import init as _init
from genesis.nn.modules import Module, Parameter

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _result(input, out, inplace):
    """out, or input overwritten with it when inplace=True and no autograd graph involves input."""
    if not inplace:
        return out
    if _C.is_grad_enabled() and input.requires_grad:
        if input.is_leaf:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        return out
    input.copy_(out.detach())
    return input


# ---------------------------------------------------------------- functional forms

def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x."""
    return _result(input, _C.where(input > 0, input, input * negative_slope), inplace)


def leaky_relu_(input, negative_slope=0.01):
    """In-place leaky_relu."""
    return leaky_relu(input, negative_slope, inplace=True)


def prelu(input, weight):
    """leaky_relu with a learnable slope per channel (dim 1) or one shared slope."""
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got ndim = {weight.dim()}")
    n = weight.numel()
    if n != 1:
        channels = input.shape[1] if input.dim() >= 2 else 1
        if n != channels:
            raise RuntimeError("Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{n} and channel size = {channels}.")
        w = weight.reshape(n, *([1] * (input.dim() - 2)))
    else:
        w = weight.reshape(())
    return _C.where(input > 0, input, w * input)


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    neg = input.clamp(max=0.0).expm1() * alpha  # clamped: the unused branch never overflows
    return _result(input, _C.where(input > 0, input, neg), inplace)


def elu_(input, alpha=1.0):
    """In-place elu."""
    return elu(input, alpha, inplace=True)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants."""
    return _result(input, elu(input, _SELU_ALPHA) * _SELU_SCALE, inplace)


def selu_(input):
    """In-place selu."""
    return selu(input, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    neg = (input.clamp(max=0.0) * (1.0 / alpha)).expm1() * alpha
    return _result(input, _C.where(input > 0, input, neg), inplace)


def celu_(input, alpha=1.0):
    """In-place celu."""
    return celu(input, alpha, inplace=True)


def softplus(input, beta=1, threshold=20):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    z = input * beta
    soft = z.clamp(max=threshold).exp().log1p() * (1.0 / beta)
    return _C.where(z > threshold, input, soft)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6 (gradient 1 from x = 3 on, as torch)."""
    out = _C.where(input >= 3.0, input, input * (input + 3.0).clamp(min=0.0) * (1.0 / 6.0))
    return _result(input, out, inplace)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6 (no gradient at or beyond +-3, as torch)."""
    mid = input * (1.0 / 6.0) + 0.5
    out = _C.where(input <= -3.0, 0.0, _C.where(input >= 3.0, 1.0, mid))
    return _result(input, out, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clamped to [min_val, max_val] (no gradient at or beyond the edges, as torch)."""
    out = _C.where(input <= min_val, float(min_val), _C.where(input >= max_val, float(max_val), input))
    return _result(input, out, inplace)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """In-place hardtanh."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """hardtanh(x, 0, 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    return _result(input, input * softplus(input).tanh(), inplace)


def glu(input, dim=-1):
    """a * sigmoid(b), where a and b are the halves of input along dim."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim + input.dim() if dim < 0 else dim
    if d < 0 or d >= input.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.dim()}, {input.dim() - 1}], "
                         f"but got {dim})")
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    a, b = input.chunk(2, d)
    return a * b.sigmoid()


def softsign(input):
    """x / (1 + |x|)."""
    return input / (input.abs() + 1.0)


def tanhshrink(input):
    """x - tanh(x)."""
    return input - input.tanh()


def logsigmoid(input):
    """log(sigmoid(x)), computed without overflow on either side."""
    lo, hi = input.clamp(max=0.0), input.clamp(min=0.0)
    return _C.where(input < 0, lo - lo.exp().log1p(), -((-hi).exp().log1p()))


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return _C.where(input > lambd, input - lambd, _C.where(input < -lambd, input + lambd, 0.0))


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0."""
    return _C.where((input > lambd) | (input < -lambd), input, 0.0)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    return _result(input, _C.where(input > threshold, input, float(value)), inplace)


def threshold_(input, threshold, value):
    """In-place threshold."""
    return _threshold(input, threshold, value, inplace=True)


_threshold = threshold  # the name, for callers whose argument of that name hides it


def _softmax_dim(name, ndim):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as "
                  "an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def relu_(input):
    """In-place relu."""
    return _result(input, input.relu(), True)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """leaky_relu with a slope drawn from U(lower, upper) per element in training, (lower + upper) / 2 otherwise."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    slope = _C.rand(tuple(input.shape), dtype=input.dtype, device=input.device) * (upper - lower) + lower
    return _result(input, _C.where(input > 0, input, input * slope), inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place rrelu."""
    return rrelu(input, lower, upper, training, inplace=True)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along dim."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim())
    x = input if dtype is None else input.to(dtype)
    return (-x).softmax(dim)


# ---------------------------------------------------------------- modules

def _inplace_repr(inplace, sep=", "):
    return sep + "inplace=True" if inplace else ""


class RReLU(Module):
    """rrelu(x, lower, upper): a random negative slope per element in training, the mean slope in eval."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + _inplace_repr(self.inplace)


class Softmax2d(Module):
    """softmax over the channels of (N, C, H, W) or (C, H, W)."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise AssertionError("Softmax2d requires a 3D or 4D tensor as input")
        return input.softmax(-3)


class LeakyReLU(Module):
    """leaky_relu(x, negative_slope)."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + _inplace_repr(self.inplace)


class PReLU(Module):
    """prelu with num_parameters learnable slopes (1, or one per channel), initialised to init."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(_C.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        _init.constant_(self.weight, self.init)

    def forward(self, input):
        return prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class ELU(Module):
    """elu(x, alpha)."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + _inplace_repr(self.inplace)


class CELU(Module):
    """celu(x, alpha)."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return celu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + _inplace_repr(self.inplace)


class SELU(Module):
    """selu(x)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return selu(input, self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace, "")


class Softplus(Module):
    """softplus(x, beta, threshold)."""

    def __init__(self, beta=1, threshold=20):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardswish(Module):
    """hardswish(x)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return hardswish(input, self.inplace)


class Hardsigmoid(Module):
    """hardsigmoid(x)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return hardsigmoid(input, self.inplace)


class Hardtanh(Module):
    """hardtanh(x, min_val, max_val)."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument min_value is deprecated and rename to min_val")
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument max_value is deprecated and rename to max_val")
            max_val = max_value
        if not max_val > min_val:
            raise AssertionError(f"Hardtanh: max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + _inplace_repr(self.inplace)


class ReLU6(Hardtanh):
    """relu6(x) = hardtanh(x, 0, 6)."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace, "")


class Mish(Module):
    """mish(x)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return mish(input, self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace, "")


class GLU(Module):
    """glu(x, dim)."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softsign(Module):
    """softsign(x)."""

    def forward(self, input):
        return softsign(input)


class Tanhshrink(Module):
    """tanhshrink(x)."""

    def forward(self, input):
        return tanhshrink(input)


class LogSigmoid(Module):
    """logsigmoid(x)."""

    def forward(self, input):
        return logsigmoid(input)


class Softshrink(Module):
    """softshrink(x, lambd)."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(Module):
    """hardshrink(x, lambd)."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return hardshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Threshold(Module):
    """threshold(x, threshold, value)."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return _threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + _inplace_repr(self.inplace)


class Softmin(Module):
    """softmin(x, dim)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"

