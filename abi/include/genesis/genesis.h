/* genesis/genesis.h - the whole public C API of Genesis (libgenesis) and the
 * plugin ABI.  Include this one header. */
#ifndef GENESIS_GENESIS_H
#define GENESIS_GENESIS_H

#include "genesis/version.h"
#include "genesis/status.h"
#include "genesis/dtype.h"
#include "genesis/device.h"
#include "genesis/view.h"
#include "genesis/op.h"
#include "genesis/comm.h"
#include "genesis/plugin.h"
#include "genesis/dlpack.h"
#include "genesis/runtime.h"
#include "genesis/tensor.h"
#include "genesis/ops.h"

#endif /* GENESIS_GENESIS_H */
