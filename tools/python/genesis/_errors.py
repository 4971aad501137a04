"""The errors a PyTorch user expects: the exception type torch raises for the same mistake and torch's wording.

genesis._C (src/errors.cpp) calls three functions here:
- from_code(code, message): the exception for a genesis::Error of that gn_code, its message reworded where torch
  says it differently (shapes, dims, dtypes, autograd, I/O); files and folders give OSError subclasses with errno.
- call_error(overloads, args, kwargs, exc): after a failed call of a bound function, a better exception or None.
  A call that matches no signature, or whose argument cannot be converted, becomes a TypeError naming the argument
  and the types ("linear(): argument 'input' (position 1) must be Tensor, not list"), never pybind11's dump of
  the signatures and argument values; a few messages get details only the call knows (the target's dtype, ...).
- precheck(overloads, args, kwargs): torch's rules that genesis's C++ ops relax (matmul, linear, conv2d operands of
  one dtype; class-index targets of dtype int64; cat and stack given a list, not a tensor); the exception, or None
  to go ahead.
genesis/__init__.py calls guard_python_functions(), which gives the functions written in Python (nn.functional,
linalg, the composed tensor functions, the modules' forward) torch's TypeError for a non-tensor argument.
"""
import errno as _errno
import os as _os
import re as _re
import sys as _sys

# gn_code values (abi/include/genesis/status.h)
INVALID_ARGUMENT, SHAPE, DTYPE, DEVICE, NOT_FOUND, UNSUPPORTED, OUT_OF_MEMORY, INDEX, VERSION, IO = range(1, 11)

_DEFAULT_TYPE = {INVALID_ARGUMENT: ValueError, SHAPE: RuntimeError, DTYPE: RuntimeError, OUT_OF_MEMORY: MemoryError,
                 INDEX: IndexError, IO: OSError}

# torch's scalar type names (messages) and legacy tensor type names ("but got torch.FloatTensor")
_SCALAR = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
           "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _scalar(dtype):
    """torch's name of a dtype (a genesis dtype or its name): Float, Long, ..."""
    name = str(dtype).replace("genesis.", "")
    return _SCALAR.get(name, name)


def _dims(text):
    """(2, 3), [2, 3], (3) or () in a message as a tuple of ints."""
    inner = text.strip().strip("()[]")
    return tuple(int(v) for v in inner.split(",") if v.strip())


def _l(shape):
    return "[" + ", ".join(str(int(v)) for v in shape) + "]"


def _broadcast_mismatch(a, b):
    """torch's message for shapes a and b that do not broadcast (its rightmost bad dimension), or None."""
    n = max(len(a), len(b))
    for i in range(n - 1, -1, -1):
        off = n - 1 - i
        sa = a[len(a) - 1 - off] if len(a) - 1 - off >= 0 else 1
        sb = b[len(b) - 1 - off] if len(b) - 1 - off >= 0 else 1
        if sa != sb and sa != 1 and sb != 1:
            return f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at non-singleton dimension {i}"
    return None


def _broadcast(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    return tuple(x if y == 1 else y for x, y in zip(a, b))


def _prod(shape):
    out = 1
    for v in shape:
        out *= v
    return out


def _dim_range(d, rank):
    n = max(int(rank), 1)
    return f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})"


_BACKWARD_TWICE = ("Trying to backward through the graph a second time (or directly access saved tensors after they "
                   "have already been freed). Saved intermediate values of the graph are freed when you call "
                   ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                   "graph a second time or if you need to access saved tensors after calling backward.")


# ---------------------------------------------------------------- genesis::Error messages in torch's words
# Each rule: (regex on the message without its "[op] " prefix, handler(match, op) -> (type, text) or None).

def _matmul(m, op):
    a, b, t = _dims(m["a"]), _dims(m["b"]), m["t"] or ""
    if "trans_a" in t and len(a) >= 2:
        a = a[:-2] + (a[-1], a[-2])
    if "trans_b" in t and len(b) >= 2:
        b = b[:-2] + (b[-1], b[-2])
    if len(a) == 1 and len(b) == 1:
        return RuntimeError, (f"inconsistent tensor size, expected tensor [{a[0]}] and src [{b[0]}] to have the same "
                              f"number of elements, but got {a[0]} and {b[0]} elements respectively")
    if len(b) >= 3 or (op == "bmm"):
        batch = _broadcast(a[:-2], b[:-2]) if len(a) >= 2 else b[:-2]
        return RuntimeError, (f"Expected size for first two dimensions of batch2 tensor to be: "
                              f"[{_prod(batch)}, {a[-1]}] but got: [{_prod(batch)}, {b[-2]}].")
    mat1 = (1, a[0]) if len(a) == 1 else (_prod(a[:-1]), a[-1])
    mat2 = (b[0], 1) if len(b) == 1 else b
    return RuntimeError, f"mat1 and mat2 shapes cannot be multiplied ({mat1[0]}x{mat1[1]} and {mat2[0]}x{mat2[1]})"


def _expand(m, op):
    src, dst = _dims(m["a"]), _dims(m["b"])
    for i in range(len(dst) - 1, -1, -1):
        j = i - (len(dst) - len(src))
        if j < 0:
            break
        if dst[i] != -1 and src[j] != 1 and src[j] != dst[i]:
            return RuntimeError, (f"The expanded size of the tensor ({dst[i]}) must match the existing size ({src[j]}) "
                                  f"at non-singleton dimension {i}.  Target sizes: {_l(dst)}.  "
                                  f"Tensor sizes: {_l(src)}")
    return None


def _cat_sizes(m, op):
    d, i, s, s0 = int(m["d"]), int(m["i"]), _dims(m["s"]), _dims(m["s0"])
    if len(s) != len(s0):
        return RuntimeError, f"Tensors must have same number of dimensions: got {len(s0)} and {len(s)}"
    for j in range(len(s)):
        if j != d and s[j] != s0[j]:
            return RuntimeError, (f"Sizes of tensors must match except in dimension {d}. Expected size {s0[j]} but "
                                  f"got size {s[j]} for tensor number {i} in the list.")
    return None


def _index_oob(m, op):
    if op in ("gather", "scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_fill"):
        return RuntimeError, f"index {m['v']} is out of bounds for size {m['s']}"
    return IndexError, "index out of range in self"


def _int_index(m, op):
    if op == "embedding":
        return RuntimeError, (f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                              f"Long, Int; but got genesis.{_scalar(m['dt'])}Tensor instead (while checking arguments "
                              f"for embedding)")
    if op == "index_select":
        return RuntimeError, "index_select(): Expected dtype int32 or int64 for index"
    return RuntimeError, f"{op}(): Expected dtype int64 for index"


def _out_mismatch(m, op):
    s1, d1, s2, d2 = _dims(m["s1"]), m["d1"], _dims(m["s2"]), m["d2"]
    if s1 != s2:
        return RuntimeError, f"output with shape {_l(s1)} doesn't match the broadcast shape {_l(s2)}"
    return RuntimeError, f"result type {_scalar(d2)} can't be cast to the desired output type {_scalar(d1)}"


def _negative(m, op):
    shape = _dims(m["s"])
    neg = next((v for v in shape if v < 0), -1)
    return RuntimeError, f"Trying to create tensor with negative dimension {neg}: {_l(shape)}"


def _conv_channels(m, op):
    w, x = _dims(m["w"]), _dims(m["x"])
    return RuntimeError, (f"Given groups={m['g']}, weight of size {_l(w)}, expected input{_l(x)} to have "
                          f"{m['c']} channels, but got {m['k']} channels instead")


def _ce_target_shape(m, op):
    t, s = _dims(m["t"]), _dims(m["s"])
    if t[:1] != s[:1]:
        return ValueError, (f"Expected input batch_size ({s[0] if s else 1}) to match target batch_size "
                            f"({t[0] if t else 1}).")
    return None


def _number(text):
    v = float(text)
    return str(int(v)) if v == int(v) else repr(v)


_S = r"(\((?:-?\d+(?:, )?)*\))"  # a shape as genesis prints it: (2, 3), (3), ()
_RULES = [
    (r"inner dimensions differ: (?P<a>%s) @ (?P<b>%s)(?: with (?P<t>trans_a and trans_b|trans_a|trans_b))?$" % (_S, _S),
     _matmul),
    (r"both operands must be at least 1-D, got (?P<a>%s) @ (?P<b>%s)$" % (_S, _S),
     lambda m, op: (RuntimeError, f"both arguments to matmul need to be at least 1D, but they are "
                                  f"{len(_dims(m['a']))}D and {len(_dims(m['b']))}D")),
    (r"both operands must be 3-D, got (?P<a>%s) @ (?P<b>%s)$" % (_S, _S),
     lambda m, op: (RuntimeError, "batch1 must be a 3D tensor" if len(_dims(m["a"])) != 3
                    else "batch2 must be a 3D tensor")),
    (r"batch sizes differ: (?P<a>%s) @ (?P<b>%s)$" % (_S, _S),
     lambda m, op: (RuntimeError, "Expected size for first two dimensions of batch2 tensor to be: "
                    f"[{_dims(m['a'])[0]}, {_dims(m['a'])[2]}] but got: [{_dims(m['b'])[0]}, {_dims(m['b'])[1]}].")),
    (r"batch dimensions (?P<a>%s) and (?P<b>%s) cannot be broadcast" % (_S, _S),
     lambda m, op: (RuntimeError, _broadcast_mismatch(_dims(m["a"]), _dims(m["b"])))),
    (r"shapes (?P<a>%s) and (?P<b>%s) cannot be broadcast$" % (_S, _S),
     lambda m, op: (RuntimeError, _broadcast_mismatch(_dims(m["a"]), _dims(m["b"])))),
    (r"condition shape (?P<c>%s) and value shapes (?P<a>%s), (?P<b>%s) cannot be broadcast$" % (_S, _S, _S),
     lambda m, op: (RuntimeError, _broadcast_mismatch(_dims(m["c"]), _broadcast(_dims(m["a"]), _dims(m["b"]))))),
    (r"mask of shape (?P<a>%s) does not broadcast to x's shape (?P<b>%s)$" % (_S, _S),
     lambda m, op: (RuntimeError, _broadcast_mismatch(_dims(m["a"]), _dims(m["b"])))),
    (r"sizes must match except in dim (?P<d>\d+): input (?P<i>\d+) has shape (?P<s>%s) but input 0 has shape "
     r"(?P<s0>%s)$" % (_S, _S), _cat_sizes),
    (r"all inputs must have the same shape: input 0 has shape (?P<a>%s) but input (?P<i>\d+) has shape (?P<b>%s)$"
     % (_S, _S), lambda m, op: (RuntimeError, f"stack expects each tensor to be equal size, but got "
                                             f"{_l(_dims(m['a']))} at entry 0 and {_l(_dims(m['b']))} at entry "
                                             f"{m['i']}")),
    (r"expects at least one tensor$",
     lambda m, op: (RuntimeError, "stack expects a non-empty TensorList" if op == "stack"
                    else f"{op or 'cat'}(): expected a non-empty list of Tensors")),
    (r"input (?P<i>\d+) is 0-d and cannot be concatenated$",
     lambda m, op: (RuntimeError, f"zero-dimensional tensor (at position {m['i']}) cannot be concatenated")),
    (r"shape (?P<s>%s) is invalid for (?P<n>\d+) elements(?: %s)?$" % (_S, _S),
     lambda m, op: (RuntimeError, f"shape '{_l(_dims(m['s']))}' is invalid for input of size {m['n']}")),
    (r"only one dimension can be -1$", lambda m, op: (RuntimeError, "only one dimension can be inferred")),
    (r"invalid size (?P<v>-\d+)$", lambda m, op: (RuntimeError, f"invalid shape dimension {m['v']}")),
    (r"shape %s is incompatible with the strides of %s; use reshape \(copies\)$" % (_S, _S),
     lambda m, op: (RuntimeError, "view size is not compatible with input tensor's size and stride (at least one "
                                  "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")),
    (r"cannot expand (?P<a>%s) to rank (?P<r>\d+)$" % _S,
     lambda m, op: (RuntimeError, f"expand: the number of sizes provided ({m['r']}) must be greater or equal to the "
                                  f"number of dimensions in the tensor ({len(_dims(m['a']))})")),
    (r"cannot expand (?P<a>%s) to (?P<b>%s)(?: \(dim -?\d+\))?$" % (_S, _S), _expand),
    (r"dim (?P<d>-?\d+|none) is out of range for a tensor of rank (?P<n>\d+)$",
     lambda m, op: (IndexError, _dim_range(m["d"], m["n"]))),
    (r"dim (?P<d>-?\d+|none) is out of range \[(?P<lo>-?\d+), (?P<hi>-?\d+)\]$",
     lambda m, op: (IndexError, f"Dimension out of range (expected to be in range of [{m['lo']}, {m['hi']}], "
                                f"but got {m['d']})")),
    (r"got (?P<k>\d+) dims for a tensor of rank (?P<n>\d+)$",
     lambda m, op: (RuntimeError, f"permute(): number of dimensions in the tensor input does not match the length of "
                                  f"the desired ordering of dimensions i.e. input.dim() = {m['n']} is not equal to "
                                  f"len(dims) = {m['k']}")),
    (r"dim (?P<d>\d+) repeated$", lambda m, op: (RuntimeError, "permute(): duplicate dims are not allowed.")),
    (r"index (?P<v>-?\d+) is out of range for size (?P<s>\d+)$", _index_oob),
    (r"index (?P<v>-?\d+) is out of range for dim (?P<d>\d+) of size (?P<s>\d+)$",
     lambda m, op: (IndexError, f"{op or 'select'}(): index {m['v']} out of range for dimension {m['d']} with size "
                                f"{m['s']}")),
    (r"index (?P<i>%s) is larger than x (?P<x>%s) at dim (?P<d>\d+) \(only dim (?P<e>\d+) may differ\)$" % (_S, _S),
     lambda m, op: (RuntimeError, f"Size does not match at dimension {m['d']} expected index {_l(_dims(m['i']))} to "
                                  f"be smaller than self {_l(_dims(m['x']))} apart from dimension {m['e']}")),
    (r"(?:ids|index) must be an integer tensor, got (?P<dt>\w+)$", _int_index),
    (r"condition must be a bool tensor, got (?P<dt>\w+)$",
     lambda m, op: (RuntimeError, f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                                  f"{_scalar(m['dt'])}")),
    (r"negation of a bool tensor is not supported",
     lambda m, op: (RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                                  "to invert a mask, use the `~` or `logical_not()` operator instead.")),
    (r"subtraction of two bool tensors is not supported",
     lambda m, op: (RuntimeError, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
                                  "or `logical_xor()` operator instead.")),
    (r"only floating tensors can require grad, got \w+$",
     lambda m, op: (RuntimeError, "only Tensors of floating point dtype can require gradients")),
    (r"(?:input|logits|x) must be a floating-point tensor, got (?P<dt>\w+)$",
     lambda m, op: (RuntimeError, f"\"{op}\" not implemented for '{_scalar(m['dt'])}'")),
    (r"output \d+ is (?P<s1>%s) (?P<d1>\w+), expected (?P<s2>%s) (?P<d2>\w+)$" % (_S, _S), _out_mismatch),
    (r"trying to backward through .* a second time; pass retain_graph=true the first time$",
     lambda m, op: (RuntimeError, _BACKWARD_TWICE)),
    (r"saved tensor '.*' was freed by a backward pass \(use retain_graph\)$",
     lambda m, op: (RuntimeError, _BACKWARD_TWICE)),
    (r"tensor does not require grad and has no grad_fn$",
     lambda m, op: (RuntimeError, "element 0 of tensors does not require grad and does not have a grad_fn")),
    (r"grad can be implicitly created only for one-element outputs$",
     lambda m, op: (RuntimeError, "grad can be implicitly created only for scalar outputs")),
    (r"gradient shape does not match the tensor's shape$",
     lambda m, op: (RuntimeError, "Mismatch in shape: the gradient's shape does not match the tensor's shape")),
    (r"in-place operation on a tensor that requires grad \(use NoGradGuard or detach\(\)\)$",
     lambda m, op: (RuntimeError, "a Tensor that requires grad is being used in an in-place operation; make the "
                                  "change inside `with genesis.no_grad():` or on x.detach()")),
    (r"tensor does not require grad$",
     lambda m, op: (RuntimeError, "cannot register a hook on a tensor that doesn't require gradient")
     if op == "register_hook" else None),
    (r"a tensor with \d+ elements cannot be converted to a number$",
     lambda m, op: (ValueError, "only one element tensors can be converted to Python scalars")),
    (r"weight (?P<w>%s) expects (?P<c>\d+) input channels but the input (?P<x>%s) has (?P<k>\d+) \(groups "
     r"(?P<g>\d+)\)$" % (_S, _S), _conv_channels),
    (r"input must be 3-D \(C, H, W\) or 4-D \(N, C, H, W\), got shape %s$" % _S,
     lambda m, op: (RuntimeError, "non-empty 3D or 4D (batch mode) tensor expected for input")),
    (r"shape (?P<s>\[[-\d, ]*\]) has a negative size$", _negative),
    (r"(?:gn_tensor_empty: )?negative dimension in shape (?P<s>%s)$" % _S, _negative),
    (r"target shape (?P<t>%s) must equal the logits shape without the class dim (?P<s>%s)$" % (_S, _S),
     _ce_target_shape),
    (r"probability target must have the input's shape$",
     lambda m, op: (RuntimeError, "expected scalar type Long but found a floating-point target of another shape")),
    (r"target (?P<v>-?\d+) out of range \[0, \d+\)$", lambda m, op: (IndexError, f"Target {m['v']} is out of bounds.")),
    (r"expected (?P<c>\d+) channels, got (?P<k>\d+)$",
     lambda m, op: (RuntimeError, f"running_mean should contain {m['k']} elements not {m['c']}")),
    (r"expected 2-D or 3-D input, got (?P<n>\d+)-D$",
     lambda m, op: (ValueError, f"expected 2D or 3D input (got {m['n']}D input)")),
    (r"expected 4-D input, got (?P<n>\d+)-D$", lambda m, op: (ValueError, f"expected 4D input (got {m['n']}D input)")),
    (r"normalized_shape does not match the input's trailing dims$",
     lambda m, op: (RuntimeError, "Given normalized_shape does not match the input's trailing dimensions")),
    (r"k -?\d+ is out of range \[0, \d+\] for dim .*$", lambda m, op: (RuntimeError, "selected index k out of range")),
    (r"number of chunks must be positive$",
     lambda m, op: (RuntimeError, "chunk expects `chunks` to be greater than 0")),
    (r"split size must be positive$", lambda m, op: (RuntimeError, "split expects split_size to be positive")),
    (r"low (?P<a>-?\d+) must be less than high (?P<b>-?\d+)$",
     lambda m, op: (RuntimeError, f"random_ expects 'from' to be less than 'to', but got from={m['a']} >= "
                                  f"to={m['b']}")),
    (r"step must be nonzero, got .*$", lambda m, op: (RuntimeError, "step must be nonzero")),
    (r"end .* and start .* are inconsistent with the sign of step .*$",
     lambda m, op: (RuntimeError, "upper bound and larger bound inconsistent with step sign")),
    (r"p must be in \[0, 1\], got (?P<p>[-\d.e+inf]+)$",
     lambda m, op: (ValueError, f"dropout probability has to be between 0 and 1, but got {_number(m['p'])}")),
    (r"unknown device type '(?P<t>[^']*)' \(known: (?P<k>.*)\)$",
     lambda m, op: (RuntimeError, f"Expected one of {m['k']} device type at start of device string: {m['t']}")),
    (r"slice step must be positive$", lambda m, op: (ValueError, "step must be greater than zero")),
]
_RULES = [(_re.compile(p), h) for p, h in _RULES]
_PREFIX = _re.compile(r"^\[(?P<op>[A-Za-z_][\w.]*)\] |^(?P<fn>[a-z_][a-z_0-9]*): ")

# C++ spellings a Python user should not see, in messages no rule rewrote
_PYTHON_WORDS = [
    ("use NoGradGuard", "use `with genesis.no_grad():`"), ("NoGradGuard", "genesis.no_grad()"),
    ("(use retain_graph)", "(pass retain_graph=True)"),
    ("see distributed::local_device", "see genesis.distributed.get_node_local_rank()"),
    ("GN_REDUCE_", "ReduceOp."), ("nullptr", "None"), ("std::", ""), ("genesis::", "genesis."),
]
_KEYWORD_BOOL = _re.compile(r"\b(\w+)=(true|false)\b")  # C++'s retain_graph=true is Python's retain_graph=True


def _reword(message):
    """(type or None, message) in torch's words for a genesis message, keeping its "[op] " prefix."""
    prefix, op, body = "", "", message
    m = _PREFIX.match(message)
    if m:
        op = m["op"] or m["fn"]
        prefix, body = f"[{op}] ", message[m.end():]
        inner = _PREFIX.match(body)  # "[empty] gn_tensor_empty: ..."
        if inner and inner["fn"] and inner["fn"].startswith("gn_"):
            body = body[inner.end():]
    for pattern, handler in _RULES:
        hit = pattern.search(body)
        if hit:
            out = handler(hit, op)
            if out and out[1]:
                named = op and _re.match(r"^%s\b" % _re.escape(op), out[1])  # "cat(): ..." names the op itself
                return out[0], ("" if named else prefix) + out[1]
    for cpp, py in _PYTHON_WORDS:
        message = message.replace(cpp, py)
    return None, _KEYWORD_BOOL.sub(lambda m: f"{m[1]}={m[2].capitalize()}", message)


# ---------------------------------------------------------------- files: OSError subclasses with errno

_STRERRORS = sorted(((_os.strerror(e), e) for e in _errno.errorcode), key=lambda p: -len(p[0]))
_PHRASES = [("no such file", _errno.ENOENT), ("not found", _errno.ENOENT), ("is a directory", _errno.EISDIR),
            ("is not a folder", _errno.ENOTDIR), ("not a directory", _errno.ENOTDIR),
            ("permission denied", _errno.EACCES)]
_MISSING = ("missing ", "neither ")  # a folder without the files it needs: the message says which
_PATH = [_re.compile(r"^(?:cannot (?:open|read|write|create folder) )(?P<path>[^\s:][^:]*?)(?:: (?P<rest>.*))?$"),
         _re.compile(r"^(?P<path>[^\s:\[][^:]*?): (?P<rest>.*)$"),
         _re.compile(r"^(?P<path>[^\s:\[]\S*) (?P<rest>is not a folder|is a directory|is not a directory)$")]


def _os_error(code, message):
    """The OSError for a message about a file, or None when it names no file."""
    body = _PREFIX.sub("", message, count=1)
    path = rest = None
    for pattern in _PATH:
        m = pattern.match(body)
        if m and ("/" in m["path"] or "." in m["path"]) and " " not in m["path"].strip():
            path, rest = m["path"].strip(), m["rest"] or ""
            break
    if path is None:  # no file: a socket, a pipe, ...: the errno of the message's strerror text, if any
        err = next((e for text, e in _STRERRORS if text.lower() in body.lower()), None)
        return OSError(err, message) if err is not None and code == IO else None
    if code == NOT_FOUND and rest.startswith(_MISSING):
        return OSError(_errno.ENOENT, rest, path)
    err = next((e for text, e in _STRERRORS if text.lower() in body.lower()), None)
    if err is None:
        err = next((e for phrase, e in _PHRASES if phrase in body.lower()), None)
    if err is None and code == NOT_FOUND and not _os.path.exists(path):
        err = _errno.ENOENT
    if err is None:
        return OSError(message) if code == IO else None
    return OSError(err, _os.strerror(err), path)  # Python picks FileNotFoundError, IsADirectoryError, ...


def from_code(code, message):
    """The exception for a genesis::Error of gn_code `code`."""
    if code in (IO, NOT_FOUND):
        exc = _os_error(code, message)
        if exc is not None:
            return exc
    kind, text = _reword(message)
    return (kind or _DEFAULT_TYPE.get(code, RuntimeError))(text)


# ---------------------------------------------------------------- bad calls: torch's TypeErrors

class _Param:
    __slots__ = ("name", "type", "default", "kind")

    def __init__(self, name, type_, default, kind):
        self.name, self.type, self.default, self.kind = name, type_, default, kind


def _split_top(text):
    """Splits at the commas outside brackets, parentheses and quotes."""
    parts, depth, quote, cur = [], 0, None, []
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _parse(signature, drop_self):
    """The parameters of a pybind11 signature "(a: int, b: float = 1.0, *args, c: str = 'x') -> T"."""
    start = signature.find("(")
    depth, end = 0, len(signature)
    for i in range(start, len(signature)):
        depth += signature[i] in "(["
        depth -= signature[i] in ")]"
        if depth == 0:
            end = i
            break
    params, kind = [], "pos"
    for piece in _split_top(signature[start + 1:end]):
        if piece == "/":
            continue
        if piece == "*":
            kind = "kwonly"
            continue
        if piece.startswith("**"):
            params.append(_Param(piece[2:], "object", None, "varkw"))
            continue
        if piece.startswith("*"):
            params.append(_Param(piece[1:], "object", None, "varargs"))
            kind = "kwonly"
            continue
        head, eq, default = piece.partition(" = ")
        name, _, type_ = head.partition(": ")
        params.append(_Param(name.strip(), type_.strip() or "object", default.strip() if eq else None, kind))
    if drop_self and params and params[0].kind == "pos":
        params = params[1:]
    return params


def _generic(inner):
    """"List[int]" -> ("List", ["int"])."""
    m = _re.match(r"^([\w.]+)\[(.*)\]$", inner)
    return (m.group(1), _split_top(m.group(2))) if m else (inner, [])


def _class_of(type_):
    """The class a pybind11 type name ("genesis._C.Tensor", "genesis::Generator") names, or None."""
    dotted = type_.replace("::", ".").replace("genesis.", "genesis._C.", 1) if "::" in type_ else type_
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        mod = _sys.modules.get(".".join(parts[:i]))
        if mod is not None:
            obj = mod
            for p in parts[i:]:
                obj = getattr(obj, p, None)
            return obj if isinstance(obj, type) else None
    return None


_INT_LIKE = ("int", "SupportsInt", "SupportsIndex")
_FLOAT_LIKE = ("float", "SupportsFloat")


def _accepts(type_, v):
    """Whether pybind11 could convert v to a parameter of that type (True when unsure)."""
    name, args = _generic(type_)
    if name in ("object", "handle", "args", "kwargs", "Any", "buffer", "capsule"):
        return True
    if name == "Optional":
        return v is None or _accepts(args[0], v)
    if name == "Union":
        return any(_accepts(a, v) for a in args)
    if name in ("List", "Sequence", "Iterable", "Tuple", "Set", "list", "tuple"):
        if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__") or isinstance(v, dict):
            return False
        if not args or not hasattr(v, "__len__"):
            return True
        items = list(v)
        if name == "Tuple" and len(args) > 1 and args[-1] != "...":
            return len(items) == len(args) and all(_accepts(a, x) for a, x in zip(args, items))
        return all(_accepts(args[0], x) for x in items)
    if name in ("Dict", "dict"):
        return isinstance(v, dict)
    if name in ("Callable", "function"):
        return callable(v)
    if name in _INT_LIKE:
        return isinstance(v, int) or (hasattr(v, "__index__") and not isinstance(v, float) and not _is_tensor(v))
    if name in _FLOAT_LIKE:
        return isinstance(v, (int, float)) or (hasattr(v, "__float__") and not isinstance(v, str))
    if name == "bool":
        return isinstance(v, (bool, int)) or type(v).__name__ == "bool_"
    if name == "str":
        return isinstance(v, str)
    if name == "bytes":
        return isinstance(v, bytes)
    cls = _class_of(name)
    if cls is None:
        return True
    return isinstance(v, cls)


def _is_tensor(v):
    cls = _class_of("genesis._C.Tensor")
    return cls is not None and isinstance(v, cls)


def _shown(type_):
    """torch's name for a parameter type: Tensor, int, tuple of ints, ... (None for any object)."""
    name, args = _generic(type_)
    if name in ("object", "handle", "Any"):
        return None
    if name == "Optional":
        return _shown(args[0])
    if name in ("List", "Sequence", "Iterable", "Tuple", "Set"):
        inner = _shown(args[0]) if args else None
        return f"tuple of {inner}s" if inner else "tuple"
    if name in ("Dict", "dict"):
        return "dict"
    if name in ("Callable", "function"):
        return "callable"
    if name in _INT_LIKE:
        return "int"
    if name in _FLOAT_LIKE:
        return "float"
    return name.replace("::", ".").rsplit(".", 1)[-1]


def _typename(v):
    return "NoneType" if v is None else type(v).__name__


# *args parameters that hold a size: the name torch gives them
_SIZE_ARGS = {"reshape": "shape", "permute": "dims", "view": "size", "expand": "size", "zeros": "size",
              "ones": "size", "empty": "size", "rand": "size", "randn": "size", "repeat": "repeats", "tile": "dims",
              "new_zeros": "size", "new_ones": "size", "new_empty": "size"}


def _size_problem(fname, values):
    """torch's message for a bad `*size` argument, or None."""
    label = _SIZE_ARGS[fname]
    if len(values) == 1 and not isinstance(values[0], int):
        v = values[0]
        if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__iter__"):
            return f"{fname}(): argument '{label}' (position 1) must be tuple of ints, not {_typename(v)}"
        values = list(v)
    for i, v in enumerate(values):
        if not isinstance(v, int) and not (hasattr(v, "__index__") and not isinstance(v, float)):
            return (f"{fname}(): argument '{label}' must be tuple of ints, but found element of type {_typename(v)} "
                    f"at pos {i + 1}")
    return None


def _plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def _bind(params, pos, kw, fname):
    """Binds a call to params: ({name: (value, position or None)}, problem message or None)."""
    positional = [p for p in params if p.kind == "pos"]
    varargs = next((p for p in params if p.kind == "varargs"), None)
    varkw = next((p for p in params if p.kind == "varkw"), None)
    bound = {}
    if len(pos) > len(positional) and varargs is None:
        need = sum(1 for p in positional if p.default is None)
        takes = f"from {need} to {len(positional)}" if need != len(positional) else str(len(positional))
        was = "was" if len(pos) == 1 else "were"
        plural = "s" if takes != "1" else ""
        return bound, f"{fname}() takes {takes} positional argument{plural} but {len(pos)} {was} given"
    for i, v in enumerate(pos[:len(positional)]):
        bound[positional[i].name] = (v, i + 1)
    if varargs is not None:
        bound[varargs.name] = (tuple(pos[len(positional):]), len(positional) + 1)
    names = {p.name for p in params if p.kind in ("pos", "kwonly")}
    for k, v in kw.items():
        if k in bound:
            return bound, f"{fname}() got multiple values for argument '{k}'"
        if k not in names and varkw is None:
            return bound, f"{fname}() got an unexpected keyword argument '{k}'"
        bound[k] = (v, None)
    missing = [p.name for p in params if p.kind in ("pos", "kwonly") and p.default is None and p.name not in bound]
    if missing:
        listed = " and ".join(f"'{n}'" for n in missing) if len(missing) < 3 else \
            ", ".join(f"'{n}'" for n in missing[:-1]) + f", and '{missing[-1]}'"
        return bound, f"{fname}() missing {_plural(len(missing), 'required positional argument')}: {listed}"
    return bound, None


def _single(fname, params, pos, kw):
    """The message for a call of a one-signature function that names the bad argument, or None."""
    bound, problem = _bind(params, pos, kw, fname)
    if problem:
        return problem
    for p in params:
        if p.name not in bound:
            continue
        v, position = bound[p.name]
        if p.kind == "varargs":
            if fname in _SIZE_ARGS:
                size = _size_problem(fname, list(v))
                if size:
                    return size
            continue
        if p.kind == "varkw" or _accepts(p.type, v) or (v is None and p.default == "None"):
            continue
        want = _shown(p.type)
        if want is None:
            continue
        where = f"'{p.name}'" if not _re.match(r"^arg\d+$", p.name) else ""
        if position is not None:
            where = f"{where} (position {position})" if where else f"(position {position})"
        return f"{fname}(): argument {where} must be {want}, not {_typename(v)}"
    return None


def _signature_text(params):
    out, kwonly = [], False
    for p in params:
        if p.kind == "varargs":
            out.append(f"*{p.name}")
            kwonly = True
            continue
        if p.kind == "varkw":
            out.append(f"**{p.name}")
            continue
        if p.kind == "kwonly" and not kwonly:
            out.append("*")
            kwonly = True
        t = _shown(p.type)
        text = f"{t} {p.name}" if t else p.name
        out.append(text + (f" = {p.default}" if p.default is not None else ""))
    return "(" + ", ".join(out) + ")"


def _combination(fname, signatures, pos, kw):
    got = [_typename(v) for v in pos] + [f"{k}={_typename(v)}" for k, v in kw.items()]
    lines = "\n".join(f" * {_signature_text(ps)}" for ps in signatures)
    return (f"{fname}() received an invalid combination of arguments - got ({', '.join(got)}), but expected one "
            f"of:\n{lines}")


def _call_parts(overloads, args, kwargs):
    name, _, is_method, is_ctor = overloads[0]
    args = tuple(args or ())
    kw = dict(kwargs or {})
    fname = name
    if is_ctor:
        fname = type(args[0]).__name__ if args else name
    pos = list(args[1:]) if (is_method or is_ctor) and args else list(args)
    signatures = [_parse(sig, meth or ctor) for _, sig, meth, ctor in overloads]
    return fname, pos, kw, signatures


def _bad_call(overloads, args, kwargs):
    fname, pos, kw, signatures = _call_parts(overloads, args, kwargs)
    if len(signatures) == 1:
        message = _single(fname, signatures[0], pos, kw)
        if message:
            return message
    elif fname in _SIZE_ARGS:
        message = _size_problem(fname, pos)
        if message:
            return message
    return _combination(fname, signatures, pos, kw)


def _refined(overloads, args, kwargs, exc):
    """Details only the call knows, for a few genesis errors (their `.code` kept), or None."""
    fname, pos, kw, signatures = _call_parts(overloads, args, kwargs)
    message = str(exc)
    for params in signatures:
        bound, problem = _bind(params, pos, kw, fname)
        if not problem:
            break
    else:
        return None
    values = {k: v for k, (v, _) in bound.items()}
    self = args[0] if overloads[0][2] and args else None
    if "is being used in an in-place operation" in message and _is_tensor(self) and self.is_leaf:
        return RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if "Mismatch in shape" in message and fname == "backward" and _is_tensor(values.get("gradient")):
        return RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {_l(values['gradient'].shape)} and "
                            f"output[0] has a shape of {_l(self.shape)}.")
    if "normalized_shape" in message and _is_tensor(values.get("input")):
        ns = values.get("normalized_shape")
        ns = (ns,) if isinstance(ns, int) else tuple(ns)
        return RuntimeError(f"Given normalized_shape={_l(ns)}, expected input with shape [*, "
                            f"{', '.join(map(str, ns))}], but got input of size{_l(values['input'].shape)}")
    m = _re.search(r"index (-?\d+) is out of bounds for size (\d+)$", message)
    if m and isinstance(values.get("dim"), int):
        return RuntimeError(f"index {m[1]} is out of bounds for dimension {values['dim']} with size {m[2]}")
    m = _re.search(r"(\w+)\(\): index (-?\d+) out of range for dimension (\d+) with size \d+$", message)
    if m and _is_tensor(self):
        return IndexError(f"{m[1]}(): index {m[2]} out of range for tensor of size {_l(self.shape)} at dimension "
                          f"{m[3]}")
    if "chunk expects `chunks` to be greater than 0" in message and "chunks" in values:
        return RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {values['chunks']}")
    if fname == "linspace" and isinstance(values.get("steps"), int) and values["steps"] < 0:
        return RuntimeError("number of steps must be non-negative")
    if fname == "eye" and isinstance(values.get("n"), int) and values["n"] < 0:
        return RuntimeError(f"n must be greater or equal to 0, got {values['n']}")
    if fname in ("cross_entropy", "nll_loss"):
        return _target_problem(fname, values)
    if fname in ("binary_cross_entropy", "binary_cross_entropy_with_logits"):
        x, t = values.get("input"), values.get("target")
        if _is_tensor(x) and _is_tensor(t) and tuple(x.shape) != tuple(t.shape):
            if fname == "binary_cross_entropy":
                return ValueError(f"Using a target size ({_l(t.shape)}) that is different to the input size "
                                  f"({_l(x.shape)}) is deprecated. Please ensure they have the same size.")
            return ValueError(f"Target size ({_l(t.shape)}) must be the same as input size ({_l(x.shape)})")
    return None


def _target_problem(fname, values):
    """torch's checks of a classification target: int64 class indices (or, for cross_entropy, probabilities of the
    input's shape) and a batch size equal to the input's."""
    x, t = values.get("input"), values.get("target")
    if not (_is_tensor(x) and _is_tensor(t)):
        return None
    probabilities = fname == "cross_entropy" and t.is_floating_point() and tuple(t.shape) == tuple(x.shape)
    if not probabilities and str(t.dtype) != "genesis.int64":
        return RuntimeError(f"expected scalar type Long but found {_scalar(t.dtype)}")
    if not probabilities and x.dim() >= 2 and t.dim() >= 1 and x.shape[0] != t.shape[0]:
        return ValueError(f"Expected input batch_size ({x.shape[0]}) to match target batch_size ({t.shape[0]}).")
    return None


# messages of the binding code itself, in torch's words: (regex, type, message or function of the match)
_BINDING = [
    (r"cannot call numpy\(\) on a tensor that requires grad", RuntimeError,
     "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."),
    (r"cannot export a tensor that requires grad", RuntimeError,
     "Can't export tensors that require gradient, use tensor.detach()"),
    (r"^the truth value of a tensor with more than one element is ambiguous", RuntimeError,
     "Boolean value of Tensor with more than one value is ambiguous"),
    (r"^tensor\(\): ragged nested sequence \(expected length (\d+) at dim (\d+), got (\d+)\)", None,
     lambda m: ValueError(f"expected sequence of length {m[1]} at dim {m[2]} (got {m[3]})")),
    (r"^tensor\(\): could not convert an object of type (\w+) to a number", None,
     lambda m: TypeError(f"tensor(): invalid data type '{m[1]}'") if m[1] in ("str", "bytes")
     else RuntimeError(f"Could not infer dtype of {m[1]}")),
]
_BINDING = [(_re.compile(p), t, m) for p, t, m in _BINDING]


def _number_argument(overloads, args, kwargs, got):
    """For "expected a number, got str": the argument that was not a number, as torch names it."""
    fname, pos, kw, signatures = _call_parts(overloads, args, kwargs)
    bound, problem = _bind(signatures[0], pos, kw, fname)
    if problem:
        return problem
    for p in signatures[0]:
        if p.name in bound and _typename(bound[p.name][0]) == got and _shown(p.type) is None:
            position = bound[p.name][1]
            want = "Tensor" if p.name in ("other", "input", "self", "exponent") else "Number"
            where = f" (position {position})" if position else ""
            return f"{fname}(): argument '{p.name}'{where} must be {want}, not {got}"
    return None


def _optimizer_params(overloads, args, kwargs):
    """torch's TypeErrors for an optimizer given something other than tensors or parameter groups."""
    if not overloads[0][3] or not args:
        return None
    names = [c.__name__ for c in type(args[0]).__mro__]
    fname, pos, kw, signatures = _call_parts(overloads, args, kwargs)
    if "Optimizer" in names:
        params = kw.get("params", pos[0] if pos else None)
        if _is_tensor(params):
            return TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                             f"got genesis.{_scalar(params.dtype)}Tensor")
        if isinstance(params, (list, tuple)):
            for p in params:
                if isinstance(p, dict):
                    p = p.get("params", [])
                    items = [p] if _is_tensor(p) else list(p) if isinstance(p, (list, tuple)) else [p]
                else:
                    items = [p]
                for item in items:
                    if not _is_tensor(item):
                        return TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                         f"{_typename(item)}")
    elif any(n.endswith("LRScheduler") or n == "ReduceLROnPlateau" for n in names):
        for params in signatures:
            bound, problem = _bind(params, pos, kw, fname)
            opt = bound.get("optimizer", (None,))[0]
            if not problem and opt is not None and "Optimizer" not in [c.__name__ for c in type(opt).__mro__]:
                return TypeError(f"{_typename(opt)} is not an Optimizer")
    return None


def call_error(overloads, args, kwargs, exc):
    """The exception a Python user should see for a failed call of a bound function, or None to keep exc."""
    try:
        return _call_error(overloads, args, kwargs, exc)
    except Exception:  # a rewrite must never hide the original error
        return None


def _call_error(overloads, args, kwargs, exc):
    message = str(exc)
    name = overloads[0][0]
    optimizer = _optimizer_params(overloads, args, kwargs)
    if optimizer is not None:
        return optimizer
    if isinstance(exc, TypeError) and _re.match(r"^%s\(\): incompatible (function|constructor) arguments"
                                                % _re.escape(name), message):
        return TypeError(_bad_call(overloads, args, kwargs))
    if type(exc) is RuntimeError and message.startswith("Unable to cast Python instance"):
        return TypeError(_bad_call(overloads, args, kwargs))
    if type(exc) is TypeError and (message.endswith("object is not iterable") or
                                   message.startswith("'float' object cannot be interpreted")):
        fname = overloads[0][0]
        if fname in _SIZE_ARGS:
            return TypeError(_bad_call(overloads, args, kwargs))
    m = _re.match(r"^expected a number, got (\w+)$", message)
    if type(exc) is TypeError and m:
        better = _number_argument(overloads, args, kwargs, m[1])
        return TypeError(better) if better else None
    if hasattr(exc, "code"):
        better = _refined(overloads, args, kwargs, exc)
        if better is not None:
            better.code = exc.code
        return better
    for pattern, kind, text in _BINDING:
        m = pattern.search(message)
        if m:
            return text(m) if callable(text) else kind(text)
    return None


# ---------------------------------------------------------------- dtype rules checked before the call

def _tensor_values(overloads, args, kwargs):
    fname, pos, kw, signatures = _call_parts(overloads, args, kwargs)
    self = args[0] if overloads[0][2] and args else None
    for params in signatures:
        bound, problem = _bind(params, pos, kw, fname)
        if not problem:
            values = {k: v for k, (v, _) in bound.items()}
            return fname, self, values
    return fname, self, None


def precheck(overloads, args, kwargs):
    """torch's checks for matmul, linear, conv2d, the classification losses, cat and stack: the exception, or None."""
    try:
        return _precheck(overloads, args, kwargs)
    except Exception:
        return None


def _precheck(overloads, args, kwargs):
    fname, self, values = _tensor_values(overloads, args, kwargs)
    if values is None:
        return None
    if fname in ("cross_entropy", "nll_loss"):
        return _target_problem(fname, values)
    if fname in ("cat", "stack"):
        if _is_tensor(values.get("tensors")):
            return TypeError(f"{fname}(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
        return None
    tensors = [v for v in ([self] if self is not None else []) + list(values.values()) if _is_tensor(v)]
    if len(tensors) < 2:
        return None
    a, b = tensors[0], tensors[1]
    if fname == "linear":
        bias = tensors[2] if len(tensors) > 2 else None
        if a.dtype != b.dtype:
            if bias is None:
                return RuntimeError(f"expected scalar type {_scalar(a.dtype)} but found {_scalar(b.dtype)}")
            return RuntimeError("mat1 and mat2 must have the same dtype")
        if bias is not None and bias.dtype != a.dtype:
            return RuntimeError("self and mat2 must have the same dtype")
        return None
    if a.dtype == b.dtype:
        return None
    if fname in ("matmul", "__matmul__") and a.dim() == 1 and b.dim() == 1:
        return RuntimeError(f"dot : expected both vectors to have same dtype, but found {_scalar(a.dtype)} and "
                            f"{_scalar(b.dtype)}")
    return RuntimeError(f"expected scalar type {_scalar(a.dtype)} but found {_scalar(b.dtype)}")


# ---------------------------------------------------------------- Python functions given something else than a tensor

# Parameters that hold a tensor in torch's signatures (nn.functional, linalg, the tensor functions written in Python)
_TENSOR_PARAMS = {"input", "x", "x1", "x2", "input1", "input2", "anchor", "positive", "negative", "log_probs", "target",
                  "targets", "A", "B", "query", "key", "value"}
_NOT_GUARDED = {"tensor", "as_tensor", "from_numpy", "is_tensor", "where", "full", "scalar_tensor"}


def _not_a_tensor(fname, params, args, kwargs):
    """torch's TypeError for the first tensor parameter given something else (numbers pass: torch takes scalars in
    many places), or None."""
    is_tensor = _class_of("genesis._C.Tensor")
    for i, p in enumerate(params):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name not in _TENSOR_PARAMS:
            continue
        if i < len(args) and p.kind != p.KEYWORD_ONLY:
            v, where = args[i], f" (position {i + 1})"
        elif p.name in kwargs:
            v, where = kwargs[p.name], ""
        else:
            continue
        if isinstance(v, is_tensor) or isinstance(v, (int, float, bool)) or (v is None and p.default is not p.empty):
            continue
        return f"{fname}(): argument '{p.name}'{where} must be Tensor, not {_typename(v)}"
    return None


def _guard(fn, owner=None):
    """fn wrapped so that a failure caused by a non-tensor argument raises torch's TypeError; `owner` is the class
    of a forward method (whose inner torch-style TypeErrors, such as linear()'s, are kept)."""
    import functools
    import inspect
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return fn
    if owner is not None:
        params = params[1:]
    if not any(p.name in _TENSOR_PARAMS for p in params):
        return fn
    @functools.wraps(fn)
    def guarded(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (TypeError, AttributeError) as e:
            if owner is not None and isinstance(e, TypeError) and "must be Tensor, not" in str(e):
                raise
            if owner is not None:
                fname = f"{type(args[0]).__name__}.{fn.__name__}" if args else fn.__name__
                message = _not_a_tensor(fname, params, args[1:], kwargs)
            else:
                message = _not_a_tensor(fn.__name__, params, args, kwargs)
            if message is None:
                raise
            raise TypeError(message) from None
    guarded._genesis_guarded = True
    return guarded


def guard_python_functions(prefixes=("genesis.nn", "genesis.linalg", "genesis.functional")):
    """Wraps the public functions written in Python in the modules under `prefixes` (wherever the package names
    them), and the forward methods of their modules' classes, so that a non-tensor where a tensor belongs raises
    torch's TypeError ("leaky_relu(): argument 'input' (position 1) must be Tensor, not list") instead of whatever
    the first line touching it raised.  The check runs only when the call failed with a TypeError or AttributeError."""
    wrapped = {}
    for name, mod in list(_sys.modules.items()):
        if mod is None or not name.startswith(prefixes):
            continue
        for attr, obj in list(vars(mod).items()):
            if getattr(obj, "__module__", None) != name:
                continue
            if isinstance(obj, type):
                forward = obj.__dict__.get("forward")
                if type(forward).__name__ == "function" and not getattr(forward, "_genesis_guarded", False):
                    obj.forward = _guard(forward, owner=obj)
            elif (type(obj).__name__ == "function" and not attr.startswith("_") and attr not in _NOT_GUARDED and
                  not getattr(obj, "_genesis_guarded", False)):
                wrapped[id(obj)] = (obj, _guard(obj))
    for name, mod in list(_sys.modules.items()):
        if mod is None or not name.startswith("genesis") or name.startswith("genesis._C"):
            continue
        for attr, value in list(vars(mod).items()):
            hit = wrapped.get(id(value))
            if hit is not None and hit[0] is value and hit[1] is not value:
                setattr(mod, attr, hit[1])
