"""The layers and losses of genesis.nn, with torch.nn's names, arguments, parameter names and
initialisation (drawn from the default generator, as the C++ layers do).

Most are a few lines over genesis.nn.functional; BatchNorm and MultiheadAttention wrap the C++
layers (CppLayer), whose running statistics and packed projections they share.
"""
import math

from genesis import _C
from genesis._grad_mode import no_grad as _no_grad
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
        init._reset_weight_and_bias(self.weight, self.bias)

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
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s if self.padding_idx is None else s + f", padding_idx={self.padding_idx}"


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


# ---------------------------------------------------------------- activations

class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return F.relu(x)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    def forward(self, x):
        return F.silu(x)


class Tanh(Module):
    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    def forward(self, x):
        return F.sigmoid(x)


class _SoftmaxNd(Module):
    """_fn(x, dim) as a module; dim None means the last dim."""

    _fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, x):
        return type(self)._fn(x, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxNd):
    _fn = staticmethod(F.softmax)


class LogSoftmax(_SoftmaxNd):
    _fn = staticmethod(F.log_softmax)


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
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.weight is not None}"


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
        object.__setattr__(self, "_options", (eps, momentum, affine, track_running_stats))

    # fixed when the C++ layer is built (read-only here)
    eps = property(lambda self: self._options[0])
    momentum = property(lambda self: self._options[1])
    affine = property(lambda self: self._options[2])
    track_running_stats = property(lambda self: self._options[3])

    def reset_running_stats(self):
        self._impl.reset_running_stats()

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


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
        init._reset_weight_and_bias(self.weight, self.bias)

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0, 0):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)

    def extra_repr(self):
        stride = self.kernel_size if self.stride is None else self.stride
        return (f"kernel_size={self.kernel_size}, stride={stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self):
        stride = self.kernel_size if self.stride is None else self.stride
        return f"kernel_size={self.kernel_size}, stride={stride}, padding={self.padding}"


# ---------------------------------------------------------------- attention

def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """torch's checks of query/key/value and mask ranks; True when the input is batched."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                                 f"{attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                     f"found {attn_mask.dim()}-D tensor instead")
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {tuple(attn_mask.shape)}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query tensor")


def _check_mask_dtypes(key_padding_mask, attn_mask):
    if key_padding_mask is not None and key_padding_mask.dtype != _C.dtype.bool and \
            not key_padding_mask.is_floating_point():
        raise AssertionError("only bool and floating types of key_padding_mask are supported")
    if attn_mask is not None and attn_mask.dtype != _C.dtype.bool and not attn_mask.is_floating_point():
        raise AssertionError(f"Only float, byte, and bool types are supported for attn_mask, not {attn_mask.dtype}")


def _additive(mask, dtype):
    """A bool mask (True = masked) as 0 / -inf of dtype; a float mask as it is."""
    if mask.dtype == _C.dtype.bool:
        return _C.zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))
    return mask


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """torch.nn.functional.multi_head_attention_forward on (L, N, E) / (S, N, E) inputs (or unbatched (L, E))."""
    return _attention(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v,
                      add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training, key_padding_mask,
                      need_weights, attn_mask, use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight,
                      static_k, static_v, average_attn_weights, is_causal, batch_first=False)


def _attention(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v,
               add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training, key_padding_mask, need_weights,
               attn_mask, use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, static_k, static_v,
               average_attn_weights, is_causal, batch_first):
    """multi_head_attention_forward's sums, worked in (N, T, E) order whatever the inputs' layout."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    _check_mask_dtypes(key_padding_mask, attn_mask)
    if not is_batched:
        query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    elif not batch_first:
        query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
    bsz, tgt_len, embed_dim = query.shape
    src_len = key.shape[1]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                                 f"{tuple(value.shape[:2])}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")

    # input projections
    if in_proj_bias is None:
        b_q = b_k = b_v = None
    else:
        b_q, b_k, b_v = (in_proj_bias.narrow(0, i * embed_dim, embed_dim) for i in range(3))
    if use_separate_proj_weight:
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
    else:
        w_q, w_k, w_v = (in_proj_weight.narrow(0, i * embed_dim, embed_dim) for i in range(3))
    q, k, v = F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
            raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                               f"{(bsz * num_heads, tgt_len, src_len)}.")
    if is_causal and attn_mask is None:
        attn_mask = _C.ones((tgt_len, src_len), dtype=_C.dtype.bool, device=query.device).triu(1).unsqueeze(0)

    def pad_masks(attn_mask, key_padding_mask):
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
        return attn_mask, key_padding_mask

    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key.")
        k = _C.cat([k, bias_k.reshape(1, 1, embed_dim).expand(bsz, 1, embed_dim)], 1)
        v = _C.cat([v, bias_v.reshape(1, 1, embed_dim).expand(bsz, 1, embed_dim)], 1)
        attn_mask, key_padding_mask = pad_masks(attn_mask, key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must be given together")

    def heads(t):  # (N, T, E) -> (N*H, T, D), batch b and head h at b*H + h as torch
        return t.reshape(bsz, t.shape[1], num_heads, head_dim).transpose(1, 2).reshape(bsz * num_heads, t.shape[1],
                                                                                       head_dim)
    q = heads(q)
    k = heads(k) if static_k is None else static_k
    v = heads(v) if static_v is None else static_v
    if add_zero_attn:
        zeros = _C.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k, v = _C.cat([k, zeros], 1), _C.cat([v, zeros], 1)
        attn_mask, key_padding_mask = pad_masks(attn_mask, key_padding_mask)
    src_len = k.shape[1]

    if attn_mask is not None:
        attn_mask = _additive(attn_mask, q.dtype)
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        # laid out in full (N*H, L, S), so that adding it broadcasts over leading dims only
        kpm = _additive(key_padding_mask, q.dtype).reshape(bsz, 1, 1, src_len)
        kpm = kpm.expand(bsz, num_heads, tgt_len, src_len).reshape(bsz * num_heads, tgt_len, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0

    scores = _C.bmm(q / math.sqrt(head_dim), k.transpose(-2, -1))
    if attn_mask is not None:
        scores = scores + attn_mask
    weights = F.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = F.dropout(weights, dropout_p, True)
    out = _C.bmm(weights, v).reshape(bsz, num_heads, tgt_len, head_dim).transpose(1, 2)
    out = F.linear(out.reshape(bsz, tgt_len, embed_dim), out_proj_weight, out_proj_bias)
    if not is_batched:
        out = out.squeeze(0)
    elif not batch_first:
        out = out.transpose(0, 1)
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.sum(1) / num_heads
    return out, (weights if is_batched else weights.squeeze(0))


def _rebuild_mha(cls, config, state, training):
    """Unpickles a MultiheadAttention: the layer rebuilt from its configuration, then its state loaded."""
    with _C._RngFork(None, True):
        m = cls(**config)
    m._restore(state, training)
    return m


def _pad_last(mask):
    """One more key column, not masked (False / 0), as torch's pad(mask, (0, 1))."""
    extra = _C.zeros(tuple(mask.shape[:-1]) + (1,), dtype=mask.dtype, device=mask.device)
    return _C.cat([mask, extra], -1)


class MultiheadAttention(CppLayer):
    """torch.nn.MultiheadAttention (in_proj_weight, in_proj_bias, out_proj; q/k/v_proj_weight when kdim or vdim
    differ; bias_k, bias_v).  On accelerators, without attention weights or dropout, it runs the C++ layer on the
    fused attention op; otherwise multi_head_attention_forward.  forward returns (output, weights or None)."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        if (embed_dim // num_heads) * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        super().__init__(_C.nn.MultiheadAttention(embed_dim, num_heads, dropout, bias, batch_first))
        kdim = embed_dim if kdim is None else kdim
        vdim = embed_dim if vdim is None else vdim
        config = dict(embed_dim=embed_dim, num_heads=num_heads, dropout=dropout, bias=bias, add_bias_kv=add_bias_kv,
                      add_zero_attn=add_zero_attn, kdim=kdim, vdim=vdim, batch_first=batch_first)
        for k, v in config.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "head_dim", embed_dim // num_heads)
        object.__setattr__(self, "_qkv_same_embed_dim", kdim == embed_dim and vdim == embed_dim)
        self._parameters.setdefault("in_proj_bias", None)
        if not self._qkv_same_embed_dim:  # separate projections, initialised as torch's
            params = self._parameters
            bias_t = params.pop("in_proj_bias", None)
            params.pop("in_proj_weight")
            self.register_parameter("in_proj_weight", None)
            for name, width in (("q_proj_weight", embed_dim), ("k_proj_weight", kdim), ("v_proj_weight", vdim)):
                self.register_parameter(name, Parameter(_C.empty(embed_dim, width)))
                init.xavier_uniform_(params[name])
            params["in_proj_bias"] = bias_t
        if add_bias_kv:
            self.bias_k = Parameter(_C.empty(1, 1, embed_dim))
            self.bias_v = Parameter(_C.empty(1, 1, embed_dim))
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)
        else:
            self.register_parameter("bias_k", None)
            self.register_parameter("bias_v", None)
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype)

    def __deepcopy__(self, memo):
        """A new layer with the same configuration and copies of the parameters (the RNG is left as it was)."""
        with _C._RngFork(None, True):
            new = type(self)(**self._config)
        memo[id(self)] = new
        new._restore(self.state_dict(), self.training)
        params = dict(new.named_parameters())
        for name, p in self.named_parameters():
            params[name].requires_grad_(p.requires_grad)
        return new

    def _restore(self, state, training):
        ref = state["out_proj.weight"]
        self.to(device=ref.device, dtype=ref.dtype)
        self.load_state_dict(state)
        self.train(training)

    def __reduce_ex__(self, protocol):
        return _rebuild_mha, (type(self), self._config, self.state_dict(), self.training)

    def forward(self, query, key=None, value=None, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        key = query if key is None else key
        value = key if value is None else value
        is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, self.num_heads)
        _check_mask_dtypes(key_padding_mask, attn_mask)
        if is_batched:
            t = 1 if self.batch_first else 0
            n, L, S = query.shape[1 - t], query.shape[t], key.shape[t]
        else:
            n, L, S = 1, query.shape[0], key.shape[0]
        # The fused attention op pays off on accelerators; on the cpu backend bmm + softmax measured several times
        # faster (forward and backward), so cpu tensors take the composition.
        fused = (query.device.type != "cpu" and not need_weights and not (self.training and self.dropout > 0)
                 and self._qkv_same_embed_dim and self.bias_k is None and not self.add_zero_attn
                 and query.shape[-1] == self.embed_dim
                 and key.shape[-1] == self.embed_dim and tuple(key.shape) == tuple(value.shape)
                 and (attn_mask is None or tuple(attn_mask.shape) in ((L, S), (n * self.num_heads, L, S)))
                 and (key_padding_mask is None or tuple(key_padding_mask.shape) == ((n, S) if is_batched else (S,))))
        if fused:
            return self._impl.attend(query, key, value, key_padding_mask, False, attn_mask, is_causal), None
        return _attention(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj._parameters.get("bias"),
            self.training, key_padding_mask, need_weights, attn_mask, not self._qkv_same_embed_dim,
            self._parameters.get("q_proj_weight"), self._parameters.get("k_proj_weight"),
            self._parameters.get("v_proj_weight"), None, None, average_attn_weights, is_causal, self.batch_first)


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
