// genesis/optim.hpp - everything of genesis::optim: SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta,
// Adamax, NAdam, RAdam, Rprop, ASGD, LBFGS, schedulers, clipping.
#pragma once

#include "genesis/optim/adadelta.hpp"
#include "genesis/optim/adagrad.hpp"
#include "genesis/optim/adam.hpp"
#include "genesis/optim/adam_variants.hpp"
#include "genesis/optim/clip_grad.hpp"
#include "genesis/optim/lbfgs.hpp"
#include "genesis/optim/lr_scheduler.hpp"
#include "genesis/optim/optimizer.hpp"
#include "genesis/optim/rmsprop.hpp"
#include "genesis/optim/sgd.hpp"
