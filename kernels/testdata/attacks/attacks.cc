// The lead's attack battery (kernels/harness/attack_battery_test.cc): one host candidate
// for problem allreduce per attack, selected at compile time with
// -DATTACK_<NAME>. Each was written by reading the judge's source and
// docs/threat-model.md. Conventions:
//   - An attack on a trusted process that *succeeds* leaves a marker file in
//     $PKF_REDTEAM_DIR (the test fails on any marker) and then computes the
//     right answer, so a judge that let it through would say OK; when the
//     exploit is refused the candidate writes a wrong answer, so the right
//     verdict is WRONG_OUTPUT.
//   - Every process a candidate starts appends its pid to
//     $PKF_REDTEAM_DIR/pids; the test checks none is alive afterwards.
//   - The expected verdict of each attack is in the test's table.
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "../wrap_allreduce.inc"

namespace {

std::string Dir() {
  const char* d = getenv("PKF_REDTEAM_DIR");
  return d != nullptr ? d : "/tmp";
}

void Marker(const char* what) {
  const std::string path = Dir() + "/marker";
  FILE* f = fopen(path.c_str(), "a");
  if (f != nullptr) {
    fprintf(f, "%s (pid %d)\n", what, getpid());
    fclose(f);
  }
}

void RecordPid(int pid) {
  const std::string path = Dir() + "/pids";
  FILE* f = fopen(path.c_str(), "a");
  if (f != nullptr) {
    fprintf(f, "%d\n", pid);
    fclose(f);
  }
}

std::string ReadAll(const std::string& path) {
  std::string s;
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return s;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  close(fd);
  return s;
}

// Pids of the trusted reference ranks: their command line says so (a
// command line is readable by anyone).
std::vector<int> ReferencePids() {
  std::vector<int> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const int pid = atoi(e->d_name);
    if (pid <= 0) continue;
    std::string cmd = ReadAll("/proc/" + std::to_string(pid) + "/cmdline");
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find("rank --role ref") != std::string::npos) out.push_back(pid);
  }
  closedir(d);
  return out;
}

int Wrong(pkf_tensor* out) {
  float* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < pkf_numel(&out[0]); ++i) y[i] = 1234.5f;
  return 0;
}

// Runs the exploit once per process (in setup or at the first call) and
// remembers whether it worked.
std::atomic<int> g_worked{-1};

int Finish(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out, int32_t n_out,
           void* stream, bool worked) {
  if (worked) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // keep the ranks in step
  return Wrong(out);
}

bool TryOpenAll(const std::vector<int>& pids, const char* what, int flags) {
  bool any = false;
  for (int pid : pids) {
    const std::string base = "/proc/" + std::to_string(pid) + "/" + what;
    if (std::string(what) == "fd" || std::string(what) == "map_files") {
      DIR* d = opendir(base.c_str());
      if (d == nullptr) continue;
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        const int fd = open((base + "/" + e->d_name).c_str(), flags);
        if (fd >= 0) {
          any = true;
          close(fd);
        }
      }
      closedir(d);
    } else {
      const int fd = open(base.c_str(), flags);
      if (fd >= 0) {
        any = true;
        close(fd);
      }
    }
  }
  return any;
}

// ---------------------------------------------------------------- exploits

bool Exploit() {
  const std::vector<int> refs = ReferencePids();
  const int judge = getppid();
  (void)refs;
  (void)judge;
#if defined(ATTACK_proc_fd_ref)
  return TryOpenAll(refs, "fd", O_RDWR);
#elif defined(ATTACK_proc_environ_ref)
  return TryOpenAll(refs, "environ", O_RDONLY);
#elif defined(ATTACK_proc_mem_ref)
  return TryOpenAll(refs, "mem", O_RDONLY);
#elif defined(ATTACK_proc_maps_ref)
  return TryOpenAll(refs, "maps", O_RDONLY);
#elif defined(ATTACK_proc_map_files_ref)
  return TryOpenAll(refs, "map_files", O_RDONLY);
#elif defined(ATTACK_proc_fd_judge_stdout)
  const int fd = open(("/proc/" + std::to_string(judge) + "/fd/1").c_str(), O_WRONLY);
  if (fd < 0) return false;
  const char fake[] = "{\"status\":\"OK\",\"speedup\":100}\n";
  (void)!write(fd, fake, sizeof fake - 1);
  close(fd);
  return true;
#elif defined(ATTACK_proc_environ_judge)
  return TryOpenAll({judge}, "environ", O_RDONLY);
#elif defined(ATTACK_kill_ref_sigstop)
  bool any = false;
  for (int p : refs) any = kill(p, SIGSTOP) == 0 || any;
  return any;
#elif defined(ATTACK_kill_ref_sigkill)
  bool any = false;
  for (int p : refs) any = kill(p, SIGKILL) == 0 || any;
  return any;
#elif defined(ATTACK_kill_judge)
  return kill(judge, SIGSTOP) == 0;
#elif defined(ATTACK_kill_process_group)
  return kill(0, SIGCONT) == 0;
#elif defined(ATTACK_kill_everyone)
  return kill(-1, SIGCONT) == 0;
#elif defined(ATTACK_tgkill_ref)
  bool any = false;
  for (int p : refs) any = syscall(SYS_tgkill, p, p, SIGSTOP) == 0 || any;
  return any;
#elif defined(ATTACK_sigqueue_ref)
  bool any = false;
  union sigval v{};
  for (int p : refs) any = sigqueue(p, SIGSTOP, v) == 0 || any;
  return any;
#elif defined(ATTACK_pidfd_signal_ref)
  bool any = false;
  for (int p : refs) {
    const int pfd = static_cast<int>(syscall(SYS_pidfd_open, p, 0));
    if (pfd >= 0 && syscall(SYS_pidfd_send_signal, pfd, SIGSTOP, nullptr, 0) == 0) any = true;
    if (pfd >= 0) close(pfd);
  }
  return any;
#elif defined(ATTACK_sigio_owner_ref)
  int p[2];
  if (refs.empty() || pipe(p) != 0) return false;
  return fcntl(p[0], F_SETOWN, refs[0]) == 0;
#elif defined(ATTACK_setpriority_ref)
  bool any = false;
  for (int p : refs) {
    setpriority(PRIO_PROCESS, p, 19);
    if (getpriority(PRIO_PROCESS, p) == 19) any = true;
  }
  return any;
#elif defined(ATTACK_affinity_ref)
  // Move each reference rank onto a CPU it is not on now, and look.
  bool any = false;
  for (int p : refs) {
    cpu_set_t before, target, now;
    if (sched_getaffinity(p, sizeof before, &before) != 0) continue;
    CPU_ZERO(&target);
    for (int c = 0; c < CPU_SETSIZE && CPU_COUNT(&target) == 0; ++c)
      if (!CPU_ISSET(c, &before) && c < sysconf(_SC_NPROCESSORS_ONLN)) CPU_SET(c, &target);
    if (CPU_COUNT(&target) == 0) continue;  // it may run everywhere: nothing to take away
    sched_setaffinity(p, sizeof target, &target);
    if (sched_getaffinity(p, sizeof now, &now) == 0 && CPU_EQUAL(&now, &target)) any = true;
  }
  return any;
#elif defined(ATTACK_prlimit_ref)
  bool any = false;
  struct rlimit cpu = {1, 1};
  for (int p : refs) any = prlimit(p, RLIMIT_CPU, &cpu, nullptr) == 0 || any;
  return any;
#elif defined(ATTACK_sched_fifo_ref)
  bool any = false;
  struct sched_param sp{};
  for (int p : refs) {
    sched_setscheduler(p, SCHED_IDLE, &sp);
    if (sched_getscheduler(p) == SCHED_IDLE) any = true;
  }
  return any;
#elif defined(ATTACK_ptrace_ref)
  bool any = false;
  for (int p : refs) any = ptrace(PTRACE_ATTACH, p, nullptr, nullptr) == 0 || any;
  return any;
#elif defined(ATTACK_process_vm_readv_ref)
  bool any = false;
  char buf[16];
  for (int p : refs) {
    struct iovec local = {buf, sizeof buf}, remote = {reinterpret_cast<void*>(0x400000), sizeof buf};
    if (process_vm_readv(p, &local, 1, &remote, 1, 0) > 0) any = true;
  }
  return any;
#elif defined(ATTACK_new_user_namespace)
  return unshare(CLONE_NEWUSER) == 0;
#elif defined(ATTACK_capabilities_kept)
  const std::string status = ReadAll("/proc/self/status");
  const size_t at = status.find("CapEff:");
  return at != std::string::npos && strtoull(status.c_str() + at + 7, nullptr, 16) != 0;
#else
  return false;
#endif
}

}  // namespace

// ------------------------------------------------------------ the candidates

#if defined(ATTACK_proc_fd_ref) || defined(ATTACK_proc_environ_ref) ||                     \
    defined(ATTACK_proc_mem_ref) || defined(ATTACK_proc_maps_ref) ||                       \
    defined(ATTACK_proc_map_files_ref) || defined(ATTACK_proc_fd_judge_stdout) ||          \
    defined(ATTACK_proc_environ_judge) || defined(ATTACK_kill_ref_sigstop) ||              \
    defined(ATTACK_kill_ref_sigkill) || defined(ATTACK_kill_judge) ||                      \
    defined(ATTACK_kill_process_group) || defined(ATTACK_kill_everyone) ||                 \
    defined(ATTACK_tgkill_ref) || defined(ATTACK_sigqueue_ref) ||                          \
    defined(ATTACK_pidfd_signal_ref) || defined(ATTACK_sigio_owner_ref) ||                 \
    defined(ATTACK_setpriority_ref) || defined(ATTACK_affinity_ref) ||                     \
    defined(ATTACK_prlimit_ref) || defined(ATTACK_sched_fifo_ref) ||                       \
    defined(ATTACK_ptrace_ref) || defined(ATTACK_process_vm_readv_ref) ||                  \
    defined(ATTACK_new_user_namespace) || defined(ATTACK_capabilities_kept)
#define EXPLOIT_ATTACK 1
#endif

#ifdef EXPLOIT_ATTACK
// The exploit runs at the first call (the reference ranks exist and have
// run by then), on rank 0.
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  int w = g_worked.load();
  if (w < 0) {
    w = (ctx->rank == 0 && Exploit()) ? 1 : 0;
    if (w == 1) Marker(__FILE__ ": exploit worked");
    g_worked = w;
  }
  return Finish(ctx, in, n_in, out, n_out, stream, w == 1);
}

#elif defined(ATTACK_fake_result_on_stdout)
// Prints a forged "OK, 100x" result wherever it can write, then answers
// wrong: the verdict must still be the judge's WRONG_OUTPUT.
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const char fake[] = "{\"status\":\"OK\",\"message\":\"forged\",\"speedup\":100}\n";
  for (int fd : {1, 2}) (void)!write(fd, fake, sizeof fake - 1);
  pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  return Wrong(out);
}

#elif defined(ATTACK_flood_output)
// 16 MiB on stdout and stderr (past every capture cap), then wrong.
extern "C" int pkf_setup(pkf_context*) {
  std::string block(1 << 20, 'x');
  for (int i = 0; i < 8; ++i)
    for (int fd : {1, 2}) (void)!write(fd, block.data(), block.size());
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  return Wrong(out);
}

#elif defined(ATTACK_garbage_on_reply_channel)
// Writes bytes of its own on the rank's reply pipe (fd 4) during a call.
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (++calls == 3) {
    char junk[64];
    memset(junk, 0x5a, sizeof junk);
    (void)!write(4, junk, sizeof junk);
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_forged_reply_then_work)
// Writes a complete, well-formed-looking early reply (magic, op) on its reply
// pipe and keeps working: the judge's clock must not stop there.
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (++calls > 8) {
    char reply[1024] = {0};
    const uint32_t magic = 0x504b4631, op = 11;
    memcpy(reply, &magic, 4);
    memcpy(reply + 4, &op, 4);
    (void)!write(4, reply, 512);
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_patch_clock_gettime)
// Interposes clock_gettime for the rank (it cannot: the .so is loaded
// RTLD_LOCAL after the harness bound its symbols) and reports 1 ns calls.
extern "C" int clock_gettime(clockid_t, struct timespec* ts) {
  static long long fake = 0;
  ts->tv_sec = 0;
  ts->tv_nsec = ++fake;
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_cpu_hog_threads)
// Two threads from pkf_setup spin forever (starving whatever else runs on
// the CPUs, the reference included, unless frozen while it is timed).
static std::atomic<bool> g_stop{false};
static std::vector<std::thread> g_hogs;
extern "C" int pkf_setup(pkf_context*) {
  for (int i = 0; i < 2; ++i)
    g_hogs.emplace_back([] {
      volatile double x = 1;
      while (!g_stop) x = x * 1.0000001;
    });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  g_stop = true;
  for (auto& t : g_hogs) t.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_cpu_hog_process)
// A spinning child process started in pkf_setup.
extern "C" int pkf_setup(pkf_context*) {
  const pid_t p = fork();
  if (p == 0) {
    for (;;) {
    }
  }
  RecordPid(p);
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_precompute_helper_thread)
// A helper thread from pkf_setup recomputes, over and over, the outputs of
// every buffer set it has seen, from whatever inputs they hold now: when the
// judge refreshes a set's inputs between calls, the helper would have the
// outputs ready before the call (if it could run then), and pkf_run returns
// at once when the outputs are no longer poison.
struct Seen {
  pkf_tensor in, out;
};
static std::vector<Seen> g_seen;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static std::atomic<bool> g_quit{false};
static std::thread g_helper;
static pkf_context* g_ctx = nullptr;
static bool Poisoned(const pkf_tensor& t) {
  const float v = static_cast<const float*>(t.data)[0];
  return std::isnan(v);
}
extern "C" int pkf_setup(pkf_context* ctx) {
  g_ctx = ctx;
  g_helper = std::thread([] {
    while (!g_quit) {
      pthread_mutex_lock(&g_mu);
      std::vector<Seen> seen = g_seen;
      pthread_mutex_unlock(&g_mu);
      // World size 1 only could do this without peers; with peers the sum
      // needs their inputs: read them through the shared host segment is
      // not possible here, so it works on its own rank's share and relies
      // on the call to finish. What matters: it runs outside the calls.
      for (auto& s : seen)
        if (Poisoned(s.out)) {
          float* y = static_cast<float*>(s.out.data);
          const float* x = static_cast<const float*>(s.in.data);
          for (int64_t i = 0; i < pkf_numel(&s.out); ++i) y[i] = x[i] * g_ctx->world_size;
        }
    }
  });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  g_quit = true;
  g_helper.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  pthread_mutex_lock(&g_mu);
  bool known = false;
  for (auto& s : g_seen) known = known || s.out.data == out[0].data;
  if (!known) g_seen.push_back(Seen{in[0], out[0]});
  pthread_mutex_unlock(&g_mu);
  if (!Poisoned(out[0])) return 0;  // "already computed"
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_return_early_thread_finishes)
// A new thread per call finishes the outputs 2 ms after pkf_run returned.
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const size_t bytes = static_cast<size_t>(pkf_numel(&out[0]) * 4);
  std::vector<char> tmp(bytes);
  pkf_tensor t = out[0];
  t.data = tmp.data();
  pkf_run_correct(ctx, in, n_in, &t, n_out, stream);
  void* dst = out[0].data;
  std::thread([dst, tmp] {
    usleep(2000);
    memcpy(dst, tmp.data(), tmp.size());
  }).detach();
  return 0;
}

#elif defined(ATTACK_return_early_setup_thread_finishes)
// A long-lived thread from pkf_setup (so no new thread appears) finishes the
// outputs after pkf_run returned: frozen with the rest, it cannot.
static std::atomic<void*> g_dst{nullptr};
static std::vector<char> g_buf;
static std::atomic<bool> g_go{false}, g_end{false};
static std::thread g_finisher;
extern "C" int pkf_setup(pkf_context*) {
  g_finisher = std::thread([] {
    while (!g_end) {
      if (g_go.exchange(false)) {
        usleep(200);
        memcpy(g_dst.load(), g_buf.data(), g_buf.size());
      }
    }
  });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  g_end = true;
  g_finisher.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (++calls <= 6) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  g_buf.resize(static_cast<size_t>(pkf_numel(&out[0]) * 4));
  pkf_tensor t = out[0];
  t.data = g_buf.data();
  pkf_run_correct(ctx, in, n_in, &t, n_out, stream);
  g_dst = out[0].data;
  g_go = true;
  return 0;
}

#elif defined(ATTACK_timer_sigcont_self)
// A POSIX timer sends SIGCONT to this process every 100 us, and a thread
// from pkf_setup works whenever the process runs: it would run while frozen.
static std::atomic<bool> g_halt{false};
static std::thread g_worker;
extern "C" int pkf_setup(pkf_context*) {
  sigevent ev{};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = SIGCONT;
  timer_t t;
  if (timer_create(CLOCK_MONOTONIC, &ev, &t) != 0) return 0;
  itimerspec its{{0, 100000}, {0, 100000}};
  timer_settime(t, 0, &its, nullptr);
  g_worker = std::thread([] {
    volatile double x = 1;
    while (!g_halt) x = x * 1.0000001;
  });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  g_halt = true;
  if (g_worker.joinable()) g_worker.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_child_continues_parent)
// A child process keeps sending SIGCONT to its parent (the rank).
extern "C" int pkf_setup(pkf_context*) {
  const pid_t parent = getpid();
  const pid_t c = fork();
  if (c == 0) {
    for (;;) {
      kill(parent, SIGCONT);
      usleep(50);
    }
  }
  RecordPid(c);
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_fork_per_call_left_running)
// Starts a process at the 5th call that lives on (sleeps).
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (++calls == 5) {
    const pid_t c = fork();
    if (c == 0) {
      for (;;) pause();
    }
    RecordPid(c);
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_deep_setsid_chain)
// A 25-level chain of setsid + double fork from pkf_setup; the last one
// sleeps (the old reaper killed one level per round for a fixed number of
// rounds).
extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank != 0) return 0;
  const pid_t first = fork();
  if (first == 0) {
    for (int depth = 0; depth < 25; ++depth) {
      const pid_t c = fork();
      if (c != 0) _exit(0);
      setsid();
      RecordPid(getpid());
    }
    for (;;) pause();
  }
  RecordPid(first);
  waitpid(first, nullptr, 0);
  usleep(20000);
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_fork_bomb_bounded)
// 48 sleeping processes (a tree) from the first call of rank 0.
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static bool done = false;
  if (!done && ctx->rank == 0) {
    done = true;
    for (int i = 0; i < 48; ++i) {
      const pid_t c = fork();
      if (c == 0) {
        for (;;) pause();
      }
      RecordPid(c);
    }
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_daemon_at_teardown)
// Honest throughout, then leaves a daemon behind in pkf_teardown.
extern "C" void pkf_teardown(pkf_context* ctx) {
  if (ctx->rank != 0) return;
  const pid_t c = fork();
  if (c == 0) {
    setsid();
    if (fork() != 0) _exit(0);
    RecordPid(getpid());
    signal(SIGTERM, SIG_IGN);
    for (;;) pause();
  }
  waitpid(c, nullptr, 0);
  usleep(20000);
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_thread_left_running)
// A thread started in pkf_run (after setup) that never ends.
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static bool started = false;
  if (!started) {
    started = true;
    std::thread([] {
      for (;;) pause();
    }).detach();
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_exit_in_call)
// Rank 1 exits in the middle of the evaluation: the candidate's crash.
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (ctx->rank == 1 && ++calls == 4) _exit(0);
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_corrupt_own_control_block)
// Scribbles over its own side's control block (fd 5: barrier counters), then
// waits in the barrier: its own ranks hang, the reference is unaffected.
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (ctx->rank == 0 && ++calls == 3) {
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, 5, 0);
    if (p != MAP_FAILED) memset(p, 0x7f, 4096);
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_stall_in_barrier)
// Rank 0 never calls the barrier after the warm-up: a deadlock of its own.
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (ctx->rank == 0 && ++calls > 4) {
    for (;;) pause();
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_zeros)
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor* out, int32_t n_out,
                       void*) {
  for (int o = 0; o < n_out; ++o)
    memset(out[o].data, 0, static_cast<size_t>(pkf_numel(&out[o]) * pkf_dtype_size(out[o].dtype)));
  return 0;
}

#elif defined(ATTACK_copy_inputs)
// Every output filled with the first input's bytes, repeated (a rank with no
// input writes zeros).
extern "C" int pkf_run(pkf_context*, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void*) {
  for (int o = 0; o < n_out; ++o) {
    const size_t ob = static_cast<size_t>(pkf_numel(&out[o]) * pkf_dtype_size(out[o].dtype));
    const size_t ib =
        n_in > 0 ? static_cast<size_t>(pkf_numel(&in[0]) * pkf_dtype_size(in[0].dtype)) : 0;
    if (ib == 0) {
      memset(out[o].data, 0, ob);
      continue;
    }
    for (size_t at = 0; at < ob; at += ib)
      memcpy(static_cast<char*>(out[o].data) + at, in[0].data, std::min(ib, ob - at));
  }
  return 0;
}

#elif defined(ATTACK_lower_precision)
// The right sum, rounded to bfloat16 (an f32 problem): too coarse.
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  float* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < pkf_numel(&out[0]); ++i) {
    uint32_t b;
    memcpy(&b, &y[i], 4);
    b = (b + 0x7fff + ((b >> 16) & 1)) & 0xffff0000u;
    memcpy(&y[i], &b, 4);
  }
  return rc;
}

#elif defined(ATTACK_benign_idle_helper_thread)
// Control: a helper thread from pkf_setup that waits on a condition variable
// and is joined in pkf_teardown. Must stay OK.
static std::mutex g_m;
static std::condition_variable g_cv;
static bool g_done = false;
static std::thread g_idle;
extern "C" int pkf_setup(pkf_context*) {
  g_idle = std::thread([] {
    std::unique_lock<std::mutex> l(g_m);
    g_cv.wait(l, [] { return g_done; });
  });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  {
    std::lock_guard<std::mutex> l(g_m);
    g_done = true;
  }
  g_cv.notify_all();
  g_idle.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#elif defined(ATTACK_benign_private_thread_joined)
// Control: each call does its work on a private thread and joins it before
// returning. Must stay OK.
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  int rc = 0;
  std::thread t([&] { rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream); });
  t.join();
  return rc;
}

#elif defined(ATTACK_benign_child_process_waited)
// Control for processes: none. A candidate that forks and waits for its
// child inside the call leaves nothing behind; a zombie-free, honest
// implementation must stay OK.
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (++calls == 2) {
    const pid_t c = fork();
    if (c == 0) _exit(0);
    waitpid(c, nullptr, 0);
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}

#else
#error "define one ATTACK_<name>"
#endif
