"""genesis.save / genesis.load: safetensors files, for state dicts, checkpoints, NumPy arrays and whole objects.

Every file genesis.save writes is a safetensors file (atomic, with per-tensor checksums); what it holds depends on
what is saved:

* A flat dict of tensors (a state dict) is a plain safetensors file, which Hugging Face's `safetensors` and
  genesis::load read.
* Data: dicts (any JSON key type; OrderedDict stays one), lists, tuples, tensors, NumPy arrays and scalars, numbers,
  strings, booleans and None, such as {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}.
  The tensors and arrays are stored as tensors named by their path ("optimizer.state.0.exp_avg"; arrays of dtypes
  genesis lacks as their bytes), the structure as JSON in the file's metadata ("genesis.python"); load() gives the
  same structure back, arrays as arrays.  No pickle: such a file holds data only.
* Anything else (a whole Module, an object of the program's own class, a set, ...) is pickled, as torch.save does,
  with every tensor inside stored as a safetensors tensor and the pickle, which refers to them, in the metadata
  ("genesis.pickle").  load() unpickles it unless weights_only=True; like any pickle, only load files you trust.

Tensors come back on the device they were saved from (recorded in "genesis.devices" when not the CPU), unless
map_location says otherwise (a device, a string, a {saved: new} dict or a function (tensor, saved_location)).
`f` may be a path or a binary file object (open(..., "wb"), io.BytesIO).
"""
import _compat_pickle
import base64
import io
import json
import os
import pickle
import tempfile
from collections import OrderedDict

from genesis._numpy import np as np

from genesis import _C
from genesis._C import Tensor

_KEY = "genesis.python"
_PICKLE = "genesis.pickle"
_DEVICES = "genesis.devices"
DEFAULT_PROTOCOL = 2


def _builtins_type_module(x):
    """The module of x's type's root package ("numpy" for arrays and NumPy scalars)."""
    return type(x).__module__.split(".")[0]


def _np_tensor_dtypes():
    """The NumPy dtypes stored as genesis tensors of the same type (the others as their bytes)."""
    return {np.dtype(t) for t in (np.float64, np.float32, np.float16, np.int64, np.int32, np.int8, np.uint8,
                                  np.bool_)}


_UNSAFE_MESSAGE = ("Weights only load failed. Re-running `genesis.load` with `weights_only` set to `False` will likely "
                   "succeed, but it can result in arbitrary code execution. Do it only if you get the file from a "
                   "trusted source. WeightsUnpickler error: ")


# ---------------------------------------------------------------- pickling of genesis objects
def _rebuild_device(spec):
    return _C.device(spec)


_C.device.__reduce__ = lambda self: (_rebuild_device, (str(self),))


# ---------------------------------------------------------------- saving
class _NotData(Exception):
    """obj holds something the data format cannot store: it is pickled instead."""


def _parameter_class():
    from genesis.nn.modules import Parameter
    return Parameter


def _is_state_dict(obj):
    """A flat dict of plain tensors that need no autograd flag: stored as a plain safetensors file."""
    return type(obj) in (dict, OrderedDict) and all(isinstance(k, str) and type(v) is Tensor and not v.requires_grad
                                                    for k, v in obj.items())


def _array_tensor(a):
    """An ndarray as a tensor to store, and its JSON node's extra fields."""
    a = a if a.flags.c_contiguous else a.copy(order="C")
    node = {"dtype": a.dtype.str, "shape": list(a.shape)}
    native = a.dtype.newbyteorder("=")
    if native in _np_tensor_dtypes():
        return _C.tensor(a.astype(native, copy=False)), node
    return _C.tensor(np.frombuffer(a.tobytes(), dtype=np.uint8)), dict(node, raw=True)


def _encode_data(obj, tensors, devices):
    """obj's JSON structure, its tensors put in `tensors` (and non-CPU devices in `devices`); _NotData otherwise."""
    seen = {}  # id(tensor) -> key: a tensor met twice is stored once and comes back as one object

    def add(t, name):
        key = name or "tensor"
        while key in tensors:
            key += "_"
        tensors[key] = t
        return key

    def encode(x, name):
        tx = type(x)
        if isinstance(x, Tensor):
            if tx is not Tensor and tx is not _parameter_class():
                raise _NotData
            if id(x) not in seen:
                seen[id(x)] = add(x.detach(), name)
                if x.device.type != "cpu":
                    devices[seen[id(x)]] = str(x.device)
            node = {"tensor": seen[id(x)]}
            if tx is not Tensor:
                node["parameter"] = True
            if x.requires_grad:
                node["requires_grad"] = True
            return node
        if _builtins_type_module(x) == "numpy" and (tx is np.ndarray or isinstance(x, np.generic)):
            a = np.asarray(x)
            if a.dtype.hasobject or a.dtype.fields is not None or a.dtype.kind in "OUSVMm":
                raise _NotData
            t, node = _array_tensor(a)
            node["ndarray"] = add(t, name)
            if isinstance(x, np.generic):
                node["scalar"] = True
            return node
        if tx in (dict, OrderedDict):
            items = []
            for k, v in x.items():
                if k is not None and type(k) not in (str, int, float, bool):
                    raise _NotData
                items.append([k, encode(v, f"{name}.{k}" if name else str(k))])
            return {"dict": items, "ordered": True} if tx is OrderedDict else {"dict": items}
        if tx in (list, tuple):
            kind = "list" if tx is list else "tuple"
            return {kind: [encode(v, f"{name}.{i}" if name else str(i)) for i, v in enumerate(x)]}
        if x is None or tx in (bool, int, float, str):
            return {"value": x}
        raise _NotData

    return encode(obj, "")


def _encode_pickle(obj, tensors, devices, pickle_module, pickle_protocol):
    """obj pickled, each tensor in it replaced by a reference to an entry of `tensors` (the same object twice is
    stored once and comes back as one object)."""
    keys = {}

    class Pickler(pickle_module.Pickler):
        def persistent_id(self, x):
            if not isinstance(x, Tensor):
                return None
            key = keys.get(id(x))
            if key is None:
                key = keys[id(x)] = str(len(keys))
                tensors[key] = x.detach()
                if x.device.type != "cpu":
                    devices[key] = str(x.device)
            cls = type(x)
            return ("tensor", key, None if cls is Tensor else cls, x.requires_grad)

    buf = io.BytesIO()
    Pickler(buf, protocol=pickle_protocol).dump(obj)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _write(path, tensors, metadata):
    if hasattr(path, "write"):
        fd, tmp = tempfile.mkstemp(suffix=".safetensors")
        os.close(fd)
        try:
            _C.save_file(tensors, tmp, metadata=metadata)
            with open(tmp, "rb") as f:
                path.write(f.read())
        finally:
            os.unlink(tmp)
    else:
        _C.save_file(tensors, os.fspath(path), metadata=metadata)


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL, _use_new_zipfile_serialization=True):
    """Writes obj (a state dict, data of dicts/lists/tensors/arrays/numbers, or any picklable object such as a
    Module) to f, a path or a binary file object."""
    if not (hasattr(f, "write") or isinstance(f, (str, os.PathLike))):
        raise AttributeError(f"'{type(f).__name__}' object has no attribute 'write'")
    tensors, devices = {}, {}
    metadata = {"format": "pt"}
    if _is_state_dict(obj):
        for k, v in obj.items():
            tensors[k] = v.detach()
            if v.device.type != "cpu":
                devices[k] = str(v.device)
    else:
        try:
            metadata[_KEY] = json.dumps(_encode_data(obj, tensors, devices))
        except _NotData:
            tensors.clear()
            devices.clear()
            metadata[_PICKLE] = _encode_pickle(obj, tensors, devices, pickle_module, pickle_protocol)
    if devices:
        metadata[_DEVICES] = json.dumps(devices)
    _write(f, tensors, metadata)


# ---------------------------------------------------------------- loading
def _placer(map_location):
    """place(tensor on the CPU, saved location) -> the tensor where map_location (torch's forms) puts it."""
    def default(t, location):
        if location == "cpu":
            return t
        if location.startswith("cuda") and not _C.cuda_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but genesis.cuda.is_available() "
                               "is False. If you are running on a CPU-only machine, please use genesis.load with "
                               "map_location=genesis.device('cpu') to map your tensors to the CPU.")
        return t.to(location)

    if map_location is None:
        return default
    if isinstance(map_location, dict):
        return lambda t, loc: default(t, str(map_location.get(loc, loc)))
    if isinstance(map_location, (str, _C.device)):
        return lambda t, loc: default(t, str(_C.device(map_location) if isinstance(map_location, str)
                                              else map_location))
    if callable(map_location):
        def call(t, loc):
            out = map_location(t, loc)
            return default(t, loc) if out is None else out
        return call
    raise TypeError(f"map_location should be a device, a string, a dict or a function, not "
                    f"{type(map_location).__name__}")


class _WeightsUnpickler(pickle.Unpickler):
    """Builds only plain containers, tensors and devices; any other class is an error."""

    _allowed = {("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"),
                ("builtins", "complex"), ("builtins", "slice"), ("genesis.serialization", "_rebuild_device"),
                ("genesis.nn.modules", "Parameter")}

    def find_class(self, module, name):
        # protocol 2 names builtins as Python 2 did (__builtin__.set)
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        if (module, name) in self._allowed:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"Unsupported class {module}.{name}")


_TORCH_LEGACY_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"


def _check_format(path):
    with open(path, "rb") as fh:
        head = fh.read(len(_TORCH_LEGACY_MAGIC))
    if head.startswith(b"PK\x03\x04") or head == _TORCH_LEGACY_MAGIC:
        raise RuntimeError(f"genesis.load: {path!r} was written by torch.save (a pickle or zip archive); genesis reads "
                           "the safetensors files genesis.save writes (a state dict saved with safetensors' "
                           "save_file loads too)")


def _read(path, map_location, pickle_module, weights_only, pickle_load_args):
    _check_format(path)
    meta = _C.load_metadata(path)
    tensors = _C.load_file(path, None)
    devices = json.loads(meta.get(_DEVICES, "{}"))
    place = _placer(map_location)
    placed = {}

    def tensor(key):
        if key not in placed:
            placed[key] = place(tensors[key], devices.get(key, "cpu"))
        return placed[key]

    if _PICKLE in meta:
        return _unpickle(meta[_PICKLE], tensor, pickle_module, weights_only, pickle_load_args)
    if _KEY not in meta:
        return OrderedDict((k, tensor(k)) for k in tensors)

    made = {}  # key -> the Parameter or grad-requiring tensor built from it (one object per stored tensor)

    def decode(node):
        if "tensor" in node:
            key = node["tensor"]
            if "parameter" not in node and "requires_grad" not in node:
                return tensor(key)
            if key not in made:
                t = tensor(key)
                if "parameter" in node:
                    made[key] = _parameter_class()(t, requires_grad=node.get("requires_grad", False))
                else:
                    made[key] = t.detach().requires_grad_(True)
            return made[key]
        if "ndarray" in node:
            data = tensors[node["ndarray"]].numpy()
            dtype = np.dtype(node["dtype"])
            if node.get("raw"):
                a = np.frombuffer(data.tobytes(), dtype=dtype).reshape(node["shape"]).copy()
            else:
                a = data.astype(dtype).reshape(node["shape"])
            return a[()] if node.get("scalar") else a
        if "dict" in node:
            return (OrderedDict if node.get("ordered") else dict)((k, decode(v)) for k, v in node["dict"])
        if "list" in node:
            return [decode(v) for v in node["list"]]
        if "tuple" in node:
            return tuple(decode(v) for v in node["tuple"])
        return node["value"]

    return decode(json.loads(meta[_KEY]))


def _unpickle(encoded, tensor, pickle_module, weights_only, pickle_load_args):
    built = {}

    def persistent_load(pid):
        kind, key, cls, requires_grad = pid
        if kind != "tensor":
            raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")
        if key not in built:
            t = tensor(key)
            if cls is not None:
                from genesis.nn.modules import Parameter
                if cls is Parameter:
                    t = Parameter(t, requires_grad=requires_grad)
                else:
                    out = cls.__new__(cls)
                    Tensor.__init__(out, t)
                    t = out
            built[key] = t.requires_grad_(requires_grad) if t.is_leaf else t
        return built[key]

    base = _WeightsUnpickler if weights_only else (pickle_module or pickle).Unpickler

    class Unpickler(base):
        pass

    Unpickler.persistent_load = lambda self, pid: persistent_load(pid)
    data = io.BytesIO(base64.b64decode(encoded))
    if not weights_only:
        return Unpickler(data, **pickle_load_args).load()
    try:
        return Unpickler(data, **pickle_load_args).load()
    except Exception as e:
        raise pickle.UnpicklingError(_UNSAFE_MESSAGE + str(e)) from None


def load(f, map_location=None, pickle_module=None, *, weights_only=False, **pickle_load_args):
    """Reads what save() wrote (or any safetensors file: a dict of tensors) from a path or binary file object.
    weights_only=True refuses files that hold pickled objects other than containers, tensors and devices."""
    if isinstance(f, (str, os.PathLike)):
        return _read(os.fspath(f), map_location, pickle_module, weights_only, pickle_load_args)
    if not hasattr(f, "read"):
        raise AttributeError(f"'{type(f).__name__}' object has no attribute 'read'")
    fd, tmp = tempfile.mkstemp(suffix=".safetensors")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(f.read())
        return _read(tmp, map_location, pickle_module, weights_only, pickle_load_args)
    finally:
        os.unlink(tmp)

