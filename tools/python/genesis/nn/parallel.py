"""genesis.nn.parallel: DistributedDataParallel, torch's name and signature.

    import genesis.distributed as dist
    from genesis.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    model = DDP(Net())                       # any nn.Module, Python subclasses included
    loss = loss_fn(model(x), y)
    loss.backward()                          # gradients averaged over the ranks while backward runs
    optimizer.step()

The gradients are reduced by the C++ reducer (genesis/distributed/ddp.hpp): buckets of about
``bucket_cap_mb`` whose all-reduce starts as soon as backward produced their last gradient, so the
communication overlaps the rest of backward. The module's own parameters receive the averages, so
an optimizer made before or after wrapping works the same.
"""
import contextlib

from genesis import _C
from genesis import distributed as _dist
from genesis.nn.modules import Module


class DistributedDataParallel(Module):
    """Wraps module so that backward averages its gradients over the ranks of process_group.

    On construction every rank gets rank 0's parameters and buffers. Then, for each backward run
    through a forward of this wrapper (or of the module itself), the gradients of the parameters
    that require grad are averaged over the ranks; with ``broadcast_buffers`` rank 0's buffers are
    copied to every rank before each forward.

    module: the nn.Module to train (``.module``); move it to its device and dtype first.
    bucket_cap_mb: size of a gradient bucket in MiB (``$GENESIS_DDP_BUCKET_MB`` overrides it).
    find_unused_parameters: allow parameters that get no gradient in some backward passes (they
        count as zeros; a parameter unused on every rank keeps no gradient). Without it such a
        backward raises, naming the parameters.
    gradient_as_bucket_view: True makes each .grad a view of the all-reduce's output (no copy back;
        a .grad held from before backward is not updated); False copies the averages into the
        existing .grad tensors.
    device_ids, output_device, dim, check_reduction, static_graph: accepted for torch's signature;
        the module runs where its parameters are.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=25, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel wraps an nn.Module, not {type(module).__name__}")
        if not any(p.requires_grad for p in module.parameters()):
            raise RuntimeError("DistributedDataParallel is not needed when a module has no parameter that "
                               "requires a gradient")
        pg = _dist._pg(process_group, "DistributedDataParallel")
        if pg is _dist.GroupMember.NON_GROUP_MEMBER:
            raise ValueError("DistributedDataParallel: this rank is not in process_group")
        self.module = module
        object.__setattr__(self, "broadcast_buffers", bool(broadcast_buffers))
        object.__setattr__(self, "find_unused_parameters", bool(find_unused_parameters))
        object.__setattr__(self, "gradient_as_bucket_view", bool(gradient_as_bucket_view))
        object.__setattr__(self, "bucket_cap_mb", float(bucket_cap_mb))
        object.__setattr__(self, "process_group", process_group)
        object.__setattr__(self, "device_ids", device_ids)
        object.__setattr__(self, "dim", dim)
        object.__setattr__(self, "_pg", pg)
        object.__setattr__(self, "_reducer", _C.distributed.Reducer(
            list(module.named_parameters()), list(module.named_buffers()), float(bucket_cap_mb),
            bool(find_unused_parameters), bool(gradient_as_bucket_view), pg))

    def forward(self, *inputs, **kwargs):
        """module(*inputs, **kwargs), after copying rank 0's buffers to every rank (broadcast_buffers)."""
        buffers = list(self.module.buffers()) if self.broadcast_buffers else []
        self._reducer.prepare_forward(buffers, bool(buffers) and _dist.get_world_size(self.process_group) > 1)
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Gradient accumulation without communication: backward passes inside only accumulate local
        gradients; the first backward after the block averages the sum over the ranks."""
        prev = self._reducer.sync
        self._reducer.sync = False
        try:
            yield
        finally:
            self._reducer.sync = prev

    def reduce_gradients(self):
        """Averages the current gradients over the ranks now, as a backward would (missing ones count
        as zeros): for a rank with nothing to backward in a step while the others run backward."""
        self._reducer.reduce_gradients()

    def unused_parameters(self):
        """Names of the parameters no rank used in the last synchronised backward
        (find_unused_parameters only)."""
        return list(self._reducer.unused_parameters())

    def bucket_indices(self):
        """The bucket layout: parameter indices (in module.parameters() order, those that require
        grad) per bucket, in the order the buckets are all-reduced."""
        return [list(b) for b in self._reducer.bucket_indices()]

    def extra_repr(self):
        return f"bucket_cap_mb={self.bucket_cap_mb:g}, find_unused_parameters={self.find_unused_parameters}"
