"""genesis.multiprocessing: torch.multiprocessing's everyday surface over Python's multiprocessing.

    import genesis.multiprocessing as mp
    mp.set_start_method("spawn", force=True)
    model.share_memory()                      # CPU parameters and buffers in shared memory
    p = mp.Process(target=train, args=(model,)); p.start(); p.join()   # train() updates the parent's model
    mp.spawn(fn, args=(world,), nprocs=2)     # fn(i, world) in two processes, errors re-raised here

Everything Python's multiprocessing has is here (Process, Queue, Pool, get_context, set_start_method, ...), plus
spawn / start_processes and the sharing-strategy functions.  A CPU tensor moved into shared memory
(Tensor.share_memory_(), Module.share_memory()) travels to processes started here, or through their queues, as a
handle to the same memory, so writes on either side are seen on the other (Hogwild training); other tensors travel
as copies of their data.  Shared blocks are passed as file descriptors (the "file_descriptor" strategy) and live
while a process maps them.  bool and bfloat16 tensors, and tensors on other devices, are not moved (they keep
private memory, and is_shared() says False).
"""
import multiprocessing as _mp
import multiprocessing.connection as _connection
import signal as _signal
import sys as _sys
import warnings as _warnings
from multiprocessing import *  # noqa: F401,F403
from multiprocessing.heap import Arena as _Arena
from multiprocessing.reduction import ForkingPickler as _ForkingPickler

from genesis._numpy import np as _np

from genesis import _C
from genesis._C import Tensor as _Tensor

__all__ = list(_mp.__all__) + [
    "spawn", "start_processes", "ProcessContext", "SpawnContext", "ProcessException", "ProcessRaisedException",
    "ProcessExitedException", "set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
]

# ---------------------------------------------------------------- sharing strategies

_strategies = {"file_descriptor", "file_system"}
_strategy = "file_descriptor"


def get_all_sharing_strategies():
    """The strategies set_sharing_strategy accepts (torch's Linux pair)."""
    return set(_strategies)


def get_sharing_strategy():
    """The current strategy ("file_descriptor" unless set)."""
    return _strategy


def set_sharing_strategy(new_strategy):
    """Accepts torch's strategy names; genesis always passes shared blocks as file descriptors."""
    global _strategy
    if new_strategy not in _strategies:
        raise AssertionError(f"sharing strategy {new_strategy!r} is not one of {sorted(_strategies)}")
    _strategy = new_strategy


# ---------------------------------------------------------------- tensors in shared memory

_SHARED_DTYPES = ("float32", "float64", "float16", "int8", "uint8", "int32", "int64")  # what shared memory holds


def _np_dtypes():
    """Tensor dtype name -> NumPy dtype, for the dtypes shared memory holds."""
    return {name: getattr(_np, name) for name in _SHARED_DTYPES}


# data_ptr -> (block, offset, dtype name, shape) for every tensor this process maps in a shared block; the blocks
# stay mapped for the life of the process
_shared = {}


def _dtype_name(t):
    return str(t.dtype).rsplit(".", 1)[-1]


def _map(arena, offset, dtype_name, shape):
    """A tensor over part of a shared block (no copy), registered so that it can be sent on."""
    n = 1
    for s in shape:
        n *= s
    array = _np.frombuffer(arena.buffer, dtype=_np_dtypes()[dtype_name], count=n, offset=offset).reshape(shape)
    t = _C.from_dlpack(array)  # no copy
    _shared[t.data_ptr()] = (arena, offset, dtype_name, tuple(shape))
    return t


def _is_shared(self):
    """True when this tensor's data lies in a block shared with other processes."""
    return self.device.type == "cpu" and self.data_ptr() in _shared


def _share_tensors(tensors):
    """Moves the CPU tensors' data (float, integer) into one new shared block, in place: the same objects keep their
    values, autograd flags and identity.  Others (already shared, bool, bfloat16, not on the CPU) are left alone."""
    todo, seen = [], set()
    for t in tensors:
        if t is None or id(t) in seen or t.device.type != "cpu" or _dtype_name(t) not in _SHARED_DTYPES \
                or _is_shared(t):
            continue
        seen.add(id(t))
        todo.append(t)
    if not todo:
        return
    offsets, total = [], 0
    for t in todo:
        offsets.append(total)
        total += max(64, -(-t.numel() * t.element_size() // 64) * 64)
    arena = _Arena(total)
    prev = _C.is_grad_enabled()
    _C.set_grad_enabled(False)
    try:
        for t, offset in zip(todo, offsets):
            shared = _map(arena, offset, _dtype_name(t), tuple(t.shape))
            shared.numpy()[...] = t.detach().contiguous().numpy()
            t.data = shared
    finally:
        _C.set_grad_enabled(prev)


def _share_memory_(self):
    """Moves a CPU tensor's data into shared memory in place (same object, same values); returns self."""
    _share_tensors([self])
    return self


def _rebuild_shared(cls, arena, offset, dtype_name, shape, requires_grad):
    t = _map(arena, offset, dtype_name, shape)
    if cls is not _Tensor:
        out = cls.__new__(cls)
        _Tensor.__init__(out, t)
        t = out
    return t.requires_grad_(requires_grad)


def _reduce_tensor(t):
    """ForkingPickler's reduction: a shared tensor as its block (same memory on the other side), others by value."""
    if _is_shared(t):
        arena, offset, dtype_name, shape = _shared[t.data_ptr()]
        if tuple(t.shape) == shape and _dtype_name(t) == dtype_name and t.is_contiguous():
            return _rebuild_shared, (type(t), arena, offset, dtype_name, shape, t.requires_grad)
    return t.__reduce_ex__(2)


def _register_reducers():
    from genesis.nn.modules import Parameter
    for cls in (_Tensor, Parameter):
        _ForkingPickler.register(cls, _reduce_tensor)


_Tensor.share_memory_ = _share_memory_
_Tensor.is_shared = _is_shared
_register_reducers()


# ---------------------------------------------------------------- spawn


class ProcessException(Exception):
    """A spawned process failed (error_index: its index, pid: its process id)."""

    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        import traceback
        error_queue.put(traceback.format_exc())
        _sys.exit(1)


class ProcessContext:
    """The processes start_processes started; join() waits for them and re-raises the first failure."""

    def __init__(self, processes, error_queues):
        self.processes, self.error_queues = processes, error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """Waits (up to timeout seconds); True once every process has exited cleanly, False while some still run.
        When one fails, stops the others and raises ProcessRaisedException or ProcessExitedException."""
        if not self.sentinels:
            return True
        ready = _connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            p = self.processes[index]
            p.join()
            if p.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        failed = self.processes[error_index]
        if self.error_queues[error_index].empty():
            code = failed.exitcode
            if code < 0:
                name = _signal.Signals(-code).name
                raise ProcessExitedException(f"process {error_index} terminated with signal {name}", error_index,
                                             failed.pid, code, name)
            raise ProcessExitedException(f"process {error_index} terminated with exit code {code}", error_index,
                                         failed.pid, code)
        trace = self.error_queues[error_index].get()
        msg = f"\n\n-- Process {error_index} terminated with the following error:\n" + trace
        raise ProcessRaisedException(msg, error_index, failed.pid)


class SpawnContext(ProcessContext):
    """What spawn(join=False) returns."""


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Runs fn(i, *args) for i in range(nprocs), each in a new process of start_method; joins them unless
    join=False (then returns the ProcessContext)."""
    ctx = _mp.get_context(start_method)
    processes, error_queues = [], []
    for i in range(nprocs):
        error_queue = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, error_queue), daemon=daemon)
        p.start()
        processes.append(p)
        error_queues.append(error_queue)
    context = (SpawnContext if start_method == "spawn" else ProcessContext)(processes, error_queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """torch.multiprocessing.spawn: start_processes with the "spawn" start method."""
    if start_method != "spawn":
        _warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                       f"To use a different start_method use:\n\t\t genesis.multiprocessing.start_processes(...)")
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
