"""Losses and distances beyond the core ones, with torch.nn's names, arguments and reductions
('none' | 'mean' | 'sum'; size_average= and reduce= are read as torch reads them).

Each is composed of differentiable tensor ops, so autograd and every device work. ctc_loss runs the
log-space forward (alpha) recursion over time and gets its gradient by autograd through it; that
gradient is the exact one with respect to log_probs (torch's own kernel adds exp(log_probs), which
cancels through a log_softmax: the gradients with respect to the logits are the same).
"""
import math
import warnings
from collections.abc import Sequence

from genesis import _C
from genesis._C import Tensor
from genesis.nn.activation import logsigmoid
from genesis.nn.modules import Module

_NEG_INF = float("-inf")


# ---------------------------------------------------------------- helpers

def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy(size_average, reduce, reduction):
    """The reduction that size_average= and reduce= (deprecated, as in torch) stand for."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
                  stacklevel=3)
    return reduction


def _reduce(loss, reduction):
    _check_reduction(reduction)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _broadcast_shape(a, b):
    """Broadcasts two shapes, with torch's message when they cannot be."""
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton "
                               f"dimension {i}")
    return tuple(max(x, y) if min(x, y) != 0 else 0 for x, y in zip(a, b))


def _warn_target_size(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({tuple(target.shape)}) that is different to the input size "
                      f"({tuple(input.shape)}). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)
    _broadcast_shape(input.shape, target.shape)


def _norm(x, p, dim, keepdim):
    """x.norm(p, dim) whose gradient is 0 (as torch's) rather than NaN where the whole slice is 0; p may be inf,
    -inf or 0 (the count of non-zeros, without gradient)."""
    if p == math.inf:
        return x.abs().amax(dim, keepdim=keepdim)
    if p == -math.inf:
        return x.abs().amin(dim, keepdim=keepdim)
    if p == 0:
        return (x != 0).to(x.dtype).sum(dim, keepdim=keepdim) + (x * 0.0).sum(dim, keepdim=keepdim)
    zero = x.abs().amax(dim, keepdim=True) == 0
    n = _C.where(zero, 1.0, x).norm(p, dim, keepdim=True)
    n = _C.where(zero, 0.0, n)
    return n if keepdim else n.squeeze(dim)


def _lse(x, dim):
    """logsumexp along dim, -inf where every entry is -inf, with a finite (zero) gradient there."""
    m = x.amax(dim, keepdim=True).detach()
    finite = m.isfinite()
    m = _C.where(finite, m, 0.0)
    s = (x - m).exp().sum(dim, keepdim=True)
    return _C.where(finite, _C.where(finite, s, 1.0).log() + m, _NEG_INF).squeeze(dim)


# ---------------------------------------------------------------- distances

def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps over the last dim (inputs broadcast)."""
    _broadcast_shape(x1.shape, x2.shape)
    d = x1 - x2 + eps
    if d.dim() == 0:
        d = d.reshape(1)
        out = _norm(d, p, 0, keepdim=False)
        return out.reshape(1) if keepdim else out
    return _norm(d, p, d.dim() - 1, keepdim)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """<x1, x2> / (max(||x1||, eps) * max(||x2||, eps)) along dim (inputs broadcast)."""
    if not (x1.is_floating_point() or x2.is_floating_point()):
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {x1.dtype}")
    shape = _broadcast_shape(x1.shape, x2.shape)

    def unit(x):
        # torch clamps the norm in place after computing it: the value is max(||x||, eps) and its gradient
        # x / max(||x||, eps) (the norm's, evaluated at the clamped value)
        n = x.detach().norm(2, dim, keepdim=True).clamp(min=eps)
        half_sq = (x * x).sum(dim, keepdim=True) * 0.5 / n
        return x / (n + (half_sq - half_sq.detach()))

    return (unit(x1.expand(*shape)) * unit(x2.expand(*shape))).sum(dim)


def pdist(input, p=2):
    """The p-norm distances between the rows of input (N, M), pairs i < j in row-major order: N (N - 1) / 2."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    first = [i for i in range(n) for _ in range(i + 1, n)]
    second = [j for i in range(n) for j in range(i + 1, n)]
    if not first:
        return _C.zeros(0, dtype=input.dtype, device=input.device)
    idx = _C.tensor([first, second], dtype=_C.dtype.int64, device=input.device)
    return _norm(input.index_select(0, idx[0]) - input.index_select(0, idx[1]), p, 1, keepdim=False)


class PairwiseDistance(Module):
    """pairwise_distance(x1, x2, p, eps, keepdim)."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """cosine_similarity(x1, x2, dim, eps)."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return cosine_similarity(x1, x2, self.dim, self.eps)


# ---------------------------------------------------------------- regression losses

def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target); beta=0 is l1."""
    _warn_target_size(input, target)
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = input - target
    z = d.abs()
    loss = z if beta == 0 else _C.where(z < beta, d * d * (0.5 / beta), z - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta) (d = input - target)."""
    _warn_target_size(input, target)
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = input - target
    z = d.abs()
    return _reduce(_C.where(z < delta, d * d * 0.5, (z - 0.5 * delta) * delta), reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log(target) - input) (input holds log-probabilities); reduction may also be 'batchmean'."""
    if size_average is not None or reduce is not None:
        reduction = _legacy(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.")
    if reduction != "batchmean":
        _check_reduction(reduction)
    _broadcast_shape(input.shape, target.shape)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # xlogy(t, t): 0 where t == 0 (with a zero gradient there), NaN for t < 0, as torch
        zero = target == 0
        loss = _C.where(zero, 0.0, target * _C.where(zero, 1.0, target).log()) - target * input
    if reduction == "batchmean":
        out = loss.sum()
        return out / input.shape[0] if input.dim() != 0 else out
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(input) - target * input (log_input), else input - target * log(input + eps); full adds Stirling's term."""
    reduction = _legacy(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    _broadcast_shape(input.shape, target.shape)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        big = target > 1
        t = _C.where(big, target, 2.0)
        stirling = t * t.log() - t + (t * (2 * math.pi)).log() * 0.5
        loss = loss + _C.where(big, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) if full)."""
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    # torch clamps var outside autograd: the value is clamped, the gradient is var's
    var = var + (var.clamp(min=eps) - var).detach()
    loss = (var.log() + (input - target) ** 2 / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# ---------------------------------------------------------------- margin and embedding losses

def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    td = target.dim()
    if td not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if td == 1 and (input1.dim() != 2 or input2.dim() != 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    if td == 0 and (input1.dim() != 1 or input2.dim() != 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    _broadcast_shape(input1.shape, input2.shape)
    eps = 1e-12
    prod = (input1 * input2).sum(td)
    mag1 = (input1 * input1).sum(td) + eps
    mag2 = (input2 * input2).sum(td) + eps
    cos = prod / (mag1 * mag2).sqrt()
    _broadcast_shape(cos.shape, target.shape)
    loss = (_C.where(target == 1, 1.0 - cos, 0.0) +
            _C.where(target == -1, (cos - margin).clamp(min=0.0), 0.0))
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin)."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {tuple(input1.shape)}, input2: {tuple(input2.shape)}, "
                           f"target: {tuple(target.shape)} ")
    _broadcast_shape(_broadcast_shape(input1.shape, input2.shape), target.shape)
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0.0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """x where target is 1, max(0, margin - x) where it is -1."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    _broadcast_shape(input.shape, target.shape)
    loss = (_C.where(target != 1, (margin - input).clamp(min=0.0), 0.0) + _C.where(target != -1, input, 0.0))
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input))."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    _broadcast_shape(input.shape, target.shape)
    return _reduce((-input * target).exp().log1p(), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Mean over classes of -(y log sigmoid(x) + (1 - y) log sigmoid(-x)), weighted per class."""
    reduction = _legacy(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Mean over classes j != y of (weight[y]) max(0, margin - x[y] + x[j])^p, p 1 or 2 (multi-class hinge)."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    n, c = x.shape
    y = target.reshape(-1).to(_C.dtype.int64)
    if y.shape[0] != n or target.dim() > 1 or (input.dim() == 2 and target.dim() != 1):
        raise RuntimeError(f"inconsistent target size, got: {list(target.shape)}")
    if n and (y.min().item() < 0 or y.max().item() >= c):
        raise RuntimeError("target out of range")
    z = (x - x.gather(1, y.reshape(n, 1)) + margin).clamp(min=0.0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, y).reshape(n, 1)
    z = _C.where(_C.arange(c, device=x.device) == y.reshape(n, 1), 0.0, z)
    loss = z.sum(1) / c
    if input.dim() != 2:
        loss = loss.reshape(*target.shape)
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Mean over classes of the hinges 1 - (x[j] - x[k]) between each target j (target's entries up to the first
    -1) and each non-target k."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape) or input.dim() > 2:
        raise RuntimeError(f"inconsistent size {list(target.shape)} for argument #2 'target'")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    n, c = x.shape
    counts = []
    for row in target.reshape(n, c).tolist():
        cnt = [0] * c
        for j in row:
            if j < 0:
                break
            if j >= c:
                raise RuntimeError("argument #2 'target' is out of range")
            cnt[j] += 1
        counts.append(cnt)
    cnt = _C.tensor(counts, dtype=x.dtype, device=x.device).reshape(n, c)
    weight = cnt.unsqueeze(2) * (cnt == 0).to(x.dtype).unsqueeze(1)  # (n, target j, non-target k)
    hinge = (1.0 - x.unsqueeze(2) + x.unsqueeze(1)).clamp(min=0.0)
    loss = (hinge * weight).sum((1, 2)) / c
    if input.dim() != 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(0, d(a, p) - d(a, n) + margin) with the p-norm pairwise distance; swap uses min(d(a, n), d(p, n))."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    a, po, n = anchor.dim(), positive.dim(), negative.dim()
    if not a == po == n:
        raise RuntimeError(f"All inputs should have same dimension but got {a}D, {po}D and {n}D inputs.")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp(min=0.0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """triplet_margin_loss with any distance function (pairwise_distance by default)."""
    _check_reduction(reduction)
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp(min=0.0), reduction)


# ---------------------------------------------------------------- CTC

def _lengths(v, n, name):
    if isinstance(v, Tensor):
        if v.is_floating_point() or v.dtype == _C.dtype.bool:
            raise RuntimeError(f"{name} must be integral")
        vals = [int(x) for x in v.reshape(-1).tolist()]
    elif isinstance(v, int):
        vals = [v]
    elif isinstance(v, Sequence):
        vals = [int(x) for x in v]
    else:
        raise TypeError(f"ctc_loss: {name} must be a tensor or a sequence of ints, not {type(v).__name__}")
    if len(vals) != n:
        raise RuntimeError(f"{name} must be of size batch_size")
    return vals


def _shift(x, k, fill):
    """x moved k places right along dim 1, the first k filled with fill."""
    n, length = x.shape
    pad = _C.full((n, min(k, length)), fill, dtype=x.dtype, device=x.device)
    return pad if k >= length else _C.cat([pad, x[:, :length - k]], 1)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist temporal classification: -log of the summed probability of every alignment of each target.

    log_probs (T, N, C) or (T, C); targets (N, S) padded or (sum(target_lengths),) concatenated; the lengths as
    tensors or sequences.  'mean' divides each loss by its target length, then averages over the batch.
    """
    _check_reduction(reduction)
    if log_probs.dim() not in (2, 3):
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.dim() + (log_probs.dim() != 3)}"
                           "-dimensional tensor for argument #1 'log_probs' (while checking arguments for ctc_loss)")
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    out_dtype = lp.dtype
    if lp.dtype in (_C.dtype.float16, _C.dtype.bfloat16):
        lp = lp.to(_C.dtype.float32)
    T, N, C = lp.shape
    dev = lp.device
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    il = _lengths(input_lengths, N, "input_lengths")
    tl = _lengths(target_lengths, N, "target_lengths")
    for name, vals, hi in (("target_lengths", tl, None), ("input_lengths", il, T)):
        for v in vals:
            if v < 0:
                raise RuntimeError(f"Expected {name} to have value at least 0, but got value {v} "
                                   "(while checking arguments for ctc_loss)")
            if hi is not None and v > hi:
                raise RuntimeError(f"Expected {name} to have value at most {hi}, but got value {v} "
                                   "(while checking arguments for ctc_loss)")
    S = max(tl) if tl else 0
    tg = targets.to(_C.dtype.int64)
    if tg.device != dev:
        tg = tg.to(dev)
    if tg.dim() == 1:  # concatenated
        total = sum(tl)
        if tg.shape[0] != total:
            raise RuntimeError(f"Expected tensor to have size {total} at dimension 0, but got size {tg.shape[0]} "
                               "for argument #2 'targets' (while checking arguments for ctc_loss)")
        rows, off = [], 0
        for n in tl:
            rows.append(_C.cat([tg[off:off + n], _C.full((S - n,), blank, dtype=tg.dtype, device=dev)]))
            off += n
        tg = _C.stack(rows) if rows else _C.zeros(0, S, dtype=tg.dtype, device=dev)
    elif tg.dim() == 2:
        if tg.shape[0] != N:
            raise RuntimeError(f"Expected tensor to have size {N} at dimension 0, but got size {tg.shape[0]} "
                               "for argument #2 'targets' (while checking arguments for ctc_loss)")
        if tg.shape[1] < S:
            raise RuntimeError(f"Expected tensor to have size at least {S} at dimension 1, but got size "
                               f"{tg.shape[1]} for argument #2 'targets' (while checking arguments for ctc_loss)")
        tg = tg[:, :S]
    else:
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {tg.dim()}-dimensional tensor for argument #2 "
                           "'targets' (while checking arguments for ctc_loss)")
    tl_t = _C.tensor(tl, dtype=_C.dtype.int64, device=dev).reshape(N, 1)
    il_t = _C.tensor(il, dtype=_C.dtype.int64, device=dev).reshape(N, 1)
    # the extended labels l' = (blank, l1, blank, l2, ..., blank), padding positions made blank
    tg = _C.where(_C.arange(S, device=dev) < tl_t, tg, blank)
    L = 2 * S + 1
    ext = _C.stack([_C.full((N, S), blank, dtype=tg.dtype, device=dev), tg], 2).reshape(N, 2 * S)
    ext = _C.cat([ext, _C.full((N, 1), blank, dtype=tg.dtype, device=dev)], 1)
    skip = (ext != blank) & (ext != _shift(ext, 2, -1))  # s - 2 -> s is allowed between different labels
    em = lp.gather(2, ext.unsqueeze(0).expand(T, N, L))  # (T, N, L): log p_t(l'_s)
    T_run = max(il) if il else 0
    alpha = _C.where(_C.arange(L, device=dev) < 2, em[0], _NEG_INF) if T > 0 else None
    ragged = any(v != T_run for v in il)
    pad = _C.full((N, 2), _NEG_INF, dtype=lp.dtype, device=dev)
    for t in range(1, T_run):
        a = alpha
        shifted = _C.cat([pad, a], 1)  # alpha(s - 1) and alpha(s - 2) as slices
        step = _lse(_C.stack([a, shifted[:, 1:L + 1], _C.where(skip, shifted[:, :L], _NEG_INF)]), 0)
        alpha = step + em[t]
        if ragged:  # past its input length a sequence keeps its last alpha
            alpha = _C.where(il_t > t, alpha, a)
    if alpha is None:
        alpha = _C.full((N, L), _NEG_INF, dtype=lp.dtype, device=dev)
    last = _C.cat([tl_t * 2, (tl_t * 2 - 1).clamp(min=0)], 1)
    ends = _C.where(_C.cat([tl_t >= 0, tl_t > 0], 1), alpha.gather(1, last), _NEG_INF)
    loss = -_lse(ends, 1)
    if any(v == 0 for v in il):  # no frames: only the empty target is possible
        empty = _C.where(tl_t.reshape(N) == 0, _C.zeros(N, dtype=loss.dtype, device=dev), float("inf"))
        loss = _C.where(il_t.reshape(N) == 0, empty, loss)
    if zero_infinity:
        loss = _C.where(loss.isinf(), 0.0, loss)
    loss = loss.to(out_dtype)
    if reduction == "mean":
        return (loss / tl_t.reshape(N).clamp(min=1).to(loss.dtype)).mean()
    if reduction == "sum":
        return loss.sum()
    return loss if batched else loss.squeeze(0)


# ---------------------------------------------------------------- modules

class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.reduction = _legacy(size_average, reduce, reduction)


class SmoothL1Loss(_Loss):
    """smooth_l1_loss(input, target, beta)."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """huber_loss(input, target, delta)."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """kl_div(input, target, log_target) with reduction 'none' | 'mean' | 'sum' | 'batchmean'."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class PoissonNLLLoss(_Loss):
    """poisson_nll_loss(input, target, log_input, full, eps)."""

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return poisson_nll_loss(log_input, target, self.log_input, self.full, eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """gaussian_nll_loss(input, target, var, full, eps)."""

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class _PairMarginLoss(_Loss):
    """_fn(input1, input2, target, margin) as a module."""

    _fn = None

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return type(self)._fn(input1, input2, target, margin=self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_PairMarginLoss):
    """cosine_embedding_loss(input1, input2, target, margin)."""

    _fn = staticmethod(cosine_embedding_loss)


class MarginRankingLoss(_PairMarginLoss):
    """margin_ranking_loss(input1, input2, target, margin)."""

    _fn = staticmethod(margin_ranking_loss)


class HingeEmbeddingLoss(_Loss):
    """hinge_embedding_loss(input, target, margin)."""

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """soft_margin_loss(input, target)."""

    def forward(self, input, target):
        return soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_Loss):
    """multilabel_soft_margin_loss(input, target, weight); weight is a buffer."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        return multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class MultiMarginLoss(_Loss):
    """multi_margin_loss(input, target, p, margin, weight); weight is a buffer."""

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError("MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.dim()}D instead")
        self.p, self.margin = p, margin
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        return multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                 reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """multilabel_margin_loss(input, target)."""

    def forward(self, input, target):
        return multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap)."""

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                   swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """triplet_margin_with_distance_loss(anchor, positive, negative, distance_function, margin, swap)."""

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        self.distance_function = distance_function if distance_function is not None else pairwise_distance
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return triplet_margin_with_distance_loss(anchor, positive, negative, distance_function=self.distance_function,
                                                 margin=self.margin, swap=self.swap, reduction=self.reduction)


class CTCLoss(_Loss):
    """ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity)."""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                        self.zero_infinity)
