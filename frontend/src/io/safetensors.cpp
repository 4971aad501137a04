// safetensors.cpp - HF safetensors reader/writer and atomic file writes.
//
// Format: u64 little-endian N, N bytes of JSON header (padded with spaces to a
// multiple of 8), then the data.  The header maps each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end)} (offsets relative to the
// data start) plus an optional "__metadata__" of string -> string.  Like HF's
// reader we require the tensors to tile the data exactly (no overlap, no gap,
// no trailing bytes).
//
// Integrity: every file written here carries "genesis.crc32" in __metadata__, the CRC-32 (zlib)
// of each tensor's bytes in data order, as 8 hex digits separated by spaces.  The header is
// written first with a placeholder of the same width, filled in once the data is out, so each
// tensor is read from its device once.  Loading verifies it when present and names the tensor
// whose bytes changed; files without it (older files, Hugging Face's) load as before.  The entry
// belongs to the format: it is never returned as metadata, and a caller's entry of that name is
// replaced.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "atomic_file.h"
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
// The checksum entry of __metadata__ (see the top of the file).
constexpr const char* kCrcKey = "genesis.crc32";

[[noreturn]] void fail(const std::string& file, const std::string& problem) {
  throw Error(GN_ERR_IO, "[safetensors] " + file + ": " + problem);
}

struct CodeEntry {
  const char* code;
  DType dtype;
};
constexpr CodeEntry kCodes[] = {
    {"F32", DType::f32}, {"F16", DType::f16}, {"BF16", DType::bf16}, {"F64", DType::f64},      {"I8", DType::i8},
    {"U8", DType::u8},   {"I32", DType::i32}, {"I64", DType::i64},   {"BOOL", DType::boolean},
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
  size_t crc_pos = 0;  // where in the header the checksum placeholder starts (bytes)
};

uint32_t crc32_of(const void* p, size_t n) {
  return static_cast<uint32_t>(::crc32_z(::crc32_z(0, nullptr, 0), static_cast<const Bytef*>(p), n));
}

std::string hex8(uint32_t v) {
  char b[9];
  std::snprintf(b, sizeof b, "%08x", v);
  return b;
}

Layout layout(const TensorMap& tensors, const StringMap& metadata, const std::string& file) {
  Layout L;
  if (tensors.size() + 1 > kMaxEntries)
    fail(file, std::to_string(tensors.size()) + " tensors are more than a header may hold (" +
                   std::to_string(kMaxEntries) + " entries)");
  // The header text is joined entry by entry, in linear time (see `json`).
  try {
    // The checksums lead __metadata__ as a placeholder of their final width (9 bytes a tensor
    // but the last), filled in by emit's caller.
    json m = json::object();
    for (const auto& [k, v] : metadata)
      if (k != kCrcKey) m[k] = v;
    const std::string rest = m.dump();  // "{...}"
    L.header = std::string("{\"__metadata__\":{\"") + kCrcKey + "\":\"";
    L.crc_pos = L.header.size();
    L.header += std::string(tensors.empty() ? 0 : 9 * tensors.size() - 1, '0') + "\"";
    if (rest.size() > 2) L.header += ',';
    L.header.append(rest, 1, std::string::npos);  // the caller's entries and the closing brace
    for (const auto& [name, t] : tensors) {
      if (name == "__metadata__") fail(file, "a tensor cannot be named '__metadata__'");
      if (!t.defined()) fail(file, "tensor '" + name + "' is undefined");
      const uint64_t n = static_cast<uint64_t>(t.numel()) * gn_dtype_size(static_cast<int32_t>(t.dtype()));
      json e = json::object();
      e["dtype"] = safetensors_dtype(t.dtype());
      e["shape"] = t.shape();
      e["data_offsets"] = {L.data_bytes, L.data_bytes + n};
      L.header += ',';
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

// Streams the file image into sink (one tensor's host copy at a time); returns the checksum
// text that replaces the header's placeholder.
std::string emit(const Layout& L, const Sink& sink, const std::string& file) {
  uint64_t n = L.header.size();
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  sink(len, 8);
  sink(L.header.data(), L.header.size());
  std::vector<char> buf;
  std::string crcs;
  for (size_t i = 0; i < L.order.size(); ++i) {
    if (i) crcs += ' ';
    buf.resize(L.bytes[i]);
    if (L.bytes[i]) {
      gn_status* st = gn_tensor_to_host(L.order[i].second->handle(), buf.data(), buf.size());
      if (st) {
        std::string msg = gn_status_message(st);
        gn_status_free(st);
        fail(file, "cannot read tensor '" + *L.order[i].first + "': " + msg);
      }
      sink(buf.data(), buf.size());
    }
    crcs += hex8(crc32_of(buf.data(), buf.size()));
  }
  return crcs;
}

// Closes fd on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Writes path atomically (sdk/support/atomic_file.h): body gets the writer and may throw.
template <class F>
void write_atomically(const std::string& path, F body) {
  try {
    support::AtomicFileWriter w(path);
    body(w);
    w.commit();
  } catch (const support::FileError& e) {
    fail(path, e.what());
  }
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
std::vector<Entry> parse_header(const unsigned char* data, size_t size, const std::string& file, StringMap* metadata,
                                size_t* data_start) {
  if (size < 8)
    fail(file,
         "truncated: " + std::to_string(size) + " bytes, but a safetensors file starts with an 8-byte header length");
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
      fail(file, where + "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                     "] end before they begin");
    const size_t es = gn_dtype_size(static_cast<int32_t>(e.dtype));
    if (overflow || numel > std::numeric_limits<uint64_t>::max() / es || numel * es != e.end - e.begin)
      fail(file, where + "shape " + shape_str(e.shape) + " of " + code + " needs " +
                     (overflow ? std::string("too many") : std::to_string(numel * es)) +
                     " bytes but data_offsets span " + std::to_string(e.end - e.begin));
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

// Checks the "genesis.crc32" entry, when there is one, against the data, and takes it out of the
// metadata.  data: the data region (after the header).
void verify_checksums(const unsigned char* data, const std::vector<Entry>& entries, StringMap* metadata,
                      const std::string& file) {
  auto it = metadata->find(kCrcKey);
  if (it == metadata->end()) return;
  const std::string text = it->second;
  metadata->erase(it);
  std::vector<const Entry*> order;  // data order, as written
  for (const Entry& e : entries) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  const size_t want = order.empty() ? 0 : 9 * order.size() - 1;
  if (text.size() != want)
    fail(file, std::string("the '") + kCrcKey + "' metadata has " + std::to_string(text.size()) + " characters, but " +
                   std::to_string(order.size()) + " tensors need " + std::to_string(want) +
                   " (8 hex digits each, separated by spaces): corrupt file");
  for (size_t i = 0; i < order.size(); ++i) {
    const std::string stored = text.substr(9 * i, 8);
    if ((i && text[9 * i - 1] != ' ') || stored.find_first_not_of("0123456789abcdef") != std::string::npos)
      fail(file, std::string("the '") + kCrcKey +
                     "' metadata is not 8 lower-case hex digits per tensor separated by spaces (entry " +
                     std::to_string(i) + ": '" + stored + "'): corrupt file");
    const Entry& e = *order[i];
    const std::string computed = hex8(crc32_of(data + e.begin, e.end - e.begin));
    if (computed != stored)
      fail(file, "the data of tensor '" + e.name + "' (bytes " + std::to_string(e.begin) + ".." +
                     std::to_string(e.end) + " of the data region) does not match its checksum (CRC-32 " + computed +
                     ", stored " + stored + "): the file is corrupt");
  }
}

SafetensorsFile parse(const unsigned char* data, size_t size, const Device& device, const std::string& file) {
  SafetensorsFile r;
  size_t start = 0;
  const std::vector<Entry> entries = parse_header(data, size, file, &r.metadata, &start);
  verify_checksums(data + start, entries, &r.metadata, file);
  // Everything is validated: only now are tensors created.
  for (const Entry& e : entries) {
    gn_tensor* h = nullptr;
    gn_status* st =
        gn_tensor_from_host(runtime(), data + start + e.begin, e.shape.data(), static_cast<int32_t>(e.shape.size()),
                            static_cast<int32_t>(e.dtype), device.c(), &h);
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
    if (f.fd < 0)
      throw Error(errno == ENOENT ? GN_ERR_NOT_FOUND : GN_ERR_IO,
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
  const std::string crcs = emit(
      L, [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }, "<memory>");
  out.replace(8 + L.crc_pos, crcs.size(), crcs);
  return out;
}

SafetensorsFile safetensors_deserialize(const std::string& bytes, const Device& device, const std::string& name) {
  return parse(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), device, name);
}

void save_safetensors(const std::string& path, const TensorMap& tensors, const StringMap& metadata) {
  const Layout L = layout(tensors, metadata, path);  // validates before the temp file exists
  write_atomically(path, [&](support::AtomicFileWriter& w) {
    const std::string crcs = emit(
        L, [&](const void* p, size_t n) { w.write(p, n); }, path);
    w.overwrite(8 + L.crc_pos, crcs.data(), crcs.size());
  });
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
  meta.erase(kCrcKey);  // checked when the data is read (load_safetensors)
  return meta;
}

void save(const TensorMap& state_dict, const std::string& path) {
  save_safetensors(path, state_dict, {{"format", "pt"}});
}

TensorMap load(const std::string& path, const Device& device) { return load_safetensors(path, device).tensors; }

void atomic_write_file(const std::string& path, const std::string& bytes) {
  write_atomically(path, [&](support::AtomicFileWriter& w) { w.write(bytes.data(), bytes.size()); });
}

}  // namespace genesis
