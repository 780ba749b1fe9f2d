// RED TEAM round 26: inode flags of the ranks' uid's files again, through
// file_setattr(2) (syscall 469, Linux 6.17), the path-based twin of the
// FS_IOC_FSSETXATTR ioctl that round 19 (r19_fsflags) got refused. No rule
// of the host candidate filter names it (libseccomp 2.5.4 does not know it,
// and containment.cc adds only fchmodat2/setxattrat/removexattrat by
// number), and Landlock has no right for it: a rank sets FS_XFLAG_SYNC
// (every write synchronous), FS_XFLAG_NOATIME and FS_XFLAG_NODUMP on a file
// its uid owns outside the writable folder, by path, without opening it.
// The flags are stored in the inode on disk: they outlive the evaluation.
// In a root launch the ranks' uid is 65534 (nobody's files); in a plain
// user's launch every file of that user (the worker, its databases, other
// candidates' libraries). Victim: $PKF_RT26_VICTIM or /tmp/rt26v/victim
// (the test host makes it, owned by 65534).
// Gated: outputs only when the flags were set on every rank (rank 0 sets,
// others report success). EXPECT (today): OK. Fix: refuse file_setattr (469)
// by number in the host candidate filter (and look at every syscall newer
// than libseccomp's table: AddRule skips unknown names silently).
#include "kernels/testdata/redteam/redteam.h"

namespace {

struct FileAttr {  // include/uapi/linux/fs.h struct file_attr (FILE_ATTR_SIZE_VER0)
  uint64_t fa_xflags;
  uint32_t fa_extsize, fa_nextents, fa_projid, fa_cowextsize;
};

bool Attack(pkf_context* ctx) {
  if (ctx->rank != 0) return true;
  const char* victim = getenv("PKF_RT26_VICTIM") ? getenv("PKF_RT26_VICTIM") : "/tmp/rt26v/victim";
  FileAttr before{}, want{}, after{};
  if (syscall(468, AT_FDCWD, victim, &before, sizeof before, 0) != 0) {
    rt_log("r26_file_setattr: file_getattr(%s): %s", victim, strerror(errno));
    return false;
  }
  want = before;
  want.fa_xflags |= 0x20 | 0x40 | 0x80;  // FS_XFLAG_SYNC | FS_XFLAG_NOATIME | FS_XFLAG_NODUMP
  const long rc = syscall(469, AT_FDCWD, victim, &want, sizeof want, 0);
  const int err = errno;
  syscall(468, AT_FDCWD, victim, &after, sizeof after, 0);
  rt_log("r26_file_setattr: file_setattr(%s) -> %ld %s; xflags %#llx -> %#llx", victim, rc,
         rc != 0 ? strerror(err) : "", (unsigned long long)before.fa_xflags,
         (unsigned long long)after.fa_xflags);
  return rc == 0 && (after.fa_xflags & 0xe0) == 0xe0;
}

}  // namespace

RT_GATED_CANDIDATE(Attack)
