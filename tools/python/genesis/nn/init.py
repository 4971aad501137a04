"""genesis.nn.init: in-place initialisers drawing from the default generator (manual_seed makes
them reproducible); fans follow torch."""
from genesis._C.nn.init import (  # noqa: F401
    _calculate_fan_in_and_fan_out, calculate_gain, constant_, kaiming_normal_, kaiming_uniform_, normal_, ones_,
    uniform_, xavier_normal_, xavier_uniform_, zeros_,
)
