// Test-only helpers shared by the red-team candidates (kernels/testdata/redteam/README.md).
//
// A red-team candidate is an adversary that has read the judge's source. Each
// one records every process it starts ("<pid> <starttime>" lines in
// $PKF_REDTEAM_DIR/pids, appended by the process itself or its parent) so the
// test can prove that nothing it started outlives the evaluation, and logs
// what its attack achieved ($PKF_REDTEAM_DIR/log) for the README's table.
//
// Gated attacks: an attack whose defence is prevention (EPERM, a no-op) makes
// the candidate write its outputs only when the attack observably worked, and
// all ranks agree on that through their own signal pads. Blocked -> outputs
// stay poison -> WRONG_OUTPUT; worked -> correct outputs -> OK (the test
// never accepts OK for an attack).
#pragma once

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "kernels/testdata/wrap_allreduce.inc"

// kernels/harness/protocol.h Reply, as an attacker copies it (the attacks
// that write forged replies on the rank's reply or command channel).
struct FakeReply {
  uint32_t magic, op;
  int32_t rc;
  uint32_t n_checks;
  int64_t t0_ns, t1_ns;
  uint64_t value, input_diff;
  char checks[4][64];
  char message[256];
};
static_assert(sizeof(FakeReply) == 560, "layout of Reply");

static inline int64_t rt_now_ns() {
  struct timespec ts;
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);  // not through libc: some attacks patch it
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline std::string rt_read(const std::string& path) {
  std::string s;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0 && s.size() < (1u << 20)) s.append(buf, (size_t)n);
  close(fd);
  return s;
}

static inline void rt_append(const char* file, const char* text) {
  const char* dir = getenv("PKF_REDTEAM_DIR");
  if (dir == NULL) return;
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t w = write(fd, text, strlen(text));
  (void)w;
  close(fd);
}

static inline void rt_log(const char* fmt, ...) {
  char msg[900], line[1000];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(line, sizeof line, "[%d] %s\n", (int)getpid(), msg);
  rt_append("log", line);
}

// Field `n` (1-based, as in proc(5)) of /proc/<pid>/stat; "" when gone.
static inline std::string rt_stat_field(int pid, int n) {
  const std::string s = rt_read("/proc/" + std::to_string(pid) + "/stat");
  const size_t close_paren = s.rfind(')');
  if (close_paren == std::string::npos) return "";
  int field = 2;
  size_t i = close_paren + 1;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    size_t j = s.find(' ', i);
    if (j == std::string::npos) j = s.size();
    ++field;
    if (field == n) return s.substr(i, j - i);
    i = j;
  }
  return "";
}

static inline void rt_record_pid(int pid) {
  char line[128];
  snprintf(line, sizeof line, "%d %s\n", pid, rt_stat_field(pid, 22).c_str());
  rt_append("pids", line);
}

// The other children of our parent (the judge): reference ranks and the
// other candidate ranks.
static inline std::vector<int> rt_siblings() {
  std::vector<int> out;
  const int judge = getppid(), self = getpid();
  DIR* d = opendir("/proc");
  if (d == NULL) return out;
  while (struct dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const int pid = atoi(e->d_name);
    if (pid == self) continue;
    if (atoi(rt_stat_field(pid, 4).c_str()) == judge) out.push_back(pid);
  }
  closedir(d);
  return out;
}

// Reference ranks: siblings whose command line says "--role ref" (an
// unreadable command line counts as a reference: the attacker aims wide).
static inline std::vector<int> rt_refs() {
  std::vector<int> out;
  for (int pid : rt_siblings()) {
    std::string c = rt_read("/proc/" + std::to_string(pid) + "/cmdline");
    std::replace(c.begin(), c.end(), '\0', ' ');
    if (c.empty() || c.find("--role ref ") != std::string::npos) out.push_back(pid);
  }
  return out;
}

// Which calls are timed: the attacker knows the protocol (README): with
// --trials 2 the first three calls are the correctness trials and the
// determinism re-run; every later call belongs to a timed batch (warm-up or
// measured). rt_batch_call() must be called once at the start of every
// pkf_run; rt_batch_first() then says whether this call starts a batch (a
// gap of the judge's own work before it; calls of a batch come back to back).
static const int kRtTrialCalls = 3;
static int rt_calls = 0;
static int64_t rt_last_return_ns = 0;
static int64_t rt_gap_ns = INT64_MAX;
static inline bool rt_batch_call() {
  rt_gap_ns = rt_last_return_ns == 0 ? INT64_MAX : rt_now_ns() - rt_last_return_ns;
  return ++rt_calls > kRtTrialCalls;
}
static inline bool rt_batch_first() { return rt_gap_ns > 1500000; }
static inline int rt_return(int rc) {
  rt_last_return_ns = rt_now_ns();
  return rc;
}

// The mapping (start, size) that contains p, from /proc/self/maps.
static inline bool rt_mapping_of(const void* p, char** base, size_t* size) {
  FILE* f = fopen("/proc/self/maps", "r");
  char line[512];
  bool found = false;
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)p >= lo && (uintptr_t)p < hi) {
      *base = (char*)lo;
      *size = hi - lo;
      found = true;
    }
  }
  if (f != NULL) fclose(f);
  return found;
}

// Gated output: every rank publishes whether its attack worked in the last
// word of its signal pad; outputs are written only when all ranks' worked.
static inline int rt_gated_run(pkf_context* ctx, bool worked, const pkf_tensor* in, int32_t n_in,
                               pkf_tensor* out, int32_t n_out, void* stream) {
  volatile uint32_t* mine = &ctx->peer_flags[ctx->rank][ctx->flag_count - 1];
  *mine = worked ? 2u : 1u;
  if (ctx->barrier(ctx) != 0) return 5;
  bool all = true;
  for (int32_t j = 0; j < ctx->world_size; ++j)
    all = all && ((volatile uint32_t*)ctx->peer_flags[j])[ctx->flag_count - 1] == 2u;
  if (!all) return 0;  // blocked: outputs stay poison
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

// Fork that records the child (from the child itself, so the record exists
// before anything else happens in it).
static inline int rt_fork() {
  const int pid = fork();
  if (pid == 0) rt_record_pid(getpid());
  return pid;
}

// In pkf_setup (round 8 seccomp_neuter_forkban): a filter on every thread
// (TSYNC) that answers seccomp(2) and prctl(PR_SET_SECCOMP) with "success"
// (SECCOMP_RET_ERRNO | 0), so a filter the harness loads later from inside
// this process installs nothing. False (errno set) when refused.
static inline bool rt_neuter_seccomp() {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_seccomp, 3, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prctl, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_SECCOMP, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) == 0;
}

// A pkf_run that forks a child which exits at once (reaped in the call:
// nothing outlives it) and writes outputs only when the fork worked on
// every rank (the no-new-process attacks of round 8).
static inline int rt_fork_gated_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in,
                                    pkf_tensor* out, int32_t n_out, void* stream) {
  static int64_t calls = 0;
  const int pid = fork();
  if (pid == 0) _exit(0);
  if (pid > 0) waitpid(pid, NULL, 0);
  if (++calls <= 2)
    rt_log("rank %d call %lld: fork %s", ctx->rank, (long long)calls,
           pid > 0 ? "worked" : strerror(errno));
  return rt_gated_run(ctx, pid > 0, in, n_in, out, n_out, stream);
}

// Freeze escape detector: a thread (or process, through shared memory)
// beats every ~20 us while it runs (rt_escaped_freeze reads the beats).
struct rt_beats {
  std::atomic<uint64_t> head;
  int64_t t[8192];
};
static inline void rt_beat(rt_beats* b) {
  const int64_t now = rt_now_ns();
  const uint64_t h = b->head.load(std::memory_order_relaxed);
  if (h > 0 && now - b->t[(h - 1) % 8192] < 20000) return;
  b->t[h % 8192] = now;
  b->head.store(h + 1, std::memory_order_release);
}
static inline rt_beats* rt_shared_beats() {
  void* p = mmap(NULL, sizeof(rt_beats), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : (rt_beats*)p;
}
// Decided at the first call: did the beating thread/process keep running
// between the end of pkf_setup and this call (while the judge says every
// candidate process is stopped)? A process that was frozen shows one long
// hole in its beats (the frozen window); one that escaped shows none. The
// thread may legitimately run at both edges (before the judge stops it, after
// it continues it, and, competing with the rank's main thread, for several ms
// there), so only the longest hole counts: worked when no hole is longer than
// 3 ms (the frozen window between setup and the first call holds the
// reference's setup and first trial: 8-16 ms measured on 2 cores).
static int64_t rt_setup_end_ns = 0;
static inline bool rt_escaped_freeze(const rt_beats* b) {
  const int64_t until = rt_now_ns() - 500000;
  const int64_t since = std::max<int64_t>(rt_setup_end_ns + 500000, until - 80000000);
  if (b == NULL || until - since < 5000000) return false;
  std::vector<int64_t> v = {since, until};
  const uint64_t h = b->head.load(std::memory_order_acquire);
  for (uint64_t k = h > 8192 ? h - 8192 : 0; k < h; ++k) {
    const int64_t x = b->t[k % 8192];
    if (x > since && x < until) v.push_back(x);
  }
  std::sort(v.begin(), v.end());
  int64_t hole = 0;
  for (size_t i = 1; i < v.size(); ++i) hole = std::max(hole, v[i] - v[i - 1]);
  rt_log("longest hole in the beats %.2f ms of a %.2f ms window between setup and the first call",
         hole / 1e6, (until - since) / 1e6);
  return hole < 3000000;
}

// A gated candidate: `attack()` runs once, at the first call; outputs are
// written only when it returned true on every rank.
#define RT_GATED_CANDIDATE(attack)                                                              \
  extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out, \
                         int32_t n_out, void* stream) {                                         \
    static int worked = -1;                                                                     \
    if (worked < 0) {                                                                           \
      worked = attack(ctx) ? 1 : 0;                                                             \
      rt_log("%s: attack %s", __FILE__, worked ? "WORKED" : "blocked");                         \
    }                                                                                           \
    return rt_gated_run(ctx, worked == 1, in, n_in, out, n_out, stream);                        \
  }
