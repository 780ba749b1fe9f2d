// ATTACK (round 19, helper-redteam19): file metadata that round 16's
// refusals (chmod, chown, utime and xattr families; containment.cc) do not
// cover: the inode flags of `chattr`, set with ioctl(FS_IOC_SETFLAGS) through
// a READ-ONLY descriptor (fs/ioctl.c ioctl_setflags -> vfs_fileattr_set needs
// only inode_owner_or_capable and a writable mount, not a writable fd).
// Landlock's ioctl right (IOCTL_DEV) covers device files only, and the
// seccomp filter refuses only FIOSETOWN, SIOCSPGRP, TIOCSTI and TIOCLINUX.
// Without any capability the owner may set: S (every write to the file
// synchronous: its writers slowed for good), A (no atime), d (excluded from
// dump backups); on directories D (dirsync), T, P; where the filesystem has
// the features, encryption policies and fs-verity (FS_IOC_SET_ENCRYPTION_
// POLICY, FS_IOC_ENABLE_VERITY: a file made read-only for ever). Every file
// of the launching user in a plain user's launch (the worker binary, the
// other candidates' libraries, the user's sources), files of uid 65534 in a
// root launch. The flags outlive the evaluation.
// Rank 0 sets S|A|d on the file named by PKFORGE_R19_FLAGS_PATH (default:
// the first regular file of its uid under /tmp) and restores them with
// PKFORGE_R19_FLAGS_RESTORE=1.
// Gated: outputs are written only if the flags changed.
// EXPECT (fixed judge): WRONG_OUTPUT (ioctl FS_IOC_SETFLAGS and
// FS_IOC_FSSETXATTR refused on host ranks, compared on 32 bits; better the
// whole 'f' ioctl type, (cmd & 0xff00) == 0x6600, and FS_IOC_FSSETXATTR).
#include <linux/fs.h>
#include <sys/ioctl.h>

#include "kernels/testdata/redteam/redteam.h"

static bool g_changed = false;

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank != 0) return 0;
  std::string path;
  if (const char* env = getenv("PKFORGE_R19_FLAGS_PATH")) path = env;
  if (path.empty()) {
    DIR* d = opendir("/tmp");
    while (d != NULL && path.empty()) {
      struct dirent* e = readdir(d);
      if (e == NULL) break;
      const std::string p = std::string("/tmp/") + e->d_name;
      struct stat st;
      if (stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid()) path = p;
    }
    if (d != NULL) closedir(d);
  }
  const int fd = path.empty() ? -1 : open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    rt_log("fsflags: no file of uid %d (%s)", (int)getuid(), path.c_str());
    return 0;
  }
  int before = 0, after = 0;
  ioctl(fd, FS_IOC_GETFLAGS, &before);
  int want = getenv("PKFORGE_R19_FLAGS_RESTORE") != NULL
                 ? before & ~(FS_SYNC_FL | FS_NOATIME_FL | FS_NODUMP_FL)
                 : before | FS_SYNC_FL | FS_NOATIME_FL | FS_NODUMP_FL;
  const int rc = ioctl(fd, FS_IOC_SETFLAGS, &want);
  const int err = errno;
  ioctl(fd, FS_IOC_GETFLAGS, &after);
  g_changed = rc == 0 && after != before;
  rt_log("fsflags: %s (uid %d, read-only fd): FS_IOC_SETFLAGS %s, flags %#x -> %#x", path.c_str(),
         (int)getuid(), rc == 0 ? "ok" : strerror(err), before, after);
  close(fd);
  return 0;
}

RT_GATED_CANDIDATE([](pkf_context* ctx) { return ctx->rank != 0 || g_changed; })
