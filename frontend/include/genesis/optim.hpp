// genesis/optim.hpp - everything of genesis::optim: SGD, Adam, AdamW, schedulers, clipping.
#pragma once

#include "genesis/optim/adam.hpp"
#include "genesis/optim/clip_grad.hpp"
#include "genesis/optim/lr_scheduler.hpp"
#include "genesis/optim/optimizer.hpp"
#include "genesis/optim/sgd.hpp"
