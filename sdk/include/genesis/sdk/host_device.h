// genesis/sdk/host_device.h - the synchronous slots every host-memory device
// type shares: dummy streams and events (all work is done when a kernel
// returns), memmove copies and memset.  A CPU backend fills its allocator
// and properties, then calls fill_host_device_slots(vt).
#pragma once

#include <cstring>

#include "genesis/device.h"

namespace gn::sdk {
namespace host_device_detail {

inline char dummy_stream, dummy_event;

inline gn_status* stream_create(void*, int32_t, void** s) {
  *s = &dummy_stream;
  return nullptr;
}
inline gn_status* nop_handle(void*, int32_t, void*) { return nullptr; }
inline gn_status* event_create(void*, int32_t, void** e) {
  *e = &dummy_event;
  return nullptr;
}
inline gn_status* nop_pair(void*, int32_t, void*, void*) { return nullptr; }
inline gn_status* event_query(void*, int32_t, void*, int32_t* done) {
  *done = 1;
  return nullptr;
}
inline gn_status* nop_device(void*, int32_t) { return nullptr; }
inline gn_status* copy(void*, int32_t, void* dst, const void* src, size_t bytes, int32_t, void*) {
  if (bytes && dst != src) std::memmove(dst, src, bytes);
  return nullptr;
}
inline gn_status* set(void*, int32_t, void* dst, int32_t value, size_t bytes, void*) {
  if (bytes) std::memset(dst, value, bytes);
  return nullptr;
}

}  // namespace host_device_detail

// Fill the stream, event, sync, copy and memset slots of a host-memory device
// type and set GN_DEVICE_HOST_MEMORY; leaves allocator, props and graph slots alone.
inline void fill_host_device_slots(gn_device_vtable& vt) {
  namespace d = host_device_detail;
  vt.flags |= GN_DEVICE_HOST_MEMORY;
  vt.stream_create = d::stream_create;
  vt.stream_destroy = d::nop_handle;
  vt.stream_synchronize = d::nop_handle;
  vt.event_create = d::event_create;
  vt.event_destroy = d::nop_handle;
  vt.event_record = d::nop_pair;
  vt.stream_wait_event = d::nop_pair;
  vt.event_query = d::event_query;
  vt.event_synchronize = d::nop_handle;
  vt.device_synchronize = d::nop_device;
  vt.copy = d::copy;
  vt.memset = d::set;
}

}  // namespace gn::sdk
