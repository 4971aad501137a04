"""genesis.nn.functional: the stateless form of the layers (torch.nn.functional's names)."""
from genesis._C.functional import (  # noqa: F401
    avg_pool2d, binary_cross_entropy, binary_cross_entropy_with_logits, conv2d, cross_entropy, dropout, embedding,
    gelu, l1_loss, layer_norm, linear, log_softmax, max_pool2d, mse_loss, nll_loss, one_hot, relu, rms_norm, rope,
    scaled_dot_product_attention, sigmoid, silu, softmax, swiglu, tanh,
)
