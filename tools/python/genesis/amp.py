"""genesis.amp: autocast regions and GradScaler (torch.autocast / torch.cuda.amp.GradScaler).

    with genesis.autocast("cuda", dtype=genesis.bfloat16):
        loss = criterion(model(x), y)
    scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()

Matmul, linear, bmm, attention and conv run in the region's dtype; softmax, norms, reductions,
losses, exp, log and pow in float32 (one policy table in the C++ frontend).
"""
import functools

from genesis import _C
from genesis._C import GradScaler, get_autocast_dtype, is_autocast_enabled  # noqa: F401


class autocast:
    """Context manager (and decorator) for a mixed-precision region on device_type ("cuda" or "cpu";
    dtype defaults to float16 on cuda, bfloat16 on cpu)."""

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=True):
        self._region = _C._Autocast(device_type, dtype, enabled, cache_enabled)

    def __enter__(self):
        self._region.__enter__()
        return self

    def __exit__(self, *exc):
        self._region.__exit__(*exc)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper
