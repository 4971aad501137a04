// frontend/src/distributed/store.cpp - TCPStore: the key-value store the ranks
// meet over (torch's TCPStore).  One process serves it with a poll() loop on
// its own thread; every rank (the server's too) is a client on one socket.
//
// Wire format, both directions little-endian as the host:
//   request: cmd (1 byte: 'S' set, 'G' get, 'A' add), key length (u32), key,
//            value length (u64), value (for 'A': the i64 delta)
//   reply:   length (u64), bytes ('S': none, 'G': the value, 'A': the i64 sum)
// A 'G' for an unset key is answered when the key is set.  A client that gives
// up waiting closes its socket (the late answer must not reach a later request)
// and reconnects on its next request.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "genesis/distributed.hpp"

namespace genesis::distributed {

using Ms = std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void io_fail(const std::string& what) {
  throw Error(GN_ERR_IO, "[distributed] store: " + what + ": " + std::strerror(errno));
}

void write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) io_fail("write");
    c += w, n -= (size_t)w;
  }
}

// Read n bytes before the deadline; false on timeout.
bool read_all(int fd, void* p, size_t n, Clock::time_point deadline) {
  char* c = static_cast<char*>(p);
  while (n) {
    const auto left = std::chrono::duration_cast<Ms>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, (int)std::min<int64_t>(left, 1000));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) io_fail("poll");
    if (r == 0) continue;
    ssize_t got = ::recv(fd, c, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got == 0) {
      errno = ECONNRESET;
      io_fail("the server closed the connection (the serving rank exited?)");
    }
    if (got < 0) io_fail("read");
    c += got, n -= (size_t)got;
  }
  return true;
}

std::string encode(char cmd, const std::string& key, const std::string& value) {
  std::string m(1, cmd);
  uint32_t kl = (uint32_t)key.size();
  uint64_t vl = value.size();
  m.append(reinterpret_cast<const char*>(&kl), 4).append(key);
  m.append(reinterpret_cast<const char*>(&vl), 8).append(value);
  return m;
}

std::string reply(const std::string& bytes) {
  uint64_t n = bytes.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + bytes;
}

int connect_to(const std::string& host, int port, Clock::time_point deadline, std::string* local) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  std::string last = "no attempt";
  while (true) {
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (rc == 0) {
      for (addrinfo* a = res; a; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          sockaddr_storage ss{};
          socklen_t sl = sizeof ss;
          char buf[INET6_ADDRSTRLEN] = {};
          if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &sl) == 0)
            ::getnameinfo(reinterpret_cast<sockaddr*>(&ss), sl, buf, sizeof buf, nullptr, 0, NI_NUMERICHOST);
          *local = buf;
          ::freeaddrinfo(res);
          return fd;
        }
        last = std::strerror(errno);
        ::close(fd);
      }
      ::freeaddrinfo(res);
    } else {
      last = ::gai_strerror(rc);
    }
    if (Clock::now() >= deadline)
      throw Error(GN_ERR_TIMEOUT, "[distributed] store: could not reach " + host + ":" + std::to_string(port) + " (" +
                                      last + "); is rank 0 running, and are MASTER_ADDR/MASTER_PORT right?");
    std::this_thread::sleep_for(Ms(50));
  }
}

}  // namespace

// ---- the server

struct TCPStore::Server {
  int listen_fd = -1;
  int wake[2] = {-1, -1};
  std::thread thread;
  std::map<std::string, std::string> data;
  std::map<std::string, std::vector<int>> waiters;  // key -> client fds waiting in 'G'
  std::map<int, std::string> inbox;                 // client fd -> bytes not yet parsed

  void drop(int fd) {
    ::close(fd);
    inbox.erase(fd);
    for (auto& [k, fds] : waiters) std::erase(fds, fd);
  }
  void send_to(int fd, const std::string& bytes) {
    try {
      write_all(fd, bytes.data(), bytes.size());
    } catch (const Error&) {
      // The client went away; its socket is dropped when poll reports it.
    }
  }
  // Handle every complete request in fd's inbox.
  void serve(int fd) {
    std::string& in = inbox[fd];
    while (true) {
      if (in.size() < 5) return;
      uint32_t kl;
      std::memcpy(&kl, in.data() + 1, 4);
      if (in.size() < 5 + (size_t)kl + 8) return;
      uint64_t vl;
      std::memcpy(&vl, in.data() + 5 + kl, 8);
      const size_t total = 5 + kl + 8 + vl;
      if (in.size() < total) return;
      const char cmd = in[0];
      std::string key = in.substr(5, kl), value = in.substr(5 + kl + 8, vl);
      in.erase(0, total);
      if (cmd == 'S') {
        data[key] = value;
        send_to(fd, reply(""));
        if (auto it = waiters.find(key); it != waiters.end()) {
          for (int w : it->second) send_to(w, reply(value));
          waiters.erase(it);
        }
      } else if (cmd == 'G') {
        if (auto it = data.find(key); it != data.end())
          send_to(fd, reply(it->second));
        else
          waiters[key].push_back(fd);
      } else if (cmd == 'A') {
        int64_t delta = 0, cur = 0;
        std::memcpy(&delta, value.data(), std::min<size_t>(8, value.size()));
        if (auto it = data.find(key); it != data.end() && it->second.size() == 8)
          std::memcpy(&cur, it->second.data(), 8);
        cur += delta;
        std::string v(reinterpret_cast<const char*>(&cur), 8);
        data[key] = v;
        send_to(fd, reply(v));
      }
    }
  }
  void loop() {
    std::vector<int> clients;
    while (true) {
      std::vector<pollfd> p{{listen_fd, POLLIN, 0}, {wake[0], POLLIN, 0}};
      for (int c : clients) p.push_back({c, POLLIN, 0});
      if (::poll(p.data(), p.size(), -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (p[1].revents) return;
      if (p[0].revents & POLLIN) {
        int c = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) {
          int one = 1;
          ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          clients.push_back(c);
        }
      }
      for (size_t i = 2; i < p.size(); ++i) {
        if (!p[i].revents) continue;
        char buf[65536];
        ssize_t got = ::recv(p[i].fd, buf, sizeof buf, 0);
        if (got <= 0) {
          if (got < 0 && errno == EINTR) continue;
          drop(p[i].fd);
          std::erase(clients, p[i].fd);
          continue;
        }
        inbox[p[i].fd].append(buf, (size_t)got);
        serve(p[i].fd);
      }
    }
  }
  ~Server() {
    if (thread.joinable()) {
      char c = 0;
      (void)!::write(wake[1], &c, 1);
      thread.join();
    }
    for (auto& [fd, _] : inbox) ::close(fd);
    for (int fd : {listen_fd, wake[0], wake[1]})
      if (fd >= 0) ::close(fd);
  }
};

// ---- the client

TCPStore::TCPStore(const std::string& host, int port, bool is_server, Ms timeout)
    : host_(host), port_(port), timeout_(timeout) {
  if (is_server) {
    server_ = std::make_unique<Server>();
    Server& s = *server_;
    s.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s.listen_fd < 0) io_fail("socket");
    int one = 1;
    ::setsockopt(s.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons((uint16_t)port);
    if (::bind(s.listen_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      io_fail("cannot serve port " + std::to_string(port) + " (in use? pick another MASTER_PORT)");
    if (::listen(s.listen_fd, 1024) != 0) io_fail("listen");
    socklen_t al = sizeof a;
    ::getsockname(s.listen_fd, reinterpret_cast<sockaddr*>(&a), &al);
    port_ = ntohs(a.sin_port);
    if (::pipe2(s.wake, O_CLOEXEC) != 0) io_fail("pipe");
    s.thread = std::thread([&s] { s.loop(); });
  }
  fd_ = connect_to(is_server ? "127.0.0.1" : host, port_, Clock::now() + timeout, &local_address_);
  if (is_server) {
    // The address the others reach this host at: the one host names (when it is
    // an address of this host), else the loopback address suits only a local job.
    local_address_ = host;
  }
  c_store_.struct_size = sizeof c_store_;
  c_store_.ctx = this;
  c_store_.set = [](void* ctx, const char* key, const void* value, size_t n) -> gn_status* {
    try {
      static_cast<TCPStore*>(ctx)->set(key, std::string(static_cast<const char*>(value), n));
      return nullptr;
    } catch (const Error& e) {
      return gn_status_create(e.code(), e.what());
    } catch (const std::exception& e) {
      return gn_status_create(GN_ERR_INTERNAL, e.what());
    }
  };
  c_store_.get = [](void* ctx, const char* key, void* value, size_t cap, size_t* n, int64_t timeout_ms) -> gn_status* {
    try {
      std::string v = static_cast<TCPStore*>(ctx)->get(key, Ms(timeout_ms));
      *n = v.size();
      if (value) std::memcpy(value, v.data(), std::min(cap, v.size()));
      return nullptr;
    } catch (const Error& e) {
      return gn_status_create(e.code(), e.what());
    } catch (const std::exception& e) {
      return gn_status_create(GN_ERR_INTERNAL, e.what());
    }
  };
}

TCPStore::~TCPStore() {
  if (fd_ >= 0) ::close(fd_);
  server_.reset();
}

std::string TCPStore::request(char cmd, const std::string& key, const std::string& value, Ms timeout) {
  std::lock_guard<std::mutex> g(mu_);
  if (fd_ < 0) {
    std::string ignored;
    // Reconnect after an abandoned wait; the address was reachable before.
    fd_ = connect_to(server_ ? "127.0.0.1" : host_, port_, Clock::now() + timeout_, &ignored);
  }
  const std::string m = encode(cmd, key, value);
  write_all(fd_, m.data(), m.size());
  const auto deadline = Clock::now() + (timeout.count() < 0 ? timeout_ : timeout);
  uint64_t n = 0;
  bool ok = read_all(fd_, &n, 8, deadline);
  std::string out;
  if (ok) {
    out.resize(n);
    ok = read_all(fd_, out.data(), n, deadline);
  }
  if (!ok) {
    ::close(fd_);
    fd_ = -1;
    throw Error(GN_ERR_TIMEOUT, "[distributed] store: key '" + key + "' was not set within " +
                                    std::to_string((timeout.count() < 0 ? timeout_ : timeout).count()) +
                                    " ms (a rank did not arrive)");
  }
  return out;
}

void TCPStore::set(const std::string& key, const std::string& value) { request('S', key, value, timeout_); }

std::string TCPStore::get(const std::string& key, Ms timeout) { return request('G', key, "", timeout); }

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  std::string r = request('A', key, std::string(reinterpret_cast<const char*>(&delta), 8), timeout_);
  int64_t v = 0;
  std::memcpy(&v, r.data(), std::min<size_t>(8, r.size()));
  return v;
}

}  // namespace genesis::distributed
