#include "kernels/harness/shm.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "common/status.h"

namespace pkforge::kernels {

absl::StatusOr<int> CreateSegment(const std::string& name, uint64_t bytes) {
  int fd = static_cast<int>(
      syscall(SYS_memfd_create, name.c_str(), MFD_CLOEXEC | (bytes > 0 ? MFD_ALLOW_SEALING : 0)));
  if (fd < 0) return ErrnoError("memfd_create " + name, errno);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int e = errno;
    close(fd);
    return ErrnoError("ftruncate " + name, e);
  }
  // A segment's size is fixed: a candidate that shrank a segment it shares
  // with trusted processes would make them die of SIGBUS on their next read
  // (turning its own wrong answer into a harness fault). (Output captures,
  // created empty, keep growing.)
  if (bytes > 0 &&
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    int e = errno;
    close(fd);
    return ErrnoError("sealing " + name, e);
  }
  // Its pages now, before any rank (or candidate code) exists: memory a
  // trusted process first touches later could be taken first by the
  // candidate, and the kernel then kills a trusted process (red team round 7
  // tmpfs_file_oom_blame_default_size: the reference OOM-killed while
  // generating inputs, a HARNESS_ERROR).
  if (bytes > 0 && fallocate(fd, 0, 0, static_cast<off_t>(bytes)) != 0 && errno != EOPNOTSUPP) {
    int e = errno;
    close(fd);
    return ErrnoError("allocating the pages of " + name, e);
  }
  // Keep segment descriptors above the fixed rank descriptor numbers so
  // dup2() into kFd* in a child never clobbers a source descriptor.
  int high = fcntl(fd, F_DUPFD_CLOEXEC, 100);
  close(fd);
  if (high < 0) return ErrnoError("fcntl dupfd", errno);
  return high;
}

absl::StatusOr<void*> MapSegment(int fd, uint64_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return ErrnoError("mmap", errno);
  return p;
}

namespace {
long Futex(std::atomic<uint32_t>* addr, int op, uint32_t val, const timespec* ts) {
  // Not FUTEX_PRIVATE: the word lives in memory shared between processes.
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), op, val, ts, nullptr, 0);
}
}  // namespace

void SideBarrierWait(SideControl* c, int rank, int world) {
  if (rank >= 0 && rank < kMaxWorld) {
    c->in_barrier[rank].store(1, std::memory_order_relaxed);
    c->barrier_calls[rank].fetch_add(1, std::memory_order_relaxed);
  }
  // Read the generation before arriving: the last arriver bumps it.
  const uint32_t gen = c->barrier_generation.load(std::memory_order_acquire);
  if (c->barrier_count.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(world)) {
    c->barrier_count.store(0, std::memory_order_relaxed);
    c->barrier_generation.fetch_add(1, std::memory_order_release);
    Futex(&c->barrier_generation, FUTEX_WAKE, INT_MAX, nullptr);
  } else {
    for (int i = 0; i < 200 && c->barrier_generation.load(std::memory_order_acquire) == gen; ++i) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    const timespec ts{0, 50'000'000};
    while (c->barrier_generation.load(std::memory_order_acquire) == gen)
      Futex(&c->barrier_generation, FUTEX_WAIT, gen, &ts);
  }
  if (rank >= 0 && rank < kMaxWorld) c->in_barrier[rank].store(0, std::memory_order_relaxed);
}

void WaitWhileEquals(std::atomic<uint32_t>* word, uint32_t value, int64_t timeout_ns) {
  if (word->load(std::memory_order_acquire) != value) return;
  const timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000),
                    static_cast<long>(timeout_ns % 1'000'000'000)};
  Futex(word, FUTEX_WAIT, value, &ts);
}

void WakeAll(std::atomic<uint32_t>* word) { Futex(word, FUTEX_WAKE, INT_MAX, nullptr); }

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int CountThreads(int pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

}  // namespace pkforge::kernels
