// The red-team battery, rounds 4 to 8 (redteam_test.cc has the scheme):
// amortization the short batches cannot see (private look-ahead, deferral),
// timer-interrupt storms, attacks on batch_progress and batch_drip themselves,
// forged drip replies, and the blame for exhausted memory and task limits.
#include <dirent.h>
#include <stdlib.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include <cstdio>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "gtest/gtest.h"
#include "kernels/harness/launch_test_util.h"
#include "kernels/harness/problem.h"
#include "kernels/harness/protocol.h"
#include "kernels/harness/redteam_test_util.h"

namespace pkforge::kernels {
// The battery's vocabulary (Expect, Accept, RT, cgroups), in every block below.
using namespace redteam;  // NOLINT(build/namespaces)
namespace {

// ---- round 4 (helper-redteam4, session 2026-12-04 21:05) -------------------------------------
// helper-notes/redteam-findings.md "ROUND 4" has the measurements.
// Benign: each call computes its own result into a private buffer and copies
// it into its output (barrier-free per-call epochs). Looks like the private
// look-ahead attacks below; must stay OK.
RT(control_private_scratch, {kOk})

// Amortization the short batches of batch_consistency cannot see: look-ahead
// fusion of K calls per exchange into PRIVATE memory (each call writes only
// its own output, so nothing is written ahead), K = 4, 8, or exactly the
// judge's short-batch length (one chunk per short batch, four per long one:
// the short/long ratio stays ~1); deferral in chunks of 8 whose end comes
// from the harness's own Cmd on the rank's stack. Seen OK at 4-14x up to
// b937fc9 (every progress probe consistent: done stays within a chunk of
// elapsed). Caught by the drip batches (batch_drip): where no call can see a
// later call's inputs, a call alone costs what the reference's does
// (3 drip batches slow, 5-13x free-running; 2026-12-05). Computing a chunk
// from the decoys would be WRONG_OUTPUT; never OK.
// K = 4 is pending: at 6ab1d6f / de5d894 OK ~4x in 2 of 2 (the lead) and 1 of
// 5 (helper-redteam6; 4.56x) runs: its drip calls (50-54 us vs the
// reference's 60-63, free 7-9 us) fit under batch_drip's allowance (the
// accepted residual on a 2-core host: a gain of ~2-4x over its own per-call
// algorithm on calls of a few us).
TEST(RedTeamPending, lookahead_private_k4) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "accepted residual (OK ~4x in some runs); PKFORGE_REDTEAM_PENDING=1 runs it";
  ExpectProgressCheat("lookahead_private_k4", true);
}
// Chunks of 8 and more sit near the edge of batch_drip's allowance on this
// 2-core host (their drip calls cost 50-65 us against the reference's 60-87
// with the hand-offs): CHEAT_DETECTED in 3 of 3 launches on a quiet host at
// 6ab1d6f, in 1 of 6 (lookahead_private_k8, OK 5.9-8.3x otherwise) beside a
// false-positive hunt's busy loops at 6cb2a48; at the final tree (mixed drip
// findings get up to 3 more drip batches) shortlen 3 of 4, defer_chunk_cmd and
// probe_two_chunk 4 of 4, k8 2 of 4 (pending below). So: convicted (or
// failing by its own fault) in at least one of four launches; without the
// drip batches they are OK in all (4-14x up to b937fc9).
//
// Six launches for a test in the suite: at f195737 defer_chunk_cmd was
// convicted in 6 of 13 local launches (OK 2.3-9.4x otherwise) and OK in 4 of
// 4 once on CI, a chance of ~7% a run with four; with six ~1.5%.
void ExpectCaughtOnceIn(const std::string& name, int launches) {
  std::vector<double> ok;
  for (int attempt = 0; attempt < launches; ++attempt) {
    Result r;
    Expect(name, {kProgressCheat, kOk, kTimeout, kWrong}, "", 10, "", 0, false, &r);
    if (r.status() != Result::OK) return;
    ok.push_back(r.speedup());
  }
  ADD_FAILURE() << name << ": OK in " << launches << " of " << launches << " launches, speedups "
                << fmt::format("{}", ok);
}
// Chunks of 8: CHEAT_DETECTED batch_drip in 2 of 4 at the final tree (OK
// 6-7x otherwise, 2 of 3 drip batches slow: flagged) - the accepted residual
// of chunked amortization near the drip allowance (docs/threat-model.md).
TEST(RedTeamPending, lookahead_private_k8) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "accepted residual (CHEAT 2 of 4, OK 6-7x); PKFORGE_REDTEAM_PENDING=1 runs it";
  ExpectCaughtOnceIn("lookahead_private_k8", 4);
}
// Pending since e248da4 (candidates at -O3, as the executor compiles them):
// OK in 4 of 4 launches at 13-17x (honest epoch 7.2x) in ctest at 06:56, the
// chunk work now too short for the probes' 25% rule and the drips' ~23 us
// allowance (round 10 finding 1). Caught once in four before.
TEST(RedTeamPending, lookahead_private_shortlen) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 10 finding 1 (OK 4 of 4 at -O3); PKFORGE_REDTEAM_PENDING=1 runs it";
  ExpectCaughtOnceIn("lookahead_private_shortlen", 4);
}
TEST(RedTeam, defer_chunk_cmd) { ExpectCaughtOnceIn("defer_chunk_cmd", 6); }

// A timer-interrupt storm on the ranks' CPU while the reference is timed:
// rank 0 arms ~1000-6000 one-shot timers (timerfds, or io_uring timeouts)
// at the end of the candidate batches that a reference batch follows, and is
// frozen while they fire; each expiry is an interrupt charged to whatever
// runs on that CPU, i.e. the reference. pkf_run is the naive reference: seen
// OK at 2-5x with no check failing or flagged (round 4 finding 1). Fixed in
// 9df51a7: candidate processes cannot create timerfds, POSIX timers, io_uring
// or AIO contexts (the storm is never armed: OK ~1x since). Not above 1.5x
// control_naive's speedup (any CHEAT_DETECTED, or a candidate failure when
// arming is refused, is fine too).
TEST(RedTeam, irq_storm_ref) {
  const double honest = HonestSpeedup();
  Expect("irq_storm_ref", {kCheatAny, kOk, kRuntime, Accept{Result::SETUP_ERROR, {}}}, "", 10, "",
         1.5 * honest);
}
// The same storm armed through io_uring (one ring, IORING_OP_TIMEOUT per
// expiry, no descriptor per timer): refusing timerfds alone is no defence.
TEST(RedTeam, irq_storm_uring) {
  const double honest = HonestSpeedup();
  Expect("irq_storm_uring", {kCheatAny, kOk, kRuntime, Accept{Result::SETUP_ERROR, {}}}, "", 10,
         "", 1.5 * honest);
}
// The storm on top of control_flag_epoch's honest barrier-free allreduce
// (~5x alone; with the storm 11-16x before the fix): bounded by 1.5x the
// honest algorithm's own speedup, measured in the same test, and at least
// 9x: on a loaded host (ctest -j2 on 2 cores) the yardstick read 2.3x and the
// candidate, whose timers were refused (the honest algorithm alone), 5.2x.
TEST(RedTeam, irq_storm_epoch) {
  Result r;
  Expect("control_flag_epoch", {kOk}, "", 10, "", 0, false, &r);
  const double honest = r.status() == Result::OK ? r.speedup() : 5.0;
  Expect("irq_storm_epoch", {kCheatAny, kOk, kRuntime, Accept{Result::SETUP_ERROR, {}}}, "", 10,
         "", std::max(1.5 * honest, 9.0));
}

// The storm aimed at the reference's correctness trials: the judge sizes
// timed batches from them (B = 2 ms / (fastest trial - o), at least 16) and
// draws short batches only when B > 16, so batch_consistency silently did
// not run; the timed batches (16 calls) were then fused whole. Seen before
// 9df51a7: B = 16, no batch_consistency line, OK 3.8-4.2x (round 4 finding
// 4). Since timers are refused the batches stay long and it is a whole-batch
// fuser (OK 12-19x at 9df51a7), caught since 93d7640 by batch_progress (round
// 5: 3/3 runs, every probe "behind").
TEST(RedTeam, shrink_batch_fuse) { ExpectProgressCheat("shrink_batch_fuse"); }

// ---- round 5 (helper-redteam5): attacks on batch_progress itself, source-aware -----------------
// helper-notes/redteam-findings.md "ROUND 5". Each fuses batches (one
// exchange for many calls) where it hopes no probe looks; all three are
// caught at 93d7640 (3/3 runs each): a probe's elapsed is a share of the
// candidate's FASTEST earlier long batch, and a fused batch is mostly the
// fixed wake-up (~200 us), so once one batch was fused every later probe -
// even on an honest batch - lands where nothing can be done yet.
// Window dodge: fused on every batch a probe cannot land on (warm-up, j < 5,
// short ones), the honest per-call algorithm (control_flag_epoch's) on the
// rest; the median would be a fused batch's.
TEST(RedTeam, probe_window_dodge) { ExpectProgressCheat("probe_window_dodge"); }
// Two chunks: the first 26% of the calls with one exchange, the rest with a
// second one, in place: >= 25% done wherever a probe lands after the first
// chunk ends, and one consistent probe of three keeps two "behind" below the
// 3/4 rule (flag only). OK in 8 of 12 runs at 8.4-21.6x at 93d7640 (18%: 1 of
// 10). Caught by batch_drip since 2026-12-05 (a drip call cannot see the
// chunk's other inputs).
TEST(RedTeam, probe_two_chunk) { ExpectCaughtOnceIn("probe_two_chunk", 6); }
// False-positive probe: an honest gemm_allreduce 12-22x faster than the host
// reference (each rank computes only its own product, vectorized, then sums
// the partials). Its probes must stay consistent: B >= 16 calls keep its
// batches at milliseconds, far above the ranks' wake-up.
TEST(RedTeam, control_fast_gemm) {
  ProblemScope scope("gemm_allreduce", "M=64,N=64,K=64");
  Expect("control_fast_gemm", {kOk});
}
// Fused until a probe shows itself (two SIGCONTs between batch starts), then
// honest on long batches: one anomalous probe is below the two-probe rule.
// With a probe drawn before each sample slot (timing_schedule.h), the first
// probe comes after about one sample, so fusing until it has been seen fuses
// about one sample: OK at the honest algorithm's speed (5.6x once, 11:40,
// against control_flag_epoch 5-8x), or CHEAT (its honest batches are timed
// against the fused span and read behind). Either way no forged gain: OK is
// bounded by 1.5x the honest epoch's speedup, as its EXPECT says.
TEST(RedTeam, probe_adapt_after_stop) {
  Result h;
  Expect("control_flag_epoch", {kOk, Cheat({"batch_drip"})}, "", 10, "", 0, false, &h);
  const double honest = h.status() == Result::OK ? h.speedup() : 5.0;
  for (int i = 0; i < 2; ++i)
    Expect("probe_adapt_after_stop", {kCheatAny, kOk}, "", 10, "", std::max(1.5 * honest, 9.0));
}

// Blame through the kernel: a 2.4 s io_uring interrupt storm aimed at the
// reference freeze that follows the candidate's second batch (a reference
// freeze has 2 s, then HARNESS_ERROR). Held when run (round 4): the storm
// leaves the CPU a few percent and a freeze needs ~50 us of it; the storm
// slowed batches of both sides instead (OK 0.4x). Never HARNESS_ERROR. Since
// 9df51a7 io_uring is refused to candidates and no storm is armed (cheap);
// should that regress, this runs a 2.4 s storm on one CPU.
TEST(RedTeam, storm_blame_freeze) {
  const double honest = HonestSpeedup();
  Expect("storm_blame_freeze", {kTimeout, kRuntime, kCheatAny, kOk}, "", 10, "", 1.5 * honest);
}

// ---- round 6 (helper-redteam6): attacks on batch_drip itself, source-aware --------------------
// helper-notes/redteam-findings.md "ROUND 6". Measured at 48cf809 (generic
// command, 2 cores shared with builds; honest control_flag_epoch 4.6-6.9x).
// An attack of this round is bounded by 1.5x the honest epoch algorithm's
// speedup measured in the same test (at least 9x, as irq_storm_epoch).
void ExpectBelowHonestEpoch(const std::string& name) {
  Result r;
  Expect("control_flag_epoch", {kOk, Cheat({"batch_drip"})}, "", 10, "", 0, false, &r);
  const double honest = r.status() == Result::OK ? r.speedup() : 5.0;
  Expect(name, {kProgressCheat, kOk}, "", 10, "", std::max(1.5 * honest, 9.0));
}
// Private look-ahead in chunks of 8 over the barrier-free epoch exchange (no
// drip awareness): every drip call misses its cache and computes a chunk from
// decoys, ~50 us a call against the honest epoch's ~44: slow on 3 of 3 drip
// batches in 3 of 3 runs (CHEAT_DETECTED batch_drip at 10.9-12.0x
// free-running, reference free median ~36 us). Would pass where that
// median is below ~33 us (finding 1). Pending since de5d894 (the reference's
// free time from its adjacent batch, ~33 us: a larger allowance): CHEAT
// batch_drip 3 of 5, OK 2 of 5 (8.1x, and ~2.5-2.8 us a call) - the accepted
// residual (chunked amortization of calls of a few us) per the lead.
TEST(RedTeamPending, drip_chunk_epoch_k8) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "accepted residual (OK 8.1x in 2 of 5); PKFORGE_REDTEAM_PENDING=1 runs it";
  ExpectBelowHonestEpoch("drip_chunk_epoch_k8");
}
// The same, honest (one exchange a call) on drip batches it tells by the
// hand-off gap (> 3 us between calls): its drip calls cost what the honest
// control's do (~45 us), so batch_drip judges it like the control: OK 10.0x,
// 8.9x (k8), 11.6x (k16) when the reference's free median was ~36-37.5 us;
// CHEAT batch_drip at 38.6 us, batch_progress otherwise (2 behind + 1
// consistent is only a flag). Finding 1: the drip rule cannot tell a 2x
// amortizer from the honest algorithm at the fast end. At de5d894 (the
// reference's free time from its batch next to the drip, ~33 us: a larger
// allowance), with drip batches told by the kOpDrip command on the stack:
// k8 OK 17.7 / 15.2 / 20.8x, k16 OK 22.0 / 25.7 / 16.0x (3/3 each).
TEST(RedTeamPending, drip_aware_epoch_k8) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 6 finding 1 (OK 8.9-10x); PKFORGE_REDTEAM_PENDING=1 runs it";
  ExpectBelowHonestEpoch("drip_aware_epoch_k8");
}
TEST(RedTeamPending, drip_aware_epoch_k16) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 6 finding 1 (OK 11.6x); PKFORGE_REDTEAM_PENDING=1 runs it";
  ExpectBelowHonestEpoch("drip_aware_epoch_k16");
}
// Every drip batch "starved" (inconclusive) by the candidate's own doing: a
// drip batch is told by a cached call whose inputs changed (the decoys were
// replaced); there a private spinner thread, started at call 1 and joined in
// the batch's last call, holds the CPU while the ranks' main threads wait
// runnable (sched_yield). Its CPU time is in neither of RanksCpuNs's
// per-thread readings (it did not exist at either), so `used` < 0.5 while
// the main threads' run-queue wait share is far above the least one:
// OK 7.6-9.9x (chunks of 4), batch_drip "3 inconclusive" in every run.
// Fixed since 6ab1d6f (ProcessCpuNs counts exited threads): CHEAT_DETECTED
// batch_drip (slow) 5 of 5 at de5d894.
TEST(RedTeam, drip_starve_spinner) { ExpectProgressCheat("drip_starve_spinner"); }

// The same starved drip batches (told by the kOpDrip command on the stack)
// on top of probe_two_chunk's fusion (each batch in two in-place exchanges):
// OK 20.1 / 16.5 / 10.7 / 11.7 / 12.8 / 15.3x in 6 of 9 runs (CHEAT
// batch_progress 3 of 9: two probes "behind"); every drip batch
// inconclusive, most probes inconclusive (the stop lands after the fused
// batch ended: 100% done at 104-141% of the fastest span). Fixed since
// 6ab1d6f: CHEAT_DETECTED batch_drip 5 of 5 at de5d894.
TEST(RedTeam, drip_starve_two_chunk) { ExpectProgressCheat("drip_starve_two_chunk"); }
// Against a fix that counts the process's CPU time from /proc/<pid>/stat
// (10 ms ticks): the spinner stops 2 ms before the process's next 10 ms of
// CPU time (CLOCK_PROCESS_CPUTIME_ID), so the tick total does not move. On
// the lead's working tree of 01:08 (ProcessCpuNs, drip lead 2): OK 12.45 /
// 14.05 / 10.45x, CHEAT batch_progress once; every drip batch inconclusive,
// but mostly not by the spinner (its budget was negative in 7 of 9 drip
// batches): that tree's drip batches were inconclusive for honest controls
// too (the watchers, off the calls' path, hold the shared CPU: "starved").
// At de5d894 (ProcessCpuNs counts exited threads): OK 15.2 / 22.6 / 24.9x
// (3/3; e.g. 2 drip batches inconclusive + 1 consistent).
TEST(RedTeamPending, drip_starve_tick) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 6 finding 2 (OK 10.5-14x on the lead's tree); PKFORGE_REDTEAM_PENDING=1";
  ExpectBelowHonestEpoch("drip_starve_tick");
}
// Whole-batch fusion (batch_lookahead_fuse) on free-running batches, honest
// (one epoch exchange a call) on drip batches told by the kOpDrip command on
// the stack. At de5d894: OK 14.20 / 13.27 / 13.11 / 12.13x (4/4): every
// progress probe "0% done at 43-89%" but inconclusive since c92a882 (the
// fastest batch is under 1 ms), every drip batch consistent (45 us vs the
// reference's 61-65, free 33: allowance ~18 us). Caught since 6cb2a48 (probes
// on short batches again, inconclusive only where the main threads had hardly
// run or the stop came late; mixed findings get more probes): CHEAT_DETECTED
// batch_progress 5 of 5 at 13.3-14.9x claimed.
TEST(RedTeam, drip_aware_fuse) { ExpectProgressCheat("drip_aware_fuse"); }
// Starving drip batches with a TRUSTED process's CPU time instead: each drip
// call wakes its rank's watcher (FUTEX_WAKE on the candidate's own drip word,
// then sched_yield) for 300 us before its honest exchange. Held: 3/3
// CHEAT_DETECTED batch_drip (373 us a drip call, slow; the candidate's own
// wake/yield loop is most of the CPU time, so it is not "starved").
TEST(RedTeam, drip_watcher_storm) { ExpectProgressCheat("drip_watcher_storm"); }

// ---- round 7 (helper-redteam7, session 11): source-aware, against b54dfb2 ------------------
// helper-notes/redteam-findings.md "ROUND 7" has the measurements.
// Blame through the drip watcher: at the first call of a drip batch every
// candidate rank writes a well-formed kOpDrip reply on its reply pipe and
// blocks in the call. The judge accepts the replies and freezes the
// candidate, then waits for the reference ranks' watchers, which wait for a
// return that never comes until their own limit (timeout_s from when they
// started: always after Collect's deadline). At b54dfb2: HARNESS_ERROR
// "reference ranks 0,1,2 gave no reply within 10 s in PHASE_TIMING" 3 of 3.
// Fixed (session 11): the judge sets the reference side's drip_stop once the
// candidate's drip round is over; a watcher still waiting stops, and the
// reply is CHEAT_DETECTED result_channel.
TEST(RedTeam, drip_forged_reply_blame) {
  // Any conviction or failure of the candidate is right (after a fix that stops the watchers, the
  // unreleased calls still hold decoys: input_mutation / timed_output_reverify may fire first).
  Expect("drip_forged_reply_blame", {kCheatAny, kTimeout, kRuntime});
}
// Benign: every call handed to one worker thread of the rank (the honest
// epoch algorithm), the main thread asleep until it is done. OK 1.30-1.37x
// 6 of 6 at b54dfb2, probes and drips consistent.
RT(control_worker_per_call, {kOk})
// Whole-batch fusion done by one worker thread per rank while the main
// thread sleeps, the workers summing in call order and taking turns every 8
// calls (all ranks' outputs advance together: probes read steady progress,
// late ones main_idle), honest on drip batches, which read "starved" (the
// candidate's least main-thread wait, the baseline, is ~0: its main threads
// sleep in timed batches). At b54dfb2: OK in 8 of 10 launches at 7.5-10.9x
// (honest epoch 6.3-6.9x in the same minutes), 5-6 of 6 drip batches
// inconclusive, at most 2 of 7 probes behind; world 2, 8 and bf16 alike.
// At 3375167 (drip batches starved only by other processes): its drips are
// conclusive (consistent), OK 3 of 9 at 9.4-10.3x (load 1.5-2.3).
TEST(RedTeamPending, worker_turns_fuse) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 7 finding 3 (OK 8 of 10, 7.5-10.9x); PKFORGE_REDTEAM_PENDING=1";
  ExpectProgressCheat("worker_turns_fuse");
}
// The probe schedule leaks: a probed pair always runs the reference first,
// and the reference ranks' voluntary context switches (/proc/<ref>/status,
// readable to anyone) tell the candidate whether the reference ran since its
// last call. It fuses exactly the candidate-first batches (never probed;
// 12 of 12 inferred right in a logged run) and is honest elsewhere. Held at
// b54dfb2 (CHEAT_DETECTED batch_progress 10 of 11, OK 5.8x once): the honest
// batches' probes are timed against the fused batches' shorter span (the
// global fastest span, as for probe_window_dodge) and look behind. Guards
// that side effect: should probes become relative to each batch's own pace,
// the leak alone makes them avoidable.
TEST(RedTeam, probe_order_leak_fuse) { ExpectBelowHonestEpoch("probe_order_leak_fuse"); }
// tmpfs_file_oom_blame (a /dev/shm file fills the memory cgroup in
// pkf_setup, 8 MiB short of the limit) at the DEFAULT size (allreduce
// 1024 x 1024 f32, 1 GiB cgroup): the reference ranks' next allocations
// (snapshots of 4 MiB outputs) exceed the headroom; the OOM killer takes the
// candidate ranks first, which frees nothing (the file stays), then a
// reference rank: HARNESS_ERROR "reference rank 1 killed by signal 9 during
// PHASE_CORRECTNESS" 3 of 3 at b54dfb2 (bare launch; the executor turns an
// OOM kill in its sandbox into RUNTIME_ERROR, docs/threat-model.md). The
// battery runs it at tiny, where nothing trusted allocates 8 MiB later.
// At 3375167 (snapshot and drip buffers committed in the reference's setup)
// still 2 of 2: the data memfds' pages are first touched by the reference's
// input generation (kOpGen of each slot), after candidate code ran.
// Fixed (session 11): every shared segment's pages are allocated when the
// judge creates it (before any rank), and a rank the kernel's OOM killer
// took (/proc/vmstat oom_kill grew) is RUNTIME_ERROR (out of memory), as
// the executor reports OOM kills: RUNTIME_ERROR 3 of 3 since.
// Round 8 (d48f94f): with every segment committed up front an HONEST
// candidate needs more than 1 GiB here (control_naive: RUNTIME_ERROR "out
// of memory during PHASE_SETUP" in a 1 GiB cgroup, peak 1815 MiB in a 3 GiB
// one), so at 1 GiB it tested only the OOM -> RUNTIME_ERROR mapping: 3 GiB now,
// where tmpfs_file_oom_blame is OK (nothing trusted first-touches pages
// after candidate code ran; the file was 1246 MiB).
TEST(RedTeam, tmpfs_file_oom_blame_default_size) {
  const std::string cg = MemoryCgroup("pkf_redteam_oom7", int64_t{3} << 30);
  if (cg.empty()) GTEST_SKIP() << "cannot create a memory cgroup here";
  {
    ProblemScope scope("allreduce", "default");
    Expect("tmpfs_file_oom_blame", {kRuntime, Accept{Result::SETUP_ERROR, {}}, kTimeout, kOk}, "",
           30, cg + "/cgroup.procs", 3.0);
  }
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).rfind("pkf-redteam-oom-", 0) == 0)
        unlink(("/dev/shm/" + std::string(e->d_name)).c_str());
    closedir(d);
  }
  RemoveCgroup(cg);
}
// A pids cgroup of its own (v1 pids controller or v2) with pids.max = `tasks`,
// under this process's; "" when it cannot be made (the test is skipped then).
std::string PidsCgroup(const std::string& name, int tasks) {
  return LimitedCgroup(name, "pids", "pids.max", "pids.max", tasks);
}
// Idle helper threads (allowed) created in pkf_setup until the evaluation's
// task limit is reached: the reference's drip watcher (rank.cc SelfDrip,
// std::thread per drip batch) cannot start, the uncaught exception aborts the
// reference rank. At b54dfb2: HARNESS_ERROR "reference rank 2 killed by
// signal 6 (Aborted) during PHASE_TIMING" with pids.max 300 (2 of 2, 0.5 s)
// and 4120 (the executor's run sandbox: 4096 + bwrap's; 5.6 s).
// Fixed (session 11): the reference's drip watcher is one thread started in
// its setup, before any candidate code runs (rank.cc ParkedThread), and its
// snapshot and drip buffers are committed there too.
TEST(RedTeam, pids_exhaust_blame) {
  const std::string cg = PidsCgroup("pkf_redteam_pids7", 300);
  if (cg.empty()) GTEST_SKIP() << "cannot create a pids cgroup here";
  Expect("pids_exhaust_blame", {kOk, kRuntime, Accept{Result::SETUP_ERROR, {}}}, "", 10,
         cg + "/cgroup.procs", 1.5);
  RemoveCgroup(cg);
}

// ---- round 8 (helper-redteam8, session 11, against d48f94f) ---------------------------------
// helper-notes/redteam-findings.md "ROUND 8" has the measurements.

// Whether a batch_drip finding was conclusive at least once (a "(slow)" or
// "(consistent)" drip batch). A candidate whose every drip batch is
// "inconclusive" (starved) by its own doing makes the check silent.
bool AnyConclusiveDrip(const Result& r) {
  for (const auto& c : r.cheat_checks())
    if (c.check() == "batch_drip" && (c.detail().find("(slow)") != std::string::npos ||
                                      c.detail().find("(consistent)") != std::string::npos))
      return true;
  return false;
}
// A conviction (by the progress/drip checks, or outlived_call for the
// attempt to start a process), or an OK whose drip batches were judged at
// least once (the lead's tree of 04:50: CHEAT_DETECTED outlived_call "tried
// to start a process during PHASE_TIMING", 2 of 2 each); 3
// launches without a conclusive drip batch fail (honest controls beside a
// busy loop had 1 inconclusive drip batch of 3 at most, round 8).
void ExpectDripConclusive(const std::string& name) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    Result r;
    // outlived_call: a fixed judge may refuse (and convict) the fork itself.
    Expect(name, {kProgressCheat, Cheat({"outlived_call"}), kOk}, "", 10, "", 0, false, &r);
    if (r.status() != Result::OK || AnyConclusiveDrip(r)) return;
  }
  ADD_FAILURE() << name << ": 3 launches whose drip batches were all inconclusive";
}

// Every drip batch "starved" by a spinner PROCESS: at call 0 of a drip batch
// (the kOpDrip command on the stack) each rank forks a child that spins on
// the rank's CPU until the batch's last call, which stops and reaps it (no
// process outlives a call). judge_internal.h RanksCpuNs reads the rank
// processes only (live threads, or utime+stime with exited threads); a
// child's CPU is in neither (the parent's cutime, unread, once reaped), so
// the CPU it took reads as another process's: foreign = min(main-thread wait
// share, 1 - used) > 0.25 on every drip batch (judge_timing.cc DripPair) ->
// all inconclusive -> batch_drip silent. Free batches: drip_aware_epoch_k16's
// look-ahead in chunks of 16. At d48f94f: OK 15.54 / 15.15x with 6 of 6
// drip batches inconclusive (drip calls of 74-3980 us against the
// reference's 53-65), CHEAT batch_progress once; control_flag_epoch OK
// 7.21 / 7.20 / 7.27x, its drips consistent 9 of 9.
// Fixed (session 11, after round 8): the process ban is in the base seccomp
// filter, loaded before the candidate's library; any fork after that kills
// the rank: CHEAT_DETECTED outlived_call.
TEST(RedTeam, drip_starve_child_k16) {
  ExpectDripConclusive("drip_starve_child_k16");
}
// The same child spinner on top of probe_two_chunk's fusion (each batch in
// two in-place exchanges): at d48f94f CHEAT_DETECTED batch_progress (the
// probes still see the fusion); its drip batches starved the same way.
// Fixed (session 11, after round 8): the process ban is in the base seccomp
// filter, loaded before the candidate's library; any fork after that kills
// the rank: CHEAT_DETECTED outlived_call.
TEST(RedTeam, drip_starve_child) {
  ExpectDripConclusive("drip_starve_child");
}

// Against the fix of the above under way in the lead's tree (a second
// seccomp filter after pkf_setup, loaded with TSYNC, refusing fork, vfork
// and clone without CLONE_THREAD): a thread started in pkf_setup installs
// an allow-all filter of its own and parks, so TSYNC cannot sync it; every
// call then forks a child that exits at once, outputs written only when the
// fork worked on every rank. Against the lead's tree of 04:45 (worker
// linked then): SETUP_ERROR "loading the no-new-process filter: Operation
// canceled" - held, the candidate's fault. At d48f94f (no such filter) fork
// works: OK. Un-gate (RedTeam) once that filter is committed.
// Fixed (session 11, after round 8): the process ban is in the base seccomp
// filter, loaded before the candidate's library; any fork after that kills
// the rank: CHEAT_DETECTED outlived_call.
TEST(RedTeam, seccomp_tsync_block) {
  Expect("seccomp_tsync_block", {Accept{Result::SETUP_ERROR, {}}, kWrong, Cheat({"outlived_call"})});
}

// The same filter neutered from inside (round 8 finding 4): pkf_setup
// installs, on every thread (TSYNC: the chains stay identical, so the
// harness's TSYNC succeeds), a filter answering seccomp(2) and
// prctl(PR_SET_SECCOMP) with SECCOMP_RET_ERRNO | 0 = "success": the
// harness's later load installs nothing. Gated as above. Against the lead's
// tree of 04:47: OK (fork worked on every rank, every call).
// Fixed (session 11, after round 8): the process ban is in the base seccomp
// filter, loaded before the candidate's library; any fork after that kills
// the rank: CHEAT_DETECTED outlived_call.
TEST(RedTeam, seccomp_neuter_forkban) {
  Expect("seccomp_neuter_forkban",
         {kWrong, Cheat({"outlived_call"}), Accept{Result::SETUP_ERROR, {}}});
}
// drip_starve_child_k16 with that filter: the spinner process is back.
// Fixed (session 11, after round 8): the process ban is in the base seccomp
// filter, loaded before the candidate's library; any fork after that kills
// the rank: CHEAT_DETECTED outlived_call.
TEST(RedTeam, drip_starve_child_neuter_k16) {
  ExpectDripConclusive("drip_starve_child_neuter_k16");
}

// 0c35a73 commits every shared segment when the judge creates it
// (fallocate), but the candidate holds its own segments' memfds (O_RDWR,
// sealed only against shrink/grow): in pkf_setup each rank punches them out
// again (FALLOC_FL_PUNCH_HOLE: data 144 MiB, scratch 48 MiB, control), then
// rank 0 fills its memory cgroup with a /dev/shm file (as
// tmpfs_file_oom_blame). The reference's next writes to the candidate's
// segments fault the pages in at the limit: at d48f94f (3 GiB cgroup,
// default size) RUNTIME_ERROR "out of memory during PHASE_CORRECTNESS: the
// kernel's OOM killer killed reference rank 1": the pre-allocation was
// undone, the OOM rule (a rank killed while /proc/vmstat oom_kill grew)
// holds. tmpfs_file_oom_blame without the punch: OK (the pre-allocation
// holds alone).
TEST(RedTeam, punch_hole_oom_blame_default_size) {
  const std::string cg = MemoryCgroup("pkf_redteam_oom8", int64_t{3} << 30);
  if (cg.empty()) GTEST_SKIP() << "cannot create a memory cgroup here";
  {
    ProblemScope scope("allreduce", "default");
    Expect("punch_hole_oom_blame", {kRuntime, Accept{Result::SETUP_ERROR, {}}, kTimeout, kOk}, "",
           30, cg + "/cgroup.procs", 3.0);
  }
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).rfind("pkf-redteam-oom-", 0) == 0)
        unlink(("/dev/shm/" + std::string(e->d_name)).c_str());
    closedir(d);
  }
  RemoveCgroup(cg);
}

}  // namespace
}  // namespace pkforge::kernels
