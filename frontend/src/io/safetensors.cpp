// safetensors.cpp - HF safetensors reader/writer and atomic file writes.
//
// Format: u64 little-endian N, N bytes of JSON header (padded with spaces to a
// multiple of 8), then the data.  The header maps each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end)} (offsets relative to the
// data start) plus an optional "__metadata__" of string -> string.  Like HF's
// reader we require the tensors to tile the data exactly (no overlap, no gap,
// no trailing bytes).
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "genesis/io.hpp"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.cpp assumes a little-endian host"
#endif

namespace genesis {

// Headers are parsed into nlohmann::json (a std::map per object): an
// ordered_json object finds keys by linear search, so a header of n keys
// took O(n^2) time.  Tensors are kept by name anyway (TensorMap).
using json = nlohmann::json;

namespace {

constexpr uint64_t kMaxHeader = 100ull << 20;  // HF's limit: 100 MB of header
// Entries of one header at most.  The largest real shards hold a few
// thousand tensors; the bound keeps a hostile header from costing seconds
// and gigabytes before anything is checked.
constexpr size_t kMaxEntries = size_t(1) << 20;

[[noreturn]] void fail(const std::string& file, const std::string& problem) {
  throw Error(GN_ERR_IO, "[safetensors] " + file + ": " + problem);
}

struct CodeEntry {
  const char* code;
  DType dtype;
};
constexpr CodeEntry kCodes[] = {
    {"F32", DType::f32}, {"F16", DType::f16}, {"BF16", DType::bf16}, {"F64", DType::f64},
    {"I8", DType::i8},   {"U8", DType::u8},   {"I32", DType::i32},   {"I64", DType::i64},
    {"BOOL", DType::boolean},
};

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// A byte sink: the file writer or a string.
using Sink = std::function<void(const void*, size_t)>;

// Header text (padded) and per-tensor byte sizes, in file order.
struct Layout {
  std::string header;
  std::vector<std::pair<const std::string*, const Tensor*>> order;
  std::vector<uint64_t> bytes;
  uint64_t data_bytes = 0;
};

Layout layout(const TensorMap& tensors, const StringMap& metadata, const std::string& file) {
  Layout L;
  if (tensors.size() + !metadata.empty() > kMaxEntries)
    fail(file, std::to_string(tensors.size()) + " tensors are more than a header may hold (" +
                   std::to_string(kMaxEntries) + " entries)");
  // The header text is joined entry by entry, in linear time (see `json`).
  try {
    L.header = "{";
    if (!metadata.empty()) {
      json m = json::object();
      for (const auto& [k, v] : metadata) m[k] = v;
      L.header += "\"__metadata__\":" + m.dump();
    }
    for (const auto& [name, t] : tensors) {
      if (name == "__metadata__") fail(file, "a tensor cannot be named '__metadata__'");
      if (!t.defined()) fail(file, "tensor '" + name + "' is undefined");
      const uint64_t n = static_cast<uint64_t>(t.numel()) * gn_dtype_size(static_cast<int32_t>(t.dtype()));
      json e = json::object();
      e["dtype"] = safetensors_dtype(t.dtype());
      e["shape"] = t.shape();
      e["data_offsets"] = {L.data_bytes, L.data_bytes + n};
      if (L.header.size() > 1) L.header += ',';
      L.header += json(name).dump() + ':' + e.dump();
      L.order.emplace_back(&name, &t);
      L.bytes.push_back(n);
      L.data_bytes += n;
    }
    L.header += '}';
  } catch (const json::exception& e) {
    fail(file, std::string("cannot encode the header (names and metadata must be UTF-8): ") + e.what());
  }
  L.header.append((8 - L.header.size() % 8) % 8, ' ');
  return L;
}

// Streams the file image into sink (one tensor's host copy at a time).
void emit(const Layout& L, const Sink& sink, const std::string& file) {
  uint64_t n = L.header.size();
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  sink(len, 8);
  sink(L.header.data(), L.header.size());
  std::vector<char> buf;
  for (size_t i = 0; i < L.order.size(); ++i) {
    if (!L.bytes[i]) continue;
    buf.resize(L.bytes[i]);
    gn_status* st = gn_tensor_to_host(L.order[i].second->handle(), buf.data(), buf.size());
    if (st) {
      std::string msg = gn_status_message(st);
      gn_status_free(st);
      fail(file, "cannot read tensor '" + *L.order[i].first + "': " + msg);
    }
    sink(buf.data(), buf.size());
  }
}

// Closes fd on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Removes ".<base>.tmp.XXXXXX" files of earlier writes of the same file that
// were killed before their rename.  A writer holds an exclusive flock on its
// temporary file until the rename, and the kernel drops it when the writer
// dies, so a file whose lock can be taken is stale.  (Two processes writing
// the same path at once were never safe: the last rename wins.)
void remove_stale_temps(const std::string& dir, const std::string& base) {
  const std::string prefix = "." + base + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string p = dir + "/" + name;
    Fd t;
    t.fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat s {};
    if (t.fd < 0 || ::fstat(t.fd, &s) != 0 || !S_ISREG(s.st_mode)) continue;
    if (::flock(t.fd, LOCK_EX | LOCK_NB) == 0) ::unlink(p.c_str());
  }
  ::closedir(d);
}

void atomic_write_impl(const std::string& path, const std::function<void(const Sink&)>& body) {
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty()) fail(path, "the path names a directory, not a file");
  remove_stale_temps(dir, base);
  std::string tmp = dir + "/." + base + ".tmp.XXXXXX";
  Fd f;
  f.fd = ::mkstemp(tmp.data());
  if (f.fd < 0) fail(path, std::string("cannot create a temporary file in ") + dir + ": " + std::strerror(errno));
  // The lock marks the file as live (remove_stale_temps) until after the
  // rename; a second descriptor keeps it while f is closed before the rename.
  Fd lock;
  lock.fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (lock.fd >= 0) ::flock(lock.fd, LOCK_EX);
  try {
    ::fchmod(f.fd, 0644);
    std::vector<char> buf;
    buf.reserve(1 << 20);
    auto flush = [&] {
      size_t done = 0;
      while (done < buf.size()) {
        ssize_t w = ::write(f.fd, buf.data() + done, buf.size() - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) fail(path, std::string("write failed: ") + std::strerror(errno));
        done += static_cast<size_t>(w);
      }
      buf.clear();
    };
    Sink sink = [&](const void* p, size_t n) {
      const char* c = static_cast<const char*>(p);
      if (buf.size() + n > buf.capacity()) flush();
      if (n >= buf.capacity()) {
        buf.assign(c, c + n);
        flush();
      } else {
        buf.insert(buf.end(), c, c + n);
      }
    };
    body(sink);
    flush();
    if (::fsync(f.fd) != 0) fail(path, std::string("fsync failed: ") + std::strerror(errno));
    const int fd = f.fd;
    f.fd = -1;
    if (::close(fd) != 0) fail(path, std::string("close failed: ") + std::strerror(errno));
    if (::rename(tmp.c_str(), path.c_str()) != 0) fail(path, std::string("rename failed: ") + std::strerror(errno));
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  Fd d;  // make the rename durable
  d.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (d.fd >= 0) ::fsync(d.fd);
}

// One validated header entry.
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

// SAX handler of the first header pass: top-level key count and repeats.
class HeaderScan {
 public:
  explicit HeaderScan(const std::string& file) : file_(file) {}
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const std::string&) { return true; }
  bool string(std::string&) { return true; }
  bool binary(json::binary_t&) { return true; }
  bool start_object(std::size_t) { return ++depth_, true; }
  bool end_object() { return --depth_, true; }
  bool start_array(std::size_t) { return ++depth_, true; }
  bool end_array() { return --depth_, true; }
  bool key(std::string& k) {
    if (depth_ != 1) return true;
    if (keys_.size() >= kMaxEntries)
      fail(file_, "the header has more than " + std::to_string(kMaxEntries) + " entries");
    if (!keys_.insert(k).second) fail(file_, "tensor '" + k + "' appears twice in the header");
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    fail(file_, std::string("bad JSON header: ") + e.what());
  }

 private:
  const std::string& file_;
  int depth_ = 0;
  std::unordered_set<std::string> keys_;
};

// Validates the whole file image; returns entries in name order and the metadata.
std::vector<Entry> parse_header(const unsigned char* data, size_t size, const std::string& file,
                                StringMap* metadata, size_t* data_start) {
  if (size < 8)
    fail(file, "truncated: " + std::to_string(size) + " bytes, but a safetensors file starts with an 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(data[i]) << (8 * i);
  if (n > kMaxHeader) fail(file, "header length " + std::to_string(n) + " is larger than the 100 MB limit");
  if (n > size - 8)
    fail(file, "header length " + std::to_string(n) + " exceeds the file size (" + std::to_string(size) +
               " bytes): truncated or not a safetensors file");
  if (n < 2 || data[8] != '{') fail(file, "the header is not a JSON object (it must start with '{')");
  // A first pass without building anything counts the top-level keys and
  // finds repeats, so a hostile header stops at the bound.  (nlohmann's parse
  // callback cannot do this: it rescans the parent object whenever a child
  // object ends, quadratic again.)
  HeaderScan scan(file);
  json::sax_parse(data + 8, data + 8 + n, &scan);
  json h;
  try {
    h = json::parse(data + 8, data + 8 + n);
  } catch (const json::exception& e) {
    fail(file, std::string("bad JSON header: ") + e.what());
  }
  if (!h.is_object()) fail(file, "the header is not a JSON object");
  const uint64_t data_size = size - 8 - n;
  *data_start = 8 + n;
  std::vector<Entry> out;
  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    if (key == "__metadata__") {
      if (!v.is_object()) fail(file, "'__metadata__' must be an object of strings");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) fail(file, "'__metadata__' value of '" + m.key() + "' is not a string");
        (*metadata)[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + key + "': ";
    if (!v.is_object()) fail(file, where + "entry is not an object");
    if (!v.contains("dtype") || !v["dtype"].is_string()) fail(file, where + "missing or non-string 'dtype'");
    if (!v.contains("shape") || !v["shape"].is_array()) fail(file, where + "missing or non-array 'shape'");
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
      fail(file, where + "'data_offsets' must be an array of two integers");
    Entry e;
    e.name = key;
    const std::string code = v["dtype"].get<std::string>();
    bool known = false;
    for (const CodeEntry& c : kCodes) {
      if (code == c.code) {
        e.dtype = c.dtype;
        known = true;
      }
    }
    if (!known) fail(file, where + "unknown or unsupported dtype '" + code + "'");
    uint64_t numel = 1;
    bool overflow = false;
    for (const json& d : v["shape"]) {
      if (!d.is_number_unsigned()) fail(file, where + "shape entries must be non-negative integers");
      const uint64_t s = d.get<uint64_t>();
      if (s > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
      if (s && numel > std::numeric_limits<uint64_t>::max() / s) overflow = true;
      numel *= s;
      e.shape.push_back(static_cast<int64_t>(s));
    }
    for (const json& d : v["data_offsets"])
      if (!d.is_number_unsigned()) fail(file, where + "'data_offsets' must be non-negative integers");
    e.begin = v["data_offsets"][0].get<uint64_t>();
    e.end = v["data_offsets"][1].get<uint64_t>();
    if (e.end < e.begin)
      fail(file, where + "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "] end before they begin");
    const size_t es = gn_dtype_size(static_cast<int32_t>(e.dtype));
    if (overflow || numel > std::numeric_limits<uint64_t>::max() / es || numel * es != e.end - e.begin)
      fail(file, where + "shape " + shape_str(e.shape) + " of " + code + " needs " +
                     (overflow ? std::string("too many") : std::to_string(numel * es)) + " bytes but data_offsets span " +
                     std::to_string(e.end - e.begin));
    if (e.end > data_size)
      fail(file, where + "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                     "] lie beyond the data (" + std::to_string(data_size) + " bytes): truncated or corrupt file");
    out.push_back(std::move(e));
  }
  // The entries must tile [0, data_size) exactly.
  std::vector<const Entry*> sorted;
  for (const Entry& e : out) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t pos = 0;
  const Entry* prev = nullptr;
  for (const Entry* e : sorted) {
    if (e->begin < pos)
      fail(file, "tensors '" + prev->name + "' and '" + e->name + "' overlap (bytes " + std::to_string(e->begin) +
                     ".." + std::to_string(pos) + ")");
    if (e->begin > pos)
      fail(file, "bytes " + std::to_string(pos) + ".." + std::to_string(e->begin) +
                     " of the data belong to no tensor (before '" + e->name + "')");
    pos = e->end;
    prev = e;
  }
  if (pos != data_size)
    fail(file, std::to_string(data_size - pos) + " bytes after the last tensor belong to no tensor (corrupt file)");
  return out;
}

SafetensorsFile parse(const unsigned char* data, size_t size, const Device& device, const std::string& file) {
  SafetensorsFile r;
  size_t start = 0;
  const std::vector<Entry> entries = parse_header(data, size, file, &r.metadata, &start);
  // Everything is validated: only now are tensors created.
  for (const Entry& e : entries) {
    gn_tensor* h = nullptr;
    gn_status* st = gn_tensor_from_host(runtime(), data + start + e.begin, e.shape.data(),
                                        static_cast<int32_t>(e.shape.size()), static_cast<int32_t>(e.dtype),
                                        device.c(), &h);
    if (st) {
      std::string msg = gn_status_message(st);
      gn_status_free(st);
      fail(file, "cannot create tensor '" + e.name + "' on " + device.str() + ": " + msg);
    }
    r.tensors[e.name] = Tensor::adopt(h);
  }
  return r;
}

// A read-only mapping of a whole regular file.
struct Mapped {
  const unsigned char* p = nullptr;
  size_t size = 0;
  std::string path;
  explicit Mapped(const std::string& file) : path(file) {
    Fd f;
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    f.fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (f.fd < 0) throw Error(errno == ENOENT ? GN_ERR_NOT_FOUND : GN_ERR_IO,
                              "[safetensors] " + file + ": cannot open: " + std::strerror(errno));
    struct stat s {};
    if (::fstat(f.fd, &s) != 0) fail(file, std::string("cannot stat: ") + std::strerror(errno));
    if (S_ISDIR(s.st_mode)) fail(file, "is a directory");
    if (!S_ISREG(s.st_mode)) fail(file, "is not a regular file (a FIFO, device or socket cannot be read)");
    size = static_cast<size_t>(s.st_size);
    if (size == 0) return;
    void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, f.fd, 0);
    if (m == MAP_FAILED) fail(file, std::string("cannot map: ") + std::strerror(errno));
    p = static_cast<const unsigned char*>(m);
  }
  ~Mapped() {
    if (p) ::munmap(const_cast<unsigned char*>(p), size);
  }
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
};

}  // namespace

const char* safetensors_dtype(DType d) {
  for (const CodeEntry& c : kCodes)
    if (c.dtype == d) return c.code;
  throw Error(GN_ERR_DTYPE, std::string("[safetensors] no safetensors code for dtype ") + dtype_name(d));
}

DType dtype_from_safetensors(const std::string& code) {
  for (const CodeEntry& c : kCodes)
    if (code == c.code) return c.dtype;
  throw Error(GN_ERR_DTYPE, "[safetensors] unknown or unsupported dtype '" + code + "'");
}

std::string safetensors_serialize(const TensorMap& tensors, const StringMap& metadata) {
  const Layout L = layout(tensors, metadata, "<memory>");
  std::string out;
  out.reserve(8 + L.header.size() + L.data_bytes);
  emit(L, [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }, "<memory>");
  return out;
}

SafetensorsFile safetensors_deserialize(const std::string& bytes, const Device& device, const std::string& name) {
  return parse(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), device, name);
}

void save_safetensors(const std::string& path, const TensorMap& tensors, const StringMap& metadata) {
  const Layout L = layout(tensors, metadata, path);  // validates before the temp file exists
  atomic_write_impl(path, [&](const Sink& sink) { emit(L, sink, path); });
}

SafetensorsFile load_safetensors(const std::string& path, const Device& device) {
  Mapped m(path);
  return parse(m.p, m.size, device, path);
}

size_t safetensors_max_tensors() { return kMaxEntries; }

StringMap load_safetensors_metadata(const std::string& path) {
  Mapped m(path);
  StringMap meta;
  size_t start = 0;
  parse_header(m.p, m.size, path, &meta, &start);
  return meta;
}

void save(const TensorMap& state_dict, const std::string& path) {
  save_safetensors(path, state_dict, {{"format", "pt"}});
}

TensorMap load(const std::string& path, const Device& device) { return load_safetensors(path, device).tensors; }

void atomic_write_file(const std::string& path, const std::string& bytes) {
  atomic_write_impl(path, [&](const Sink& sink) { sink(bytes.data(), bytes.size()); });
}

}  // namespace genesis
