"""The layers and losses of genesis.nn, with torch.nn's names, arguments, parameter names and
initialisation (drawn from the default generator, as the C++ layers do).

Most are a few lines over genesis.nn.functional; BatchNorm and MultiheadAttention wrap the C++
layers (CppLayer), whose running statistics and packed projections they share.
"""
import math

from genesis import _C
from genesis.nn import functional as F
from genesis.nn import init
from genesis.nn.modules import CppLayer, Module, Parameter


def _factory(device, dtype):
    return {"device": device, "dtype": dtype}


# ---------------------------------------------------------------- linear, embedding

class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Linear(Module):
    """y = x W^T + b; weight (out_features, in_features), bias (out_features)."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(_C.empty(out_features, in_features, **_factory(device, dtype)))
        self.bias = Parameter(_C.empty(out_features, **_factory(device, dtype))) if bias else None
        if not bias:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))  # U(-1/sqrt(in), 1/sqrt(in)), as torch
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """Rows of weight (num_embeddings, embedding_dim) picked by integer ids; N(0, 1) init."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        self.padding_idx = padding_idx
        self.weight = Parameter(_C.empty(num_embeddings, embedding_dim, **_factory(device, dtype)))
        init.normal_(self.weight)
        if padding_idx is not None:
            with _no_grad():
                self.weight[padding_idx] = 0.0
            p = padding_idx

            def no_padding_grad(g):  # the padding row gets no gradient, as in torch
                g = g.clone()
                g[p] = 0.0
                return g

            self.weight.register_hook(no_padding_grad)

    def forward(self, ids):
        return F.embedding(ids, self.weight)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"


class _no_grad:
    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C.set_grad_enabled(False)

    def __exit__(self, *exc):
        _C.set_grad_enabled(self.prev)


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)


# ---------------------------------------------------------------- activations

class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()

    def forward(self, x):
        return F.relu(x)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, approximate=self.approximate)


class SiLU(Module):
    def forward(self, x):
        return F.silu(x)


class Tanh(Module):
    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    def forward(self, x):
        return F.sigmoid(x)


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, x):
        return F.softmax(x, self.dim)


class LogSoftmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, x):
        return F.log_softmax(x, self.dim)


# ---------------------------------------------------------------- normalisation

class LayerNorm(Module):
    """Normalises over the trailing normalized_shape dims; weight 1, bias 0."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        if elementwise_affine:
            self.weight = Parameter(_C.ones(self.normalized_shape, **_factory(device, dtype)))
            if bias:
                self.bias = Parameter(_C.zeros(self.normalized_shape, **_factory(device, dtype)))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}"


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) * weight over the last dim (eps None = the dtype's epsilon)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        if elementwise_affine:
            self.weight = Parameter(_C.ones(self.normalized_shape, **_factory(device, dtype)))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)


class _BatchNorm(CppLayer):
    _cpp = None

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True):
        super().__init__(self._cpp(num_features, eps, momentum, affine, track_running_stats))
        object.__setattr__(self, "num_features", num_features)

    def reset_running_stats(self):
        self._impl.reset_running_stats()


class BatchNorm1d(_BatchNorm):
    """Batch statistics per channel of (N, C) or (N, C, L) in training, running ones in eval."""
    _cpp = _C.nn.BatchNorm1d


class BatchNorm2d(_BatchNorm):
    """Batch statistics per channel of (N, C, H, W) in training, running ones in eval."""
    _cpp = _C.nn.BatchNorm2d


# ---------------------------------------------------------------- convolution, pooling

def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


class Conv2d(Module):
    """x (N, C, H, W) * weight (O, C/groups, kh, kw) + bias (O)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError("Conv2d: only padding_mode='zeros' is supported")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _pair(kernel_size), _pair(stride)
        self.padding, self.dilation, self.groups = _pair(padding), _pair(dilation), groups
        kh, kw = self.kernel_size
        self.weight = Parameter(_C.empty(out_channels, in_channels // groups, kh, kw, **_factory(device, dtype)))
        if bias:
            self.bias = Parameter(_C.empty(out_channels, **_factory(device, dtype)))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * self.kernel_size[0] * self.kernel_size[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)


# ---------------------------------------------------------------- attention

class MultiheadAttention(CppLayer):
    """torch.nn.MultiheadAttention on the fused attention op (in_proj_weight, in_proj_bias, out_proj).
    forward returns (output, None): attention weights are never formed."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, batch_first=False):
        super().__init__(_C.nn.MultiheadAttention(embed_dim, num_heads, dropout, bias, batch_first))
        object.__setattr__(self, "embed_dim", embed_dim)
        object.__setattr__(self, "num_heads", num_heads)
        object.__setattr__(self, "batch_first", batch_first)

    def forward(self, query, key=None, value=None, key_padding_mask=None, need_weights=False, attn_mask=None,
                is_causal=False):
        key = query if key is None else key
        value = key if value is None else value
        out = self._impl.attend(query, key, value, key_padding_mask, need_weights, attn_mask, is_causal)
        return out, None


# ---------------------------------------------------------------- losses

class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction


class CrossEntropyLoss(_Loss):
    """Logits (N, C[, d...]) against class ids (N[, d...]) or class probabilities."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        self.register_buffer("weight", weight)  # class weights (C), as torch's _WeightedLoss
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)


class NLLLoss(_Loss):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class MSELoss(_Loss):
    def forward(self, input, target):
        return F.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, self.reduction)


class BCELoss(_Loss):
    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction)
        self.register_buffer("weight", weight)  # broadcast over each element's loss

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.pos_weight = pos_weight

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction, self.pos_weight)
