// genesis/sdk/sdk.h - the header-only plugin SDK (C++17) on top of abi/.
#pragma once
#include "genesis/sdk/comm.h"
#include "genesis/sdk/convert.h"
#include "genesis/sdk/error.h"
#include "genesis/sdk/iter.h"
#include "genesis/sdk/philox.h"
#include "genesis/sdk/scalar_ops.h"
#include "genesis/sdk/host_device.h"
#include "genesis/sdk/plugin.h"
