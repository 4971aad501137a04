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
        rt = _default_dtype
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
    if not _is_tensor(input) and not _is_tensor(other) and _default_dtype != _dt.float32 and \
            _builtins.any(isinstance(v, float) for v in (input, other)):
        input = _scalar(input, _default_dtype, condition.device)
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
