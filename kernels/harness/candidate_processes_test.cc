// The judge's view of the candidate's processes (containment.h:
// CandidateProcesses freezes, thaws, counts and kills every process a
// candidate started, at any depth; RunDelay and ProcessCpu account for its
// threads' time) and the non-dumpable trusted processes they cannot reach.
#include "kernels/harness/containment.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include <gtest/gtest.h>

#include "kernels/harness/containment_test_util.h"
#include "kernels/harness/shm.h"

namespace pkforge::kernels {
namespace {

using testing::InChild;
using testing::Reap;
using testing::Sleeper;

TEST(NonDumpable, ProcOfATrustedProcessIsClosedToACandidate) {
  const pid_t trusted = Sleeper(/*non_dumpable=*/true);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let it call prctl
  const int rc = InChild([trusted] {
    if (!HardenCandidateProcess().ok()) return 10;
    for (const char* what : {"environ", "mem", "maps", "fd/0", "fd/1", "cwd/."}) {
      const std::string path = "/proc/" + std::to_string(trusted) + "/" + what;
      const int fd = open(path.c_str(), O_RDONLY);
      if (fd >= 0) {
        close(fd);
        fprintf(stderr, "candidate opened %s\n", path.c_str());
        return 11;
      }
    }
    return 0;
  });
  EXPECT_EQ(rc, 0);
  Reap(trusted);
}

// Whatever continues a frozen candidate (a timer it armed to send itself
// SIGCONT, a helper outside the tree), work it does while frozen must be
// noticed. The continuation here comes from outside the tree, at a moment
// the test controls: a self-armed periodic timer is not deterministic (since
// Linux 6.13 a timer whose SIGCONT was flushed by the freeze's SIGSTOP is not
// re-armed until that signal is delivered, so it may never fire again).
TEST(CandidateProcesses, ThawReportsAProcessThatRanWhileFrozen) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t cand = fork();
  if (cand == 0) {
    if (write(ready[1], "x", 1) != 1) _exit(1);
    volatile uint64_t n = 0;
    for (;;) n = n + 1;  // works whenever it runs
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  CandidateProcesses tree({cand}, {});
  ASSERT_TRUE(tree.Freeze(MonotonicNs() + 2'000'000'000).ok());
  ASSERT_EQ(kill(cand, SIGCONT), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::string broke = tree.Thaw();
  EXPECT_FALSE(broke.empty()) << "a process that ran while frozen went unnoticed";
  Reap(cand);
}

TEST(CandidateProcesses, AnHonestFreezeHoldsAndStopsEveryDescendant) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t cand = fork();
  if (cand == 0) {
    // A grandchild in its own session: still part of the candidate.
    if (fork() == 0) {
      setsid();
      if (write(ready[1], "x", 1) != 1) _exit(1);
      for (;;) {
        volatile int x = 0;
        (void)x;
      }
    }
    for (;;) pause();
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  CandidateProcesses tree({cand}, {});
  ASSERT_EQ(tree.List().size(), 2u);
  ASSERT_TRUE(tree.Freeze(MonotonicNs() + 2'000'000'000).ok());
  for (int pid : tree.List()) EXPECT_EQ(ThreadState(pid, pid), 'T') << pid;
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(tree.Thaw(), "");
  std::string detail;
  EXPECT_EQ(tree.Extra(&detail).size(), 1u);
  EXPECT_NE(detail.find("still alive"), std::string::npos);
  EXPECT_GE(tree.KillAll(MonotonicNs() + 5'000'000'000), 1);
  waitpid(cand, nullptr, 0);
  EXPECT_TRUE(tree.List().empty());
}

// Deep setsid/double-fork chains: every level is found and killed, however
// deep, and orphans re-parented to us (a subreaper) count as candidate.
// The judge's command goes out while the candidate is still stopped (Thaw's
// before_continue): no moment passes between the thaw and the start of its
// clock in which a thread of the candidate could work on inputs it can see.
TEST(CandidateProcesses, TheCommandGoesOutBeforeTheCandidateContinues) {
  const pid_t cand = fork();
  if (cand == 0) {
    for (;;) {
      volatile int x = 0;
      (void)x;
    }
  }
  CandidateProcesses tree({cand}, {});
  ASSERT_TRUE(tree.Freeze(MonotonicNs() + 2'000'000'000).ok());
  char state_in_hook = 0;
  EXPECT_EQ(tree.Thaw([&] { state_in_hook = ThreadState(cand, cand); }), "");
  EXPECT_EQ(state_in_hook, 'T');
  // A freeze that broke runs no hook (the evaluation ends instead).
  ASSERT_TRUE(tree.Freeze(MonotonicNs() + 2'000'000'000).ok());
  kill(cand, SIGCONT);  // as a timer the candidate armed would
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  bool ran = false;
  EXPECT_NE(tree.Thaw([&] { ran = true; }), "");
  EXPECT_FALSE(ran);
  kill(cand, SIGKILL);
  waitpid(cand, nullptr, 0);
}

TEST(CandidateProcesses, KillAllEmptiesADeepChainOfOrphans) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t self = getpid();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t cand = fork();
  if (cand == 0) {
    for (int depth = 0; depth < 30; ++depth) {
      const pid_t c = fork();
      if (c != 0) _exit(0);  // the parent leaves: its child is an orphan
      setsid();
    }
    // Ready once re-parented to the test (its parent may not have left yet).
    while (getppid() != self) usleep(100);
    if (write(ready[1], "x", 1) != 1) _exit(1);
    for (;;) pause();
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  waitpid(cand, nullptr, 0);  // the rank itself is gone
  CandidateProcesses tree({cand}, {});
  std::string detail;
  EXPECT_GE(tree.Extra(&detail).size(), 1u) << "the orphan at the end of the chain is the candidate's";
  tree.KillAll(MonotonicNs() + 5'000'000'000);
  EXPECT_TRUE(tree.List().empty());
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

// A process whose thread-group leader called pthread_exit() reads Z in
// /proc/<pid>/stat while its other threads run on. It must still be listed,
// frozen (every live thread stopped), seen running while frozen, and killed
// (red team: zombie_leader_hog hid a CPU hog that way).
TEST(CandidateProcesses, AProcessWhoseLeaderExitedIsStillACandidateProcess) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t cand = fork();
  if (cand == 0) {
    pthread_t t;
    pthread_create(
        &t, nullptr,
        [](void* fd) -> void* {
          if (write(static_cast<int>(reinterpret_cast<intptr_t>(fd)), "x", 1) != 1) _exit(1);
          volatile uint64_t n = 0;
          for (;;) n = n + 1;
          return nullptr;
        },
        reinterpret_cast<void*>(static_cast<intptr_t>(ready[1])));
    // The leader thread exits alone (no unwinding through the test body, as
    // pthread_exit would do): it becomes a zombie, the process lives on.
    syscall(SYS_exit, 0);
  }
  close(ready[1]);  // EOF instead of a hang if the child dies
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  for (int i = 0; i < 1000 && ThreadState(cand, cand) != 'Z'; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(ThreadState(cand, cand), 'Z');
  CandidateProcesses tree({cand}, {});
  const std::vector<int> listed = tree.List();
  EXPECT_EQ(listed, std::vector<int>{cand}) << "a live process with a zombie leader went unlisted";
  ASSERT_TRUE(tree.Freeze(MonotonicNs() + 2'000'000'000).ok());
  for (int tid : ThreadIds(cand)) {
    const char st = ThreadState(cand, tid);
    EXPECT_TRUE(st == 'T' || st == 't' || st == 'Z') << "thread " << tid << " state " << st;
  }
  ASSERT_EQ(kill(cand, SIGCONT), 0);  // runs while "frozen": must be noticed
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(tree.Thaw().empty());
  tree.KillAll(MonotonicNs() + 2'000'000'000);
  int st = 0;
  EXPECT_EQ(waitpid(cand, &st, 0), cand);
  EXPECT_TRUE(WIFSIGNALED(st));
  close(ready[0]);
}

// The judge subtracts from a candidate batch, for its wall-clock cross-check
// only, the time the candidate's threads waited for a CPU: two processes that
// both spin on one CPU each wait about half the time, and that is what the
// run-queue reading must show (a sleeping process waits for nothing).
TEST(RunDelay, CountsTimeRunnableButWaitingForACpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  auto spin_ms = [](int ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
    }
  };
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const pid_t spinner = fork();
  if (spinner == 0) {
    sched_setaffinity(0, sizeof one, &one);
    char c;
    if (read(go[0], &c, 1) != 1) _exit(1);
    spin_ms(300);
    pause();
    _exit(0);
  }
  int asleep[2];
  ASSERT_EQ(pipe(asleep), 0);
  const pid_t sleeper = fork();
  if (sleeper == 0) {
    if (write(asleep[1], "x", 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(asleep[0], &c, 1), 1);
  for (int i = 0; i < 1000 && ThreadState(sleeper, sleeper) != 'S'; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  close(asleep[0]);
  close(asleep[1]);
  const int64_t spin0 = ProcessRunDelayNs(spinner), sleep0 = ProcessRunDelayNs(sleeper);
  ASSERT_GE(spin0, 0) << "no schedstat on this kernel";
  cpu_set_t saved;
  sched_getaffinity(0, sizeof saved, &saved);
  sched_setaffinity(0, sizeof one, &one);
  ASSERT_EQ(write(go[1], "x", 1), 1);
  spin_ms(300);  // competes with the spinner for CPU 0
  sched_setaffinity(0, sizeof saved, &saved);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int64_t spin_wait = ProcessRunDelayNs(spinner) - spin0;
  const int64_t sleep_wait = ProcessRunDelayNs(sleeper) - sleep0;
  kill(spinner, SIGKILL);
  kill(sleeper, SIGKILL);
  waitpid(spinner, nullptr, 0);
  waitpid(sleeper, nullptr, 0);
  close(go[0]);
  close(go[1]);
  EXPECT_GT(spin_wait, 30'000'000) << "the spinner shared one CPU for 300 ms";
  EXPECT_LT(sleep_wait * 5, spin_wait) << "a sleeping process waits for no CPU";
  EXPECT_EQ(ProcessRunDelayNs(999'999'999), -1);
}

// A child process whose one extra thread spun `cpu_ns` of its own CPU time
// (not of the clock: beside ctest -j2 the thread may get far less of the
// wall time) and exited; the child then waits until Finish() (the ProcessCpu
// tests read it in between).
class ExitedSpinnerChild {
 public:
  explicit ExitedSpinnerChild(int64_t cpu_ns) {
    if (pipe(ready_) != 0 || pipe(done_) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      std::thread([cpu_ns] {
        timespec t{};
        do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        while (static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec < cpu_ns);
      }).join();
      if (write(ready_[1], "x", 1) != 1) _exit(1);
      char c;
      if (read(done_[0], &c, 1) != 1) _exit(1);
      _exit(0);
    }
    char c;
    spun_ = pid_ > 0 && read(ready_[0], &c, 1) == 1;
  }
  ~ExitedSpinnerChild() { Finish(); }
  // The thread has spun and exited; the child is alive.
  bool spun() const { return spun_; }
  pid_t pid() const { return pid_; }
  void Finish() {
    if (pid_ > 0) {
      if (write(done_[1], "x", 1) != 1) kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    for (int* fd : {&ready_[0], &ready_[1], &done_[0], &done_[1]})
      if (*fd >= 0) close(std::exchange(*fd, -1));
  }

 private:
  int ready_[2] = {-1, -1}, done_[2] = {-1, -1};
  pid_t pid_ = -1;
  bool spun_ = false;
};

// A thread that ran and exited is in no thread list, but its CPU time is
// still the process's (red team round 6 drip_starve_spinner: a spinner
// started and joined inside a drip batch, invisible to a per-thread sum,
// made the batch look starved by other processes).
TEST(ProcessCpu, CountsThreadsThatAlreadyExited) {
  ExitedSpinnerChild child(200'000'000);
  ASSERT_TRUE(child.spun());
  int64_t live = 0;
  for (int tid : ThreadIds(child.pid())) live += std::max<int64_t>(0, ThreadCpuNs(child.pid(), tid));
  const int64_t whole = ProcessCpuNs(child.pid());
  child.Finish();
  EXPECT_LT(live, 50'000'000) << "the spinning thread has exited";
  EXPECT_GT(whole, 150'000'000) << "its 200 ms of CPU are the process's";
  EXPECT_EQ(ProcessCpuNs(999'999'999), -1);
}

// And to well under a clock tick: a thread that spun 3 ms on the rank's CPU
// and exited before a probe's stop read as 0 or 10 ms in /proc's ticks, so
// the probe saw "no other thread ran" (red team round 24
// r24_exit_thread_starve).
TEST(ProcessCpu, CountsAnExitedThreadFinerThanATick) {
  ExitedSpinnerChild child(3'000'000);
  ASSERT_TRUE(child.spun());
  const int64_t whole = ProcessCpuNs(child.pid());
  child.Finish();
  EXPECT_GE(whole, 3'000'000) << "the exited thread's 3 ms";
  EXPECT_LT(whole, 8'000'000) << "not rounded up to a 10 ms tick";
}

// A helper the first call leaves waiting for a wake-up is idle; one in a
// timed sleep has work due later (testdata/detached_thread.cc writes the
// outputs 10 ms after its call returned). Read while the process is stopped.
TEST(ThreadWaitsIndefinitely, TellsAWaitingHelperFromATimedSleep) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::mutex mu;
    std::condition_variable cv;
    std::thread waiter([&] {
      std::unique_lock lock(mu);
      cv.wait(lock, [] { return false; });
    });
    std::thread sleeper([] { std::this_thread::sleep_for(std::chrono::seconds(100)); });
    for (;;) pause();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  int waiting = 0, timed = 0;
  for (int tid : ThreadIds(pid)) {
    if (tid == pid) {
      EXPECT_TRUE(ThreadWaitsIndefinitely(pid, tid)) << "the leader is in pause()";
      continue;
    }
    (ThreadWaitsIndefinitely(pid, tid) ? waiting : timed)++;
  }
  Reap(pid);
  EXPECT_EQ(waiting, 1) << "the condition variable's waiter";
  EXPECT_EQ(timed, 1) << "the sleeper";
}

}  // namespace
}  // namespace pkforge::kernels
