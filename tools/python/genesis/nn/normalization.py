"""GroupNorm and InstanceNorm1d/2d/3d, and the functional normalize, group_norm and instance_norm
(torch.nn's names, arguments, parameter and buffer names), composed of differentiable tensor ops."""
import math

from genesis import _C
from genesis._grad_mode import no_grad as _no_grad
from genesis.nn.loss import _norm
from genesis.nn.modules import Module, Parameter


def _factory(device, dtype):
    return {"device": device, "dtype": dtype}


def _check_channel_vector(name, t, input, channels):
    if t is not None and (t.dim() != 1 or t.shape[0] != channels):
        raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, but got "
                           f"{name} of shape {list(t.shape)} and input of shape {list(input.shape)}")


def _check_channel_sizes(c, **tensors):
    """Each tensor given (None: absent) must hold c elements, one per channel."""
    for name, t in tensors.items():
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")


def _update_running(running, batch, momentum):
    """running = (1 - momentum) * running + momentum * batch, in place (nothing when running is None)."""
    if running is not None:
        running.copy_(running * (1 - momentum) + batch.to(running.dtype) * momentum)


def _running_stats(running_mean, running_var, stat_shape, dtype):
    """The running statistics shaped to broadcast against the input, in its dtype."""
    return running_mean.reshape(*stat_shape).to(dtype), running_var.reshape(*stat_shape).to(dtype)


def _affine(y, weight, bias):
    shape = (-1,) + (1,) * (y.dim() - 2)
    if weight is not None:
        y = y * weight.reshape(*shape)
    if bias is not None:
        y = y + bias.reshape(*shape)
    return y


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p, eps) along dim."""
    y = input / _norm(input, p, dim, keepdim=True).clamp(min=eps)
    if out is not None:
        with _no_grad():
            out.copy_(y)
        return out
    return y


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalises each of num_groups channel groups of every sample (over the group's channels and all positions)."""
    if input.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{input.dim()}, {input.dim() - 1}], "
                         "but got 1)")
    n, c = input.shape[0], input.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    if n * c // num_groups * math.prod(input.shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{[n * c // num_groups, num_groups] + list(input.shape[2:])}")
    _check_channel_vector("weight", weight, input, c)
    _check_channel_vector("bias", bias, input, c)
    x = input.reshape(n, num_groups, -1)
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False, keepdim=True)
    y = ((x - mean) * (var + eps).rsqrt()).reshape(*input.shape)
    return _affine(y, weight, bias)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalises each channel of each sample over its positions; with use_input_stats and running stats given,
    updates them in place (the batch average of the per-sample statistics, variance unbiased), as torch."""
    shape = tuple(input.shape)
    if use_input_stats and math.prod(shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {shape}")
    c = shape[1]
    _check_channel_sizes(c, running_mean=running_mean, running_var=running_var, weight=weight, bias=bias)
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    dims = tuple(range(2, input.dim()))
    stat_shape = (1, c) + (1,) * len(dims)
    if use_input_stats:
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, unbiased=False, keepdim=True)
        if running_mean is not None or running_var is not None:
            count = math.prod(shape[2:])
            with _no_grad():
                _update_running(running_mean, mean.detach().reshape(shape[0], c).mean(0), momentum)
                _update_running(running_var, (var.detach() * (count / (count - 1))).reshape(shape[0], c).mean(0),
                                momentum)
    else:
        mean, var = _running_stats(running_mean, running_var, stat_shape, input.dtype)
    return _affine((input - mean) * (var + eps).rsqrt(), weight, bias)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalises each channel (dim 1) over the batch and every position: with the batch's statistics in training
    (updating the running ones in place, variance unbiased), with running_mean / running_var otherwise."""
    shape = tuple(input.shape)
    c = shape[1] if len(shape) > 1 else 1
    if training and math.prod(shape) // c == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {shape}")
    _check_channel_sizes(c, running_mean=running_mean, running_var=running_var, weight=weight, bias=bias)
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean must be defined in evaluation mode")
    dims = (0,) + tuple(range(2, input.dim()))
    stat_shape = (1, c) + (1,) * (input.dim() - 2)
    if training:
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, unbiased=False, keepdim=True)
        count = math.prod(shape) // c
        with _no_grad():
            _update_running(running_mean, mean.detach().reshape(c), momentum)
            _update_running(running_var, (var.detach() * (count / (count - 1))).reshape(c), momentum)
    else:
        mean, var = _running_stats(running_mean, running_var, stat_shape, input.dtype)
    return _affine((input - mean) * (var + eps).rsqrt(), weight, bias)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input / (k + alpha * mean of input^2 over a window of size channels)^beta (zero padded across channels)."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    shape = tuple(input.shape)
    c = shape[1]
    sq = input * input
    before, after = size // 2, (size - 1) // 2
    parts = [sq]
    if before:
        parts.insert(0, _C.zeros((shape[0], before) + shape[2:], dtype=input.dtype, device=input.device))
    if after:
        parts.append(_C.zeros((shape[0], after) + shape[2:], dtype=input.dtype, device=input.device))
    padded = _C.cat(parts, 1) if len(parts) > 1 else sq
    total = padded.narrow(1, 0, c)
    for i in range(1, size):
        total = total + padded.narrow(1, i, c)
    return input / (total * (alpha / size) + k).pow(beta)


class LocalResponseNorm(Module):
    """local_response_norm(x, size, alpha, beta, k)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _affine_parameters(module, affine, channels, device, dtype):
    """module.weight (ones) and module.bias (zeros), one per channel, when affine; both registered as None if not."""
    if affine:
        module.weight = Parameter(_C.ones(channels, **_factory(device, dtype)))
        module.bias = Parameter(_C.zeros(channels, **_factory(device, dtype)))
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


class GroupNorm(Module):
    """group_norm over num_groups groups of num_channels channels; weight 1 and bias 0 per channel (affine)."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        _affine_parameters(self, affine, num_channels, device, dtype)

    def reset_parameters(self):
        if self.affine:
            with _no_grad():
                self.weight.fill_(1.0)
                self.bias.zero_()

    def forward(self, input):
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class _InstanceNorm(Module):
    _no_batch_dim = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        _affine_parameters(self, affine, num_features, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", _C.zeros(num_features, **_factory(device, dtype)))
            self.register_buffer("running_var", _C.ones(num_features, **_factory(device, dtype)))
            self.register_buffer("num_batches_tracked", _C.tensor(0, dtype=_C.dtype.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        if self.track_running_stats:
            with _no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            with _no_grad():
                self.weight.fill_(1.0)
                self.bias.zero_()

    def forward(self, input):
        nb = self._no_batch_dim
        if input.dim() not in (nb, nb + 1):
            raise ValueError(f"expected {nb}D or {nb + 1}D input (got {input.dim()}D input)")
        if input.dim() == nb:
            return self._normalize(input.unsqueeze(0)).squeeze(0)
        return self._normalize(input)

    def _normalize(self, input):
        return instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                             self.training or not self.track_running_stats, self.momentum, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """instance_norm of (N, C, L) or (C, L); no affine and no running statistics by default, as torch."""
    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """instance_norm of (N, C, H, W) or (C, H, W); no affine and no running statistics by default, as torch."""
    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """instance_norm of (N, C, D, H, W) or (C, D, H, W); no affine and no running statistics by default, as torch."""
    _no_batch_dim = 4
