"""Grad mode context managers (genesis.no_grad, genesis.enable_grad), here so that the modules the package imports
first can use them too."""
import functools as _functools

from genesis import _C


class no_grad:
    """Context manager and decorator: ops inside record no autograd graph."""

    _mode = False

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C.set_grad_enabled(self._mode)

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @_functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)
        return wrapper


class enable_grad(no_grad):
    """Turns recording back on inside a no_grad region."""

    _mode = True
