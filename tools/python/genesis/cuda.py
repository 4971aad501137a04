"""genesis.cuda: device availability and the CUDA caching allocator's statistics (torch.cuda's
names).  Importing never needs a GPU; without one is_available() is False."""
from genesis import _C


def is_available():
    """True when at least one CUDA device is usable."""
    return _C.cuda_available()


def device_count():
    return _C.device_count("cuda") if is_available() else 0


def _dev(device):
    if device is None:
        return "cuda"
    if isinstance(device, int):
        return f"cuda:{device}"
    return device


def memory_allocated(device=None):
    return _C.memory_allocated(_dev(device))


def memory_reserved(device=None):
    return _C.memory_reserved(_dev(device))


memory_cached = memory_reserved


def max_memory_allocated(device=None):
    return _C.max_memory_allocated(_dev(device))


def max_memory_reserved(device=None):
    return _C.max_memory_reserved(_dev(device))


def memory_stats(device=None):
    """allocated, reserved, peak_allocated, peak_reserved, num_allocs, num_frees, cache_hits,
    cache_misses, cache_hit_rate, oom_retries, active_blocks."""
    return _C.memory_stats(_dev(device))


def memory_summary(device=None):
    return _C.memory_summary(_dev(device))


def empty_cache(device=None):
    """Returns cached blocks to the driver (nothing to do without a GPU)."""
    if is_available():
        _C.empty_cache(_dev(device))


def reset_peak_memory_stats(device=None):
    _C.reset_peak_memory_stats(_dev(device))


def manual_seed(seed):
    _C.manual_seed(seed)


manual_seed_all = manual_seed
