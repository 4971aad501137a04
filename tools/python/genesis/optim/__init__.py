"""genesis.optim: SGD, Adam and AdamW (C++ optimizers on fused step ops, one call per parameter), RMSprop, Adagrad,
Adadelta, Adamax, NAdam, RAdam, Rprop, ASGD and LBFGS (updates composed from tensor ops), parameter groups, state dicts,
and the LR schedulers in genesis.optim.lr_scheduler."""
from genesis._C.optim import (  # noqa: F401
    ASGD, LBFGS, SGD, Adadelta, Adagrad, Adam, Adamax, AdamW, NAdam, Optimizer, RAdam, RMSprop, Rprop,
)
from genesis.optim import lr_scheduler  # noqa: F401
