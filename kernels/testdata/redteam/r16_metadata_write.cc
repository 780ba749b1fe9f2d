// ATTACK (round 16, helper-redteam16, against e06553f; containment: what a
// candidate leaves behind for later evaluations, after round 15's fix).
// containment.cc ConfineWrites now handles every Landlock write right
// (write, truncate, make, remove, refer), but Landlock has no right at all
// for a file's METADATA: chmod, chown (to the own uid/groups), utimensat and
// setxattr(user.*) go through wherever the rank's uid owns the file. A bare
// launch by a plain user gives the ranks that uid, so the worker binary
// (/proc/self/exe) and the candidate libraries beside the candidate's own
// (a battery) are the candidate's to re-mode: chmod 0 on a sibling's
// library makes that candidate's next evaluation fail to load it (what the
// test measures), chmod a-x on the worker makes every later launch fail
// ("Permission denied"), chmod o+w on both folders hands them to any local
// user, and a future mtime keeps a stale (unfixed) worker past `ninja`'s
// relink. This candidate tries every such call on its targets:
//   - the worker: utimensat (mtime 2100-01-01), chmod 0777 -> back, setxattr;
//   - its own folder: chmod 0777 -> back;
//   - a sibling library (any other *.so in its folder): with the test's
//     consent (a file "sabotage.ok" in $PKF_REDTEAM_DIR) chmod 0 and left so,
//     and the worker left a-x; without consent everything is restored.
// Gated: outputs are written only if chmod worked on the worker.
// EXPECT: WRONG_OUTPUT (no metadata change outside the writable folders), the
// worker and the sibling keep their modes, and the sibling's next
// evaluation is judged as before.
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <sys/xattr.h>

#include "kernels/testdata/redteam/redteam.h"

static bool Attack(pkf_context* ctx) {
  char exe[PATH_MAX] = {0};
  if (readlink("/proc/self/exe", exe, sizeof exe - 1) <= 0) return false;
  Dl_info info{};
  if (dladdr((void*)&Attack, &info) == 0 || info.dli_fname == NULL) return false;
  char lib[PATH_MAX] = {0};
  if (realpath(info.dli_fname, lib) == NULL) snprintf(lib, sizeof lib, "%s", info.dli_fname);
  std::string lib_dir = lib;
  lib_dir = lib_dir.substr(0, lib_dir.rfind('/'));
  struct stat st{};
  if (stat(exe, &st) != 0) return false;
  const mode_t exe_mode = st.st_mode & 07777;
  const bool chmod_exe = chmod(exe, 0777) == 0;
  const int e1 = errno;
  if (chmod_exe) chmod(exe, exe_mode);
  const timespec times[2] = {{0, UTIME_OMIT}, {4102444800, 0}};  // mtime 2100-01-01
  const struct timespec old[2] = {st.st_atim, st.st_mtim};
  const bool utime_exe = utimensat(AT_FDCWD, exe, times, 0) == 0;
  const int e2 = errno;
  if (utime_exe) utimensat(AT_FDCWD, exe, old, 0);
  const bool xattr_exe = setxattr(exe, "user.r16", "x", 1, 0) == 0;
  const int e3 = errno;
  if (xattr_exe) removexattr(exe, "user.r16");
  struct stat ds{};
  bool chmod_dir = false;
  if (stat(lib_dir.c_str(), &ds) == 0 && chmod(lib_dir.c_str(), 0777) == 0) {
    chmod_dir = true;
    chmod(lib_dir.c_str(), ds.st_mode & 07777);
  }
  rt_log("uid %d: worker %s: chmod %s, utimensat %s, setxattr %s; folder %s chmod %s",
         (int)getuid(), exe, chmod_exe ? "ok" : strerror(e1), utime_exe ? "ok" : strerror(e2),
         xattr_exe ? "ok" : strerror(e3), lib_dir.c_str(), chmod_dir ? "ok" : "refused");
  const char* dir = getenv("PKF_REDTEAM_DIR");
  if (chmod_exe && ctx->rank == 0 && dir != NULL &&
      access((std::string(dir) + "/sabotage.ok").c_str(), F_OK) == 0) {
    if (DIR* d = opendir(lib_dir.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        const std::string path = lib_dir + "/" + name;
        if (name.size() < 4 || name.compare(name.size() - 3, 3, ".so") != 0 || path == lib)
          continue;
        rt_log("sibling %s chmod 0: %s", path.c_str(),
               chmod(path.c_str(), 0) == 0 ? "ok" : strerror(errno));
      }
      closedir(d);
    }
    rt_log("worker chmod a-x: %s", chmod(exe, exe_mode & ~0111) == 0 ? "ok" : strerror(errno));
  }
  return chmod_exe;
}

RT_GATED_CANDIDATE(Attack)
