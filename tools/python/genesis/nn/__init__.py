"""genesis.nn: Module, Parameter, the layers, the losses, functional, init, utils and parallel."""
from genesis.nn import functional, init, utils  # noqa: F401
from genesis.nn.layers import (  # noqa: F401
    AvgPool2d, BatchNorm1d, BatchNorm2d, BCELoss, BCEWithLogitsLoss, Conv2d, CrossEntropyLoss, Dropout, Embedding,
    Flatten, GELU, Identity, L1Loss, LayerNorm, Linear, LogSoftmax, MaxPool2d, MSELoss, MultiheadAttention, NLLLoss,
    ReLU, RMSNorm, Sigmoid, SiLU, Softmax, Tanh,
)
from genesis.nn.modules import CppLayer, Module, ModuleDict, ModuleList, Parameter, Sequential  # noqa: F401
from genesis.nn import parallel  # noqa: F401,E402
from genesis.nn.activation import (  # noqa: F401,E402
    CELU, ELU, GLU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, Mish, PReLU, ReLU6, RReLU,
    SELU, Softmax2d, Softmin, Softplus, Softshrink, Softsign, Tanhshrink, Threshold,
)
from genesis.nn.loss import (  # noqa: F401,E402
    CosineEmbeddingLoss, CosineSimilarity, CTCLoss, GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss,
    MarginRankingLoss, MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, PairwiseDistance,
    PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss, TripletMarginLoss, TripletMarginWithDistanceLoss,
)
from genesis.nn.modules import ParameterDict, ParameterList, Unflatten  # noqa: F401,E402
from genesis.nn.normalization import (  # noqa: F401,E402
    GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LocalResponseNorm,
)
