"""genesis.nn.functional: the stateless form of the layers (torch.nn.functional's names)."""
from genesis._C.functional import (  # noqa: F401
    avg_pool2d, binary_cross_entropy, binary_cross_entropy_with_logits, conv2d, cross_entropy, dropout, embedding,
    gelu, l1_loss, layer_norm, linear, log_softmax, max_pool2d, mse_loss, nll_loss, one_hot, relu, rms_norm, rope,
    scaled_dot_product_attention, sigmoid, silu, softmax, swiglu, tanh,
)
from genesis.nn.activation import (  # noqa: F401,E402
    celu, celu_, elu, elu_, glu, hardshrink, hardsigmoid, hardswish, hardtanh, hardtanh_, leaky_relu, leaky_relu_,
    logsigmoid, mish, prelu, relu6, relu_, rrelu, rrelu_, selu, selu_, softmin, softplus, softshrink, softsign,
    tanhshrink, threshold, threshold_,
)
from genesis.nn.loss import (  # noqa: F401,E402
    cosine_embedding_loss, cosine_similarity, ctc_loss, gaussian_nll_loss, hinge_embedding_loss, huber_loss, kl_div,
    margin_ranking_loss, multi_margin_loss, multilabel_margin_loss, multilabel_soft_margin_loss, pairwise_distance,
    pdist, poisson_nll_loss, smooth_l1_loss, soft_margin_loss, triplet_margin_loss, triplet_margin_with_distance_loss,
)
from genesis.nn.normalization import (  # noqa: F401,E402
    batch_norm, group_norm, instance_norm, local_response_norm, normalize,
)
from genesis.nn.conv import conv1d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d  # noqa: F401,E402
from genesis.nn.pooling import (  # noqa: F401,E402
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices, adaptive_max_pool2d, adaptive_max_pool2d_with_indices, avg_pool1d, max_pool1d,
    max_pool1d_with_indices, max_pool2d_with_indices,
)
from genesis.nn.sampling import (  # noqa: F401,E402
    interpolate, pad, pixel_shuffle, pixel_unshuffle, upsample, upsample_bilinear, upsample_nearest,
)
from genesis.nn.layers import multi_head_attention_forward  # noqa: F401,E402
from genesis.nn.dropout import (  # noqa: F401,E402
    alpha_dropout, dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout,
)
