"""genesis.distributed: process groups and collectives with torch.distributed's names.

    import genesis.distributed as dist
    dist.init_process_group("gloo")          # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the launcher
    t = genesis.ones(4) * dist.get_rank()
    dist.all_reduce(t)                        # sum over the ranks, in place
    work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
    work.wait()
    dist.destroy_process_group()

Start the ranks with ``genesis launch --nproc-per-node N python3 script.py`` (or torchrun). Groups are
the C++ process groups (genesis/distributed.hpp): gloo moves cpu tensors, nccl cuda tensors. Ranks
given to the functions are global ranks, as in torch; ``group=None`` is the world group. Every
blocking call releases the GIL. ``genesis.nn.parallel.DistributedDataParallel`` averages gradients
while backward runs and ``genesis.data.DistributedSampler`` shards a dataset.

Calls made before ``init_process_group`` raise RuntimeError. Errors of a collective (a peer that
exited, a timeout) are Python exceptions too: RuntimeError, with the communicator's message.
"""
import datetime as _datetime
import pickle as _pickle
from urllib.parse import urlparse as _urlparse

from genesis import _C
from genesis._grad_mode import no_grad as _no_grad

_D = _C.distributed
ReduceOp = _D.ReduceOp
ProcessGroup = _D.ProcessGroup


class Backend:
    """Communicator names, as torch.distributed.Backend."""

    GLOO = "gloo"
    NCCL = "nccl"
    UNDEFINED = "undefined"


class _World:
    """The world group (``group.WORLD``): whatever group init_process_group made."""

    def rank(self):
        return get_rank()

    def size(self):
        return get_world_size()

    def __repr__(self):
        return "group.WORLD"


class _NonMember:
    """What new_group returns on ranks outside the group; collectives given it do nothing."""

    def __repr__(self):
        return "group.NON_GROUP_MEMBER"


class GroupMember:
    """``GroupMember.WORLD`` (the default group) and ``GroupMember.NON_GROUP_MEMBER``."""

    WORLD = _World()
    NON_GROUP_MEMBER = _NonMember()


group = GroupMember


class Work:
    """A collective started with ``async_op=True``: ``wait()`` blocks until it is done (and raises
    its error), ``is_completed()`` polls."""

    def __init__(self, work, finish=None):
        self._work = work
        self._finish = finish

    def wait(self, timeout=None):
        """Waits for the collective and makes its results visible; returns True."""
        self._work.wait()
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()
        return True

    def is_completed(self):
        """True once the collective has finished (successfully or not)."""
        return self._work.is_completed()


# ---- availability and the default group

def is_available():
    """True: the process groups are built into the package (see is_gloo_available for cpu)."""
    return True


def is_gloo_available():
    """True when the gloo communicator plugin (cpu tensors) is installed."""
    return _D.backend_for("cpu") == Backend.GLOO


def is_nccl_available():
    """True when the nccl communicator plugin (cuda tensors) is installed."""
    return _D.backend_for("cuda") == Backend.NCCL


def is_initialized():
    """True between init_process_group and destroy_process_group."""
    return _D.is_initialized()


def is_torchelastic_launched():
    """True under a launcher that sets torchrun's environment (genesis launch, torchrun)."""
    import os
    return "TORCHELASTIC_RUN_ID" in os.environ or ("WORLD_SIZE" in os.environ and "MASTER_ADDR" in os.environ)


def _require_init(what):
    if not _D.is_initialized():
        raise RuntimeError(f"{what}: the default process group has not been initialized; "
                           "call genesis.distributed.init_process_group() first")


def _timeout_ms(timeout):
    if timeout is None:
        return -1
    if isinstance(timeout, _datetime.timedelta):
        return int(timeout.total_seconds() * 1000)
    return int(float(timeout) * 1000)


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Joins the job: rank 0 serves the store, every rank makes the world group.

    backend: "gloo" (cpu tensors), "nccl" (cuda tensors, rank r on cuda:$LOCAL_RANK), or None for
    the communicator of $GENESIS_DIST_DEVICE (cpu when unset). init_method: "env://" (the default:
    MASTER_ADDR, MASTER_PORT, and RANK / WORLD_SIZE unless given) or "tcp://host:port" (then pass
    world_size and rank). timeout: a timedelta or seconds for every wait (default
    $GENESIS_DIST_TIMEOUT, else 300 s); a rank that does not answer in time makes the others raise.
    """
    if _D.is_initialized():
        raise RuntimeError("init_process_group: the default process group is already initialized")
    if store is not None:
        raise ValueError("init_process_group: a store object is not supported; use init_method")
    device = ""
    if backend is not None:
        backend = str(backend).lower()
        if backend == Backend.GLOO:
            device = "cpu"
        elif backend == Backend.NCCL:
            device = "cuda"
        else:
            raise ValueError(f"init_process_group: unknown backend '{backend}' (expected 'gloo' or 'nccl')")
    if device_id is not None:
        device = str(getattr(device_id, "type", device_id)).split(":")[0]
    addr, port = "", -1
    if init_method is not None and init_method != "env://":
        url = _urlparse(init_method)
        if url.scheme != "tcp" or not url.hostname or url.port is None:
            raise ValueError(f"init_process_group: init_method '{init_method}' is not supported "
                             "(use 'env://' or 'tcp://host:port')")
        if world_size < 0 or rank < 0:
            raise ValueError("init_process_group: init_method 'tcp://' needs world_size and rank")
        addr, port = url.hostname, url.port
    _D.init_process_group(backend=backend or "", device=device, rank=rank, world_size=world_size,
                          master_addr=addr, master_port=port, timeout_ms=_timeout_ms(timeout))


def destroy_process_group(group=None):
    """Leaves the job (group None or WORLD): every rank calls it; rank 0, which serves the store,
    waits for the others. A sub-group is released when its last reference goes."""
    if group is None or group is GroupMember.WORLD:
        _D.destroy_process_group()


def _pg(group, what):
    """The C++ group (None for the world), or NON_GROUP_MEMBER."""
    _require_init(what)
    if group is None or group is GroupMember.WORLD:
        return None
    if group is GroupMember.NON_GROUP_MEMBER or isinstance(group, ProcessGroup):
        return group
    raise TypeError(f"{what}: group must be a ProcessGroup from new_group, group.WORLD or None, "
                    f"not {type(group).__name__}")


def get_rank(group=None):
    """This process's rank in group (global rank for the world group); -1 outside the group."""
    pg = _pg(group, "get_rank")
    if pg is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _D.group_rank(pg)


def get_world_size(group=None):
    """Number of ranks in group (the world size for the world group); -1 outside the group."""
    pg = _pg(group, "get_world_size")
    if pg is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _D.group_size(pg)


def get_backend(group=None):
    """The group's communicator: "gloo" or "nccl"."""
    pg = _pg(group, "get_backend")
    if pg is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("get_backend: this rank is not in the group")
    return _D.world_backend() if pg is None else pg.backend()


def get_process_group_ranks(group):
    """The global ranks of group's members, in group-rank order."""
    pg = _pg(group, "get_process_group_ranks")
    if pg is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("get_process_group_ranks: this rank is not in the group")
    return list(_D.group_ranks(pg))


def get_group_rank(group, global_rank):
    """The rank in group of a global rank (ValueError when it is not a member)."""
    ranks = get_process_group_ranks(group)
    if global_rank not in ranks:
        raise ValueError(f"global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def get_global_rank(group, group_rank):
    """The global rank of a rank in group."""
    ranks = get_process_group_ranks(group)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"group rank {group_rank} is out of range for a group of {len(ranks)}")
    return ranks[group_rank]


def get_node_local_rank(fallback_rank=None):
    """$LOCAL_RANK: this process's index on its host (fallback_rank, else an error, when unset)."""
    import os
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not set: start the ranks with genesis launch or torchrun")


def new_group(ranks=None, timeout=None, backend=None, pg_options=None):
    """A group of these global ranks (all when None). Every rank of the world calls it, with the
    same ranks and in the same order; ranks outside the group get GroupMember.NON_GROUP_MEMBER."""
    _require_init("new_group")
    if backend is not None and str(backend).lower() != _D.world_backend():
        raise ValueError(f"new_group: backend '{backend}' differs from the world's '{_D.world_backend()}'")
    ranks = list(range(_D.get_world_size())) if ranks is None else [int(r) for r in ranks]
    g = _D.new_group(ranks)
    return GroupMember.NON_GROUP_MEMBER if g is None else g


def _group_rank(pg, global_rank, what):
    if pg is None:
        return global_rank
    ranks = pg.ranks
    if global_rank not in ranks:
        raise ValueError(f"{what}: global rank {global_rank} is not in the group (ranks {list(ranks)})")
    return ranks.index(global_rank)


def _result(work, async_op, finish=None):
    if async_op:
        return Work(work, finish)
    if finish is not None:
        finish()
    return None


def _collective(what, group, async_op, start):
    """start(pg)'s Work as _result gives it; None, starting nothing, on a rank outside the group."""
    pg = _pg(group, what)
    if pg is GroupMember.NON_GROUP_MEMBER:
        return None
    return _result(start(pg), async_op)


# ---- collectives

def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """tensor = op over the ranks' tensors, in place. AVG needs a floating dtype."""
    return _collective("all_reduce", group, async_op, lambda pg: _D.all_reduce(tensor, op, pg, async_op))


def broadcast(tensor, src, group=None, async_op=False):
    """tensor = the tensor of global rank src, in place."""
    return _collective("broadcast", group, async_op,
                       lambda pg: _D.broadcast(tensor, _group_rank(pg, src, "broadcast"), pg, async_op))


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """tensor on global rank dst = op over the ranks' tensors (an all_reduce: the other ranks get
    the result too, which torch leaves unspecified)."""
    def start(pg):
        _group_rank(pg, dst, "reduce")
        return _D.all_reduce(tensor, op, pg, async_op)

    return _collective("reduce", group, async_op, start)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """output_tensor (world * input numel elements, e.g. shape (world * n, ...)) = the ranks'
    input tensors, in rank order."""
    return _collective("all_gather_into_tensor", group, async_op,
                       lambda pg: _D.all_gather_into_tensor(output_tensor, input_tensor, pg, async_op))


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[i] = rank i's tensor (a list of world-size tensors shaped like tensor)."""
    pg = _pg(group, "all_gather")
    if pg is GroupMember.NON_GROUP_MEMBER:
        return None
    size = _D.group_size(pg)
    if len(tensor_list) != size:
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors for a group of {size}")
    n = tensor.numel()
    for t in tensor_list:
        if t.numel() != n:
            raise ValueError(f"all_gather: every output must have {n} elements like the input, not {t.numel()}")
    flat = _C.empty(size * n, dtype=tensor.dtype, device=tensor.device)
    work = _D.all_gather_into_tensor(flat, tensor, pg, async_op)

    def finish():
        with _no_grad():
            for i, t in enumerate(tensor_list):
                t.copy_(flat[i * n:(i + 1) * n].view(t.shape))

    return _result(work, async_op, finish)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """output = chunk `rank` of op over the ranks' inputs (input has world * output numel elements)."""
    return _collective("reduce_scatter_tensor", group, async_op,
                       lambda pg: _D.reduce_scatter_tensor(output, input, op, pg, async_op))


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
    """Chunk j of input (along dim 0) goes to rank j; chunk i of output comes from rank i. Only
    equal chunks are supported: split sizes None, or all equal to dim 0 / world size."""
    pg = _pg(group, "all_to_all_single")
    if pg is GroupMember.NON_GROUP_MEMBER:
        return None
    size = _D.group_size(pg)
    for name, t, splits in (("output", output, output_split_sizes), ("input", input, input_split_sizes)):
        if splits is None:
            continue
        rows = t.shape[0] if t.dim() else 1
        if len(splits) != size or any(int(s) * size != rows for s in splits):
            raise ValueError(f"all_to_all_single: {name}_split_sizes {list(splits)}: only equal splits "
                             f"({rows} / {size} each) are supported")
    return _result(_D.all_to_all_single(output, input, pg, async_op), async_op)


def send(tensor, dst, group=None, tag=0):
    """Sends tensor to global rank dst; blocks until it is handed over, so pair calls as MPI does
    (e.g. even ranks send first, odd ranks receive first)."""
    pg = _pg(group, "send")
    if pg is GroupMember.NON_GROUP_MEMBER:
        return None
    _D.send(tensor, _group_rank(pg, dst, "send"), pg, tag)


def recv(tensor, src=None, group=None, tag=0):
    """Receives into tensor from global rank src (required: there is no receive from any rank);
    returns src."""
    pg = _pg(group, "recv")
    if pg is GroupMember.NON_GROUP_MEMBER:
        return -1
    if src is None:
        raise ValueError("recv: src is required (receiving from any rank is not supported)")
    _D.recv(tensor, _group_rank(pg, src, "recv"), pg, tag)
    return src


def barrier(group=None, async_op=False, device_ids=None):
    """Waits until every member of group reached it (async_op=True: returns a Work to wait on)."""
    pg = _pg(group, "barrier")
    if pg is GroupMember.NON_GROUP_MEMBER:
        return None
    if not async_op:
        _D.barrier(pg)
        return None
    device = _D.group_device(pg)
    return Work(_D.all_reduce(_C.zeros(1, dtype=_C.dtype.int32, device=device), ReduceOp.SUM, pg, True))


# ---- Python objects (pickled into uint8 tensors on the group's device)

def all_gather_object(object_list, obj, group=None):
    """object_list[i] = rank i's obj (any picklable object); object_list has world-size entries."""
    pg = _pg(group, "all_gather_object")
    if pg is GroupMember.NON_GROUP_MEMBER:
        return None
    size, device = _D.group_size(pg), _D.group_device(pg)
    if len(object_list) != size:
        raise ValueError(f"all_gather_object: object_list has {len(object_list)} entries for a group of {size}")
    data = _pickle.dumps(obj)
    lengths = _C.zeros(size, dtype=_C.dtype.int64, device=device)
    _D.all_gather_into_tensor(lengths, _C.tensor([len(data)], dtype=_C.dtype.int64, device=device), pg, False)
    lengths = [int(n) for n in lengths.tolist()]
    longest = max(lengths)
    mine = _C.zeros(longest, dtype=_C.dtype.uint8, device=device)
    if data:
        mine[:len(data)] = _C.tensor(list(data), dtype=_C.dtype.uint8, device=device)
    everything = _C.zeros(size * longest, dtype=_C.dtype.uint8, device=device)
    _D.all_gather_into_tensor(everything, mine, pg, False)
    flat = everything.tolist()
    for i, n in enumerate(lengths):
        object_list[i] = _pickle.loads(bytes(flat[i * longest:i * longest + n]))


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """object_list[:] = global rank src's object_list (picklable objects; same length on every rank)."""
    pg = _pg(group, "broadcast_object_list")
    if pg is GroupMember.NON_GROUP_MEMBER:
        return None
    root = _group_rank(pg, src, "broadcast_object_list")
    device = _D.group_device(pg) if device is None else device
    data = _pickle.dumps(list(object_list)) if _D.group_rank(pg) == root else b""
    length = _C.tensor([len(data)], dtype=_C.dtype.int64, device=device)
    _D.broadcast(length, root, pg, False)
    buf = _C.zeros(int(length.item()), dtype=_C.dtype.uint8, device=device)
    if data:
        buf[:] = _C.tensor(list(data), dtype=_C.dtype.uint8, device=device)
    _D.broadcast(buf, root, pg, False)
    objects = _pickle.loads(bytes(buf.tolist()))
    if len(objects) != len(object_list):
        raise ValueError(f"broadcast_object_list: rank {src} sent {len(objects)} objects, this rank's list has "
                         f"{len(object_list)}")
    object_list[:] = objects


# ---- logging and checkpoints

def log(msg):
    """Writes "[rank R/W] msg" to stderr as one whole line (lines of several ranks never mix)."""
    _D.log(str(msg))


def log0(msg):
    """log(msg) on rank 0 only."""
    _D.log0(str(msg))


def save_on_rank0(save, group=None):
    """Runs save() on rank 0 only, then waits for it on every rank (checkpoints of replicated
    state); without a process group it just runs save(). An error of save() is raised on rank 0
    after the others were released."""
    if not _D.is_initialized():
        save()
        return
    error = None
    if get_rank(group) == 0:
        try:
            save()
        except BaseException as e:  # noqa: B902 - re-raised below, after the barrier
            error = e
    barrier(group)
    if error is not None:
        raise error


# genesis.distributed.fsdp (the module lives beside this one; importable under torch's path too).
import sys as _sys  # noqa: E402

from genesis import distributed_fsdp as fsdp  # noqa: E402

_sys.modules[__name__ + ".fsdp"] = fsdp
