// core/src/streams.cpp - streams, events, graph capture, RNG state: thin C
// wrappers over the serving backend's vtable.
#include <cstring>

#include "runtime.h"

using namespace genesis::core;

namespace {

// The vtable slot or an UNSUPPORTED error naming what is missing.
template <class Fn>
Fn need(Fn fn, const DeviceType& dt, const char* what) {
  if (!fn) fail(GN_ERR_UNSUPPORTED, "device type '" + dt.name + "' does not support " + what);
  return fn;
}

// gn_stream_create and gn_event_create: a native handle from the device's `create`
// slot (`what` names the feature in errors), wrapped as a new H.
template <class H, class Create>
gn_status* create_handle(gn_runtime* rt, gn_device dev, H** out, const char* fn, Create gn_device_vtable::*create,
                         const char* what, uint32_t magic) {
  return guarded([&] {
    require_non_null(fn, {{"out", out}});
    check_runtime_arg(rt, fn);
    DeviceType& dt = device_type_of(rt, dev, fn);
    void* native = nullptr;
    throw_if(need(dt.vt->*create, dt, what)(dt.vt->ctx, dev.index, &native));
    *out = new H{magic, rt, dev, native};
  });
}

// gn_event_record and gn_stream_wait_event: e's device type, after the checks both make;
// *stream is s's native stream (NULL s: the current stream of e's device).
DeviceType& event_and_stream(gn_event* e, gn_stream* s, const char* fn, void** stream) {
  require_non_null(fn, {{"e", e}});
  check_live(e, kEventMagic, fn, "event");
  check_live(s, kStreamMagic, fn, "stream");
  DeviceType& dt = device_type_of(e->rt, e->device, fn);
  *stream = s ? s->native : current_stream(e->rt, e->device);
  return dt;
}

// gn_stream_destroy and gn_event_destroy: NULL is a no-op; `refuse` may fail (the
// current stream), else the device's `destroy` slot (if any) and the handle retires.
template <class H, class Destroy, class Refuse>
gn_status* destroy_handle(H* h, uint32_t magic, const char* fn, const char* kind, Destroy gn_device_vtable::*destroy,
                          Refuse refuse) {
  return guarded([&] {
    if (!h) return;
    check_live(h, magic, fn, kind);
    DeviceType& dt = device_type_of(h->rt, h->device, fn);
    refuse();
    if (dt.vt->*destroy) throw_if((dt.vt->*destroy)(dt.vt->ctx, h->device.index, h->native));
    retire(h);
  });
}

}  // namespace

extern "C" {

gn_status* gn_stream_create(gn_runtime* rt, gn_device dev, gn_stream** out) {
  return create_handle(rt, dev, out, "gn_stream_create", &gn_device_vtable::stream_create, "streams", kStreamMagic);
}

gn_status* gn_stream_destroy(gn_stream* s) {
  return destroy_handle(s, kStreamMagic, "gn_stream_destroy", "stream", &gn_device_vtable::stream_destroy, [&] {
    if (device_state(s->rt, s->device).current == s)
      fail(GN_ERR_INVALID_ARGUMENT, "gn_stream_destroy: the stream is current; set another first");
  });
}

gn_status* gn_stream_synchronize(gn_stream* s) {
  return guarded([&] {
    require_non_null("gn_stream_synchronize", {{"s", s}});
    check_live(s, kStreamMagic, "gn_stream_synchronize", "stream");
    DeviceType& dt = device_type_of(s->rt, s->device, "gn_stream_synchronize");
    if (dt.vt->stream_synchronize) throw_if(dt.vt->stream_synchronize(dt.vt->ctx, s->device.index, s->native));
  });
}

gn_status* gn_stream_set_current(gn_runtime* rt, gn_device dev, gn_stream* s) {
  return guarded([&] {
    check_runtime_arg(rt, "gn_stream_set_current");
    check_live(s, kStreamMagic, "gn_stream_set_current", "stream");
    device_type_of(rt, dev, "gn_stream_set_current");
    if (s && (s->device.type != dev.type || s->device.index != dev.index))
      fail(GN_ERR_DEVICE,
           "gn_stream_set_current: stream belongs to " + device_str(rt, s->device) + ", not " + device_str(rt, dev));
    device_state(rt, dev).current = s;
  });
}

gn_stream* gn_stream_get_current(gn_runtime* rt, gn_device dev) {
  gn_stream* s = nullptr;
  gn_status* st = guarded([&] {
    check_runtime_arg(rt, "gn_stream_get_current");
    device_type_of(rt, dev, "gn_stream_get_current");
    s = device_state(rt, dev).current;
  });
  gn_status_free(st);
  return s;
}

void* gn_stream_native(const gn_stream* s) { return s ? s->native : nullptr; }

gn_status* gn_event_create(gn_runtime* rt, gn_device dev, gn_event** out) {
  return create_handle(rt, dev, out, "gn_event_create", &gn_device_vtable::event_create, "events", kEventMagic);
}

gn_status* gn_event_destroy(gn_event* e) {
  return destroy_handle(e, kEventMagic, "gn_event_destroy", "event", &gn_device_vtable::event_destroy, [] {});
}

gn_status* gn_event_record(gn_event* e, gn_stream* s) {
  return guarded([&] {
    void* stream = nullptr;
    DeviceType& dt = event_and_stream(e, s, "gn_event_record", &stream);
    throw_if(need(dt.vt->event_record, dt, "events")(dt.vt->ctx, e->device.index, e->native, stream));
  });
}

gn_status* gn_stream_wait_event(gn_stream* s, gn_event* e) {
  return guarded([&] {
    void* stream = nullptr;
    DeviceType& dt = event_and_stream(e, s, "gn_stream_wait_event", &stream);
    throw_if(need(dt.vt->stream_wait_event, dt, "events")(dt.vt->ctx, e->device.index, stream, e->native));
  });
}

gn_status* gn_event_query(gn_event* e, int32_t* done) {
  return guarded([&] {
    require_non_null("gn_event_query", {{"e", e}, {"done", done}});
    check_live(e, kEventMagic, "gn_event_query", "event");
    DeviceType& dt = device_type_of(e->rt, e->device, "gn_event_query");
    throw_if(need(dt.vt->event_query, dt, "events")(dt.vt->ctx, e->device.index, e->native, done));
  });
}

gn_status* gn_event_synchronize(gn_event* e) {
  return guarded([&] {
    require_non_null("gn_event_synchronize", {{"e", e}});
    check_live(e, kEventMagic, "gn_event_synchronize", "event");
    DeviceType& dt = device_type_of(e->rt, e->device, "gn_event_synchronize");
    throw_if(need(dt.vt->event_synchronize, dt, "events")(dt.vt->ctx, e->device.index, e->native));
  });
}

gn_status* gn_graph_begin(gn_runtime* rt, gn_device dev) {
  return guarded([&] {
    DeviceType& dt = device_type_of(rt, dev, "gn_graph_begin");
    throw_if(need(dt.vt->graph_begin, dt, "graph capture")(dt.vt->ctx, dev.index, current_stream(rt, dev)));
  });
}

gn_status* gn_graph_end(gn_runtime* rt, gn_device dev, gn_graph** out) {
  return guarded([&] {
    require_non_null("gn_graph_end", {{"out", out}});
    DeviceType& dt = device_type_of(rt, dev, "gn_graph_end");
    void* native = nullptr;
    throw_if(need(dt.vt->graph_end, dt, "graph capture")(dt.vt->ctx, dev.index, current_stream(rt, dev), &native));
    *out = new gn_graph{rt, dev, native};
  });
}

gn_status* gn_graph_launch(gn_graph* g) {
  return guarded([&] {
    require_non_null("gn_graph_launch", {{"g", g}});
    DeviceType& dt = device_type_of(g->rt, g->device, "gn_graph_launch");
    throw_if(need(dt.vt->graph_launch, dt, "graph capture")(dt.vt->ctx, g->device.index, g->native,
                                                            current_stream(g->rt, g->device)));
  });
}

void gn_graph_destroy(gn_graph* g) {
  if (!g) return;
  gn_status* st = guarded([&] {
    DeviceType& dt = device_type_of(g->rt, g->device, "gn_graph_destroy");
    if (dt.vt->graph_destroy) throw_if(dt.vt->graph_destroy(dt.vt->ctx, g->device.index, g->native));
  });
  gn_status_free(st);
  delete g;
}

void gn_rng_manual_seed(gn_runtime* rt, uint64_t seed) {
  if (!rt) return;
  for (auto& dt : rt->device_types)
    for (auto& d : dt.devices) {
      d->seed.store(seed);
      d->offset.store(0);
    }
}

gn_status* gn_rng_get_state(gn_runtime* rt, gn_device dev, uint64_t* seed, uint64_t* offset) {
  return guarded([&] {
    device_type_of(rt, dev, "gn_rng_get_state");
    DeviceState& d = device_state(rt, dev);
    if (seed) *seed = d.seed.load();
    if (offset) *offset = d.offset.load();
  });
}

gn_status* gn_rng_set_state(gn_runtime* rt, gn_device dev, uint64_t seed, uint64_t offset) {
  return guarded([&] {
    device_type_of(rt, dev, "gn_rng_set_state");
    DeviceState& d = device_state(rt, dev);
    d.seed.store(seed);
    d.offset.store(offset);
  });
}

gn_status* gn_generator_create(gn_runtime* rt, uint64_t seed, gn_generator** out) {
  return guarded([&] {
    require_non_null("gn_generator_create", {{"rt", rt}, {"out", out}});
    auto* g = new gn_generator;
    g->seed.store(seed);
    g->offset.store(0);
    *out = g;
  });
}

void gn_generator_destroy(gn_generator* g) { delete g; }

void gn_generator_get_state(const gn_generator* g, uint64_t* seed, uint64_t* offset) {
  if (!g) return;
  if (seed) *seed = g->seed.load();
  if (offset) *offset = g->offset.load();
}

void gn_generator_set_state(gn_generator* g, uint64_t seed, uint64_t offset) {
  if (!g) return;
  g->seed.store(seed);
  g->offset.store(offset);
}

gn_status* gn_profiler_start(gn_runtime* rt) {
  return guarded([&] {
    require_non_null("gn_profiler_start", {{"rt", rt}});
    rt->profiler.start();
  });
}

gn_status* gn_profiler_stop(gn_runtime* rt) {
  return guarded([&] {
    require_non_null("gn_profiler_stop", {{"rt", rt}});
    rt->profiler.stop();
  });
}

gn_status* gn_profiler_summary(gn_runtime* rt, char* buf, size_t cap, size_t* needed) {
  return guarded([&] {
    require_non_null("gn_profiler_summary", {{"rt", rt}});
    std::string s = rt->profiler.summary();
    if (needed) *needed = s.size() + 1;
    if (buf && cap) {
      size_t n = std::min(cap - 1, s.size());
      std::memcpy(buf, s.data(), n);
      buf[n] = 0;
    }
  });
}

}  // extern "C"
