"""genesis.optim.lr_scheduler: torch 1.13's schedulers and HF's cosine schedule with warm-up."""
from genesis._C.optim.lr_scheduler import (  # noqa: F401
    ChainedScheduler, ConstantLR, CosineAnnealingLR, CosineAnnealingWarmRestarts, CyclicLR, ExponentialLR, LambdaLR,
    LinearLR, LRScheduler, MultiplicativeLR, MultiStepLR, OneCycleLR, PolynomialLR, ReduceLROnPlateau, SequentialLR,
    StepLR, get_cosine_schedule_with_warmup,
)

_LRScheduler = LRScheduler
