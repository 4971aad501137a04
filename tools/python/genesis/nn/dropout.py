"""Channel-wise and alpha dropout: torch.nn's Dropout1d, Dropout2d, Dropout3d, AlphaDropout and FeatureAlphaDropout
and their functional forms, composed of genesis ops (a Bernoulli mask from the default generator, multiplied in, so
gradients flow through the kept elements and every device works).

As torch: in training each element (or, for the channel-wise forms, each (sample, channel) map) is kept with
probability 1 - p; dropout scales the kept ones by 1 / (1 - p); alpha dropout sets the dropped ones to SELU's
negative saturation and applies the affine map that keeps a zero-mean, unit-variance input so.  In eval, with p = 0
or for an empty input the input itself is returned; with p = 1 the result is input * 0.
"""
import math
import warnings

from genesis import _C
from genesis.nn.modules import Module

_ALPHA = 1.7580993408473766  # SELU's scale * alpha: where alpha dropout sends a dropped element before the affine map


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout(input, p, training, inplace, feature=None, alpha=False):
    """torch's _dropout_impl: one draw per element, or per (sample, channel) map when feature is "batched" (an
    (N, C, ...) input) or "unbatched" (a (C, ...) input)."""
    _check_p(p)
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0.0) if inplace else input * 0.0
    shape = tuple(input.shape)
    if feature is not None:
        lead = 2 if feature == "batched" else 1
        if input.dim() < lead:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = shape[:lead] + (1,) * (input.dim() - lead)
    noise = _C.bernoulli(_C.full(shape, 1.0 - p, dtype=input.dtype, device=input.device))
    if alpha:
        a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
        b = (noise - 1.0) * (_ALPHA * a) + _ALPHA * a * p
        noise = noise * a
        return input.mul_(noise).add_(b) if inplace else input * noise + b
    noise = noise / (1.0 - p)
    return input.mul_(noise) if inplace else input * noise


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes each element with probability p in training and scales the rest by 1 / (1 - p)."""
    _check_p(p)
    if inplace or not training or p in (0, 1) or input.numel() == 0:
        return _dropout(input, p, training, inplace)
    return _C.functional.dropout(input, p, training)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout (for SELU networks): dropped elements go to SELU's saturation, then an affine correction."""
    return _dropout(input, p, training, inplace, alpha=True)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels: one draw per (sample, channel) of an (N, C, ...) input."""
    return _dropout(input, p, training, inplace, "batched", alpha=True)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, L) or (C, L) input with probability p in training (scaled by 1 / (1 - p))."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _dropout(input, p, training, inplace, "batched" if input.dim() == 3 else "unbatched")


def _warn_unusual_dim(spatial, n):
    """torch 1.13's deprecation warning of dropout{spatial}d for an n-D input of neither (C, ...) nor (N, C, ...)."""
    if n in (spatial + 1, spatial + 2):
        return
    name = f"dropout{spatial}d"
    warnings.warn(f"{name}: Received a {n}-D input to {name}, which is deprecated and will result in an error in a "
                  f"future release. To retain the behavior and silence this warning, please use dropout instead. "
                  f"Note that {name} exists to provide channel-wise dropout on inputs with {spatial} spatial "
                  f"dimensions, a channel dimension, and an optional batch dimension (i.e. {spatial + 1}D or "
                  f"{spatial + 2}D inputs).")


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, H, W) input with probability p in training; 3-D input is taken as (N, C, L),
    as torch 1.13 does (with its warning)."""
    _check_p(p)
    n = input.dim()
    _warn_unusual_dim(2, n)
    if n == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.")
    return _dropout(input, p, training, inplace, "batched")


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability p in training."""
    _check_p(p)
    n = input.dim()
    _warn_unusual_dim(3, n)
    return _dropout(input, p, training, inplace, "batched" if n == 5 else "unbatched")


class _DropoutNd(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        _check_p(p)
        self.p, self.inplace = p, inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    """Zeroes whole channels of (N, C, L) / (C, L) input in training (F.dropout1d)."""

    def forward(self, input):
        return dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zeroes whole channels of (N, C, H, W) input in training (F.dropout2d)."""

    def forward(self, input):
        return dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zeroes whole channels of (N, C, D, H, W) / (C, D, H, W) input in training (F.dropout3d)."""

    def forward(self, input):
        return dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Alpha dropout for self-normalising (SELU) networks (F.alpha_dropout)."""

    def forward(self, input):
        return alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels (F.feature_alpha_dropout)."""

    def forward(self, input):
        return feature_alpha_dropout(input, self.p, self.training)
