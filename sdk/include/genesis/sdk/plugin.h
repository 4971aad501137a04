// genesis/sdk/plugin.h - writing gn_plugin_init and registering kernels.
//
//   static void init(const gn_host_api* host, gn_plugin_info* info) {
//     gn::sdk::Registrar r(host, "cpu");
//     r.kernel("add", GN_F32, add_f32);
//   }
//   GN_SDK_PLUGIN("myplugin", "0.1.0", "what it does", init)
#pragma once

#include <string>

#include "genesis/sdk/error.h"

namespace gn::sdk {

// Registration helper bound to one device type; throws on a refused registration.
struct Registrar {
  const gn_host_api* host;
  const char* device_type;

  Registrar(const gn_host_api* h, const char* dev) : host(h), device_type(dev) {}

  // Register kernel fn for (op, device_type, dtype).
  void kernel(const char* op, int32_t dtype, gn_kernel_fn fn, uint32_t flags = 0, void* user_data = nullptr) const {
    gn_kernel_desc k{};
    k.struct_size = sizeof(k);
    k.op = op;
    k.device_type = device_type;
    k.dtype = dtype;
    k.flags = flags;
    k.fn = fn;
    k.user_data = user_data;
    throw_if(host, host->register_kernel(host->host_ctx, &k));
  }
  // Same kernel for several dtypes.
  template <size_t N>
  void kernel(const char* op, const int32_t (&dtypes)[N], gn_kernel_fn fn, uint32_t flags = 0,
              void* user_data = nullptr) const {
    for (int32_t d : dtypes) kernel(op, d, fn, flags, user_data);
  }
};

// Wrap a kernel body: `GN_SDK_KERNEL(name) { ...uses ctx,in,n_in,out,n_out,attrs,n_attrs... }`
// defines a gn_kernel_fn that never lets an exception out.
#define GN_SDK_KERNEL(name)                                                                                           \
  static void name##_impl(const gn_kernel_ctx* ctx, const gn_tensor_view* in, size_t n_in, const gn_tensor_view* out, \
                          size_t n_out, const gn_attr_value* attrs, size_t n_attrs);                                  \
  static gn_status* name(const gn_kernel_ctx* ctx, const gn_tensor_view* in, size_t n_in, const gn_tensor_view* out,  \
                         size_t n_out, const gn_attr_value* attrs, size_t n_attrs) {                                  \
    return ::gn::sdk::guard(ctx->host, [&] { name##_impl(ctx, in, n_in, out, n_out, attrs, n_attrs); });              \
  }                                                                                                                   \
  static void name##_impl([[maybe_unused]] const gn_kernel_ctx* ctx, [[maybe_unused]] const gn_tensor_view* in,       \
                          [[maybe_unused]] size_t n_in, [[maybe_unused]] const gn_tensor_view* out,                   \
                          [[maybe_unused]] size_t n_out, [[maybe_unused]] const gn_attr_value* attrs,                 \
                          [[maybe_unused]] size_t n_attrs)

}  // namespace gn::sdk

// Define the exported gn_plugin_init: checks the host's major version, fills
// the plugin info, then runs init_fn(host, info) under a guard.
#define GN_SDK_PLUGIN(NAME, VERSION, DESCRIPTION, init_fn)                                                          \
  extern "C" GN_EXPORT_ATTR gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info) {              \
    info->abi_major = GN_ABI_VERSION_MAJOR;                                                                         \
    info->abi_minor = GN_ABI_VERSION_MINOR;                                                                         \
    info->name = NAME;                                                                                              \
    info->version = VERSION;                                                                                        \
    info->description = DESCRIPTION;                                                                                \
    if (host->abi_major != GN_ABI_VERSION_MAJOR)                                                                    \
      return host->status_new(GN_ERR_VERSION, "plugin " NAME " needs ABI major " GN_SDK_STR(GN_ABI_VERSION_MAJOR)); \
    ::gn::sdk::set_host(host);                                                                                      \
    return ::gn::sdk::guard(host, [&] { init_fn(host, info); });                                                    \
  }

#define GN_SDK_STR_(x) #x
#define GN_SDK_STR(x) GN_SDK_STR_(x)
