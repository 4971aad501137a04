"""genesis.nn.utils: gradient clipping (one fused pass over all gradients; the norm stays on the
device until read)."""
from genesis._C import clip_grad_norm_, clip_grad_value_  # noqa: F401
