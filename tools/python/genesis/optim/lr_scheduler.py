"""genesis.optim.lr_scheduler: torch 1.13's schedulers and HF's cosine schedule with warm-up."""
from genesis._C.optim.lr_scheduler import (  # noqa: F401
    CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR, LRScheduler, MultiStepLR, OneCycleLR, StepLR,
    get_cosine_schedule_with_warmup,
)

_LRScheduler = LRScheduler
