// ATTACK (blame the reference through memory pressure, past the fix of
// memfd_oom_blame). Candidate ranks run with oom_score_adj 1000, so the
// OOM killer takes them first - which only helps if killing them frees the
// memory. Pages of a FILE on a tmpfs (/dev/shm) outlive the process that
// wrote them and count for no process. In pkf_setup rank 0 writes such a file
// until its memory cgroup is 8 MiB short of its limit (it reads both from
// /sys/fs/cgroup), then returns normally. The next allocation of anyone in
// the cgroup (the reference ranks' snapshots, the judge's buffers) runs out
// of memory: the candidate ranks die first and free ~nothing, then a trusted
// process is killed -> no result (bare launch) or HARNESS_ERROR.
// The file's path is left in $PKF_REDTEAM_DIR/shmfile (the test removes it).
// Only meaningful under a memory limit (the test makes a memory cgroup).
// EXPECT: RUNTIME_ERROR / SETUP_ERROR (the candidate's fault), never
// HARNESS_ERROR, never no result.
#include "kernels/testdata/redteam/redteam.h"

// Memory limit and usage of this process's memory cgroup (v1 or v2); -1 when unknown.
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

extern "C" int pkf_setup(pkf_context* ctx) {
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
  close(fd);  // the pages stay: they belong to the file, not to this process
  rt_log("wrote %lld MiB into %s; cgroup usage %lld of %lld MiB", (long long)(total >> 20), path,
         (long long)(usage >> 20), (long long)(limit >> 20));
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
