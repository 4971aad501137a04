"""genesis.functional_math: the arithmetic half of genesis.functional (einsum, matrix products, comparisons,
elementwise and transcendental composites, // and %, where and the fused reductions), composed from
differentiable genesis ops. genesis.functional re-exports every name and installs them on genesis and Tensor."""
from genesis import _C
from genesis.functional import (  # noqa: F401  (the shared helpers of both halves)
    Tensor, _FINFO_MAX, _assign, _builtins, _device_of, _dims, _dt, _float, _is_tensor, _math, _no_grad, _numbers,
    _result_type, _scalar, _tname, broadcast_to, diagonal, get_default_dtype, tensor, type, zeros)


# ------------------------------------------------------------------------------------------------ einsum

_ELLIPSIS = "..."


def _einsum_sublist(args):
    """einsum(op0, sublist0, op1, sublist1, ..., [sublist_out]) as an equation and operands."""
    def letters(sub):
        out = ""
        for s in sub:
            if s is Ellipsis:
                out += "..."
            elif isinstance(s, _numbers.Integral) and 0 <= s < 52:
                out += chr(ord("A") + s) if s < 26 else chr(ord("a") + s - 26)
            else:
                raise ValueError(f"einsum(): expected subscript to be within the range [0, 52), but got {s}")
        return out
    ops, subs = list(args[0::2]), [letters(s) for s in args[1::2]]
    if len(args) % 2:
        return ",".join(subs) + "->" + letters(args[-1]), ops[:-1]
    return ",".join(subs), ops


def _einsum_parse(equation, n_operands):
    """Terms (lists of labels, '...' for an ellipsis) of each operand and of the output (None when implicit)."""
    terms, current, arrow = [], [], None
    i = 0
    while i < len(equation):
        c = equation[i]
        if c == " ":
            i += 1
            continue
        if c == "-" and equation[i + 1:i + 2] == ">" and arrow is None:
            terms.append(current)
            current, arrow = [], len(terms)
            i += 2
            continue
        if c == "," and arrow is None:
            terms.append(current)
            current = []
            i += 1
            continue
        if c == ".":
            op = len(terms)
            if equation[i:i + 3] != "...":
                raise RuntimeError(f"einsum(): found '.' for operand {op} that is not part of any ellipsis")
            if _ELLIPSIS in current:
                raise RuntimeError(f"einsum(): found '.' for operand {op} for which an ellipsis was already found")
            current.append(_ELLIPSIS)
            i += 3
            continue
        if not ("a" <= c <= "z" or "A" <= c <= "Z"):
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, subscripts "
                               "must be in [a-zA-Z]")
        current.append(c)
        i += 1
    terms.append(current)
    inputs = terms if arrow is None else terms[:arrow]
    output = None if arrow is None else terms[arrow]
    if len(inputs) > n_operands:
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(inputs) < n_operands:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    return inputs, output


def _sum_labels(x, labels, drop):
    """x summed over the dims whose labels are in drop; returns (tensor, remaining labels)."""
    dims = [i for i, l in enumerate(labels) if l in drop]
    if not dims:
        return x, labels
    return x.sum(dims), [l for l in labels if l not in drop]


def _contract(a, la, b, lb, keep):
    """a (labels la) and b (labels lb) multiplied and summed over their shared labels not in keep (one bmm, or a
    broadcast product when nothing is summed); returns (tensor, labels: batch, a's free, b's free)."""
    a, la = _sum_labels(a, la, {l for l in la if l not in lb and l not in keep})
    b, lb = _sum_labels(b, lb, {l for l in lb if l not in la and l not in keep})
    batch = [l for l in la if l in lb and l in keep]
    summed = [l for l in la if l in lb and l not in keep]
    a_free = [l for l in la if l not in lb]
    b_free = [l for l in lb if l not in la]
    size = {}
    for x, lx in ((a, la), (b, lb)):
        for l, s in zip(lx, x.shape):
            size[l] = _builtins.max(size.get(l, 1), s) if s != 0 and size.get(l) != 0 else 0
    a = a.permute(*[la.index(l) for l in batch + a_free + summed]) if la else a
    b = b.permute(*[lb.index(l) for l in batch + summed + b_free]) if lb else b
    a = a.expand(*[size[l] for l in batch + a_free + summed])
    b = b.expand(*[size[l] for l in batch + summed + b_free])
    nb, m = _math.prod(size[l] for l in batch), _math.prod(size[l] for l in a_free)
    k, n = _math.prod(size[l] for l in summed), _math.prod(size[l] for l in b_free)
    if summed:
        out = _C.bmm(a.reshape(nb, m, k), b.reshape(nb, k, n))
    else:  # nothing to sum: a broadcast product
        out = a.reshape(nb, m, 1) * b.reshape(nb, 1, n)
    labels = batch + a_free + b_free
    return out.reshape(*[size[l] for l in labels]), labels


def einsum(equation, *operands):
    """Sums of products of operands' elements named by subscripts (torch.einsum: '...', repeated subscripts,
    implicit output, or the sublist form); contractions run pairwise, left to right, through bmm."""
    if _is_tensor(equation):
        equation, operands = _einsum_sublist((equation,) + operands)
    elif not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' (position 1) must be str, not {_type_name(equation)}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                         "operand and its subscripts list")
    for t in operands:
        if not _is_tensor(t):
            raise TypeError(f"einsum(): operands must be tensors, got {_type_name(t)}")
        if t.dtype != operands[0].dtype:
            raise RuntimeError(f"expected scalar type {_tname(operands[0].dtype)} but found {_tname(t.dtype)}")
    inputs, output = _einsum_parse(equation, len(operands))

    # labels of every dim of every operand; ellipsis dims are the ints 0..n_ell-1, right-aligned across operands
    n_ell = 0
    for k, (term, t) in enumerate(zip(inputs, operands)):
        named = len([l for l in term if l != _ELLIPSIS])
        if _ELLIPSIS in term:
            if named > t.dim():
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) is more than the "
                                   f"number of dimensions ({t.dim()}) for operand {k}")
            n_ell = _builtins.max(n_ell, t.dim() - named)
        elif named != t.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) does not match the "
                               f"number of dimensions ({t.dim()}) for operand {k} and no ellipsis was given")
    labels, sizes, ell_sizes = [], {}, [1] * n_ell
    for k, (term, t) in enumerate(zip(inputs, operands)):
        named = len([l for l in term if l != _ELLIPSIS])
        e = t.dim() - named
        lab = []
        for l in term:
            lab += list(range(n_ell - e, n_ell)) if l == _ELLIPSIS else [l]
        for i, (l, s) in enumerate(zip(lab, t.shape)):
            if isinstance(l, str):
                first = lab.index(l)
                if first != i and t.shape[first] != s:
                    raise RuntimeError(f"einsum(): subscript {l} is repeated for operand {k} but the sizes don't "
                                       f"match, {t.shape[first]} != {s}")
                seen = sizes.get(l, 1)
                if seen != 1 and s != 1 and s != seen:
                    raise RuntimeError(f"einsum(): subscript {l} has size {s} for operand {k} which does not "
                                       f"broadcast with previously seen size {seen}")
                sizes[l] = s if seen == 1 else seen
            else:
                seen = ell_sizes[l]
                if seen != 1 and s != 1 and s != seen:
                    raise RuntimeError(f"einsum(): dimension {l - (n_ell - e)} covered by ellipsis in operand {k} "
                                       f"has size {s} which does not broadcast with previously seen ellipsis with "
                                       f"size {seen} for the respective dimension")
                ell_sizes[l] = s if seen == 1 else seen
        labels.append(lab)

    # the output's labels
    all_labels = [l for lab in labels for l in lab]
    if output is None:
        once = sorted({l for l in all_labels if isinstance(l, str) and all_labels.count(l) == 1})
        out_labels = list(range(n_ell)) + once
    else:
        out_labels = []
        for l in output:
            if l == _ELLIPSIS:
                out_labels += list(range(n_ell))
                continue
            if l not in all_labels:
                raise RuntimeError(f"einsum(): output subscript {l} does not appear in the equation for any input "
                                   "operand")
            if l in out_labels:
                raise RuntimeError(f"einsum(): output subscript {l} appears more than once in the output")
            out_labels.append(l)

    # repeated labels within an operand: their diagonal
    ops = []
    for t, lab in zip(operands, labels):
        lab = list(lab)
        while True:
            dup = next((l for i, l in enumerate(lab) if l in lab[:i]), None)
            if dup is None:
                break
            i, j = lab.index(dup), lab.index(dup, lab.index(dup) + 1)
            t = diagonal(t, 0, i, j)
            lab = [l for n, l in enumerate(lab) if n not in (i, j)] + [dup]
        ops.append((t, lab))

    # left to right: sum what no later operand and not the output needs, contract pairwise
    result, lab = ops[0]
    for k in range(1, len(ops)):
        keep = set(out_labels).union(*[set(l) for _, l in ops[k + 1:]])
        result, lab = _contract(result, lab, ops[k][0], ops[k][1], keep)
    result, lab = _sum_labels(result, lab, {l for l in lab if l not in out_labels})
    if len(operands) > 1 and result.dtype != operands[0].dtype:
        result = result.to(operands[0].dtype)
    if lab != out_labels:
        result = result.permute(*[lab.index(l) for l in out_labels])
    return result


def _type_name(x):
    return _builtins.type(x).__name__


# ------------------------------------------------------------------------------------------------ products

def _need_dims(name, n, t, what):
    if t.dim() != n:
        raise RuntimeError(f"{name}: Expected {n}-D argument {what}, but got {t.dim()}-D")


def outer(input, vec2):
    """The outer product of two 1-D tensors, as torch.outer."""
    _need_dims("outer", 1, input, "self")
    _need_dims("outer", 1, vec2, "vec2")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


ger = outer


def dot(input, other):
    """The inner product of two 1-D tensors of the same size, as torch.dot."""
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src [{other.shape[0]}] "
                           f"to have the same number of elements, but got {input.shape[0]} and {other.shape[0]} "
                           "elements respectively")
    return (input * other).sum()


def mm(input, mat2):
    """The matrix product of two 2-D tensors, as torch.mm."""
    if input.dim() != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    if input.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({input.shape[0]}x{input.shape[1]} and "
                           f"{mat2.shape[0]}x{mat2.shape[1]})")
    return _C.matmul(input, mat2)


def mv(input, vec):
    """The product of a 2-D tensor and a 1-D tensor, as torch.mv."""
    if input.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.dim()}, {vec.dim()}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got {input.shape[0]}, {input.shape[0]}x{input.shape[1]},{vec.shape[0]}")
    return _C.matmul(input, vec)


def bmm(input, mat2):
    """Batched matrix product of (b, n, m) and (b, m, p) tensors, as torch.bmm."""
    if input.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    b, _, m = input.shape
    if tuple(mat2.shape[:2]) != (b, m):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {m}] but got: "
                           f"[{mat2.shape[0]}, {mat2.shape[1]}].")
    return _C.bmm(input, mat2)


def _add_scaled(input, product, beta, alpha):
    """beta * input + alpha * product, input broadcast to product's shape (ignored when beta is 0), as torch."""
    input = broadcast_to(input, product.shape)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return (input if beta == 1 else input * beta) + product


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2), as torch.addmm."""
    if mat1.dim() != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {mat1.dim()}-D tensor")
    if mat2.dim() != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {mat2.dim()}-D tensor")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} and "
                           f"{mat2.shape[0]}x{mat2.shape[1]})")
    return _add_scaled(input, _C.matmul(mat1, mat2), beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec), as torch.addmv."""
    if mat.dim() != 2 or vec.dim() != 1 or input.dim() > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, {mat.dim()}, {vec.dim()}")
    if mat.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got {input.shape[0] if input.dim() else 1}, "
                           f"{mat.shape[0]}x{mat.shape[1]},{vec.shape[0]}")
    return _add_scaled(input, _C.matmul(mat, vec), beta, alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta * input + alpha * outer(vec1, vec2), as torch.addr."""
    if vec1.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1 and vec2, but got {vec1.dim()}-D and {vec2.dim()}-D")
    return _add_scaled(input, outer(vec1, vec2), beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * bmm(batch1, batch2), as torch.baddbmm."""
    return _add_scaled(input, bmm(batch1, batch2), beta, alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (the sum over the batch of batch1[i] @ batch2[i]), as torch.addbmm."""
    return _add_scaled(input, bmm(batch1, batch2).sum(0), beta, alpha)


def cdist(x1, x2, p=2.0, compute_mode=None):
    """The p-norm distances between the rows of x1 (..., P, M) and of x2 (..., R, M): (..., P, R), as torch.cdist."""
    if x1.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if not x1.is_floating_point():
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {_tname(x1.dtype)}")
    if not x2.is_floating_point():
        raise RuntimeError(f"cdist only supports floating-point dtypes, X2 got: {_tname(x2.dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    from genesis import linalg
    return linalg.vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)


# ------------------------------------------------------------------------------------------------ comparisons

def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise |input - other| <= atol + rtol * |other| (infinities equal when equal), as torch.isclose."""
    if input.dtype != other.dtype:
        raise RuntimeError(f"{_tname(input.dtype)} did not match {_tname(other.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    _check_broadcast(input.shape, other.shape)
    close = input == other
    if input.dtype == _dt.bool:
        return close
    if equal_nan and input.is_floating_point():
        close = close | (input.isnan() & other.isnan())
    if rtol == 0 and atol == 0:
        return close
    allowed = (_float(other) * rtol).abs() + atol
    actual = (input - other).abs()
    return close | (actual.isfinite() & (actual <= allowed))


def _check_broadcast(a, b):
    for i in range(1, _builtins.min(len(a), len(b)) + 1):
        if a[-i] != b[-i] and a[-i] != 1 and b[-i] != 1:
            raise RuntimeError(f"The size of tensor a ({a[-i]}) must match the size of tensor b ({b[-i]}) at "
                               f"non-singleton dimension {_builtins.max(len(a), len(b)) - i}")


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when isclose holds for every element (a Python bool), as torch.allclose."""
    return _builtins.bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other):
    """True when both have the same shape and the same values (a Python bool), as torch.equal."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return _builtins.bool((input == other).all()) if input.numel() else True


def count_nonzero(input, dim=None):
    """The number of nonzero elements (over dim, all when None) as int64, as torch.count_nonzero."""
    dims = _dims(dim, input.dim())
    return (input != 0).sum(list(dims)) if dims else (input != 0).to(_dt.int64)


# ------------------------------------------------------------------------------------------------ elementwise

def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """input with NaN, +inf and -inf replaced (by nan, the dtype's max and min unless given), as torch.nan_to_num."""
    if not input.is_floating_point():
        return input.clone()
    top = _FINFO_MAX[input.dtype]
    posinf = top if posinf is None else posinf
    neginf = -top if neginf is None else neginf
    y = _C.where(input.isnan(), _scalar(nan, input.dtype, input.device), input)
    y = _C.where(input == _math.inf, _scalar(posinf, input.dtype, input.device), y)
    return _C.where(input == -_math.inf, _scalar(neginf, input.dtype, input.device), y)


_clamp_numbers = getattr(Tensor.clamp, "numbers_only", Tensor.clamp)  # the C++ clamp (number bounds), kept on reloads


def clamp(input, min=None, max=None):
    """input limited to [min, max] (numbers or tensors, either may be None; NaN propagates), as torch.clamp."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    input = _promote_to_bounds(input, min, max)
    if not _is_tensor(min) and not _is_tensor(max):
        return _clamp_numbers(input, min, max)
    y = input
    if min is not None:
        y = clamp_min(y, min)
    if max is not None:
        y = clamp_max(y, max)
    return y


def _promote_to_bounds(input, *bounds):
    """input converted to the dtype promotion gives with the bounds (an integer tensor clamped by 0.5 is float)."""
    for b in bounds:
        if b is not None:
            rt = _result_type(input, b)
            if rt != input.dtype:
                input = input.to(rt)
    return input


clamp.numbers_only = _clamp_numbers
clip = clamp


def clamp_min(input, min):
    """input limited from below by min (a number or a tensor), as torch.clamp_min."""
    input = _promote_to_bounds(input, min)
    if not _is_tensor(min):
        return _clamp_numbers(input, min, None)
    return _C.where(input < min, min, input)


def clamp_max(input, max):
    """input limited from above by max (a number or a tensor), as torch.clamp_max."""
    input = _promote_to_bounds(input, max)
    if not _is_tensor(max):
        return _clamp_numbers(input, None, max)
    return _C.where(input > max, max, input)


def _float_only(name, *xs):
    for x in xs:
        if _is_tensor(x) and not x.is_floating_point():
            raise RuntimeError(f"\"{name}\" not implemented for '{_tname(x.dtype)}'")


def lerp(input, end, weight):
    """input + weight * (end - input) (torch's two-sided form for accuracy), as torch.lerp."""
    if end.dtype != input.dtype:
        raise RuntimeError(f"expected dtype {str(input.dtype).split('.')[-1]} for `end` but got dtype "
                           f"{str(end.dtype).split('.')[-1]}")
    if _is_tensor(weight) and weight.dtype != input.dtype:
        raise RuntimeError(f"expected dtype {str(input.dtype).split('.')[-1]} for `weight` but got dtype "
                           f"{str(weight.dtype).split('.')[-1]}")
    _float_only("lerp_kernel_scalar" if not _is_tensor(weight) else "lerp_kernel_tensor", input)
    diff = end - input
    if not _is_tensor(weight):
        return input + diff * weight if abs(weight) < 0.5 else end - diff * (1 - weight)
    return _C.where(weight.abs() < 0.5, input + weight * diff, end - diff * (1 - weight))


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2, as torch.addcmul."""
    return input + (tensor1 * tensor2 if value == 1 else value * tensor1 * tensor2)


def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2, as torch.addcdiv."""
    if not tensor1.is_floating_point() and not tensor2.is_floating_point():
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future  release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
                           "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
                           "for all dtypes.")
    return input + (tensor1 / tensor2 if value == 1 else value * tensor1 / tensor2)


def _as_operands(input, other, name):
    if not _is_tensor(input) and not _is_tensor(other):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {_type_name(input)}")
    return input, other


def _pair_float(input, other):
    """Both operands as float tensors of their promoted dtype (numbers become 0-d tensors)."""
    rt = _result_type(input, other)
    if not rt.is_floating_point:
        rt = get_default_dtype()
    dev = _device_of(input, other)
    a = input.to(rt) if _is_tensor(input) else _scalar(input, rt, dev)
    b = other.to(rt) if _is_tensor(other) else _scalar(other, rt, dev)
    return a, b


def logaddexp(input, other):
    """log(exp(input) + exp(other)) without overflow, as torch.logaddexp."""
    _float_only("logaddexp_cpu", input, other)
    a, b = _pair_float(input, other)
    d = a - b
    pos = d >= 0
    d_pos = _C.where(pos, d, 0.0)
    d_neg = _C.where(d < 0, d, 0.0)
    return _C.where(pos, a + (-d_pos).exp().log1p(), b + d_neg.exp().log1p())


def logaddexp2(input, other):
    """log2(2**input + 2**other) without overflow, as torch.logaddexp2."""
    _float_only("logaddexp2_cpu", input, other)
    ln2 = _math.log(2.0)
    return logaddexp(input * ln2, other * ln2) / ln2


def hypot(input, other):
    """sqrt(input**2 + other**2), as torch.hypot."""
    _float_only("hypot_cpu", input, other)
    a, b = _pair_float(input, other)
    return (a * a + b * b).sqrt()


# ---- transcendental composites (no ops of their own): accurate to rounding in float64, differentiable

def _odd(x, f):
    """f extended to negative x as an odd function: -f(-x); f only ever sees x >= 0 (derivative kept at 0)."""
    neg = x < 0
    a = _C.where(neg, -x, x)
    fa = f(a)
    return _C.where(neg, -fa, fa)


_ATAN_TERMS = [(-1) ** k / (2 * k + 1) for k in range(12)]


def _atan_unit(t):
    """atan(t) for 0 <= t <= 1: two half-angle reductions to t <= tan(pi/16), then 12 terms of the series."""
    for _ in range(2):
        t = t / ((t * t + 1).sqrt() + 1)
    t2 = t * t
    s = t2 * _ATAN_TERMS[-1] + _ATAN_TERMS[-2]
    for c in reversed(_ATAN_TERMS[:-2]):
        s = s * t2 + c
    return t * s * 4


def _atan_nonneg(a):
    big = a > 1
    t = _C.where(big, 1 / _C.where(big, a, 1.0), a)
    r = _atan_unit(t)
    return _C.where(big, _math.pi / 2 - r, r)


def atan(input):
    """The arctangent, as torch.atan."""
    return _odd(_float(input), _atan_nonneg)


def atan2(input, other):
    """The angle of the point (other, input) in (-pi, pi], as torch.atan2 (signed zeros are not told apart)."""
    y, x = _pair_float(input, other)
    ax, ay = x.abs(), y.abs()
    swap = ay > ax
    zero = (x == 0) & (y == 0)
    q1 = y / _C.where(swap | zero, 1.0, x)  # |q1| <= 1: atan(y / x) plus a half turn when x < 0
    r1 = _odd(q1, _atan_nonneg)
    r1 = r1 + _C.where(x < 0, _C.where(y >= 0, _scalar(_math.pi, x.dtype, x.device),
                                       _scalar(-_math.pi, x.dtype, x.device)), 0.0)
    q2 = x / _C.where(swap, y, 1.0)  # |q2| < 1: +-pi/2 - atan(x / y)
    r2 = _C.where(y > 0, _scalar(_math.pi / 2, x.dtype, x.device), _scalar(-_math.pi / 2, x.dtype, x.device)) \
        - _odd(q2, _atan_nonneg)
    return _C.where(swap, r2, r1)


arctan2 = atan2


def _one_minus_sq(x):
    return ((1 - x) * (x + 1)).sqrt()


def asin(input):
    """The arcsine (NaN outside [-1, 1]), as torch.asin."""
    x = _float(input)
    return atan2(x, _one_minus_sq(x))


def acos(input):
    """The arccosine (NaN outside [-1, 1]), as torch.acos."""
    x = _float(input)
    return atan2(_one_minus_sq(x), x)


def sinh(input):
    """The hyperbolic sine, as torch.sinh."""
    x = _float(input)
    return (_C.call_unary("expm1", x) - _C.call_unary("expm1", -x)) * 0.5


def cosh(input):
    """The hyperbolic cosine, as torch.cosh."""
    x = _float(input)
    return (x.exp() + (-x).exp()) * 0.5


def tan(input):
    """The tangent, as torch.tan."""
    x = _float(input)
    return x.sin() / x.cos()


_BIG = 1e8  # above it asinh(t) = log(2t) and acosh(t) = log(2t) to within rounding


def _asinh_nonneg(t):
    big = t > _BIG
    s = _C.where(big, 0.0, t)
    small = (s + s * s / ((s * s + 1).sqrt() + 1)).log1p()
    return _C.where(big, _C.where(big, t, 1.0).log() + _math.log(2.0), small)


def asinh(input):
    """The inverse hyperbolic sine, as torch.asinh."""
    return _odd(_float(input), _asinh_nonneg)


def acosh(input):
    """The inverse hyperbolic cosine (NaN below 1), as torch.acosh."""
    x = _float(input)
    big = x > _BIG
    t = _C.where(big, 1.0, x) - 1
    small = (t + (t * (t + 2)).sqrt()).log1p()
    out = _C.where(big, _C.where(big, x, 1.0).log() + _math.log(2.0), small)
    return _C.where(x >= 1, out, _math.nan)


def atanh(input):
    """The inverse hyperbolic tangent (NaN outside [-1, 1]), as torch.atanh."""
    x = _float(input)
    return (x.log1p() - (-x).log1p()) * 0.5


def log2(input):
    """The base-2 logarithm, as torch.log2."""
    return _float(input).log() / _math.log(2.0)


def log10(input):
    """The base-10 logarithm, as torch.log10."""
    return _float(input).log() / _math.log(10.0)


def exp2(input):
    """2 ** input, as torch.exp2."""
    return (_float(input) * _math.log(2.0)).exp()


def trunc(input):
    """input rounded towards zero (integers unchanged), as torch.trunc."""
    if not input.is_floating_point():
        return input.clone()
    return _C.where(input < 0, input.ceil(), input.floor())


fix = trunc


def frac(input):
    """input - trunc(input), as torch.frac."""
    _float_only("frac_cpu", input)
    return input - trunc(input)


arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh


# ------------------------------------------------------------------------------------------------ // and %

def _int_operands(input, other, rt, name):
    dev = _device_of(input, other)
    a = input.to(rt) if _is_tensor(input) else _scalar(input, rt, dev)
    b = other.to(rt) if _is_tensor(other) else _scalar(other, rt, dev)
    if _builtins.bool((b == 0).any()):
        raise RuntimeError("ZeroDivisionError")
    return a, b


def _int_floor_divmod(a, b):
    """Exact floor quotient and remainder of integer tensors (|values| < 2**53): a float64 estimate, corrected."""
    q = (a.double() / b.double()).floor().to(a.dtype)
    r = a - q * b
    low = (r != 0) & ((r < 0) != (b < 0))
    q, r = _C.where(low, q - 1, q), _C.where(low, r + b, r)
    high = (r != 0) & ((r < 0) == (b < 0)) & (r.abs() >= b.abs())
    return _C.where(high, q + 1, q), _C.where(high, r - b, r)


def _product_error(x, y):
    """e with x*y == fl(x*y) + e exactly (Dekker's product with Veltkamp's split); 0 where that overflows."""
    c = 134217729.0 if x.dtype == _dt.float64 else 4097.0  # 2**ceil(p/2) + 1 for the dtype's p mantissa bits

    def split(v):
        t = v * c
        hi = t - (t - v)
        return hi, v - hi

    p = x * y
    xh, xl = split(x)
    yh, yl = split(y)
    e = (xh * yh - p + xh * yl + xl * yh) + xl * yl
    return _C.where(e.isfinite(), e, 0.0)


def _fmod_float(a, b):
    """a - trunc(a/b) * b, exact where |a/b| < 2**mantissa bits: the product's rounding error is subtracted and a
    quotient that rounding put one off is corrected."""
    with _no_grad():
        q = trunc(a / b)
        err = _product_error(q, b) if a.dtype in (_dt.float64, _dt.float32) else _C.zeros_like(a)
        sa, ab = a.sign(), b.abs()
    r = a - q * b - err
    r = _C.where((r != 0) & ((r < 0) != (a < 0)), r + sa * ab, r)
    r = _C.where(r.abs() >= ab, r - sa * ab, r)
    return _C.where(b.isinf() & a.isfinite(), a, r)


def _binary_setup(input, other, name, kernel):
    _as_operands(input, other, name)
    rt = _result_type(input, other)
    if rt == _dt.bool:
        raise RuntimeError(f"\"{kernel}\" not implemented for 'Bool'")
    return rt


def fmod(input, other):
    """The remainder of input / other with the sign of input (C's fmod), as torch.fmod."""
    if not _is_tensor(input):
        raise TypeError(f"fmod(): argument 'input' (position 1) must be Tensor, not {_type_name(input)}")
    rt = _binary_setup(input, other, "fmod", "fmod_cpu")
    if not rt.is_floating_point:
        a, b = _int_operands(input, other, rt, "fmod")
        _, r = _int_floor_divmod(a, b)
        return _C.where((r != 0) & ((r < 0) != (a < 0)), r - b, r)
    a, b = _pair_float(input, other)
    return _fmod_float(a, b)


def remainder(input, other):
    """The remainder of input / other with the sign of other (Python's %), as torch.remainder."""
    rt = _binary_setup(input, other, "remainder", "remainder_cpu")
    if not rt.is_floating_point:
        _, r = _int_floor_divmod(*_int_operands(input, other, rt, "remainder"))
        return r
    a, b = _pair_float(input, other)
    m = _fmod_float(a, b)
    return _C.where((m != 0) & ((b < 0) != (m < 0)), m + b, m)


def floor_divide(input, other):
    """input / other rounded down (Python's //; not differentiable, as in torch), as torch.floor_divide."""
    rt = _binary_setup(input, other, "floor_divide", "div_floor_cpu")
    with _no_grad():
        if not rt.is_floating_point:
            q, _ = _int_floor_divmod(*_int_operands(input, other, rt, "floor_divide"))
            return q
        a, b = _pair_float(input, other)
        a, b = a.detach(), b.detach()
        mod = _fmod_float(a, b)
        div = (a - mod) / b
        div = _C.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div)
        fl = div.floor()
        fl = _C.where(div - fl > 0.5, fl + 1, fl)
        out = _C.where(div != 0, fl, (a / b) * 0)
        return _C.where(b == 0, a / b, out)


def _number_or_tensor(x):
    return _is_tensor(x) or isinstance(x, _numbers.Number)


def _operator(fn, reflected=False):
    def op(self, other):
        if not _number_or_tensor(other):
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)
    return op


def _ioperator(fn):
    def op(self, other):
        if not _number_or_tensor(other):
            return NotImplemented
        if _C.is_grad_enabled() and (self.requires_grad or (_is_tensor(other) and other.requires_grad)):
            return fn(self, other)  # recorded: x is rebound to the new tensor, as x += y does
        return _assign(self, fn(self, other))
    return op


# ------------------------------------------------------------------------------------------------ where, reductions

def where(condition, input=None, other=None):
    """where(cond, x, y): x where cond else y (numbers allowed); where(cond): the indices of nonzeros, per dim."""
    if input is None and other is None:
        if condition.dim() == 0:
            return (_C.zeros(1 if condition.item() else 0, dtype=_dt.int64, device=condition.device),)
        nz = condition.nonzero()
        return tuple(nz[:, i] for i in range(condition.dim()))
    if input is None or other is None:
        raise TypeError("where(): expected both input and other, or neither")
    if not _is_tensor(input) and not _is_tensor(other) and get_default_dtype() != _dt.float32 and \
            _builtins.any(isinstance(v, float) for v in (input, other)):
        input = _scalar(input, get_default_dtype(), condition.device)
    return _C.where(condition, input, other)


def _tensor_where(self, condition, y):
    """x.where(condition, y) is where(condition, x, y)."""
    return _C.where(condition, self, y)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over dim, as torch.std_mean."""
    if isinstance(dim, _builtins.bool):
        dim, unbiased = None, dim
    return input.std(dim, unbiased, keepdim, correction=correction), input.mean(dim, keepdim)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over dim, as torch.var_mean."""
    if isinstance(dim, _builtins.bool):
        dim, unbiased = None, dim
    return input.var(dim, unbiased, keepdim, correction=correction), input.mean(dim, keepdim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """torch.norm: vector p-norms over dim (all dims when None), 'fro' the 2-norm over up to two dims."""
    from genesis import linalg
    if not input.is_floating_point():
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{_tname(input.dtype)} instead.")
    if p is None:
        p = "fro"
    if isinstance(dim, _numbers.Integral):
        dim = (dim,)
    if isinstance(p, str):
        if p == "fro":
            if dim is not None and len(dim) > 2:
                raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dim)} dimensions instead.")
            return linalg.vector_norm(input, 2, dim, keepdim, dtype=dtype)
        if p == "nuc":
            return linalg.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
        raise RuntimeError(f"norm(): unsupported norm type {p}")
    return linalg.vector_norm(input, p, dim, keepdim, dtype=dtype)
