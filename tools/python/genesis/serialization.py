"""genesis.save / genesis.load: safetensors files, for state dicts and for whole checkpoints.

A flat dict of tensors (a state dict) is written as plain safetensors, which Hugging Face's
`safetensors` and genesis::load read.  Anything else made of dicts (any JSON key type), lists,
tuples, tensors, numbers, strings, booleans and None, such as
{"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}, is written as the
tensors (named by their path: "optimizer.state.0.exp_avg") plus the structure as JSON in the
file's metadata ("genesis.python"), so load() gives the same structure back.  No pickle: a file
holds data only.  Writes are atomic (a temporary file renamed over the target).
"""
import json
from collections import OrderedDict

from genesis import _C
from genesis._C import Tensor

_KEY = "genesis.python"


def _is_state_dict(obj):
    return isinstance(obj, dict) and all(isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items())


def save(obj, path):
    """Writes obj (a state dict, or nested dicts/lists of tensors and plain values) to path."""
    if _is_state_dict(obj):
        _C.save(dict(obj), str(path))
        return
    tensors = {}

    def encode(x, name):
        if isinstance(x, Tensor):
            key = name or "tensor"
            while key in tensors:
                key += "_"
            tensors[key] = x.detach()
            return {"tensor": key}
        if isinstance(x, dict):
            items = []
            for k, v in x.items():
                if not isinstance(k, (str, int, float, bool)) and k is not None:
                    raise TypeError(f"genesis.save: dict keys must be str, int, float, bool or None, got {type(k).__name__}")
                items.append([k, encode(v, f"{name}.{k}" if name else str(k))])
            return {"dict": items}
        if isinstance(x, (list, tuple)):
            kind = "list" if isinstance(x, list) else "tuple"
            return {kind: [encode(v, f"{name}.{i}" if name else str(i)) for i, v in enumerate(x)]}
        if x is None or isinstance(x, (bool, int, float, str)):
            return {"value": x}
        raise TypeError(f"genesis.save: cannot store a {type(x).__name__} (tensors, dicts, lists, tuples, "
                        "numbers, strings and None only)")

    structure = encode(obj, "")
    _C.save_file(tensors, str(path), metadata={"format": "pt", _KEY: json.dumps(structure)})


def load(path, map_location=None):
    """Reads what save() wrote (or any safetensors file: a dict of tensors) onto map_location."""
    meta = _C.load_metadata(str(path))
    if _KEY not in meta:
        return OrderedDict(_C.load(str(path), map_location))
    tensors = _C.load_file(str(path), map_location)

    def decode(node):
        if "tensor" in node:
            return tensors[node["tensor"]]
        if "dict" in node:
            return {k: decode(v) for k, v in node["dict"]}
        if "list" in node:
            return [decode(v) for v in node["list"]]
        if "tuple" in node:
            return tuple(decode(v) for v in node["tuple"])
        return node["value"]

    return decode(json.loads(meta[_KEY]))
