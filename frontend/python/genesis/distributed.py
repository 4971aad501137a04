"""genesis.distributed: not bound yet.

Distributed training (process groups, all_reduce, DDP over the NCCL and Gloo communicators) lives
in the C++ frontend; its Python binding is the next step of this package.  Importing this module
works, and every entry point says so.
"""


def is_available():
    """False until the communicators are bound for Python."""
    return False


def _unavailable(*args, **kwargs):
    raise RuntimeError("genesis.distributed is not available from Python yet; use the C++ API "
                       "(genesis launch) for distributed training")


init_process_group = all_reduce = broadcast = all_gather = barrier = get_rank = get_world_size = _unavailable
