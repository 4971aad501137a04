// Every public header of the plugin SDK, as an installed-tree plugin includes them.
#include <genesis/sdk/sdk.h>

#include <genesis/sdk/convert.h>
#include <genesis/sdk/error.h>
#include <genesis/sdk/host_device.h>
#include <genesis/sdk/iter.h>
#include <genesis/sdk/philox.h>
#include <genesis/sdk/plugin.h>
