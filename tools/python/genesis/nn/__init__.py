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
from genesis.nn.conv import Conv1d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: F401,E402
from genesis.nn.pooling import (  # noqa: F401,E402
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d, MaxPool1d,
)
from genesis.nn.sampling import (  # noqa: F401,E402
    ConstantPad1d, ConstantPad2d, ConstantPad3d, PixelShuffle, PixelUnshuffle, ReflectionPad1d, ReflectionPad2d,
    ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, Upsample, UpsamplingBilinear2d,
    UpsamplingNearest2d, ZeroPad2d,
)
from genesis.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: F401,E402
from genesis.nn.transformer import (  # noqa: F401,E402
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
)
from genesis.nn.dropout import (  # noqa: F401,E402
    AlphaDropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout,
)
