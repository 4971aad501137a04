// frontend/src/distributed/launch.cpp - the local agent of `genesis launch`:
// fork/exec one process per local rank with torchrun's environment, forward
// signals, and stop the whole job when one rank fails.
#include "genesis/distributed/launch.hpp"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "genesis/tensor.hpp"

namespace genesis::distributed {

namespace {

std::atomic<int> g_signal{0};

extern "C" void on_signal(int sig) { g_signal.store(sig); }

struct Child {
  pid_t pid = -1;
  int rank = 0, local_rank = 0;
  bool running = false;
};

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) + (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "stopped (status " + std::to_string(status) + ")";
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

void signal_all(std::vector<Child>& children, int sig) {
  for (Child& c : children)
    if (c.running) ::kill(c.pid, sig);
}

// Reap whichever children have exited; returns the first failure's index or -1.
int reap(std::vector<Child>& children, std::vector<int>& statuses, bool block_ms) {
  int failed = -1;
  for (size_t i = 0; i < children.size(); ++i) {
    Child& c = children[i];
    if (!c.running) continue;
    int status = 0;
    pid_t r = ::waitpid(c.pid, &status, block_ms ? 0 : WNOHANG);
    if (r == c.pid) {
      c.running = false;
      statuses[i] = status;
      if (failed < 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) failed = (int)i;
    }
  }
  return failed;
}

// A port nobody listens on now (the kernel's pick for port 0 on loopback).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t l = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l) != 0)
    throw Error(GN_ERR_IO, std::string("[launch] cannot pick a free port: ") + std::strerror(errno));
  ::close(fd);
  return ntohs(a.sin_port);
}

bool any_running(const std::vector<Child>& children) {
  for (const Child& c : children)
    if (c.running) return true;
  return false;
}

}  // namespace

int launch(const LaunchOptions& o) {
  if (o.argv.empty()) throw Error(GN_ERR_INVALID_ARGUMENT, "[launch] no program to run");
  if (o.nproc_per_node < 1 || o.nnodes < 1 || o.node_rank < 0 || o.node_rank >= o.nnodes)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[launch] --nproc-per-node " + std::to_string(o.nproc_per_node) +
                                             " --nnodes " + std::to_string(o.nnodes) + " --node-rank " +
                                             std::to_string(o.node_rank) + " (need >= 1, >= 1, 0..nnodes-1)");
  if (o.master_port == 0 && o.nnodes != 1)
    throw Error(GN_ERR_INVALID_ARGUMENT,
                "[launch] --master-port 0 (any free port) works on one host only; "
                "give every host the same port");
  const int port = o.master_port == 0 ? free_port() : o.master_port;
  const int world = o.nnodes * o.nproc_per_node;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::string threads = std::to_string(std::max(1u, cores / (unsigned)o.nproc_per_node));

  // Signals that would kill the launcher are recorded and forwarded instead.
  struct sigaction sa {
  }, old_int{}, old_term{}, old_hup{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  ::sigaction(SIGHUP, &sa, &old_hup);
  g_signal.store(0);

  std::vector<Child> children(o.nproc_per_node);
  std::vector<int> statuses(o.nproc_per_node, 0);
  std::fflush(stdout);
  std::fflush(stderr);
  for (int l = 0; l < o.nproc_per_node; ++l) {
    Child& c = children[l];
    c.local_rank = l;
    c.rank = o.node_rank * o.nproc_per_node + l;
    pid_t pid = ::fork();
    if (pid < 0) {
      std::fprintf(stderr, "genesis launch: fork failed for rank %d: %s\n", c.rank, std::strerror(errno));
      signal_all(children, SIGKILL);
      while (any_running(children)) reap(children, statuses, true);
      return 1;
    }
    if (pid == 0) {
      ::setenv("RANK", std::to_string(c.rank).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(l).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(o.nproc_per_node).c_str(), 1);
      ::setenv("GROUP_RANK", std::to_string(o.node_rank).c_str(), 1);
      ::setenv("MASTER_ADDR", o.master_addr.c_str(), 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::setenv("GENESIS_NUM_THREADS", threads.c_str(), 0);
      std::vector<char*> args;
      for (const std::string& a : o.argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      std::fprintf(stderr, "genesis launch: cannot run %s: %s\n", args[0], std::strerror(errno));
      ::_exit(127);
    }
    c.pid = pid;
    c.running = true;
  }

  int result = 0;
  int forwarded = 0;
  while (any_running(children)) {
    if (int sig = g_signal.exchange(0)) {
      std::fprintf(stderr, "genesis launch: got signal %d, forwarding it to %d ranks\n", sig, o.nproc_per_node);
      signal_all(children, sig);
      forwarded = sig;
    }
    int failed = reap(children, statuses, false);
    if (failed >= 0) {
      // A rank's death makes its peers fail too (their collectives lose it):
      // collect what fails within 200 ms and name the likeliest cause, a rank
      // killed by a signal before one that exited with an error.
      std::vector<bool> before_stop(children.size());
      const auto settle = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
      while (any_running(children) && std::chrono::steady_clock::now() < settle) {
        reap(children, statuses, false);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      for (size_t i = 0; i < children.size(); ++i) {
        const int st = statuses[i];
        before_stop[i] = !children[i].running && !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        if (before_stop[i] && WIFSIGNALED(st) && !WIFSIGNALED(statuses[failed])) failed = (int)i;
      }
      const Child& c = children[failed];
      result = exit_code(statuses[failed]);
      if (!forwarded) {
        std::fprintf(stderr, "genesis launch: rank %d (local rank %d, pid %d) %s; stopping the other ranks\n", c.rank,
                     c.local_rank, (int)c.pid, describe(statuses[failed]).c_str());
        for (size_t i = 0; i < children.size(); ++i)
          if (before_stop[i] && (int)i != failed)
            std::fprintf(stderr, "genesis launch: rank %d (local rank %d, pid %d) also %s\n", children[i].rank,
                         children[i].local_rank, (int)children[i].pid, describe(statuses[i]).c_str());
      }
      signal_all(children, SIGTERM);
      const auto deadline = std::chrono::steady_clock::now() + o.grace;
      while (any_running(children) && std::chrono::steady_clock::now() < deadline) {
        reap(children, statuses, false);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (any_running(children)) {
        std::fprintf(stderr, "genesis launch: ranks still running after %lld ms; killing them\n",
                     (long long)o.grace.count());
        signal_all(children, SIGKILL);
      }
      while (any_running(children)) reap(children, statuses, true);
      if (forwarded) result = 128 + forwarded;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGHUP, &old_hup, nullptr);
  return result;
}

}  // namespace genesis::distributed
