"""genesis.optim: SGD, Adam and AdamW (C++ optimizers on fused step ops, one call per parameter),
parameter groups, state dicts, and the LR schedulers in genesis.optim.lr_scheduler."""
from genesis._C.optim import SGD, Adam, AdamW, Optimizer  # noqa: F401
from genesis.optim import lr_scheduler  # noqa: F401
