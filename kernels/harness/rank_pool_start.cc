// RankPool, starting the ranks: their environment, CPUs, shared segments and
// processes (rank_pool.h). The rounds of commands are in rank_pool.cc.
#include "kernels/harness/rank_pool.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string_view>
#include <thread>

#include "fmt/format.h"

extern char** environ;

namespace pkforge::kernels {
namespace {

using Result = v1::EvaluationResult;

// close_range(2)'s CLOSE_RANGE_CLOEXEC (Linux >= 5.11; older kernels: a loop).
constexpr unsigned kCloseRangeCloexec = 1u << 2;

constexpr uint64_t kFlagCount = 1024;
constexpr const char* kSideNames[2] = {"ref", "cand"};

// The rank processes' environment: an allowlist (the sandbox gives an exact
// environment; this is the second line of defence, and the only one when
// `pkforge-worker launch` runs outside a sandbox). Only what the toolchain,
// CUDA, NCCL, NVIDIA's tools and the ranks themselves read, and never a name
// that looks like a credential (red team: environ_secret_names read
// *_PASSWD, *_AUTH, *_CREDENTIALS, *_DSN and NV_*_API_KEY past a denylist).
bool RankMayInherit(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  auto starts = [&](const char* p) { return upper.rfind(p, 0) == 0; };
  // Nsight tools follow the process tree through these (a session token,
  // not an operator secret; seen on the H200 host).
  if (starts("NV_TPS_")) return true;
  for (const char* word : {"KEY", "TOKEN", "SECRET", "PASSW", "PASSPHRASE", "AUTH", "CRED", "DSN",
                           "COOKIE", "SESSION", "PRIVATE", "CERT"})
    if (upper.find(word) != std::string::npos) return false;
  for (const char* exact : {"PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "HOME", "USER", "LOGNAME",
                            "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM",
                            // the red-team battery's log directory (tests only)
                            "PKF_REDTEAM_DIR"})
    if (name == exact) return true;
  for (const char* prefix :
       {"LC_", "CUDA_", "NCCL_", "NV_", "NVTX_", "NSYS_", "CUBLAS", "OMP_", "PKFORGE_"})
    if (starts(prefix)) return true;
  return false;
}

// Reference rank r and candidate rank r share one CPU (PKFORGE_PIN_RANKS=0
// turns it off, for measurements). Candidate processes are stopped for most
// of an evaluation while reference ranks keep working; unpinned, a candidate
// wakes for its batch on a CPU that has idled (deep C-state, cold caches) and
// the judge's clock charges it the wake-up. Sharing the CPU its reference
// just worked on, both sides start alike. The pair's CPU is taken from this
// process's allowed set, leaving the first to the judge when there is more
// than one.
bool PinRanks() {
  static const bool on = [] {
    const char* v = std::getenv("PKFORGE_PIN_RANKS");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return on;
}

// What the rank processes inherit of this process's environment (see
// RankMayInherit), "NAME=value" each.
std::vector<std::string> RankEnvironment(bool cuda) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    if (!RankMayInherit(name)) continue;
    if (cuda && (name == "NCCL_NVLS_ENABLE" || name == "NCCL_RUNTIME_CONNECT")) continue;
    env.push_back(kv);
  }
  // NVLink SHARP (multicast) stays off on every rank: see the device notes.
  // NCCL connects at init, so its threads exist before the thread baseline.
  if (cuda) {
    env.push_back("NCCL_NVLS_ENABLE=0");
    env.push_back("NCCL_RUNTIME_CONNECT=0");
  }
  return env;
}

}  // namespace

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  std::vector<int> allowed;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) allowed.push_back(c);
  return allowed;
}

std::vector<int> RankCpus(const std::vector<int>& allowed, int world) {
  std::vector<int> cpus;
  if (allowed.empty()) return cpus;
  const size_t skip = allowed.size() > 1 ? 1 : 0;
  for (int r = 0; r < world; ++r)
    cpus.push_back(allowed[skip + static_cast<size_t>(r) % (allowed.size() - skip)]);
  return cpus;
}

std::vector<int> WatcherCpus(const std::vector<int>& allowed, int world) {
  std::vector<int> cpus(static_cast<size_t>(world), -1);
  const size_t skip = allowed.size() > 1 ? 1 : 0;
  for (int r = 0; r < world; ++r) {
    const size_t at = skip + static_cast<size_t>(world) + static_cast<size_t>(r);
    if (at < allowed.size()) cpus[static_cast<size_t>(r)] = allowed[at];
  }
  return cpus;
}

// The shared segments' descriptors, open in the judge until every rank has
// been started: [side][control, scratch], and data [side][rank].
struct RankPool::Segments {
  int fds[2][2];
  std::vector<int> data_fds[2];
};

bool RankPool::Spawn(const std::string& rank_exe, const Dims& dims, const DataLayout& layout,
                     uint64_t scratch_bytes) {
  const int self = getpid();
  oom_kills0_ = OomKillCount();
  std::vector<std::string> env = RankEnvironment(Cuda());
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);

  Segments seg;
  if (!CreateSegments(layout, scratch_bytes, &seg)) return false;
  const std::vector<int> allowed = AllowedCpus();
  const std::vector<int> cpus = PinRanks() ? RankCpus(allowed, o_.world_size) : std::vector<int>{};
  watcher_cpus_ = PinRanks() && Cuda() ? WatcherCpus(allowed, o_.world_size) : std::vector<int>{};
  procs_.resize(2 * o_.world_size);
  for (int i = 0; i < 2 * o_.world_size; ++i)
    if (!StartRank(i, self, rank_exe, dims, layout, scratch_bytes, seg, cpus, envp)) return false;
  for (auto& f : seg.fds)
    for (int fd : f) close(fd);
  for (auto& f : seg.data_fds)
    for (int fd : f) close(fd);
  return true;
}

bool RankPool::CreateSegments(const DataLayout& layout, uint64_t scratch_bytes, Segments* seg) {
  // Segments: [side][control, scratch], and data [side][rank].
  // Host: every rank has a data segment of its own (same layout, only its
  // own tensors ever touched, so the pages of the others are never
  // allocated): a candidate rank maps its own inputs and outputs and nothing
  // of its peers', which it reaches only through the symmetric scratch, as
  // on a GPU (red team: control_direct_peer_read read every peer's inputs of
  // a whole batch from a shared segment and needed no synchronization).
  // cuda: inputs and outputs live in device memory; the data segment is only
  // the mailbox of IPC handles (shm.h), one per side.
  const uint64_t pad_bytes = kFlagCount * sizeof(uint32_t);
  auto& fds = seg->fds;
  auto& data_fds = seg->data_fds;
  for (int s = 0; s < 2; ++s) {
    auto ctl = CreateSegment(fmt::format("pkf-{}-control", kSideNames[s]), sizeof(SideControl));
    auto scr = CreateSegment(fmt::format("pkf-{}-scratch", kSideNames[s]),
                             (scratch_bytes + pad_bytes) * o_.world_size);
    if (!ctl.ok() || !scr.ok()) {
      out_->End(Result::SETUP_ERROR, "creating shared memory failed");
      return false;
    }
    fds[s][0] = *ctl;
    fds[s][1] = *scr;
    for (int r = 0; r < (Cuda() ? 1 : o_.world_size); ++r) {
      auto dat =
          Cuda()
              ? CreateSegment(fmt::format("pkf-{}-data", kSideNames[s]),
                              CudaMailboxBytes(o_.world_size, CudaDripStageBytes(layout)))
              : CreateSegment(fmt::format("pkf-{}-data-{}", kSideNames[s], r), layout.total_bytes);
      if (!dat.ok()) {
        out_->End(Result::SETUP_ERROR, "creating shared memory failed");
        return false;
      }
      data_fds[s].push_back(*dat);
    }
    auto map = MapSegment(*ctl, sizeof(SideControl));
    if (!map.ok()) {
      out_->End(Result::SETUP_ERROR, "mapping control block failed");
      return false;
    }
    controls_[s] = static_cast<SideControl*>(*map);
    controls_[s]->world = static_cast<uint32_t>(o_.world_size);
  }
  return true;
}

bool RankPool::StartRank(int i, int self, const std::string& rank_exe, const Dims& dims,
                         const DataLayout& layout, uint64_t scratch_bytes, const Segments& seg,
                         const std::vector<int>& cpus, const std::vector<char*>& envp) {
  const auto& fds = seg.fds;
  const auto& data_fds = seg.data_fds;
  RankProc& p = procs_[i];
  p.ref = i < o_.world_size;
  p.rank = i % o_.world_size;
  const int side = p.ref ? 0 : 1;
  int cmd[2], rep[2];
  if (pipe2(cmd, O_CLOEXEC) != 0 || pipe2(rep, O_CLOEXEC) != 0) {
    out_->End(Result::SETUP_ERROR, "pipe failed");
    return false;
  }
  auto high = [](int fd) {
    int h = fcntl(fd, F_DUPFD_CLOEXEC, 100);
    close(fd);
    return h;
  };
  for (int* f : {&cmd[0], &cmd[1], &rep[0], &rep[1]}) *f = high(*f);
  auto err = CreateSegment(fmt::format("pkf-{}-stderr-{}", kSideNames[side], p.rank), 0);
  if (!err.ok()) {
    out_->End(Result::SETUP_ERROR, "memfd failed");
    return false;
  }
  p.err_fd = *err;
  std::vector<std::string> args = {"pkforge-worker",  "rank",
                                   "--role",          p.ref ? "ref" : "cand",
                                   "--rank",          std::to_string(p.rank),
                                   "--world-size",    std::to_string(o_.world_size),
                                   "--problem",       o_.problem,
                                   "--dtype",         o_.dtype,
                                   "--dims",          DimsToString(dims),
                                   "--slots",         std::to_string(layout.slots),
                                   "--scratch-bytes", std::to_string(scratch_bytes),
                                   "--flag-count",    std::to_string(kFlagCount)};
  if (p.ref && static_cast<size_t>(p.rank) < watcher_cpus_.size() &&
      watcher_cpus_[static_cast<size_t>(p.rank)] >= 0) {
    args.push_back("--watcher-cpu");
    args.push_back(std::to_string(watcher_cpus_[static_cast<size_t>(p.rank)]));
  }
  if (!p.ref) {
    args.push_back("--candidate");
    args.push_back(o_.candidate);
    for (const std::string& w : o_.candidate_writable) {
      args.push_back("--writable");
      args.push_back(w);
    }
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int pgid = pgid_;
  const int own_data = data_fds[side][Cuda() ? 0 : static_cast<size_t>(p.rank)];
  const int peer_data = data_fds[1][Cuda() ? 0 : static_cast<size_t>(p.rank)];
  cpu_set_t pin;
  CPU_ZERO(&pin);
  const bool pinned = !cpus.empty();
  if (pinned) CPU_SET(cpus[static_cast<size_t>(p.rank)], &pin);
  const int pid = fork();
  if (pid < 0) {
    out_->End(Result::SETUP_ERROR, "fork failed");
    return false;
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only until execve.
    setpgid(0, pgid);
    // A candidate rank gives up the caller's controlling terminal (red team
    // round 16 r16_tty_inject typed a command into it, which the caller's
    // shell ran after the judge exited). TIOCNOTTY, not setsid(): a session
    // of its own is a scheduling autogroup of its own, which gave each
    // candidate rank the weight of the judge and every reference rank
    // together (the drip batches' hand-offs then read an honest candidate
    // slow: control_flag_epoch CHEAT_DETECTED batch_drip in the full run).
    if (side == 1) {
      const int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
      if (tty >= 0) {
        ioctl(tty, TIOCNOTTY);
        close(tty);
      }
    }
    if (pinned) sched_setaffinity(0, sizeof pin, &pin);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != self) _exit(120);
    signal(SIGPIPE, SIG_DFL);
    dup2(cmd[0], kFdCmd);
    dup2(rep[1], kFdReply);
    dup2(fds[side][0], kFdControl);
    dup2(fds[side][1], kFdScratch);
    dup2(own_data, kFdData);
    // Only reference ranks get the candidate side's data (to fill inputs and
    // read outputs); nothing of the reference side reaches a candidate rank.
    if (side == 0)
      dup2(peer_data, kFdPeerData);
    else
      close(kFdPeerData);  // whatever the caller may have left there
    dup2(p.err_fd, 1);
    dup2(p.err_fd, 2);
    // Nothing else crosses the exec: descriptors the worker's caller left
    // open without close-on-exec (a daemon's sockets, a shell's files) and
    // the caller's stdin.
    const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0) dup2(null_fd, 0);
    if (syscall(SYS_close_range, kFdPeerData + 1, ~0U, kCloseRangeCloexec) != 0)
      for (int fd = kFdPeerData + 1; fd < 65536; ++fd) fcntl(fd, F_SETFD, FD_CLOEXEC);
    execve(rank_exe.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  if (pgid_ == 0) pgid_ = pid;
  setpgid(pid, pgid_);  // also from the parent: no window where a kill would miss it
  p.pid = pid;
  close(cmd[0]);
  close(rep[1]);
  p.cmd_fd = cmd[1];
  // Send never blocks on a rank (a candidate can fill its own pipe).
  fcntl(p.cmd_fd, F_SETFL, fcntl(p.cmd_fd, F_GETFL) | O_NONBLOCK);
  p.reply_fd = rep[0];
  (p.ref ? refs_ : cands_).push_back(&p);
  return true;
}

}  // namespace pkforge::kernels
