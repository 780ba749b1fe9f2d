// ATTACK (blame the reference through memory pressure; tmpfs_file_oom_blame
// with another object that outlives its creator): a System V shared memory
// segment (shmget, IPC_PRIVATE, never IPC_RMID'd) is not freed when every
// process detached or died - in a bare launch it even stays on the host
// after the evaluation (a sandbox has an IPC namespace of its own). In
// pkf_setup rank 0 creates one, touches it until its memory cgroup is 9 MiB
// short of the limit, detaches and returns normally; once the ranks are
// gone the judge's own allocations find no memory.
// The segment id is left in $PKF_REDTEAM_DIR/shmid (the test removes it).
// Only meaningful under a memory limit (the test makes a memory cgroup).
// EXPECT: RUNTIME_ERROR / SETUP_ERROR (the candidate's fault), never
// HARNESS_ERROR, never no result.
#include <sys/shm.h>

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
    rt_log("no memory limit below 8 GiB (%lld): nothing done", (long long)limit);
    return 0;
  }
  const size_t bytes = (size_t)limit;
  const int id = shmget(IPC_PRIVATE, bytes, IPC_CREAT | 0600);
  if (id < 0) {
    rt_log("shmget: %s", strerror(errno));
    return 0;
  }
  char line[32];
  snprintf(line, sizeof line, "%d\n", id);
  rt_append("shmid", line);
  char* p = (char*)shmat(id, NULL, 0);
  if (p == (char*)-1) {
    rt_log("shmat: %s", strerror(errno));
    return 0;
  }
  size_t touched = 0;
  for (; touched + (1u << 20) <= bytes; touched += 1u << 20) {
    CgroupMemory(&limit, &usage);
    if (usage < 0 || usage + (int64_t{9} << 20) > limit) break;
    memset(p + touched, 0x5a, 1u << 20);
  }
  shmdt(p);  // the pages stay: they belong to the segment, not to this process
  rt_log("touched %zu MiB of SysV segment %d; cgroup usage %lld of %lld MiB", touched >> 20, id,
         (long long)(usage >> 20), (long long)(limit >> 20));
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
