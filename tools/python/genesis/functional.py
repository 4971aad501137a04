"""genesis.functional: tensor functions composed from genesis ops, with torch's names and semantics.

    import genesis
    genesis.einsum("bij,bjk->bik", a, b)
    x.repeat(2, 1).roll(1, 0).diagonal()
    q, r = x // 3, x % 3

Everything here is built from the differentiable genesis ops (permute, reshape, mul, sum, bmm, where,
index_select, ...), so autograd runs through it and it works on every device. The functions are
also Tensor methods where torch has them (x.repeat, x.roll, x.exp_(), ...), and genesis.* names.

Notes where genesis differs from torch:
  * diagonal() returns a copy when the matrix dims are not the last two contiguous dims (torch: a view).
  * fmod/remainder/floor_divide are exact while |a/b| < 2**53 (2**24 in float32) for floats and while the
    values are below 2**53 for integers (torch: always). atan2 does not tell signed zeros apart.
  * from_numpy shares memory except for bool and read-only arrays, which are copied.
  * set_default_dtype affects the creation functions and composites here; the C++ operators promote
    integer tensors combined with Python floats to float32 regardless.
"""
import builtins as _builtins
import math as _math
import numbers as _numbers

from genesis import _C
from genesis._grad_mode import no_grad as _no_grad

Tensor = _C.Tensor
_dt = _C.dtype

_TORCH_NAMES = {
    _dt.float32: "Float", _dt.float64: "Double", _dt.float16: "Half", _dt.bfloat16: "BFloat16",
    _dt.int64: "Long", _dt.int32: "Int", _dt.int8: "Char", _dt.uint8: "Byte", _dt.bool: "Bool",
}
_FINFO_MAX = {_dt.float32: 3.4028234663852886e38, _dt.float64: 1.7976931348623157e308, _dt.float16: 65504.0,
              _dt.bfloat16: 3.3895313892515355e38}


# ------------------------------------------------------------------------------------------------ helpers

def _is_tensor(x):
    return isinstance(x, Tensor)


def _is_number(x):
    return isinstance(x, _numbers.Number) and not _is_tensor(x)


def _tname(dtype):
    """torch's short name of a dtype (Float, Long, ...), as its error messages print it."""
    return _TORCH_NAMES.get(dtype, str(dtype))


def _dim(d, ndim):
    """d wrapped into [0, ndim), IndexError as torch's when out of range."""
    n = _builtins.max(ndim, 1)
    if not isinstance(d, _numbers.Integral) or isinstance(d, _builtins.bool):
        raise TypeError(f"dim must be an int, got {_builtins.type(d).__name__}")
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


def _dims(dims, ndim):
    """A tuple of wrapped dims from None (all), an int or a sequence; repeated dims are an error."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, _numbers.Integral):
        dims = (dims,)
    out = tuple(_dim(d, ndim) for d in dims)
    for i, d in enumerate(out):
        if d in out[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return out


def _sizes(args):
    """Sizes from *args: ints, or one tuple/list."""
    if len(args) == 1 and not isinstance(args[0], _numbers.Integral):
        return tuple(_builtins.int(s) for s in args[0])
    return tuple(_builtins.int(s) for s in args)


def _float(x):
    """x, or x converted to the default float dtype when it is an integer or bool tensor (torch's int -> float ops)."""
    return x if x.is_floating_point() else x.to(_default_dtype)


def _scalar(value, dtype, device):
    """A 0-d tensor holding value."""
    return _C.full((), value, dtype=dtype, device=device)


def _result_type(a, b):
    """The dtype genesis' promotion gives a op b (a, b tensors or Python numbers, one at least a tensor)."""
    def probe(x):
        if _is_tensor(x):
            return x if x.dim() == 0 else x.flatten()[:0]
        return x
    return (probe(a) * probe(b)).dtype


def _device_of(*xs):
    for x in xs:
        if _is_tensor(x):
            return x.device
    return _C.device("cpu")


def _can_cast(src, dst):
    """torch.can_cast for in-place results: bool < integer < floating, never downwards."""
    def rank(d):
        return 0 if d == _dt.bool else (2 if d.is_floating_point else 1)
    return rank(src) <= rank(dst)


def _assign(self, out):
    """self.copy_(out) with torch's in-place checks (dtype category, shape); returns self."""
    if not _can_cast(out.dtype, self.dtype):
        raise RuntimeError(f"result type {_tname(out.dtype)} can't be cast to the desired output type "
                           f"{_tname(self.dtype)}")
    if tuple(out.shape) != tuple(self.shape):
        try:
            target = broadcast_shapes(self.shape, out.shape)
        except RuntimeError:
            target = None
        if target != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                               f"{list(target if target is not None else out.shape)}")
    self.copy_(out)
    return self


def _check_leaf(self):
    if self.requires_grad and self.is_leaf and _C.is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def _inplace(fn):
    """The in-place form of fn(self, ...): self.copy_(fn(self, ...)), as torch's op_ methods."""
    def method(self, *args, **kwargs):
        _check_leaf(self)
        src = self.clone() if self.requires_grad and _C.is_grad_enabled() else self
        return _assign(self, fn(src, *args, **kwargs))
    method.__name__ = method.__qualname__ = fn.__name__ + "_"
    method.__doc__ = f"In-place form of {fn.__name__}: x.{fn.__name__}_(...) writes x.{fn.__name__}(...) into x."
    return method


# ------------------------------------------------------------------------------------------------ default dtype

_default_dtype = _dt.float32


def get_default_dtype():
    """The dtype of tensors created from Python floats and of float creation functions (float32 at start)."""
    return _default_dtype


def set_default_dtype(d):
    """Sets the default floating dtype (float32, float64, float16 or bfloat16), as torch.set_default_dtype."""
    global _default_dtype
    if not isinstance(d, _dt):
        raise TypeError(f"set_default_dtype(): argument 'd' must be genesis.dtype, not {_builtins.type(d).__name__}")
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default_dtype = d


def _creation_dtype(dtype):
    return _default_dtype if dtype is None and _default_dtype != _dt.float32 else dtype


def tensor(data, *, dtype=None, device=None, requires_grad=False):
    """A tensor holding a copy of data; Python floats take the default dtype, as torch.tensor."""
    if dtype is None and _default_dtype != _dt.float32 and not _is_tensor(data) and \
            not hasattr(data, "__array_interface__") and _C.tensor(data).dtype == _dt.float32:
        dtype = _default_dtype
    return _C.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def as_tensor(data, dtype=None, device=None):
    """data as a tensor without a copy where possible; Python floats take the default dtype."""
    if dtype is None and _default_dtype != _dt.float32 and not _is_tensor(data) and \
            not hasattr(data, "__array_interface__") and _C.tensor(data).dtype == _dt.float32:
        dtype = _default_dtype
    return _C.as_tensor(data, dtype=dtype, device=device)


def _sized(name):
    fn = getattr(_C, name)

    def create(*size, dtype=None, device=None, requires_grad=False, **kwargs):
        return fn(*size, dtype=_creation_dtype(dtype), device=device, requires_grad=requires_grad, **kwargs)

    create.__name__ = create.__qualname__ = name
    create.__doc__ = f"genesis.{name}(*size, dtype=None, device=None, requires_grad=False): dtype defaults to " \
                     "get_default_dtype()"
    return create


zeros = _sized("zeros")
ones = _sized("ones")
empty = _sized("empty")
rand = _sized("rand")
randn = _sized("randn")


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """A tensor of size filled with fill_value; a float value takes the default dtype."""
    if dtype is None and isinstance(fill_value, _numbers.Real) and not isinstance(fill_value, _numbers.Integral):
        dtype = _creation_dtype(None)
    return _C.full(size, fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


def arange(start, end=None, step=None, *, dtype=None, device=None, requires_grad=False):
    """Values from start to end by step; the default dtype when any of them is a float, else int64."""
    if dtype is None and _builtins.any(isinstance(v, _numbers.Real) and not isinstance(v, _numbers.Integral)
                                       for v in (start, end, step)):
        dtype = _creation_dtype(None)
    return _C.arange(start, end, step, dtype=dtype, device=device, requires_grad=requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """steps values from start to end inclusive, in the default dtype unless dtype is given."""
    return _C.linspace(start, end, steps, dtype=_creation_dtype(dtype), device=device, requires_grad=requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    """The n x m identity, in the default dtype unless dtype is given."""
    return _C.eye(n, m, dtype=_creation_dtype(dtype), device=device, requires_grad=requires_grad)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    """A 0-d tensor holding s, in the default dtype unless dtype is given."""
    return _C.scalar_tensor(s, dtype=_creation_dtype(dtype), device=device, requires_grad=requires_grad)


# ------------------------------------------------------------------------------------------------ conversions

_NUMPY_KINDS = ("float64", "float32", "float16", "int64", "int32", "int8", "uint8", "bool")


def from_numpy(ndarray):
    """A tensor sharing ndarray's memory (bool and read-only arrays are copied), as torch.from_numpy."""
    import numpy as np
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {_builtins.type(ndarray).__name__})")
    if ndarray.dtype.name not in _NUMPY_KINDS:
        raise TypeError(f"can't convert np.ndarray of type numpy.{ndarray.dtype.type.__name__}. The only supported "
                        "types are: " + ", ".join(_NUMPY_KINDS[:-1]) + ", and bool.")
    if _builtins.any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making a "
                         "copy of your array  with array.copy().) ")
    if ndarray.dtype == np.bool_ or not ndarray.flags.writeable:
        return _C.tensor(ndarray)
    return _C.from_dlpack(ndarray)


def _options(self, dtype, device, requires_grad):
    return {"dtype": self.dtype if dtype is None else dtype, "device": self.device if device is None else device,
            "requires_grad": requires_grad}


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    """Zeros of size with self's dtype and device unless given."""
    return _C.zeros(_sizes(size), **_options(self, dtype, device, requires_grad))


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    """Ones of size with self's dtype and device unless given."""
    return _C.ones(_sizes(size), **_options(self, dtype, device, requires_grad))


def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor of size with self's dtype and device unless given."""
    return _C.empty(_sizes(size), **_options(self, dtype, device, requires_grad))


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """fill_value in a tensor of size with self's dtype and device unless given."""
    return _C.full(_sizes((size,)), fill_value, **_options(self, dtype, device, requires_grad))


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    """A copy of data with self's dtype and device unless given."""
    return _C.tensor(data, **_options(self, dtype, device, requires_grad))


_TYPE_NAMES = {v + "Tensor": k for k, v in _TORCH_NAMES.items()}


class _TensorTypeMeta(_builtins.type):
    """isinstance(x, genesis.FloatTensor): x is a tensor of that dtype."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype

    def __repr__(cls):
        return f"<class 'genesis.{cls.__name__}'>"


class _LegacyTensorType(metaclass=_TensorTypeMeta):
    """torch's legacy constructors: FloatTensor(2, 3) is uninitialised, FloatTensor([1, 2]) holds data."""

    dtype = None

    def __new__(cls, *args, device=None):
        if len(args) == 1 and not isinstance(args[0], _numbers.Integral):
            if _is_tensor(args[0]) and args[0].dtype != cls.dtype:
                raise TypeError(f"expected {cls.__name__} (got {args[0].type()})")
            return args[0] if _is_tensor(args[0]) else _C.tensor(args[0], dtype=cls.dtype, device=device)
        return _C.empty(_sizes(args) if args else (0,), dtype=cls.dtype, device=device)


TENSOR_TYPES = {name: _TensorTypeMeta(name, (_LegacyTensorType,), {"dtype": dt, "__doc__": f"Tensors of {dt}."})
                for name, dt in _TYPE_NAMES.items()}


def type(self, dtype=None, non_blocking=False, **kwargs):  # noqa: A001 - torch's method name
    """x.type(): the type name ('genesis.FloatTensor', 'genesis.cuda.FloatTensor'); x.type(dtype or name): converted."""
    if dtype is None:
        prefix = "genesis.cuda." if self.device.type == "cuda" else "genesis."
        return prefix + _TORCH_NAMES[self.dtype] + "Tensor"
    if isinstance(dtype, _TensorTypeMeta):
        dtype = dtype.dtype
    if isinstance(dtype, _dt):
        return self if self.dtype == dtype else self.to(dtype)
    if isinstance(dtype, str):
        parts = dtype.split(".")
        if len(parts) in (2, 3) and parts[0] in ("genesis", "torch") and parts[-1] in _TYPE_NAMES and \
                (len(parts) == 2 or parts[1] == "cuda"):
            out = self.to(_TYPE_NAMES[parts[-1]])
            if len(parts) == 3 and out.device.type != "cuda":
                out = out.cuda()
            elif len(parts) == 2 and out.device.type != "cpu":
                out = out.cpu()
            return out
        raise ValueError(f"invalid type: '{dtype}'")
    raise TypeError(f"type(): expected a genesis.dtype or a type name string, got {_builtins.type(dtype).__name__}")


# ------------------------------------------------------------------------------------------------ shapes and views

def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (a tuple), as torch.broadcast_shapes."""
    out = []
    for shape in shapes:
        shape = (shape,) if isinstance(shape, _numbers.Integral) else tuple(shape)
        if len(shape) > len(out):
            out = [1] * (len(shape) - len(out)) + out
        for i, s in enumerate(shape):
            j = len(out) - len(shape) + i
            if out[j] == 1:
                out[j] = s
            elif s != 1 and s != out[j]:
                raise RuntimeError("Shape mismatch: objects cannot be broadcast to a single shape")
    return tuple(out)


def broadcast_to(input, size):
    """input expanded (a view) to size; -1 keeps a dim, as torch.broadcast_to."""
    size = _sizes((size,))
    shape = tuple(input.shape)
    if len(size) < len(shape):
        raise RuntimeError(f"expand({input.type()}{{{list(shape)}}}, size={list(size)}): the number of sizes provided "
                           f"({len(size)}) must be greater or equal to the number of dimensions in the tensor "
                           f"({len(shape)})")
    lead = len(size) - len(shape)
    target = list(size)
    for i, s in enumerate(size):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a leading, non-existing "
                                   f"dimension {i}")
            continue
        have = shape[i - lead]
        if s == -1:
            target[i] = have
        elif have != s and have != 1:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({have}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(size)}.  Tensor sizes: "
                               f"{list(shape)}")
    return input.expand(*target)


def broadcast_tensors(*tensors):
    """The tensors expanded (views) to their common shape, as torch.broadcast_tensors."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(broadcast_to(t, shape) for t in tensors)


def movedim(input, source, destination):
    """input with the dims source moved to the positions destination (a view), as torch.movedim."""
    n = input.dim()
    src = (source,) if isinstance(source, _numbers.Integral) else tuple(source)
    dst = (destination,) if isinstance(destination, _numbers.Integral) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should contain "
                           f"the same number of dims as destination ({list(dst)} dims)")
    s = [_dim(d, n) for d in src]
    d = [_dim(x, n) for x in dst]
    if len(set(s)) != len(s):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(d)) != len(d):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    order = [-1] * n
    for a, b in zip(s, d):
        order[b] = a
    rest = iter(i for i in range(n) if i not in s)
    order = [o if o >= 0 else next(rest) for o in order]
    return input.permute(*order) if n else input


moveaxis = movedim


def swapdims(input, dim0, dim1):
    """input with dim0 and dim1 swapped (a view), as torch.swapdims / swapaxes / transpose."""
    return input.transpose(dim0, dim1)


swapaxes = swapdims


def _atleast(n, name):
    def fn(*tensors):
        single = len(tensors) == 1 and _is_tensor(tensors[0])
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            tensors = tuple(tensors[0])
        out = []
        for t in tensors:
            if t.dim() >= n:
                out.append(t)
            elif n == 1 or t.dim() == 0:
                out.append(t.reshape((1,) * n))
            elif n == 2:
                out.append(t.unsqueeze(0))
            else:  # atleast_3d: (n) -> (1, n, 1), (m, n) -> (m, n, 1)
                out.append(t.reshape(1, -1, 1) if t.dim() == 1 else t.unsqueeze(-1))
        return out[0] if single else tuple(out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The tensors viewed with at least {n} dims, as torch.{name} (one tensor in, one out)."
    return fn


atleast_1d = _atleast(1, "atleast_1d")
atleast_2d = _atleast(2, "atleast_2d")
atleast_3d = _atleast(3, "atleast_3d")


def _tensor_list(tensors, name):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def hstack(tensors):
    """Concatenation along dim 1 (dim 0 for 1-D tensors), as torch.hstack."""
    ts = atleast_1d(_tensor_list(tensors, "hstack"))
    return _C.cat(list(ts), 0 if ts[0].dim() == 1 else 1)


def vstack(tensors):
    """Concatenation along dim 0 of the tensors as at least 2-D, as torch.vstack."""
    return _C.cat(list(atleast_2d(_tensor_list(tensors, "vstack"))), 0)


row_stack = vstack


def dstack(tensors):
    """Concatenation along dim 2 of the tensors as at least 3-D, as torch.dstack."""
    return _C.cat(list(atleast_3d(_tensor_list(tensors, "dstack"))), 2)


def column_stack(tensors):
    """The tensors as columns (0-D and 1-D become (n, 1)) concatenated along dim 1, as torch.column_stack."""
    ts = _tensor_list(tensors, "column_stack")
    return _C.cat([t.reshape(-1, 1) if t.dim() <= 1 else t for t in ts], 1)


def flip(input, dims):
    """input reversed along dims (a copy), as torch.flip."""
    return input.flip(dims)


def fliplr(input):
    """input reversed along dim 1, as torch.fliplr."""
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return input.flip(1)


def flipud(input):
    """input reversed along dim 0, as torch.flipud."""
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return input.flip(0)


def rot90(input, k=1, dims=(0, 1)):
    """input rotated by 90 degrees k times in the plane dims (from the first towards the second), as torch.rot90."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    n = input.dim()
    if n < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {n}")
    d0, d1 = dims
    if d0 == d1 or (d0 - d1) % n == 0:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    if not -n <= d0 < n:
        raise RuntimeError(f"Rotation dim0 out of range, dim0 = {d0}")
    if not -n <= d1 < n:
        raise RuntimeError(f"Rotation dim1 out of range, dim1 = {d1}")
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip([d0, d1])
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


def repeat(input, *sizes):
    """input tiled sizes[i] times along each dim (leading sizes add dims), as torch's Tensor.repeat."""
    sizes = _sizes(sizes)
    shape = tuple(input.shape)
    if len(sizes) < len(shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    full_shape = (1,) * (len(sizes) - len(shape)) + shape
    target = [r * s for r, s in zip(sizes, full_shape)]
    for t in target:
        if t < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {t}: {target}")
    view, expanded = [], []
    for r, s in zip(sizes, full_shape):
        view += [1, s]
        expanded += [r, s]
    return input.reshape(*view).expand(*expanded).reshape(*target)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element of input repeated (an int, or per element along dim), as torch.repeat_interleave."""
    if repeats is None:  # repeat_interleave(repeats): indices repeated
        counts = input
        return _C.arange(counts.numel(), device=counts.device).repeat_interleave(counts)
    if dim is None:
        x, d = input.flatten(), 0
    else:
        x, d = input, _dim(dim, input.dim())
    if x.dim() == 0:
        x = x.reshape(1)
    if _is_tensor(repeats):
        if repeats.dim() > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if repeats.is_floating_point() or repeats.dtype == _dt.bool:
            raise RuntimeError(f"\"repeat_interleave_cpu\" not implemented for '{_tname(repeats.dtype)}'")
        counts = repeats.tolist()
        if repeats.dim() == 0 or len(counts) == 1:
            repeats = counts if isinstance(counts, _numbers.Integral) else counts[0]
        else:
            if len(counts) != x.shape[d]:
                raise RuntimeError("repeats must have the same size as input along dim")
            if _builtins.any(c < 0 for c in counts):
                raise RuntimeError("repeats can not be negative")
            index = [i for i, c in enumerate(counts) for _ in range(c)]
            return x.index_select(d, _C.tensor(index, dtype=_dt.int64, device=x.device))
    repeats = _builtins.int(repeats)
    if repeats < 0:
        raise RuntimeError("repeats can not be negative")
    shape = tuple(x.shape)
    return x.unsqueeze(d + 1).expand(*shape[:d + 1], repeats, *shape[d + 1:]) \
        .reshape(*shape[:d], shape[d] * repeats, *shape[d + 1:])


def roll(input, shifts, dims=None):
    """input rotated by shifts along dims (the flattened tensor when dims is None), as torch.roll."""
    sh = (shifts,) if isinstance(shifts, _numbers.Integral) else tuple(shifts)
    if dims is None:
        if len(sh) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:0")
        return roll(input.flatten(), sh[0], 0).reshape(*input.shape)
    ds = (dims,) if isinstance(dims, _numbers.Integral) else tuple(dims)
    if len(sh) != len(ds):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:{len(ds)}")
    y = input
    for s, d in zip(sh, ds):
        d = _dim(d, input.dim())
        n = y.shape[d]
        k = s % n if n else 0
        if k:
            y = _C.cat([y.narrow(d, n - k, k), y.narrow(d, 0, n - k)], d)
    return input.clone() if y is input else y


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal offset of the matrices in dims (dim1, dim2), as a new last dim, as torch.diagonal."""
    n = input.dim()
    d1, d2 = _dim(dim1, n), _dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    rows, cols = input.shape[d1], input.shape[d2]
    length = _builtins.max(0, _builtins.min(rows, cols - offset) if offset >= 0 else _builtins.min(rows + offset, cols))
    rest = [i for i in range(n) if i not in (d1, d2)]
    y = input.permute(*rest, d1, d2).reshape(*[input.shape[i] for i in rest], rows * cols)
    if length == 0:
        return y[..., :0]
    start = offset if offset >= 0 else -offset * cols
    return y[..., start:start + (length - 1) * (cols + 1) + 1:cols + 1]


def diag(input, diagonal=0):
    """1-D input: a square matrix with input on its diagonal; 2-D input: its diagonal; as torch.diag."""
    if input.dim() == 1:
        n = input.shape[0]
        size = n + abs(diagonal)
        start = diagonal if diagonal >= 0 else -diagonal * size
        index = _C.arange(n, device=input.device) * (size + 1) + start
        out = _C.zeros(size * size, dtype=input.dtype, device=input.device)
        return out.index_add(0, index, input).reshape(size, size)
    if input.dim() == 2:
        return globals()["diagonal"](input, diagonal, 0, 1)
    raise RuntimeError("matrix or a vector expected")


def trace(input):
    """The sum of the main diagonal of a 2-D tensor (integers summed as int64), as torch.trace."""
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    if input.dtype == _dt.bool:
        raise RuntimeError("\"trace\" not implemented for 'Bool'")
    return diagonal(input).sum()


def meshgrid(*tensors, indexing=None):
    """Coordinate grids (expanded views) of 0-D or 1-D tensors; indexing 'ij' (default) or 'xy', as torch.meshgrid."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    indexing = "ij" if indexing is None else indexing
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.dim()}D")
        if t.dtype != tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t.device != tensors[0].device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.numel() for t in ts]
    out = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = shape[i]
        out.append(t.reshape(*view).expand(*shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def cartesian_prod(*tensors):
    """The cartesian product of 1-D tensors as rows of a (N, len(tensors)) tensor, as torch.cartesian_prod."""
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return _C.stack([g.flatten() for g in grids], 1)


# ------------------------------------------------------------------------------------------------ the arithmetic half

from genesis.functional_math import (  # noqa: E402  (it imports the helpers above)
    _ioperator, _operator, _tensor_where, acos, acosh, addbmm, addcdiv, addcmul, addmm, addmv, addr, allclose,
    arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, asin, asinh, atan, atan2, atanh, baddbmm, bmm, cdist,
    clamp, clamp_max, clamp_min, clip, cosh, count_nonzero, dot, einsum, equal, exp2, fix, floor_divide, fmod, frac,
    ger, hypot, isclose, lerp, log10, log2, logaddexp, logaddexp2, mm, mv, nan_to_num, norm, outer, remainder, sinh,
    std_mean, tan, trunc, var_mean, where)

# ------------------------------------------------------------------------------------------------ install

# genesis.<name> functions (those with a C++ version of the same name are left alone unless in _REPLACE)
FUNCTIONS = [
    "get_default_dtype", "set_default_dtype", "from_numpy", "einsum", "repeat_interleave", "roll", "diag",
    "diagonal", "trace", "outer", "ger", "dot", "mm", "mv", "bmm", "addmm", "addmv", "addr", "baddbmm", "addbmm",
    "cdist", "isclose", "allclose", "equal", "count_nonzero", "nan_to_num", "clamp_min", "clamp_max", "lerp",
    "addcmul", "addcdiv", "logaddexp", "logaddexp2", "hypot", "atan", "atan2", "arctan2", "asin", "acos", "sinh",
    "cosh", "tan", "asinh", "acosh", "atanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "log2",
    "log10", "exp2", "trunc", "fix", "frac", "fmod", "remainder", "floor_divide", "where", "std_mean", "var_mean",
    "norm", "broadcast_shapes", "broadcast_to", "broadcast_tensors", "movedim", "moveaxis", "swapdims", "swapaxes",
    "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "row_stack", "dstack", "column_stack", "flip",
    "fliplr", "flipud", "rot90", "meshgrid", "cartesian_prod", "clamp", "clip", "tensor", "as_tensor", "zeros",
    "ones", "empty", "rand", "randn", "full", "arange", "linspace", "eye", "scalar_tensor",
]
# names that replace what genesis already has (they add torch's errors, arguments or the default dtype)
_REPLACE = {"bmm", "where", "norm", "clamp", "clip", "tensor", "as_tensor", "zeros", "ones", "empty", "rand", "randn",
            "full", "arange", "linspace", "eye", "scalar_tensor"}

# Tensor methods: name -> function(self, ...)
_UNARY = ["neg", "negative", "abs", "sign", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh",
          "sigmoid", "relu", "reciprocal", "square", "floor", "ceil", "round", "logical_not"]
_COMPOSED_UNARY = ["atan", "asin", "acos", "sinh", "cosh", "tan", "asinh", "acosh", "atanh", "arcsin", "arccos",
                   "arctan", "arcsinh", "arccosh", "arctanh", "log2", "log10", "exp2", "trunc", "fix", "frac"]
METHODS = {name: globals()[name] for name in _COMPOSED_UNARY + [
    "repeat", "repeat_interleave", "roll", "diag", "diagonal", "trace", "outer", "ger", "dot", "mm", "mv", "bmm",
    "addmm", "addmv", "addr", "baddbmm", "addbmm", "isclose", "allclose", "equal", "count_nonzero", "nan_to_num",
    "clamp_min", "clamp_max", "lerp", "addcmul", "addcdiv", "logaddexp", "logaddexp2", "hypot", "atan2", "arctan2",
    "fmod", "remainder", "floor_divide", "broadcast_to", "movedim", "moveaxis", "swapdims", "fliplr", "flipud",
    "rot90", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "type", "norm", "clamp"]}
METHODS.update({"where": _tensor_where, "clip": clamp, "__floordiv__": _operator(floor_divide),
                "__rfloordiv__": _operator(floor_divide, True), "__ifloordiv__": _ioperator(floor_divide),
                "__mod__": _operator(remainder), "__rmod__": _operator(remainder, True),
                "__imod__": _ioperator(remainder)})
for _name in _UNARY:
    METHODS[_name + "_"] = _inplace(getattr(Tensor, _name))
for _name in _COMPOSED_UNARY + ["nan_to_num", "clamp", "clamp_min", "clamp_max", "lerp", "addcmul", "addcdiv", "hypot",
                                "atan2", "arctan2", "fmod", "remainder", "floor_divide", "pow"]:
    METHODS[_name + "_"] = _inplace(METHODS.get(_name) or getattr(Tensor, _name))
for _name in ("scatter", "scatter_add", "index_add", "masked_scatter", "index_fill", "index_copy"):
    if hasattr(Tensor, _name):
        METHODS[_name + "_"] = _inplace(getattr(Tensor, _name))
METHODS["clip_"] = METHODS["clamp_"]
del _name
_REPLACE_METHODS = {"norm", "clamp", "clamp_"}


def _install(namespace):
    """Puts FUNCTIONS and TENSOR_TYPES into namespace (the genesis module's globals) and METHODS onto Tensor."""
    for name, cls in TENSOR_TYPES.items():
        namespace.setdefault(name, cls)
    for name in FUNCTIONS:
        if name in _REPLACE or name not in namespace:
            namespace[name] = globals()[name]
    for name, fn in METHODS.items():
        if name in _REPLACE_METHODS or not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
    # torch's in-place function forms: genesis.clamp_(x, ...) is x.clamp_(...)
    for name in _UNARY + ["clamp", "clip"]:
        namespace.setdefault(name + "_", getattr(Tensor, name + "_"))
