"""genesis.backends: torch.backends's switches (cuda, cudnn, mps), so programs that read or set them run unchanged.

    import genesis.backends.cudnn as cudnn
    cudnn.benchmark = True                      # stored; genesis does not use cuDNN
    genesis.backends.mps.is_available()         # False: genesis has no Metal backend
    genesis.backends.cuda.matmul.allow_tf32     # GENESIS_ALLOW_TF32, read by the CUDA backend's first matmul

Most flags are stored and read back with torch's defaults and type checks but change nothing, because genesis
has no such library behind them; each module says which ones act.
"""
from genesis.backends import cuda, cudnn, mps  # noqa: F401
