#!/usr/bin/python3
"""Smoke test of the Genesis C API from Python through ctypes (standard
library only): another language can drive libgenesis with nothing but the C
ABI.

Usage: python_c_api_test.py [path/to/libgenesis.so]
       (or set GENESIS_LIBRARY; default: build/lib/libgenesis.so)
"""
import ctypes
import os
import random
import sys
import unittest

# ------------------------------------------------------------ C declarations

GN_F32, GN_F64 = 0, 3
GN_ATTR_INT, GN_ATTR_FLOAT, GN_ATTR_INTS = 0, 1, 2
GN_ERR_SHAPE, GN_ERR_NOT_FOUND = 2, 5


class Device(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int32), ("index", ctypes.c_int32)]


class _Ints(ctypes.Structure):
    _fields_ = [("data", ctypes.POINTER(ctypes.c_int64)), ("size", ctypes.c_size_t)]


class _AttrUnion(ctypes.Union):
    _fields_ = [("i", ctypes.c_int64), ("f", ctypes.c_double), ("ints", _Ints),
                ("s", ctypes.c_char_p), ("device", Device)]


class AttrValue(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("reserved", ctypes.c_int32), ("u", _AttrUnion)]


def _library_path():
    if len(sys.argv) > 1:
        return sys.argv.pop(1)  # leave unittest's own arguments alone
    if os.environ.get("GENESIS_LIBRARY"):
        return os.environ["GENESIS_LIBRARY"]
    return os.path.join(os.path.dirname(__file__), "..", "..", "build", "lib", "libgenesis.so")


def _declare(lib):
    """argtypes/restype for every function used; statuses and handles are void*."""
    P = ctypes.c_void_p
    PP = ctypes.POINTER(ctypes.c_void_p)
    sigs = {
        "gn_status_code": (ctypes.c_int32, [P]),
        "gn_status_message": (ctypes.c_char_p, [P]),
        "gn_status_free": (None, [P]),
        "gn_abi_version": (None, [ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32)]),
        "gn_version_string": (ctypes.c_char_p, []),
        "gn_runtime_create": (P, [P, PP]),
        "gn_runtime_destroy": (None, [P]),
        "gn_runtime_plugin_count": (ctypes.c_size_t, [P]),
        "gn_device_parse": (P, [P, ctypes.c_char_p, ctypes.POINTER(Device)]),
        "gn_tensor_from_host": (P, [P, P, ctypes.POINTER(ctypes.c_int64), ctypes.c_int32,
                                    ctypes.c_int32, Device, PP]),
        "gn_tensor_to_host": (P, [P, P, ctypes.c_size_t]),
        "gn_tensor_release": (None, [P]),
        "gn_tensor_ndim": (ctypes.c_int32, [P]),
        "gn_tensor_shape": (ctypes.POINTER(ctypes.c_int64), [P]),
        "gn_tensor_dtype": (ctypes.c_int32, [P]),
        "gn_tensor_numel": (ctypes.c_int64, [P]),
        "gn_op_find": (P, [P, ctypes.c_char_p, PP]),
        "gn_op_call": (P, [P, P, PP, ctypes.c_size_t, ctypes.POINTER(AttrValue), ctypes.c_size_t,
                           PP, ctypes.c_size_t]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


class GenesisError(Exception):
    def __init__(self, code, message):
        super().__init__(f"[code {code}] {message}")
        self.code = code
        self.message = message


LIB = None  # set in main()


def check(status):
    """Raise GenesisError for a non-NULL status (and free it)."""
    if status:
        code = LIB.gn_status_code(status)
        message = LIB.gn_status_message(status).decode()
        LIB.gn_status_free(status)
        raise GenesisError(code, message)


# ------------------------------------------------------------- thin wrappers

CTYPE = {GN_F32: ctypes.c_float, GN_F64: ctypes.c_double}


class Runtime:
    def __init__(self):
        self.handle = ctypes.c_void_p()
        check(LIB.gn_runtime_create(None, ctypes.byref(self.handle)))
        self.cpu = Device()
        check(LIB.gn_device_parse(self.handle, b"cpu", ctypes.byref(self.cpu)))

    def close(self):
        LIB.gn_runtime_destroy(self.handle)

    def tensor(self, values, shape, dtype=GN_F32):
        buf = (CTYPE[dtype] * len(values))(*values)
        dims = (ctypes.c_int64 * len(shape))(*shape)
        out = ctypes.c_void_p()
        check(LIB.gn_tensor_from_host(self.handle, buf, dims, len(shape), dtype, self.cpu,
                                      ctypes.byref(out)))
        return Tensor(out)

    def call(self, name, inputs, attrs=()):
        op = ctypes.c_void_p()
        check(LIB.gn_op_find(self.handle, name.encode(), ctypes.byref(op)))
        ins = (ctypes.c_void_p * len(inputs))(*[t.handle for t in inputs])
        at = (AttrValue * max(len(attrs), 1))(*attrs)
        outs = (ctypes.c_void_p * 1)()
        check(LIB.gn_op_call(self.handle, op, ins, len(inputs), at, len(attrs), outs, 1))
        return Tensor(ctypes.c_void_p(outs[0]))


class Tensor:
    def __init__(self, handle):
        self.handle = handle

    def __del__(self):
        if LIB is not None and self.handle:
            LIB.gn_tensor_release(self.handle)

    @property
    def shape(self):
        p = LIB.gn_tensor_shape(self.handle)
        return [p[i] for i in range(LIB.gn_tensor_ndim(self.handle))]

    def values(self):
        dtype = LIB.gn_tensor_dtype(self.handle)
        n = LIB.gn_tensor_numel(self.handle)
        buf = (CTYPE[dtype] * n)()
        check(LIB.gn_tensor_to_host(self.handle, buf, ctypes.sizeof(buf)))
        return list(buf)


def attr_ints(values, keep):
    arr = (ctypes.c_int64 * len(values))(*values)
    keep.append(arr)  # the array must outlive the call
    a = AttrValue(kind=GN_ATTR_INTS)
    a.u.ints.data = ctypes.cast(arr, ctypes.POINTER(ctypes.c_int64))
    a.u.ints.size = len(values)
    return a


def attr_float(value):
    a = AttrValue(kind=GN_ATTR_FLOAT)
    a.u.f = value
    return a


def close(actual, expected, rel=1e-5):
    return len(actual) == len(expected) and all(
        abs(x - y) <= rel * (1 + abs(y)) for x, y in zip(actual, expected))


# --------------------------------------------------------------------- tests

class CApiSmokeTest(unittest.TestCase):
    def setUp(self):
        self.rt = Runtime()

    def tearDown(self):
        self.rt.close()

    def test_version(self):
        major, minor = ctypes.c_uint32(), ctypes.c_uint32()
        LIB.gn_abi_version(ctypes.byref(major), ctypes.byref(minor))
        self.assertEqual(major.value, 1)
        self.assertGreaterEqual(minor.value, 1)
        self.assertTrue(LIB.gn_version_string().decode())
        self.assertGreaterEqual(LIB.gn_runtime_plugin_count(self.rt.handle), 1)

    def test_add_broadcasts(self):
        a_vals = [1.5, -2.0, 3.25, 4.0, 5.5, -6.0]
        b_vals = [10.0, 20.0, 30.0]
        a = self.rt.tensor(a_vals, [2, 3])
        b = self.rt.tensor(b_vals, [3])
        c = self.rt.call("add", [a, b], [attr_float(2.0)])  # a + 2*b
        self.assertEqual(c.shape, [2, 3])
        expected = [a_vals[i] + 2.0 * b_vals[i % 3] for i in range(6)]
        self.assertTrue(close(c.values(), expected), (c.values(), expected))

    def test_matmul(self):
        rng = random.Random(7)
        m, k, n = 3, 4, 5
        a_vals = [rng.uniform(-1, 1) for _ in range(m * k)]
        b_vals = [rng.uniform(-1, 1) for _ in range(k * n)]
        c = self.rt.call("matmul", [self.rt.tensor(a_vals, [m, k], GN_F64),
                                    self.rt.tensor(b_vals, [k, n], GN_F64)])
        self.assertEqual(c.shape, [m, n])
        expected = [sum(a_vals[i * k + p] * b_vals[p * n + j] for p in range(k))
                    for i in range(m) for j in range(n)]
        self.assertTrue(close(c.values(), expected, 1e-12), (c.values(), expected))

    def test_sum(self):
        vals = [float(v) for v in range(1, 13)]
        x = self.rt.tensor(vals, [3, 4])
        keep = []
        s0 = self.rt.call("sum", [x], [attr_ints([0], keep)])
        self.assertEqual(s0.shape, [4])
        self.assertTrue(close(s0.values(), [sum(vals[r * 4 + c] for r in range(3)) for c in range(4)]))
        s_all = self.rt.call("sum", [x])  # dims [] = all
        self.assertEqual(s_all.shape, [])
        self.assertTrue(close(s_all.values(), [sum(vals)]))

    def test_error_names_the_op(self):
        a = self.rt.tensor([1.0] * 6, [2, 3])
        b = self.rt.tensor([1.0] * 4, [4])
        with self.assertRaises(GenesisError) as ctx:
            self.rt.call("add", [a, b])
        self.assertEqual(ctx.exception.code, GN_ERR_SHAPE)
        self.assertIn("add", ctx.exception.message)
        with self.assertRaises(GenesisError) as ctx:
            self.rt.call("no_such_op", [a])
        self.assertEqual(ctx.exception.code, GN_ERR_NOT_FOUND)
        self.assertIn("no_such_op", ctx.exception.message)


def main():
    global LIB
    path = _library_path()
    try:
        LIB = _declare(ctypes.CDLL(path))
    except OSError as e:
        print(f"cannot load libgenesis from {path}: {e}", file=sys.stderr)
        return 1
    result = unittest.main(exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
