// genesis/nn.hpp - everything of genesis::nn: Module, layers, losses, init, functional.
#pragma once

#include "genesis/nn/activation.hpp"
#include "genesis/nn/attention.hpp"
#include "genesis/nn/container.hpp"
#include "genesis/nn/conv.hpp"
#include "genesis/nn/functional.hpp"
#include "genesis/nn/init.hpp"
#include "genesis/nn/linear.hpp"
#include "genesis/nn/loss.hpp"
#include "genesis/nn/module.hpp"
#include "genesis/nn/normalization.hpp"
