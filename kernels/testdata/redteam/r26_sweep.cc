// RED TEAM round 26: a sweep of the kernel interfaces a host candidate rank
// can still use (recon; no lasting effect except where noted). In pkf_setup
// rank 0 tries each and logs rc/errno to $PKF_REDTEAM_DIR/log: syscall
// numbers 448-472 (newer than libseccomp 2.5.4, which the filter skips
// silently when it does not know a name), file_setattr (469, Linux 6.17) on
// a file of the ranks' uid outside the writable folder ($PKF_RT26_VICTIM,
// default /tmp/rt26v/victim; no change unless PKF_RT26_SET=1 -- not passed
// by the environment allowlist, so the flags it would set are only logged),
// madvise / mlock / mbind / mseal on its own side's shared segments (control
// pad, scratch), prctl options, clocks, sync, quotactl, handles, hugetlb.
// Then the honest allreduce. EXPECT: OK.
#include <linux/mempolicy.h>
#include <sys/timex.h>
#include <sys/quota.h>
#include <sys/time.h>
#include <sys/sysmacros.h>
#include "kernels/testdata/redteam/redteam.h"

namespace {

struct FileAttr {  // include/uapi/linux/fs.h struct file_attr (VER0, 24 bytes)
  uint64_t fa_xflags;
  uint32_t fa_extsize, fa_nextents, fa_projid, fa_cowextsize;
};

#define TRY(expr)                                                                 \
  do {                                                                            \
    errno = 0;                                                                    \
    long r_ = (long)(expr);                                                       \
    rt_log("r26_sweep: %-60s -> %ld %s", #expr, r_, r_ < 0 ? strerror(errno) : ""); \
  } while (0)

std::string Vm(const char* keys[], int n) {
  std::string v = rt_read("/proc/vmstat"), out;
  for (int i = 0; i < n; ++i) {
    size_t p = v.find(std::string("\n") + keys[i] + " ");
    if (p == std::string::npos) continue;
    size_t e = v.find('\n', p + 1);
    out += v.substr(p + 1, e - p - 1) + "; ";
  }
  return out;
}

void Sweep(pkf_context* ctx) {
  std::string st = rt_read("/proc/self/status");
  size_t p = st.find("CapEff:");
  const std::string capeff = p == std::string::npos ? "?" : st.substr(p + 8, 16);
  rt_log("r26_sweep: uid %d CapEff %s", (int)getuid(), capeff.c_str());
  // 1. Numbers past this libc's headers.
  for (long nr = 448; nr <= 472; ++nr) {
    if (nr == 455) continue;  // futex_wait: zero mask -> EINVAL, but skip waits
    errno = 0;
    long r = syscall(nr, -1L, 0L, 0L, 0L, 0L, 0L);
    rt_log("r26_sweep: syscall %ld(-1,0,...) -> %ld %s", nr, r, r < 0 ? strerror(errno) : "");
  }
  // 2. file_setattr / file_getattr on a file of our uid outside the writable folder.
  const char* victim = getenv("PKF_RT26_VICTIM") ? getenv("PKF_RT26_VICTIM") : "/tmp/rt26v/victim";
  FileAttr fa{};
  TRY(syscall(468, AT_FDCWD, victim, &fa, sizeof fa, 0));
  rt_log("r26_sweep: %s xflags %#llx projid %u", victim, (unsigned long long)fa.fa_xflags,
         fa.fa_projid);
  FileAttr same = fa;  // a no-op set: tells whether the call is refused
  TRY(syscall(469, AT_FDCWD, victim, &same, sizeof same, 0));
  if (getenv("PKF_RT26_SET") != nullptr) {
    FileAttr want = fa;
    want.fa_xflags |= 0x20 | 0x40 | 0x80;  // FS_XFLAG_SYNC | NOATIME | NODUMP
    TRY(syscall(469, AT_FDCWD, victim, &want, sizeof want, 0));
  }
  const int vfd = open(victim, O_RDONLY | O_CLOEXEC);
  uint64_t hint = 5;  // RWH_WRITE_LIFE_EXTREME
  TRY(fcntl(vfd, 1036 /* F_SET_RW_HINT */, &hint));
  TRY(open(victim, O_WRONLY | O_CLOEXEC));
  TRY(truncate(victim, 0));
  // 3. Its own side's shared segments.
  char* base[2];
  size_t size[2];
  const void* segs[2] = {ctx->peer_flags[0], ctx->peer_scratch[0]};
  const char* keys[] = {"thp_collapse_alloc", "thp_collapse_alloc_failed", "thp_file_alloc",
                        "compact_stall", "unevictable_pgs_mlocked", "pgdeactivate"};
  rt_log("r26_sweep: vmstat before: %s", Vm(keys, 6).c_str());
  for (int i = 0; i < 2; ++i) {
    if (!rt_mapping_of(segs[i], &base[i], &size[i])) continue;
    char* b = base[i];
    size_t n = size[i];
    rt_log("r26_sweep: segment %d at %p, %zu bytes", i, (void*)b, n);
    TRY(mlock(b, n));
    TRY(munlock(b, n));
    TRY(madvise(b, n, MADV_COLD));
    TRY(madvise(b, n, MADV_PAGEOUT));
    TRY(madvise(b, n, MADV_HUGEPAGE));
    TRY(madvise(b, n, 25 /* MADV_COLLAPSE */));
    TRY(madvise(b, n, MADV_MERGEABLE));
    TRY(madvise(b, n, MADV_FREE));
    unsigned long node0 = 1;
    TRY(syscall(SYS_mbind, b, n, MPOL_BIND, &node0, 64, MPOL_MF_MOVE | MPOL_MF_STRICT));
    TRY(msync(b, n, MS_INVALIDATE | MS_SYNC));
    TRY(syscall(SYS_remap_file_pages, b, 4096, 0, 1, 0));
    TRY(syscall(SYS_remap_file_pages, b, 4096, 0, 0, 0));  // back: the harness reads it
  }
  rt_log("r26_sweep: vmstat after: %s", Vm(keys, 6).c_str());
  // Poisoning only where we hold no capability (the kernel refuses then) and
  // only on a private page.
  if (capeff == "0000000000000000") {
    char* q = (char*)mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    q[0] = 1;
    TRY(madvise(q, 4096, MADV_HWPOISON));
    TRY(madvise(q, 4096, 101 /* MADV_SOFT_OFFLINE */));
    TRY(syscall(462 /* mseal */, q, 4096, 0));
  }
  // 4. prctl.
  TRY(prctl(PR_SET_MM, PR_SET_MM_START_CODE, 0x1000, 0, 0));
  TRY(prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0));
  TRY(prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0));
  TRY(prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0));
  TRY(prctl(0x59616d61 /* PR_SET_PTRACER */, (unsigned long)getppid(), 0, 0, 0));
  TRY(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0));
  TRY(prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0));
  TRY(prctl(67 /* PR_SET_MEMORY_MERGE */, 1, 0, 0, 0));
  TRY(prctl(57 /* PR_SET_IO_FLUSHER */, 1, 0, 0, 0));
  TRY(prctl(PR_SET_SPECULATION_CTRL, 2 /* PR_SPEC_L1D_FLUSH */, 1 << 1 /* ENABLE */, 0, 0));
  TRY(prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0));
  TRY(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, 21, 0, 0));
  // 5. Clocks, time, sync, quotas, handles, personality, hugetlb, groups.
  struct timex tx {};
  TRY(adjtimex(&tx));
  tx.modes = ADJ_FREQUENCY;
  TRY(adjtimex(&tx));
  TRY(syscall(SYS_clock_adjtime, CLOCK_REALTIME, &tx));
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  TRY(settimeofday(&tv, nullptr));
  TRY(syscall(SYS_syncfs, vfd));
  TRY(quotactl(QCMD(Q_SYNC, USRQUOTA), nullptr, 0, nullptr));
  TRY(quotactl(QCMD(Q_QUOTAOFF, USRQUOTA), "/dev/vda", 0, nullptr));
  struct {
    unsigned int bytes;
    int type;
    unsigned char h[128];
  } fh{128, 0, {}};
  int mount_id = 0;
  TRY(syscall(SYS_name_to_handle_at, AT_FDCWD, "/etc/passwd", &fh, &mount_id, 0));
  TRY(syscall(SYS_open_by_handle_at, AT_FDCWD, &fh, O_RDONLY));
  TRY(syscall(SYS_personality, 0xffffffff));
  TRY(syscall(SYS_memfd_create, "h", 4 /* MFD_HUGETLB */));
  TRY(mmap(nullptr, 2 << 20, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0) ==
      MAP_FAILED ? -1 : 0);
  TRY(setpgid(0, 0));
  TRY(setsid());
  TRY(syscall(SYS_membarrier, 1 /* GLOBAL */, 0, 0));
  TRY(syscall(SYS_acct, nullptr));
  TRY(syscall(SYS_swapoff, "/swap"));
  TRY(syscall(SYS_iopl, 3));
  TRY(syscall(SYS_ioperm, 0x80, 1, 1));
  TRY(syscall(SYS_vhangup));
  TRY(syscall(SYS_sethostname, "x", 1));
  TRY(syscall(SYS_fsopen, "tmpfs", 0));
  TRY(syscall(SYS_open_tree, AT_FDCWD, "/tmp", 1 /* OPEN_TREE_CLONE */));
  TRY(syscall(SYS_chroot, "/tmp"));
  TRY(syscall(SYS_mknod, "/tmp/rt26/n", S_IFCHR | 0666, makedev(1, 3)));
  TRY(open("/proc/sys/vm/drop_caches", O_WRONLY));
  TRY(open("/proc/self/timerslack_ns", O_WRONLY));
  TRY(open("/proc/self/coredump_filter", O_WRONLY));
  TRY(open("/sys/kernel/mm/transparent_hugepage/enabled", O_WRONLY));
  TRY(open("/dev/kvm", O_RDONLY));
  TRY(open("/dev/shm", O_RDONLY | O_DIRECTORY));
  TRY(syscall(SYS_link, "/tmp/rt26v/victim", "/tmp/rt26/hardlink"));
  TRY(syscall(SYS_symlink, "/tmp/rt26v/victim", "/tmp/rt26/symlink"));
  unlink("/tmp/rt26/symlink");
  TRY(syscall(SYS_rename, "/tmp/rt26v/victim", "/tmp/rt26/stolen"));
  TRY(syscall(SYS_inotify_init1, 0));
  close(vfd);
}

}  // namespace

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank == 0) Sweep(ctx);
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
