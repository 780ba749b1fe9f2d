// ATTACK (starting a process past the base seccomp fork ban, 175e7b2): the
// candidate rank's base filter kills the process on fork, vfork and
// clone(!CLONE_THREAD) and answers clone3 with ENOSYS, for the NATIVE x86_64
// syscall numbers. This candidate tries, from a helper thread at its first
// call, the other ways into the kernel's process creation: the i386 ABI
// (`int $0x80`: fork 2, vfork 190, clone 120, clone3 435), the x32 ABI
// (__X32_SYSCALL_BIT | 57 / 56), a raw clone3, and a CLONE_THREAD|CLONE_PARENT
// clone (a thread, which must stay one), and fork's number with high bits
// set in rax (hi_fork), execve of /bin/sh that forks (exec_sh), and an
// i386 syscall on the rank's main thread (main_badarch: only it dies). Mode: the file $PKF_REDTEAM_DIR/mode
// (default i386_fork).
// A child that runs sets a flag in shared memory, records itself and exits.
// Gated: outputs are written only if a child process ran on every rank.
// EXPECT: CHEAT_DETECTED outlived_call (SIGSYS death) or WRONG_OUTPUT
// (refused: ENOSYS, or the helper thread killed alone by libseccomp's
// bad-arch action); never OK; nothing left alive.
#include <sched.h>

#include <thread>

#include "kernels/testdata/redteam/redteam.h"

namespace {
std::atomic<int>* g_child_ran = nullptr;  // MAP_SHARED: seen across fork
std::atomic<int> g_thread_done{0};
std::atomic<long> g_ret{-12345};
std::atomic<long> g_tid{0};

long I386(long nr, long a = 0, long b = 0) {
  long ret;
  asm volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(0), "S"(0), "D"(0)
               : "memory");
  return ret;
}

void InChild() {
  g_child_ran->store(1);
  rt_record_pid(getpid());
  syscall(SYS_exit_group, 0);
}

char g_stack[1 << 16] __attribute__((aligned(16)));
int ThreadFn(void*) {
  g_tid.store(syscall(SYS_gettid));
  syscall(SYS_exit, 0);  // this thread only
  return 0;
}

void Attempt(const std::string& mode) {
  long r = -12345;
  if (mode == "i386_fork") {
    r = I386(2);
  } else if (mode == "i386_vfork") {
    r = I386(190);
  } else if (mode == "i386_clone") {
    r = I386(120, SIGCHLD, 0);
  } else if (mode == "i386_clone3") {
    r = I386(435, 0, 0);
  } else if (mode == "x32_fork") {
    r = syscall(0x40000000L | 57);
  } else if (mode == "x32_clone") {
    r = syscall(0x40000000L | 56, SIGCHLD, 0, 0, 0, 0);
  } else if (mode == "hi_fork") {
    // fork's number with high bits set in rax (seccomp_data.nr and the
    // kernel's dispatch both take the low 32 bits: must still be fork)
    r = syscall(0x100000000L | 57);
  } else if (mode == "exec_sh") {
    // execve keeps the filter (and no_new_privs: a setuid binary gains
    // nothing); the shell then forks for `&`.
    const char* dir = getenv("PKF_REDTEAM_DIR");
    const std::string script = std::string("grep -E '^(Uid|Seccomp|NoNewPrivs)' /proc/self/status >> ") +
                               dir + "/log; (echo forked child $$ >> " + dir + "/log) & wait";
    const char* argv[] = {"sh", "-c", script.c_str(), nullptr};
    const char* envp[] = {nullptr};
    execve("/bin/sh", const_cast<char**>(argv), const_cast<char**>(envp));
    r = -errno;
  } else if (mode == "clone3") {
    struct {
      uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
    } args = {0, 0, 0, 0, SIGCHLD, 0, 0, 0};
    r = syscall(435, &args, sizeof args);
  } else if (mode == "thread_parent") {
    r = clone(ThreadFn, g_stack + sizeof g_stack,
              CLONE_VM | CLONE_SIGHAND | CLONE_THREAD | CLONE_PARENT | CLONE_FS | CLONE_FILES |
                  CLONE_SYSVSEM,
              nullptr);
    for (int i = 0; i < 1000 && g_tid.load() == 0; ++i) usleep(100);
    rt_log("thread_parent: clone=%ld tid=%ld getpid=%d (a thread of this process: %s)", r,
           g_tid.load(), getpid(), r > 0 ? "yes" : "no");
    g_ret.store(-9999);  // a thread is not a process: nothing to wait for
    return;
  }
  if (r == -1) r = -errno;  // syscall(2) modes
  if (r == 0) InChild();   // the child (fork-like modes)
  if (r > 0) waitpid(static_cast<int>(r), nullptr, __WALL);
  g_ret.store(r);
}
}  // namespace

static bool attack(pkf_context* ctx) {
  void* m = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  g_child_ran = static_cast<std::atomic<int>*>(m);
  // The ranks get an allowlisted environment: the mode travels as the file
  // $PKF_REDTEAM_DIR/mode (written by whoever runs the candidate).
  const char* dir = getenv("PKF_REDTEAM_DIR");
  std::string mode = dir != nullptr ? rt_read(std::string(dir) + "/mode") : "";
  while (!mode.empty() && (mode.back() == '\n' || mode.back() == ' ')) mode.pop_back();
  if (mode.empty()) mode = "i386_fork";
  if (mode == "main_badarch") {
    // The rank's MAIN thread makes an i386 syscall: libseccomp's bad-arch
    // action kills only that thread (KILL_THREAD, 2 threads): a zombie
    // leader whose helper thread lives on, outside the harness loop.
    rt_record_pid(getpid());
    std::thread([] {
      for (int i = 0; i < 40; ++i) {
        rt_log("main_badarch: helper thread alive after %d s, leader state %s", i / 2,
               rt_stat_field(getpid(), 3).c_str());
        usleep(500000);
      }
    }).detach();
    usleep(20000);
    I386(20);  // i386 getpid
    rt_log("main_badarch: main thread survived the i386 syscall");
    return false;
  }
  std::thread([mode] {
    Attempt(mode);
    g_thread_done.store(1);
  }).detach();
  for (int i = 0; i < 2000 && g_thread_done.load() == 0; ++i) usleep(100);
  int threads = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) threads += e->d_name[0] != '.';
    closedir(d);
  }
  rt_log("rank %d mode %s: helper thread %s, ret %ld (errno-like %s), child ran %d, threads now %d",
         ctx->rank, mode.c_str(), g_thread_done.load() ? "returned" : "DID NOT RETURN (killed?)",
         g_ret.load(), g_ret.load() < 0 && g_ret.load() > -4096 ? strerror(-g_ret.load()) : "-",
         g_child_ran->load(), threads);
  return g_child_ran->load() == 1;
}
RT_GATED_CANDIDATE(attack)
