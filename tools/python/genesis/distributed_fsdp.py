"""genesis.distributed.fsdp: FullyShardedDataParallel (ZeRO stages 1-3) with a sharded AdamW.

    import genesis.distributed as dist
    from genesis.distributed.fsdp import FullyShardedDataParallel as FSDP

    dist.init_process_group("gloo")
    model = FSDP(Net(), sharding_strategy="full", units=[net.layer0, net.layer1], lr=1e-3)
    for x, y in batches:
        model.zero_grad()
        loss_fn(model(x), y).backward()      # gradients reduce-scattered unit by unit
        model.clip_grad_norm_(1.0)           # the global norm over every shard
        model.step()                         # AdamW on this rank's shard

The sharding is done by the C++ FullyShardedDataParallel (genesis/distributed/fsdp.hpp; strategies,
layout and memory arithmetic in docs/distributed.md). The module's parameters keep their identity:
their data is swapped in place (under "full" they hold no elements outside their unit's forward and
backward). The optimizer is built in, as DeepSpeed's: use step() rather than a genesis.optim one.
"""
import contextlib
import weakref

from genesis import _C
from genesis import distributed as _dist
from genesis.nn.modules import Module

ShardingStrategy = ("optimizer", "grad_optimizer", "full")


class FullyShardedDataParallel(Module):
    """Wraps module for sharded data-parallel training with a sharded AdamW over process_group.

    sharding_strategy: "optimizer" (ZeRO-1), "grad_optimizer" (ZeRO-2) or "full" (ZeRO-3).
    units: submodules gathered one at a time under "full" (e.g. each decoder layer); every other
        parameter forms the root unit, gathered for the whole forward. Default: one unit.
    lr, betas, eps, weight_decay: AdamW's (torch's defaults).
    prefetch: under "full", start the next unit's all-gather while the current one computes.
    param_dtype: mixed precision (e.g. genesis.bfloat16): parameters gathered, computed and reduced in
        this dtype over float32 master shards.
    """

    def __init__(self, module, sharding_strategy="full", units=None, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=1e-2, prefetch=True, param_dtype=None, process_group=None):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"FullyShardedDataParallel wraps an nn.Module, not {type(module).__name__}")
        if sharding_strategy not in ShardingStrategy:
            raise ValueError(f"FullyShardedDataParallel: unknown sharding_strategy {sharding_strategy!r}; expected "
                             "'optimizer', 'grad_optimizer' or 'full'")
        pg = _dist._pg(process_group, "FullyShardedDataParallel")
        if pg is _dist.GroupMember.NON_GROUP_MEMBER:
            raise ValueError("FullyShardedDataParallel: this rank is not in process_group")
        units = list(units or [])
        names = {id(m): n for n, m in module.named_modules()}
        lists = []
        for u in units:
            if id(u) not in names:
                raise ValueError(f"FullyShardedDataParallel: unit {type(u).__name__} is not a submodule of the module")
            prefix = names[id(u)] + "." if names[id(u)] else ""
            lists.append((names[id(u)] or "<root>", [(prefix + n, p) for n, p in u.named_parameters()]))
        lists.append(("", list(module.named_parameters())))
        self.module = module
        object.__setattr__(self, "sharding_strategy", sharding_strategy)
        object.__setattr__(self, "_fsdp", _C.distributed.FSDP(
            lists, list(module.named_buffers()), sharding_strategy, float(lr), float(betas[0]), float(betas[1]),
            float(eps), float(weight_decay), bool(prefetch), param_dtype, pg))
        owner = weakref.ref(self)
        for k, u in enumerate(units):  # each unit's forward runs through the sharding while the wrapper lives
            def unit_forward(*args, _k=k, _forward=u.forward, **kwargs):
                wrapper = owner()
                if wrapper is None:
                    return _forward(*args, **kwargs)
                return wrapper._fsdp.unit_forward(_k, lambda: _forward(*args, **kwargs))
            object.__setattr__(u, "forward", unit_forward)

    def forward(self, *inputs, **kwargs):
        """module(*inputs, **kwargs), with rank 0's buffers and (full) the root unit gathered."""
        self._fsdp.prepare_forward()
        out = self.module(*inputs, **kwargs)
        return self._fsdp.finish_forward(out) if isinstance(out, _C.Tensor) else out

    def clip_grad_norm_(self, max_norm):
        """Scales the gradient shards to a global 2-norm of at most max_norm; returns the norm (a float)."""
        return self._fsdp.clip_grad_norm_(float(max_norm))

    def step(self):
        """One AdamW step of this rank's shards (then the parameters are all-gathered, except under full)."""
        self._fsdp.step()

    def zero_grad(self, set_to_none=True):
        """Drops the reduced gradients and the parameters' local ones."""
        self._fsdp.zero_grad()

    def set_lr(self, lr):
        """Sets the learning rate of later steps."""
        self._fsdp.set_lr(float(lr))

    @contextlib.contextmanager
    def no_sync(self):
        """Gradient accumulation without communication: backward passes inside only accumulate local
        gradients; the first backward after the block reduces the sum."""
        prev = self._fsdp.sync
        self._fsdp.sync = False
        try:
            yield
        finally:
            self._fsdp.sync = prev

    def full_state_dict(self):
        """Every parameter whole and the buffers, by name, on every rank (a collective)."""
        return dict(self._fsdp.full_state_dict())

    def save_sharded(self, path):
        """Writes this rank's shard (and, rank 0, manifest.json and the buffers) into folder path (a collective)."""
        self._fsdp.save_sharded(str(path))

    def load_sharded(self, path):
        """Loads what save_sharded wrote, at any world size (a collective)."""
        self._fsdp.load_sharded(str(path))

    def memory(self):
        """Bytes held now by this rank: params, master, grads, optimizer_state."""
        return dict(self._fsdp.memory())
