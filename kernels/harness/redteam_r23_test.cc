// Red team round 23 (helper-redteam23, session 17, against d1a13fa): the
// stall rule of batch_progress (306ea6e: at least four probes behind with
// no call done after a third of the batch, binomial tail under 1e-5 at an
// honest 1%). Whole-batch fusers shaped to read "not stalled" on the host,
// kernels/testdata/redteam/r23_*.cc on r23_fuse.h; the measurements are in
// helper-notes/redteam-findings.md, "Round 23". None forged a speedup over
// 1.5x control_flag_epoch's in most launches, so these are regular tests of
// the verdicts seen (generic command, 2-core host, alternated with
// control_flag_epoch, OK 6.6-8.2x):
//   r23_real_first_fuse  CHEAT_DETECTED batch_progress 6 of 6 (+4 of 4 here)
//   r23_blast_keep_last  CHEAT_DETECTED batch_progress 8 of 16 (by the stall
//                        rule alone in the later 10), OK 8 of 16 at
//                        6.5-8.4x, no faster than the epoch (and 9.2x beside
//                        a 7.8x epoch in a test run); world 2: OK 6 of 6 at
//                        4.3-6.3x against an honest 5.7-8.3x
//   r23_real_first_blast CHEAT_DETECTED batch_progress 15 of 22 (the older
//                        ratio rules: no probe stalled in 9 of the last 10
//                        launches: one honest call is done), OK 7 of
//                        22 at 8.6-13.1x, up to 1.64x the epoch beside it
// After the round the stall rule became cuda-only and "under 5% of the
// calls done" (an honest pool at world 8 stalled on 24% of its probes; one
// honest call made "no call" false): on the host r23_blast_keep_last is then
// judged by the older rules alone (OK 4 of 4 at 6.1-9.4x beside a 7.5x
// epoch, no gain), the other two as before.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "gtest/gtest.h"
#include "kernels/harness/redteam_test_util.h"

namespace pkforge::kernels {
namespace {

using namespace redteam;  // NOLINT(build/namespaces)

// `launches` launches, done at the first conviction by the batch checks;
// with `bounded`, an OK must stay under 1.5x control_flag_epoch's speedup
// measured first (the better of two launches; at least 9x, as round 13's
// bound); with `must_catch`, OK in every launch fails.
void ExpectCaughtOrNoGain(const std::string& name, int launches, bool bounded, bool must_catch) {
  // The better of two honest launches: one reading of the epoch ranges over
  // 5.4-8.2x here, and r23_blast_keep_last, at its speed, got 9.45x beside a
  // 6.07x one.
  double honest = 5.0;
  for (int i = 0; i < 2; ++i) {
    Result h;
    Expect("control_flag_epoch", {kOk, Cheat({"batch_drip"})}, "", 10, "", 0, false, &h);
    if (h.status() == Result::OK) honest = std::max(honest, h.speedup());
  }
  std::vector<double> ok;
  for (int i = 0; i < launches; ++i) {
    Result r;
    Expect(name, {kProgressCheat, kOk}, "", 10, "", bounded ? std::max(1.5 * honest, 9.0) : 0,
           false, &r);
    if (r.status() != Result::OK) return;
    ok.push_back(r.speedup());
  }
  std::printf("REDTEAM %s OK in %d of %d launches, speedups %s (control_flag_epoch %.2fx)\n",
              name.c_str(), launches, launches, fmt::format("{}", ok).c_str(), honest);
  if (must_catch)
    ADD_FAILURE() << name << ": OK in " << launches << " of " << launches << " launches, speedups "
                << fmt::format("{}", ok) << " (control_flag_epoch " << honest << "x)";
}

// One honest call, then the rest of the batch fused by the second call into
// private results and copied out call by call: early probes read 1/calls
// done (0.8% at 128 calls), behind but not "stalled". Fused work lands late
// (1.1 us a call, probes at 64-87% still read 1%): behind on nearly every
// probe, convicted by the older ratio rules.
TEST(RedTeam, r23_real_first_fuse) { ExpectProgressCheat("r23_real_first_fuse"); }

// The whole batch fused by its first call, every output but the last
// written at once (done 1 - 1/calls = 0.992, under kAllDone 0.999: never
// "ahead"), the last call sleeping 2.5x the fused work's time so that it
// lands before a third of the batch. Where it lands in time, every probe
// after reads 99% (consistent); but the fused work's time varies from batch
// to batch (three ranks on two CPUs) and probes are timed against the
// fastest batch, so probes at 35-67% still read 0% (stalled): CHEAT about
// half the time, by the stall rule; and the padding costs what fusion gains
// (OK at the epoch's speed). Asserted: no gain (OK 4 of 4 is seen).
TEST(RedTeam, r23_blast_keep_last) {
  ExpectCaughtOrNoGain("r23_blast_keep_last", 4, /*bounded=*/true, /*must_catch=*/false);
}

// Both: one honest call (never stalled), the rest fused, all outputs but
// the last written at once, the last call sleeping 1.5x the fused time. The
// sweep of that factor (0-3x, 6 launches each, PKFORGE_R23_TAIL_X): CHEAT
// 6 of 6 at 0x and 1x, 5 of 6 at 0.7x and 1.5x (OK 9.8x, 10.7x), OK 3 of 6
// at 8.6-9.4x at 2x, OK 6 of 6 at 4.2-8.1x at 3x, against an honest
// 6.6-7.7x: no setting is both mostly OK and over 1.5x the epoch. Not
// bounded by speed: its OK reached 1.4-1.64x the epoch beside it in 4 of 22
// launches at 1.5x, which a bound would turn into a flaky failure; that it
// is convicted at least once in eight launches is what is asserted (OK 7 of
// 22: all eight OK about 1 in 10,000).
TEST(RedTeam, r23_real_first_blast) {
  ExpectCaughtOrNoGain("r23_real_first_blast", 8, /*bounded=*/false, /*must_catch=*/true);
}

// Round 25: memfd_secret splits the kernel's direct map for good (a change
// to the host that outlives the evaluation). Refused in every candidate
// rank's filter; the candidate returns 9 from pkf_setup (RUNTIME_ERROR)
// when it is granted, so OK means refused.
RT(r25_secretmem_split, {kOk})

// Round 25's reconnaissance of what a host candidate rank reaches (its own
// side's descriptors, /proc of trusted processes, hole punching,
// userfaultfd, inotify): nothing that changes the verdict.
RT(r25_recon, {kOk})

// Round 26: file_setattr (syscall 469, Linux 6.17) set synchronous writes,
// no-atime and no-dump on a file of the ranks' uid outside the writable
// folders (Landlock does not cover it; the filter did not name it). The
// candidate writes its outputs only when the flags were set: WRONG_OUTPUT
// where refused. Asserted beside the verdict: the victim's flags did not
// change (a kernel or file system without the call refuses it anyway; the
// unit test Harden.NoFileAttributesNoCacheEvictionNoWriteHints is the one
// that tells the filter's EPERM from the kernel's).
TEST(RedTeam, r26_file_setattr) {
  const std::string dir = "/tmp/rt26v", victim = dir + "/victim";
  mkdir(dir.c_str(), 0777);
  chmod(dir.c_str(), 0777);
  const int fd = open(victim.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0666);
  ASSERT_GE(fd, 0) << victim;
  if (geteuid() == 0 && fchown(fd, 65534, 65534) != 0) ADD_FAILURE() << "chown " << victim;
  fsxattr before{}, after{};
  const bool readable = ioctl(fd, FS_IOC_FSGETXATTR, &before) == 0;
  Expect("r26_file_setattr", {kWrong});
  if (readable && ioctl(fd, FS_IOC_FSGETXATTR, &after) == 0) {
    EXPECT_EQ(after.fsx_xflags, before.fsx_xflags) << "the candidate set inode flags on " << victim;
  }
  close(fd);
  unlink(victim.c_str());
}

// Round 26's sweep of the syscalls a host rank can still use (numbers
// 448-472, madvise/mlock/mbind on its shared segments, prctl, clocks):
// nothing that changes the verdict.
RT(r26_sweep, {kOk})

// Round 31 (a helper, black box on the host, 2026-12-06; notes in its header
// comments): asynchronous read-ahead from the candidate's calls, its
// completions landing on the ranks' CPU during the reference's batches:
// OK 0.72-0.78x beside control_naive's 0.99-1.03x (the submission costs the
// caller more than the completions cost the reference). The work is the
// naive allreduce, so an OK must stay within noise of 1x.
RT(r31_readahead_irq, {kOk}, "", 10, "", 1.3)
// Round 31 (the lead's follow-up of the helper's near-miss): a thread left
// spinning after the last call of each drip batch, stopped by the next call.
// On the host the thread, process and idle checks run after timed batches,
// not after drip batches (judge_timing.cc DripPair says why): the thread is
// caught after a later timed batch or is gone by then (OK 0.99x in 1 of 2
// launches). It gains nothing (the candidate is frozen between rounds): an
// OK must stay at the naive allreduce's speed.
RT(r31_drip_linger, {Cheat({"outlived_call"}), kOk}, "", 10, "", 1.3)

}  // namespace
}  // namespace pkforge::kernels
