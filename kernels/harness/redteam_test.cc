// The red-team battery (issue 16): adversarial candidates
// (kernels/testdata/redteam/*.cc, each states its attack and expected verdict)
// evaluated end to end by the real pkforge-worker, host backend, allreduce,
// world size 3, f32, tiny. Each test asserts
//   - the judge's stdout is exactly its one JSON result line (no forged line,
//     no missing result),
//   - the status is one the defended judge may give for that attack (never OK
//     for an attack, never HARNESS_ERROR for anything a candidate did) and,
//     for CHEAT_DETECTED, that the check that fired is one of the expected,
//   - no process the candidate started is alive after the launch returned.
// Benign controls must stay OK. README.md next to the candidates has the
// table of what the judge catches today.
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

// ---- benign controls -------------------------------------------------------
RT(control_naive, {kOk})
RT(control_idle_helper_thread, {kOk})
RT(control_private_thread, {kOk})
RT(control_helper_pool, {kOk})

// ---- reaching trusted processes (gated: outputs only if the attack worked) --
RT(proc_fd_ref_segment, {kWrong})
RT(proc_fd_ref_keep_mapped, {kWrong, Cheat({"reference_isolation"})})
RT(proc_fd_judge, {kWrong})
RT(proc_map_files_judge, {kWrong})
RT(proc_environ, {kWrong})
RT(proc_mem_ref, {kWrong})
RT(proc_mem_judge_write, {kWrong})
RT(judge_stdout_write, {kWrong})
RT(ptrace_ref, {kWrong})
RT(process_vm_readv_ref, {kWrong})
RT(pidfd_getfd_ref, {kWrong})
// Signals aimed at trusted processes: the candidate writes nothing, so an
// unaffected judge says WRONG_OUTPUT; anything else means the signal landed.
RT(sigstop_ref, {kWrong})
RT(sigkill_ref, {kWrong})
RT(kill_judge, {kWrong})
RT(kill_pgrp_zero, {kWrong})
// (kill_neg_pgid forks the killer: since session 11 that alone is CHEAT outlived_call.)
RT(kill_neg_pgid, {kWrong, Cheat({"outlived_call"})})
RT(fsetown_sigio, {kWrong})
RT(fiosetown_pgrp, {kWrong})
RT(prlimit_ref, {kWrong})

// ---- starving the reference --------------------------------------------------
RT(setpriority_ref, {kWrong})
RT(affinity_ref, {kWrong})
RT(sched_idle_ref, {kWrong})
RT(cgroup_write_access, {kWrong})
RT(hog_threads_setup, {kWrong, Cheat({"frozen_while_idle"})})
RT(hog_processes_setup, {Cheat({"outlived_call", "leftover_process"})})

// ---- forging the result channel ----------------------------------------------
RT(forge_json_stdio, {kWrong})
RT(forge_json_every_fd, {Cheat({"result_channel"})})
RT(forge_reply_early, {Cheat({"timed_output_reverify", "result_channel", "wallclock_crosscheck"})})
RT(flood_output_crash, {kRuntime})

// ---- forging times ---------------------------------------------------------------
RT(clock_patch_libc, {Cheat({"wallclock_crosscheck"})})
RT(forge_timing_stack, {Cheat({"wallclock_crosscheck"})})
RT(early_return_thread, {Cheat({"timed_output_reverify", "outlived_call"})})
// On a loaded host the freeze can outlast the children's 20 ms: they finish
// and exit first, inside the candidate's own time (seen once: OK at 0.016x).
// At ~4 ms per call its timing phase (128-call batches, then the single-call
// rounds of batch_consistency) can run past 10 s on a loaded 2-core host:
// TIMEOUT, its own (seen 1 in 3 at load 10, 2026-12-04 19:09).
RT(early_return_fork, {Cheat({"outlived_call", "timed_output_reverify"}), kOk, kTimeout}, "", 10,
   "", 0.5)
RT(sigalrm_late_write, {Cheat({"timed_output_reverify"})})

// ---- precomputation between calls, caching -------------------------------------
// Judged legitimate: the helper works on call k+1 *inside* the timed batch
// (the batch's wall time includes it; nothing runs between batches: frozen),
// i.e. ordinary pipelining across the calls of a batch. poison_at_start is
// checked on whole batches before the candidate runs.
// Since each host rank maps only its own data segment the helper cannot read
// its peers' next inputs: the candidate's wrong outputs are its own.
RT(precompute_next_call, {Cheat({"poison_at_start"}), kOk, kWrong})
RT(stale_seen_slots, {Cheat({"timed_output_reverify", "poison_unwritten"})})

// ---- escaping the freeze ------------------------------------------------------------
RT(timer_sigcont_self, {kWrong, Cheat({"frozen_while_idle"})})
RT(child_sigcont_parent, {kWrong, Cheat({"outlived_call", "frozen_while_idle"})})
RT(threads_at_call_time, {Cheat({"outlived_call"})})
RT(thread_swap, {Cheat({"timed_output_reverify", "outlived_call"})})
RT(clone_parent_escape,
   {kWrong, Cheat({"outlived_call", "frozen_while_idle", "leftover_process"})})

// ---- containment ------------------------------------------------------------------------
RT(deep_setsid_chain, {Cheat({"outlived_call", "leftover_process"})})
RT(fork_bomb_bounded, {Cheat({"outlived_call", "leftover_process"})})
RT(daemon_after_teardown, {Cheat({"leftover_process", "outlived_call"})})
RT(respawner_after_teardown, {Cheat({"leftover_process", "outlived_call"})})
RT(userns_escape, {Cheat({"leftover_process", "outlived_call"})})

// ---- blame: candidate faults, never the harness's -----------------------------------
RT(corrupt_control_block, {kTimeout, kRuntime}, "", 3)
RT(shrink_data_segment, {kWrong, kRuntime})
RT(shrink_control_block, {kTimeout, kRuntime}, "", 3)
RT(vfork_unfreezable, {kTimeout, Cheat({"outlived_call"})}, "", 3)

// ---- output policy --------------------------------------------------------------------------
RT(all_zeros, {kWrong})
RT(outputs_are_inputs, {kWrong})
RT(bf16_arith_on_f32, {kWrong})
RT(f16_arith_on_f32, {kWrong})
RT(bf16_in_batches_only, {Cheat({"timed_output_reverify"})})

// ---- lazy / unwritten outputs, input mutation ----------------------------------------------
RT(lazy_in_batches, {Cheat({"timed_output_reverify", "poison_unwritten"})})
RT(partial_write_in_batches, {Cheat({"timed_output_reverify", "poison_unwritten"})})
RT(skip_some_calls, {Cheat({"timed_output_reverify", "poison_unwritten"})})
RT(mutate_inputs_in_batches, {Cheat({"input_mutation", "timed_output_reverify"})})
// Since each host rank maps only its own data segment, the "peer's input" is
// an unused page of its own segment: no effect (OK at the reference's speed).
RT(mutate_peer_input, {kWrong, Cheat({"input_mutation", "timed_output_reverify"}), kOk}, "", 10,
   "", 3.0)

// ---- added 2026-12-04 15:00 session: held -------------------------------------------------
// Seccomp filter entered through the i386 (int 0x80) and x32 ABIs (gated).
// Since session 11 (round 9) a syscall of another ABI kills the whole rank:
// CHEAT_DETECTED outlived_call (the rank's SIGSYS).
RT(seccomp_foreign_abi, {kWrong, Cheat({"outlived_call"})})
// Bytes that are not UTF-8 in a failing rank's stderr tail (a proto3 string):
// the result must still be printed, with the candidate's own status.
RT(invalid_utf8_stderr, {kRuntime})
// Kernel-side async work (io_uring SQPOLL + one io-wq worker started in
// pkf_setup; linked timeout -> write of the outputs into the data memfd):
// nothing completes while the candidate is frozen. Since 9df51a7 io_uring is
// refused to candidate processes (round 4 irq_storm_uring): the candidate
// then computes every call itself, OK at the reference's speed.
RT(io_uring_deferred_write,
   {Cheat({"timed_output_reverify", "poison_unwritten", "outlived_call"}), kOk}, "", 10, "", 1.5)
// A forged kOpBatch reply ahead of the real one: the channel runs one reply
// ahead for the whole timing phase (caught at teardown, where the op differs).
RT(reply_one_ahead, {Cheat({"result_channel", "timed_output_reverify", "wallclock_crosscheck"})})
// Inputs changed by the kernel (fallocate PUNCH_HOLE on the data memfd), no store.
RT(punch_hole_inputs, {Cheat({"input_mutation"})})
// O_NONBLOCK on the rank's own command pipe: the harness exits between commands.
RT(nonblock_cmd_pipe, {kRuntime})
// The own command pipe reopened for writing (/proc/self/fd/3) and a kOpExit
// injected: refused under root (the pipe is the judge's), caught otherwise.
RT(cmd_pipe_inject, {kWrong, kRuntime, Cheat({"result_channel"})})

// ---- merged from the former attack battery (testdata/attacks/attacks.cc,
// attack_battery_test), one file per attack: atk_<name>.cc ---------------------
// Reaching trusted processes: the exploit must be refused (the candidate then
// answers wrong on purpose; a worked exploit also leaves a marker).
RT(atk_proc_fd_ref, {kWrong})
RT(atk_proc_environ_ref, {kWrong})
RT(atk_proc_mem_ref, {kWrong})
RT(atk_proc_maps_ref, {kWrong})
RT(atk_proc_map_files_ref, {kWrong})
RT(atk_proc_fd_judge_stdout, {kWrong})
RT(atk_proc_environ_judge, {kWrong})
RT(atk_kill_ref_sigstop, {kWrong})
RT(atk_kill_ref_sigkill, {kWrong})
RT(atk_kill_judge, {kWrong})
RT(atk_kill_process_group, {kWrong})
RT(atk_kill_everyone, {kWrong})
RT(atk_tgkill_ref, {kWrong})
RT(atk_sigqueue_ref, {kWrong})
RT(atk_pidfd_signal_ref, {kWrong})
RT(atk_sigio_owner_ref, {kWrong})
RT(atk_setpriority_ref, {kWrong})
RT(atk_affinity_ref, {kWrong})
RT(atk_prlimit_ref, {kWrong})
RT(atk_sched_fifo_ref, {kWrong})
RT(atk_ptrace_ref, {kWrong})
RT(atk_process_vm_readv_ref, {kWrong})
RT(atk_new_user_namespace, {kWrong})
RT(atk_capabilities_kept, {kWrong})
// The verdict channel.
RT(atk_fake_result_on_stdout, {kWrong})
RT(atk_flood_output, {kWrong})
RT(atk_garbage_on_reply_channel, {Cheat({"result_channel"})})
RT(atk_forged_reply_then_work, {kCheatAny})
// Times: the interposition has no effect (RTLD_LOCAL after the harness bound its symbols).
RT(atk_patch_clock_gettime, {kOk}, "", 10, "", 3.0)
// Starving the reference: threads are frozen with their process; a process is caught.
// (Its spinning threads slow only its own calls: on 2 cores the timing phase
// can run out, its own TIMEOUT. Or a progress probe finds its calls far
// behind while its own threads held the CPUs: helper threads must be idle
// between calls (candidate.h), and such a probe stays conclusive, else a
// spinning thread would hide any amortization from the probes. CI run of
// b937fc9: CHEAT_DETECTED at 0.01x.)
RT(atk_cpu_hog_threads, {kOk, kTimeout, Cheat({"batch_progress"})}, "", 10, "", 3.0)
RT(atk_cpu_hog_process, {Cheat({"outlived_call"})})
// Work outside the measured interval. (Rank 0 skips the call its helper
// "precomputed" and leaves its peers in the barrier: its own deadlock.)
RT(atk_precompute_helper_thread, {kWrong, kCheatAny, kTimeout}, "", 3)
RT(atk_return_early_thread_finishes, {kWrong, Cheat({"outlived_call"})})
RT(atk_return_early_setup_thread_finishes, {kWrong, kCheatAny})
// Where the kernel lets a timer's SIGCONT continue a stopped process, the thaw
// sees the CPU time it used; where it does not (Linux 6.18), the freeze holds and
// the spinning thread only slows the candidate's own calls.
RT(atk_timer_sigcont_self, {Cheat({"frozen_while_idle"}), kOk}, "", 10, "", 1.5)
RT(atk_child_continues_parent, {Cheat({"outlived_call", "frozen_while_idle"})})
// Containment.
RT(atk_fork_per_call_left_running, {Cheat({"outlived_call"})})
RT(atk_deep_setsid_chain, {Cheat({"outlived_call"})})
RT(atk_fork_bomb_bounded, {Cheat({"outlived_call"})})
RT(atk_daemon_at_teardown, {Cheat({"leftover_process", "outlived_call"})})
RT(atk_thread_left_running, {Cheat({"outlived_call"})})
// Blame: the candidate's own faults, never the harness's.
RT(atk_exit_in_call, {kRuntime})
RT(atk_corrupt_own_control_block, {kTimeout, kRuntime, kWrong, kCheatAny}, "", 3)
RT(atk_stall_in_barrier, {kTimeout}, "", 3)
// Output policy.
RT(atk_zeros, {kWrong})
RT(atk_copy_inputs, {kWrong})
RT(atk_lower_precision, {kWrong})
// Benign controls.
RT(atk_benign_idle_helper_thread, {kOk}, "", 10, "", 10.0)
RT(atk_benign_private_thread_joined, {kOk}, "", 10, "", 10.0)
// Not benign since session 11: no process may be started after pkf_setup
// (candidate.h; a child reaped inside a call ran beside the rank uncounted:
// round 8 drip_starve_child_k16). The rank is killed (SIGSYS): CHEAT.
RT(atk_benign_child_process_waited, {Cheat({"outlived_call"})})

// ---- won against the judge of 2026-12-04 15:00, fixed in the same session -------------
// (helper-notes/redteam-findings.md has what each did and the root cause.)
// Escaping the freeze: a process whose leader thread exited reads 'Z' in
// /proc/<pid>/stat and was skipped by the judge's process listing.
RT(zombie_leader_hog, {Cheat({"frozen_while_idle", "outlived_call", "leftover_process"})})
RT(zombie_leader_starve_ref,
   {Cheat({"frozen_while_idle", "outlived_call", "leftover_process"}), kTimeout})
RT(zombie_rank, {kWrong, Cheat({"frozen_while_idle", "outlived_call"})})
// A chain of zombie-leader links that respawns faster than the judge's final
// clean-up kills its direct children (leftover after teardown).
RT(zombie_respawn_chain, {Cheat({"leftover_process", "outlived_call"})})
// Forging times: the harness's per-call barrier ran in the candidate's
// process (now one barrier per batch; with per-rank data segments these
// candidates' barrier-free peer reads are wrong).
RT(direct_peer_read, {kWrong})
RT(patch_harness_barrier, {kWrong, kCheatAny, kRuntime})
RT(barrier_state_forge, {kWrong, kCheatAny, kRuntime, kTimeout})
// Taking CPUs the reference is not given: sched_setaffinity(0, every CPU)
// (gated on the wider CPU set).
RT(affinity_escape, {kWrong, kCheatAny})
// Blame: the candidate uses up the phase until ~1 ms before its deadline; the
// reference rounds that follow timed out and were blamed on the harness. Now
// reference rounds get a budget of their own: the candidate's next round
// times out (correctness), or nothing is late at all (teardown: OK).
RT(deadline_blame, {kTimeout, kRuntime, kWrong, kCheatAny})
RT(teardown_deadline_blame, {kTimeout, kRuntime, kCheatAny, kOk}, "", 10, "", 3.0)
// Operator secrets under names the environment denylist missed (gated).
RT(environ_secret_names, {kWrong})

// ---- added 2026-12-04 17:49 session (helper-redteam3) ---------------------------------------
// Benign controls that look like cheats (false-positive probes).
// No ctx->barrier inside calls: per-call epochs in the signal pads (faster
// than the reference, honestly: ~5x here).
RT(control_flag_epoch, {kOk})
// 64 parked pool threads per rank: every freeze stops 195 threads, which the
// judge charges to the candidate (0.4x here, a bias against it, not a
// conviction: helper-notes round 3 finding 3).
RT(control_thread_pool_64, {kOk})
// What tuned libraries do to their own process (nice, SCHED_BATCH, timer
// slack, hugepages, mlock, SIGCONT/SIGTSTP handlers, a sleeping thread).
RT(control_self_tuning, {kOk})
// A peer rank's data segment through /proc/<peer>/fd/7 (the memfd every rank
// holds): refused (as root the ranks drop to uid 65534 and become
// non-dumpable; as a plain uid the kernel refused too, here). Gated.
RT(peer_data_proc_fd, {kWrong})

// Memory pressure from pages no process maps (memfd_oom_blame): under a
// 300 MiB limit the OOM killer must not pick a trusted process (it picked the
// judge before candidate ranks got oom_score_adj 1000).
TEST(RedTeam, memfd_oom_blame) {
  const std::string cg = MemoryCgroup("pkf_redteam_oom", int64_t{300} << 20);
  if (cg.empty()) GTEST_SKIP() << "cannot create a memory cgroup here";
  Expect("memfd_oom_blame", {kRuntime, Accept{Result::SETUP_ERROR, {}}}, "", 10,
         cg + "/cgroup.procs");
  // Killed processes leave the cgroup a moment after the launch returned.
  RemoveCgroup(cg);
}

// The same without root (as in a sandbox, where the ranks hold no
// CAP_SYS_RESOURCE and are not moved to another uid): the candidate tries to
// lower the oom_score_adj of 1000 its rank set back to 0, then fills the
// memfd. Refused: candidate processes cannot open /proc files for writing
// (Landlock, containment.cc ForbidProcWrites); before, the OOM killer took
// the judge and there was no result.
TEST(RedTeam, oom_adj_reset_blame) {
  if (geteuid() != 0 || system("command -v setpriv >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "needs root and setpriv to run the launch as another uid";
  const std::string cg = MemoryCgroup("pkf_redteam_oom2", int64_t{300} << 20);
  if (cg.empty()) GTEST_SKIP() << "cannot create a memory cgroup here";
  Expect("oom_adj_reset_blame", {kRuntime, Accept{Result::SETUP_ERROR, {}}}, "", 10,
         cg + "/cgroup.procs", 0, /*as_nobody=*/true);
  RemoveCgroup(cg);
}

// Memory pressure from a FILE on /dev/shm (tmpfs): its pages outlive the
// candidate ranks, so killing them (oom_score_adj 1000) frees nothing; the
// candidate fills its cgroup to 8 MiB short of the limit and returns. Seen
// (3/3, as root): the judge alone is left and OOM-killed when Finish()
// allocates 64 MiB for its memcpy measurement: no result (round 3 finding 4).
// Fixed: the judge measures its memcpy ceiling before any rank starts.
TEST(RedTeam, tmpfs_file_oom_blame) {
  const std::string cg = MemoryCgroup("pkf_redteam_oom3", int64_t{300} << 20);
  if (cg.empty()) GTEST_SKIP() << "cannot create a memory cgroup here";
  // Any verdict of the candidate's (OK too: its outputs are right; what the
  // fixed judge must not do is die or blame itself).
  Expect("tmpfs_file_oom_blame", {kRuntime, Accept{Result::SETUP_ERROR, {}}, kTimeout, kOk}, "", 10,
         cg + "/cgroup.procs", 3.0);
  // The file the candidate left on /dev/shm outlives it: remove it.
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).rfind("pkf-redteam-oom-", 0) == 0)
        unlink(("/dev/shm/" + std::string(e->d_name)).c_str());
    closedir(d);
  }
  RemoveCgroup(cg);
}

// The same with a System V shared memory segment (outlives its creator; in a
// bare launch it stays on the host). Result recorded in helper-notes
// (round 3 finding 5); fixed like tmpfs_file_oom_blame.
TEST(RedTeam, sysv_shm_oom_blame) {
  const std::string cg = MemoryCgroup("pkf_redteam_oom4", int64_t{300} << 20);
  if (cg.empty()) GTEST_SKIP() << "cannot create a memory cgroup here";
  // Any verdict of the candidate's (OK too: its outputs are right; what the
  // fixed judge must not do is die or blame itself).
  Expect("sysv_shm_oom_blame", {kRuntime, Accept{Result::SETUP_ERROR, {}}, kTimeout, kOk}, "", 10,
         cg + "/cgroup.procs", 3.0);
  RemoveRecordedShmSegments();
  RemoveCgroup(cg);
}

// A helper PROCESS started in pkf_setup, idle between calls (round 3 finding
// 6): candidate.h does not forbid it, the judge convicts it (outlived_call).
// Pending a decision: OK if helper processes become allowed like threads;
// if candidate.h forbids them instead, expect Cheat({"outlived_call"}).
TEST(RedTeamPending, control_helper_process) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 3 finding 6 (policy decision); PKFORGE_REDTEAM_PENDING=1 runs it";
  Expect("control_helper_process", {kOk});
}

// Batch look-ahead (round 3 findings 1 and 2): every input set of a timed
// batch exists before the batch, and the judge sees outputs only before the
// batch and after it. Fused: the first call computes every call of the batch
// with one synchronization; deferred: every call but the last returns with
// its outputs unwritten. Attacks still pending use HonestSpeedup: the fixed
// judge must not report OK above 1.5x control_naive's speedup (same test).
// control_naive is the reference's own algorithm: its true speedup is 1, and
// a reading below 1 is load on the host (seen under ctest -j2: 0.62x, which
// bounded storm_blame_freeze, the naive algorithm with its storm refused, at
// 0.93x and failed it at 1.015x). Never below 1.
double HonestSpeedup() {
  Result r;
  Expect("control_naive", {kOk}, "", 10, "", 0, false, &r);
  return r.status() == Result::OK ? std::max(1.0, r.speedup()) : 1.0;
}
// Caught since 93d7640 by batch_progress (3 of 3 probes "behind": 0% of the
// calls done at 40-85% of the batch's time; round 5, 3/3 runs each, OK 9-14x
// before), and since the drip batches by batch_drip too (a call that returns
// before its outputs are written, in a batch where it cannot see a later
// call's inputs; a whole-batch fuser computes the batch from the decoys
// there: its outputs are wrong, timed_output_reverify). batch_consistency
// may fire first (it only flags on the host).
const Accept kProgressCheat = Cheat(
    {"batch_progress", "batch_consistency", "batch_drip", "timed_output_reverify"});

// Whether neither batch_progress nor batch_drip had a conclusive finding:
// every stop fell outside the batch, or the candidate was starved by other
// processes (ctest -j2 on a 2-core host). The judge then, rightly, has none.
bool NoConclusiveProbe(const Result& r) {
  for (const auto& c : r.cheat_checks()) {
    const std::string& d = c.detail();
    if (c.check() == "batch_progress" &&
        (d.find("(behind") != std::string::npos || d.find("(ahead") != std::string::npos ||
         d.find("(consistent") != std::string::npos))
      return false;
    if (c.check() == "batch_drip" &&
        (d.find("(slow)") != std::string::npos || d.find("(consistent)") != std::string::npos))
      return false;
  }
  return true;
}

// A whole-batch amortizer: CHEAT_DETECTED; an OK is tolerated only when no
// probe was conclusive (load), and then the launch is repeated (3 at most).
// `timeout_ok`: a chunked look-ahead whose ranks pick their chunks from
// what they see may disagree on a drip batch that releases two calls ahead
// (the lead's kDripLead = 2, round 6): their own barriers deadlock, TIMEOUT,
// which is no forged speedup either.
void ExpectProgressCheat(const std::string& name, bool timeout_ok = false) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    Result r;
    std::vector<Accept> accept{kProgressCheat, kOk};
    if (timeout_ok) accept.push_back(kTimeout);
    Expect(name, accept, "", 10, "", 0, false, &r);
    if (r.status() != Result::OK) return;
    bool inconclusive = NoConclusiveProbe(r);
    EXPECT_TRUE(inconclusive) << name << " got OK with conclusive progress probes (speedup "
                              << r.speedup() << ")";
    if (!inconclusive) return;
  }
  ADD_FAILURE() << name << ": 3 launches without one conclusive progress probe";
}

TEST(RedTeam, batch_lookahead_fuse) { ExpectProgressCheat("batch_lookahead_fuse"); }
// The honest barrier-free allreduce must not be flagged by batch_consistency
// (round 3 finding 7: 6.7x batched vs 1.0x in single calls, flagged like the
// attacks): its single calls are all fixed wake-up cost.
TEST(RedTeamPending, control_flag_epoch_not_flagged) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 3 finding 7 (not fixed yet); PKFORGE_REDTEAM_PENDING=1 runs it";
  Result r;
  Expect("control_flag_epoch", {kOk}, "", 10, "", 0, false, &r);
  for (const auto& c : r.cheat_checks())  // flags included (FailingChecks skips them)
    EXPECT_FALSE(c.check() == "batch_consistency" && !c.passed())
        << "an honest candidate was flagged: " << c.detail();
}
TEST(RedTeam, batch_defer_to_last) { ExpectProgressCheat("batch_defer_to_last"); }

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
void ExpectCaughtOnceInFour(const std::string& name) {
  std::vector<double> ok;
  for (int attempt = 0; attempt < 4; ++attempt) {
    Result r;
    Expect(name, {kProgressCheat, kOk, kTimeout, kWrong}, "", 10, "", 0, false, &r);
    if (r.status() != Result::OK) return;
    ok.push_back(r.speedup());
  }
  ADD_FAILURE() << name << ": OK in 4 of 4 launches, speedups " << fmt::format("{}", ok);
}
// Chunks of 8: CHEAT_DETECTED batch_drip in 2 of 4 at the final tree (OK
// 6-7x otherwise, 2 of 3 drip batches slow: flagged) - the accepted residual
// of chunked amortization near the drip allowance (docs/threat-model.md).
TEST(RedTeamPending, lookahead_private_k8) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "accepted residual (CHEAT 2 of 4, OK 6-7x); PKFORGE_REDTEAM_PENDING=1 runs it";
  ExpectCaughtOnceInFour("lookahead_private_k8");
}
// Pending since e248da4 (candidates at -O3, as the executor compiles them):
// OK in 4 of 4 launches at 13-17x (honest epoch 7.2x) in ctest at 06:56, the
// chunk work now too short for the probes' 25% rule and the drips' ~23 us
// allowance (round 10 finding 1). Caught once in four before.
TEST(RedTeamPending, lookahead_private_shortlen) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 10 finding 1 (OK 4 of 4 at -O3); PKFORGE_REDTEAM_PENDING=1 runs it";
  ExpectCaughtOnceInFour("lookahead_private_shortlen");
}
TEST(RedTeam, defer_chunk_cmd) { ExpectCaughtOnceInFour("defer_chunk_cmd"); }

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
TEST(RedTeam, probe_two_chunk) { ExpectCaughtOnceInFour("probe_two_chunk"); }
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

// ---- output policy self-test, every problem ------------------------------------------------
// All-zero outputs and outputs that repeat the rank's first input must be
// rejected by every problem, dtype and world size 1 and 3 (a problem that
// accepts one cannot tell a do-nothing candidate from a real one). Returns
// the combinations that did not give WRONG_OUTPUT.
// min_world_for_policy: at world size 1 a collective's answer *is* its
// input (allreduce, broadcast, ... of one rank), so the input-copy policy
// applies from world size 2 (the all-zeros policy applies everywhere).
std::vector<std::string> PolicyAccepted(const std::string& candidate, int min_world_for_policy = 1) {
  std::vector<std::string> accepted;
  for (const Problem* p : Problems()) {
    for (const char* dt : {"bf16", "f16", "f32"}) {
      for (int w : {1, 3}) {
        if (w < p->min_world || w > p->max_world || w < min_world_for_policy) continue;
        const std::string dir = NewDir("policy");
        const std::string cmd = fmt::format(
            "timeout -k 5 60 {} launch --problem {} --backend host --world-size {} --dtype {} "
            "--size tiny --trials 1 --skip-timing --timeout 10 --json {}/redteam_{}_{}.so",
            PKF_WORKER, p->name, w, dt, PKF_CANDIDATES, candidate, p->name);
        const Verdict v = RunJudge(cmd, dir + "/judge_stderr");
        EXPECT_TRUE(v.parsed) << v.channel_error << "\n" << cmd << "\n" << v.stderr_text;
        EXPECT_NE(v.result.status(), Result::HARNESS_ERROR) << cmd << "\n" << v.raw;
        if (v.parsed && v.result.status() != Result::WRONG_OUTPUT)
          accepted.push_back(fmt::format("{} {} w={} -> {}", p->name, dt, w,
                                         Result::Status_Name(v.result.status())));
      }
    }
  }
  return accepted;
}

// Every output tensor is verified: a rank's reply carries at most
// kMaxOutputs check records (rank.cc / rank_cuda.cc Check: n_checks =
// min(outputs, kMaxOutputs)), so outputs past the 4th of a problem would
// never be compared and a candidate could leave them unwritten and pass
// (moe_token_preprocess has exactly 4 today). Guards every problem added
// to the registry, at every world size it allows up to 8.
TEST(RedTeam, EveryOutputTensorIsVerified) {
  std::vector<std::string> unchecked;
  for (const Problem* p : Problems()) {
    for (int w = std::max(1, p->min_world); w <= std::min(8, p->max_world); ++w) {
      auto dims = ResolveSize(*p, "tiny", w);
      if (!dims.ok()) continue;
      for (int r = 0; r < w; ++r) {
        const RankSpec spec = p->spec(*dims, w, r);
        if (spec.out.size() > static_cast<size_t>(kMaxOutputs))
          unchecked.push_back(fmt::format("{} w={} rank {}: {} outputs", p->name, w, r,
                                          spec.out.size()));
      }
    }
  }
  EXPECT_TRUE(unchecked.empty()) << "outputs past the " << kMaxOutputs
                                 << "th are never verified:\n  "
                                 << fmt::format("{}", fmt::join(unchecked, "\n  "));
}

TEST(RedTeam, OutputPolicyEveryProblemRejectsZeros) {
  const std::vector<std::string> accepted = PolicyAccepted("zeros");
  EXPECT_TRUE(accepted.empty()) << accepted.size()
                                << " problem/dtype/world combinations accepted all-zero outputs:\n  "
                                << fmt::format("{}", fmt::join(accepted, "\n  "));
}

// Note: at world size 1 the result of every pure collective (allreduce,
// allgather, reducescatter, alltoall, broadcast, reduce, gather, scatter) IS
// the rank's input, so this policy, as issue 16 states it, cannot hold there
// without rejecting correct candidates; the test asserts it as stated and
// the failure lists exactly those combinations (README.md, findings).
TEST(RedTeam, OutputPolicyEveryProblemRejectsInputCopies) {
  const std::vector<std::string> accepted = PolicyAccepted("copy_inputs", /*min_world=*/2);
  EXPECT_TRUE(accepted.empty()) << accepted.size()
                                << " problem/dtype/world combinations accepted outputs that repeat "
                                   "the first input:\n  "
                                << fmt::format("{}", fmt::join(accepted, "\n  "));
}

// Lower precision than the dtype: every compute problem's reference with its
// loads rounded to bf16, evaluated at f32, must be rejected.
TEST(RedTeam, OutputPolicyBf16LoadsOnF32AreRejected) {
  std::vector<std::string> accepted;
  for (const char* p : {"allreduce", "reducescatter", "reduce", "allgather_gemm", "gemm_allreduce",
                        "gemm_reducescatter", "tp_rmsnorm"}) {
    for (int w : {1, 3}) {
      const std::string dir = NewDir("lowp");
      const std::string cmd = fmt::format(
          "timeout -k 5 60 {} launch --problem {} --backend host --world-size {} --dtype f32 "
          "--size tiny --trials 1 --skip-timing --timeout 10 --json {}/redteam_lowp_inputs_{}.so",
          PKF_WORKER, p, w, PKF_CANDIDATES, p);
      const Verdict v = RunJudge(cmd, dir + "/judge_stderr");
      EXPECT_TRUE(v.parsed) << v.channel_error << "\n" << cmd << "\n" << v.stderr_text;
      if (v.parsed && v.result.status() != Result::WRONG_OUTPUT)
        accepted.push_back(
            fmt::format("{} w={} -> {}", p, w, Result::Status_Name(v.result.status())));
    }
  }
  EXPECT_TRUE(accepted.empty()) << "bf16 loads accepted on an f32 problem:\n  "
                                << fmt::format("{}", fmt::join(accepted, "\n  "));
}

// ---- round 10 (helper-redteam10): kernel work a frozen candidate scheduled ----------------------
// helper-notes/redteam-findings.md "ROUND 10". Row 25's interrupt storm again,
// armed through TCP pacing (sockets are allowed; only timerfd_create,
// timer_create, io_uring_setup and io_setup are refused): rank 0 keeps one
// loopback TCP connection with SO_MAX_PACING_RATE and, at the last call of
// each timed batch, queues ~200 one-skb sends (MSG_EOR, ~2.5 us each); each
// skb later departs from a per-socket hrtimer in softirq on the ranks' CPU
// (an interrupt + loopback tx/rx + ACK, ~20-35 us here) while the candidate
// is frozen and the reference is timed next (~75% of the time); its next
// call aborts the rest (RST). pkf_run is the naive reference. Seen OK 1.55 /
// 1.55 / 1.41 / 1.54 / 1.40 / 1.20x (one connection never aborted: 1.31-1.47x
// in 7 of 7, up to 1.88x) against control_naive 0.97-1.00x in the same
// minutes, nothing flagged. Bounded here by 1.2x control_naive's speedup in
// 3 launches (any conviction or a refused socket is fine). Since host
// candidate ranks may open no socket but AF_UNIX (containment.cc; also no
// setitimer/alarm): the storm is never armed, OK 1.00x.
TEST(RedTeam, tcp_pacing_storm) {
  const double honest = HonestSpeedup();
  for (int i = 0; i < 3; ++i)
    Expect("tcp_pacing_storm", {kCheatAny, kOk, kRuntime, Accept{Result::SETUP_ERROR, {}}}, "", 10,
           "", 1.2 * honest);
}

// Public check schedule: probes land only on j >= 5 and drips on j >= 3, and
// ~3-4 of the 6 long timed batches whose median is the official time lie in
// j < 5. probe_window_front fuses every batch no probe can land on (warm-up,
// j < 5, short; drip batches counted as they take a j too), padded to a
// 120 us span so that later probes do not land in its wake-up, front-loads
// probe-able ones (15% and 35% of the calls with one exchange each, then
// the honest epoch exchange) and is honest on drip batches. Seen OK 11.6 /
// 11.3 / 16.2x (probes consistent, drips consistent; batch_consistency and
// plausibility flags only) against control_flag_epoch 7.5-7.8x in the same
// minutes. Bounded here by 1.25x the honest epoch's speedup (same test).
TEST(RedTeamPending, probe_window_front) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 10 (OK 10-16x against an honest 7.5x); PKFORGE_REDTEAM_PENDING=1 runs it";
  Result r;
  Expect("control_flag_epoch", {kOk, Cheat({"batch_drip"})}, "", 10, "", 0, false, &r);
  const double honest = r.status() == Result::OK ? r.speedup() : 5.0;
  for (int i = 0; i < 2; ++i)
    Expect("probe_window_front", {kCheatAny, kOk}, "", 10, "", 1.25 * honest);
}

// Round 12 (helper-redteam12, 18269b0): a fixed number of probes (3 among
// batches 1..13 at --iters 6), each seen by the candidate afterwards (a
// SIGCONT mid-batch). probe_count_fuse is honest (one epoch a call) until it
// has seen 2 of them, then fuses long batches in chunks of 32 calls (short
// ones always, drips honest). Statistical: OK 11.4-14.3x in 4 of 28 launches
// (CHEAT 4 of 28, OK 5.9-9.2x otherwise) against control_flag_epoch
// 5.1-8.1x in the same minutes; so twelve launches here, each bounded by
// 1.5x the honest epoch's speedup (at least 9x).
TEST(RedTeamPending, probe_count_fuse) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 12 (OK 11-14x in 4 of 28 against an honest 5-8x); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  Result r;
  Expect("control_flag_epoch", {kOk, Cheat({"batch_drip"})}, "", 10, "", 0, false, &r);
  const double honest = r.status() == Result::OK ? r.speedup() : 5.0;
  for (int i = 0; i < 12; ++i)
    Expect("probe_count_fuse", {kCheatAny, kOk}, "", 10, "", std::max(1.5 * honest, 9.0));
}
// The same seen without a signal handler (a call returning over 250 us after
// the previous one): OK 15.6-18.9x in 13 of 38 launches, never caught,
// against control_flag_epoch 5.6-8.3x alternated with it.
TEST(RedTeamPending, probe_gap_fuse) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 12 (OK 15-19x in 13 of 38 against an honest 5-8x); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  Result r;
  Expect("control_flag_epoch", {kOk, Cheat({"batch_drip"})}, "", 10, "", 0, false, &r);
  const double honest = r.status() == Result::OK ? r.speedup() : 5.0;
  for (int i = 0; i < 8; ++i)
    Expect("probe_gap_fuse", {kCheatAny, kOk}, "", 10, "", std::max(1.5 * honest, 9.0));
}

// ---- round 13 (helper-redteam13): the schedule of timing_schedule.h -----------------------------
// helper-notes/redteam-findings.md "ROUND 13". Against the lead's working
// tree (each long batch after the first sample a probe with a secret chance,
// 0-2 secret extra samples, the extension while probes are unsettled, the
// 75th percentile when batch checks flag). Generic command, 2-core host,
// each attack alternated with control_flag_epoch (honest OK 4.6-9.7x; it
// was CHEAT_DETECTED batch_progress once in 190 launches, 3 of 4 probes
// behind). Round 12's counting attacks still win: probe_count_fuse OK 37 of
// 48 (15 at 11.3-19.5x), probe_gap_fuse OK 32 of 48 (14 at 11.4-18.7x),
// CHEAT_DETECTED 11 and 16 of 48 (most beside another build); what wins is
// their chunks of 32, which never needed the count (r13_always_k32).
// OK is accepted below 1.5x control_flag_epoch's speedup in the same test
// (at least 9x, as round 12's); any conviction passes.
void R13ExpectUnderHonestEpoch(const std::string& name, int launches) {
  Result r;
  Expect("control_flag_epoch", {kOk, Cheat({"batch_drip"})}, "", 10, "", 0, false, &r);
  const double honest = r.status() == Result::OK ? r.speedup() : 5.0;
  for (int i = 0; i < launches; ++i)
    Expect(name, {kCheatAny, kOk}, "", 10, "", std::max(1.5 * honest, 9.0));
}
// Every long batch fused in chunks of 32 calls, drips honest (the kOpDrip
// Cmd on the stack), shorts one exchange each, no counting at all: OK 57 of
// 76 at 4.5-21.4x (48 over 1.5x the honest epoch), CHEAT_DETECTED 19 of 76.
// The chunk residual of round 10 finding 1 (drip_aware_epoch_k8 OK 12 of 12
// at 13.6-18.1x in the same minutes); the schedule changes nothing for it.
TEST(RedTeamPending, r13_always_k32) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 13 (OK 57 of 76 at up to 21x against an honest 5-10x); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R13ExpectUnderHonestEpoch("r13_always_k32", 4);
}
// Whole-batch fusion (one exchange a batch) on the ranks' main threads, its
// sums written straight into the calls' output slots in call order, the
// ranks taking turns every 8 calls: outputs appear at the pace of the work,
// so the probes (which count matching outputs, not returned calls) read
// "consistent"; drips honest. OK 34 of 40 at 10.3-18.4x against
// control_flag_epoch 6.4-8.4x (CHEAT_DETECTED batch_progress 6 of 40: a
// rank late to the exchange); beside a busy loop on the judge's CPU OK 3 of
// 8 at 7.5-10.3x.
TEST(RedTeamPending, r13_inorder_whole) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 13 (OK 34 of 40 at 10-18x against an honest 6-8x); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R13ExpectUnderHonestEpoch("r13_inorder_whole", 4);
}
// Whole-batch fusion whose ranks never yield in a batch (peers waited for
// on futexes) and ask for a 100 ms slice (sched_setattr on pid 0): the
// judge, woken at the probe's pause point, cannot preempt them, so every
// stop is "late" and every probe inconclusive; batch_progress is then "not
// judged", a pass without a flag. Works only while the judge's other CPU is
// busy (the ranks share one CPU): beside `taskset -c 0 yes` OK 5 of 8 at
// 11.1-18.1x (honest 4.9-6.0x), in one uncontrolled window OK 6 of 10 at
// 12.2-24.1x; on a quiet host CHEAT_DETECTED batch_progress 12 of 12. So
// this test may pass when run alone; the next one gives the judge one CPU.
TEST(RedTeamPending, r13_late_stop_whole) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 13 (OK 5 of 8 at 11-18x beside a busy loop on the judge's CPU); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R13ExpectUnderHonestEpoch("r13_late_stop_whole", 8);
}
// The same with the judge confined to one CPU, as in a one-CPU lane or any
// allowed set of one (rank_pool.cc RankCpus then pins the ranks to the
// judge's own CPU): `taskset -c <first allowed CPU>` before the generic
// command. OK 24 of 28 at 9.4-26.7x against control_flag_epoch OK 28 of 28
// at 3.9-6.4x (10:18-10:19 UTC); without the slice request OK 6 of 8.
Result R13LaunchOnOneCpu(const std::string& name) {
  const std::string dir = NewDir(name);
  setenv("PKF_REDTEAM_DIR", dir.c_str(), 1);
  const std::string status = ReadFile("/proc/self/status");
  const size_t at = status.find("Cpus_allowed_list:");
  const int cpu = at == std::string::npos ? 0 : std::atoi(status.c_str() + at + 18);
  const std::string cmd = fmt::format(
      "timeout -k 5 70 taskset -c {} {} launch --problem allreduce --backend host --world-size 3 "
      "--dtype f32 --size tiny --trials 2 --warmup 1 --iters 6 --timeout 10 --json "
      "--candidate-writable {} {}/redteam_{}.so",
      cpu, PKF_WORKER, dir, PKF_CANDIDATES, name);
  const Verdict v = RunJudge(cmd, dir + "/judge_stderr");
  const std::vector<int> alive = StillAlive(dir);
  unsetenv("PKF_REDTEAM_DIR");
  std::printf("REDTEAM %s (one CPU) status=%s speedup=%.2f\n", name.c_str(),
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT",
              v.parsed ? v.result.speedup() : 0.0);
  EXPECT_TRUE(alive.empty()) << name << ": processes left alive";
  EXPECT_TRUE(v.parsed) << v.channel_error << "\n" << cmd << "\n" << v.stderr_text;
  EXPECT_NE(v.result.status(), Result::HARNESS_ERROR) << cmd << "\n" << v.stderr_text;
  return v.result;
}
TEST(RedTeamPending, r13_late_stop_whole_one_cpu) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 13 (one CPU: OK 24 of 28 at 9-27x against an honest 4-6x); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  const Result h = R13LaunchOnOneCpu("control_flag_epoch");
  EXPECT_EQ(h.status(), Result::OK) << h.message();
  const double honest = h.status() == Result::OK ? h.speedup() : 4.0;
  for (int i = 0; i < 4; ++i) {
    const Result r = R13LaunchOnOneCpu("r13_late_stop_whole");
    if (r.status() == Result::OK) {
      EXPECT_LT(r.speedup(), std::max(1.5 * honest, 7.5))
          << "r13_late_stop_whole forged a speedup: " << r.message();
    }
  }
}
// Adaptive fusion on a probe budget (each probe seen afterwards by a
// SIGCONT): fuse the next long batch only while one more anomalous probe
// would not convict, counting probed honest batches as consistent ones.
// Chunks of 32: OK 37 of 62, 5 of them over 1.5x the honest epoch (10.3-
// 16.2x), CHEAT_DETECTED 25 of 62; whole batches (r13_budget_dilute): OK 20
// of 62 at 5.4-9.0x, never over, CHEAT_DETECTED 42 of 62. Mixing fails on
// the span rule, not the dilution rule: after one fused sample the probes
// pause against a fused span and the honest batches read "behind" too.
TEST(RedTeamPending, r13_budget_k32) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 13 (OK over 1.5x the honest epoch in 5 of 62); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R13ExpectUnderHonestEpoch("r13_budget_k32", 12);
}
// Never over 1.5x the honest epoch, but convicted in only 42 of 62
// launches: pending (not a reliable conviction).
TEST(RedTeamPending, r13_budget_dilute) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 13 (CHEAT_DETECTED 42 of 62, OK 5.4-9.0x otherwise); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R13ExpectUnderHonestEpoch("r13_budget_dilute", 4);
}
// Whole-batch fusion on a helper thread while the main threads sleep, aimed
// at the probes' main_idle rule: it never fired (the window starts before
// the batch's command; wake-up, barrier and hand-off outweigh a fused span
// of ~250 us): CHEAT_DETECTED batch_progress 54 of 54, every probe "behind".
TEST(RedTeam, r13_idle_helper_whole) { ExpectProgressCheat("r13_idle_helper_whole"); }

// Round 14 (helper-redteam14, 2026-12-05): containment of the executor's
// sandbox, not the judge. A worker run gets its scratch folder (on the
// host's own filesystem) read-write as its working directory; nothing but
// RLIMIT_FSIZE (max_file_mb, per file) bounds what lands there, and the
// memory cgroup does not count disk blocks. r14_disk_fill's rank 0
// fallocates 16 files of min(RLIMIT_FSIZE, 64 MiB) in pkf_setup (blocks
// reserved without writing) and is otherwise correct. Run here as the
// executor runs a host evaluation (pkforge-sandbox, bubblewrap, the scratch
// owned by and run as uid 65534 when root, max_file_mb 64): OK and 1.1 GiB
// in the scratch (10:52 UTC); through a real pkforge-executor (defaults:
// max_file_mb 4096) three 1 GiB files took 4 ms and `du` of the evaluation's
// scratch read 3.1 GiB while it ran (10:46 UTC): with 18 such calls a
// candidate fills a 72 GiB host disk for the length of its evaluation.
// Expected once fixed: a per-evaluation disk quota (or no writable host
// folder at all: the worker needs only to read its artifact), so well under
// the 1 GiB asked for.
// Fixed: the executor runs candidate code with its folder read-only and the
// working directory in the sandbox's private tmpfs (Runtime::CandidatePolicy,
// SandboxPolicy::scratch_read_only; RuntimePolicyTest.
// CandidateRunsGetTheirFolderReadOnly pins the executor's choice), run here
// the same way (--scratch-read-only).
TEST(RedTeam, r14_disk_fill) {
  const std::string worker = PKF_WORKER;
  const std::string bin = worker.substr(0, worker.rfind('/'));
  const std::string scratch = NewDir("r14_disk_fill_scratch");
  const std::string logs = NewDir("r14_disk_fill");
  std::string run_as;
  if (geteuid() == 0) {
    // The executor's default as root (config.cc: run_as_uid 65534), its
    // scratch folder the run's own.
    ASSERT_EQ(chown(scratch.c_str(), 65534, 65534), 0);
    run_as = "--run-as-uid 65534 --run-as-gid 65534 ";
  }
  chmod(scratch.c_str(), 0700);
  const std::string cmd = fmt::format(
      "{}/pkforge-sandbox --scratch {} --scratch-read-only --max-file-mb 64 --timeout 120 {}--ro {} --ro {} "
      "--env PATH=/usr/bin:/bin -- {} launch --problem allreduce --backend host --world-size 3 "
      "--dtype f32 --size tiny --trials 2 --warmup 1 --iters 6 --timeout 10 --json "
      "{}/redteam_r14_disk_fill.so",
      bin, scratch, run_as, bin, PKF_CANDIDATES, worker, PKF_CANDIDATES);
  const Verdict v = RunJudge(cmd, logs + "/judge_stderr");
  int64_t bytes = 0;
  if (DIR* d = opendir(scratch.c_str())) {
    while (dirent* e = readdir(d)) {
      struct stat st{};
      const std::string path = scratch + "/" + e->d_name;
      if (e->d_name[0] != '.' && lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        bytes += static_cast<int64_t>(st.st_blocks) * 512;
        unlink(path.c_str());
      }
    }
    closedir(d);
  }
  rmdir(scratch.c_str());
  std::printf("REDTEAM r14_disk_fill status=%s scratch held %lld MiB\n",
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT",
              static_cast<long long>(bytes >> 20));
  EXPECT_TRUE(v.parsed) << v.channel_error << "\n" << cmd << "\n" << v.stderr_text;
  EXPECT_NE(v.result.status(), Result::HARNESS_ERROR) << cmd << "\n" << v.stderr_text;
  EXPECT_LE(bytes, int64_t{256} << 20)
      << "a candidate took " << (bytes >> 20)
      << " MiB of the host's disk through its scratch folder: no per-evaluation disk quota\n"
      << cmd;
}

// Round 14: a judge that never returns. A candidate rank running as the
// judge's uid (the executor's sandbox runs judge and ranks as one uid; any
// launch by a plain user) opens a write end of its own command pipe
// (/proc/self/fd/3), forges its kOpSetup reply, fills the pipe (64 KiB) and
// sleeps: the judge freezes it and then blocks for good in RankPool::Send's
// write() of the next command into the full pipe of a stopped reader (no
// phase deadline covers a write). Measured 10:48-10:50 UTC: bare launch as
// uid 65534, --timeout 10: no result, killed by `timeout` after 45 s (no
// process left); through a real pkforge-executor (world 3, --timeout 5):
// TIMEOUT "exceeded the executor's deadline of 50 s" after 51 s, the slot
// held 10x the phase limit. As root the ranks drop to 65534 and cannot open
// the root-owned pipe: WRONG_OUTPUT (blocked), asserted below too.
// Launched by root (the battery's generic command) the ranks drop to uid
// 65534 and cannot open the root-owned pipe for writing (EACCES): the
// gated candidate writes nothing. WRONG_OUTPUT 2 of 2 (10:48 UTC).
TEST(RedTeam, r14_cmd_pipe_stall_as_root) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (the ranks then run as another uid)";
  Expect("r14_cmd_pipe_stall", {kWrong});
}
// Fixed (RankPool::Send: the command channel is non-blocking, a full one is
// CHEAT_DETECTED result_channel): CHEAT after 0.1 s, was no verdict at 40 s.
TEST(RedTeam, r14_cmd_pipe_stall) {
  const std::string dir = NewDir("r14_cmd_pipe_stall_nobody");
  setenv("PKF_REDTEAM_DIR", dir.c_str(), 1);
  const std::string cmd = fmt::format(
      "timeout -k 5 40 {}{} launch --problem allreduce --backend host --world-size 3 --dtype f32 "
      "--size tiny --trials 2 --warmup 1 --iters 6 --timeout 5 --json --candidate-writable {} "
      "{}/redteam_r14_cmd_pipe_stall.so",
      geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "", PKF_WORKER,
      dir, PKF_CANDIDATES);
  const Verdict v = RunJudge(cmd, dir + "/judge_stderr");
  const std::vector<int> alive = StillAlive(dir);
  unsetenv("PKF_REDTEAM_DIR");
  std::printf("REDTEAM r14_cmd_pipe_stall (one uid) status=%s after %.1f s\n",
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT", v.seconds);
  EXPECT_TRUE(alive.empty()) << "processes left alive";
  ASSERT_TRUE(v.parsed) << "the judge gave no verdict within 40 s (phase timeout 5 s): "
                        << v.channel_error << "\n" << cmd << "\ncandidate log:\n"
                        << ReadFile(dir + "/log");
  EXPECT_TRUE(v.result.status() == Result::TIMEOUT ||
              (v.result.status() == Result::CHEAT_DETECTED &&
               FailingChecks(v.result).count("result_channel") > 0))
      << v.result.message();
}

// A candidate submitted as source to a real pkforge-executor (host only,
// one slot, a token of its own) and judged with `pkforge eval`: the path an
// API client takes. `name`: testdata/redteam/<name>.cc; `flags`: more
// `pkforge eval` flags. `skipped` says what is missing when the executor or
// the CLI was not built.
struct ExecutorEval {
  std::string skipped;
  bool started = false;
  std::string executor_stderr;
  testing::Captured eval;
};
ExecutorEval EvalThroughExecutor(const std::string& name, const std::string& flags) {
  ExecutorEval e;
  const std::string worker = PKF_WORKER;
  const std::string bin = worker.substr(0, worker.rfind('/'));
  std::string source = __FILE__;
  source = source.substr(0, source.rfind("harness/")) + "testdata/redteam/" + name + ".cc";
  for (const std::string& f : {bin + "/pkforge-executor", bin + "/pkforge", source})
    if (access(f.c_str(), R_OK) != 0) {
      e.skipped = f + " is missing";
      return e;
    }
  const std::string dir = NewDir(name);
  { std::ofstream(dir + "/token") << name << "-token-0123456789\n"; }
  chmod((dir + "/token").c_str(), 0600);
  if (std::system(fmt::format(
          "{0}/pkforge-executor --listen 127.0.0.1:0 --data-dir {1}/data --gpus none "
          "--nvcc none --no-measure --host-slots 1 --compile-workers 1 --token-file "
          "{1}/token --worker {2} >{1}/exec.out 2>{1}/exec.err & echo $! >{1}/exec.pid",
          bin, dir, worker)
                      .c_str()) != 0)
    return e;
  const int pid = std::atoi(ReadFile(dir + "/exec.pid").c_str());
  std::string address;
  for (int i = 0; i < 200 && address.empty(); ++i) {
    const std::string out = ReadFile(dir + "/exec.out");
    const size_t at = out.find("listening on ");
    if (at != std::string::npos && out.find('\n', at) != std::string::npos)
      address = out.substr(at + 13, out.find('\n', at) - at - 13);
    else
      usleep(100'000);
  }
  if (!address.empty())
    e.eval = testing::RunCapture(fmt::format(
        "timeout -k 5 120 {}/pkforge eval --executor {} --token-file {}/token --problem allreduce "
        "--world-size 3 --dtype f32 --size tiny --quiet {} {} 2>{}/eval.err",
        bin, address, dir, flags, source, dir));
  if (pid > 0) {
    kill(pid, SIGTERM);
    for (int i = 0; i < 100 && kill(pid, 0) == 0; ++i) usleep(100'000);
    if (kill(pid, 0) == 0) kill(pid, SIGKILL);
  }
  e.started = !address.empty();
  e.executor_stderr = ReadFile(dir + "/exec.err");
  return e;
}

// Round 14: the verdict a person reads. `pkforge eval` (table output,
// cli/eval.cc Report) prints the result's message, failures and stderr tails
// byte for byte; r14_ansi_forge (self-contained source, submitted as is)
// prints terminal control sequences on stderr: clear the screen, draw a
// made-up "OK ... speedup 41.724x" report, conceal what follows (SGR 8),
// and fails its first call. Through a real pkforge-executor (host, world 3,
// 10:54 UTC): RUNTIME_ERROR, and the CLI's stdout held the raw ESC bytes
// (`cat -v`: ^[[2J^[[HOK: 2 trials correct; ... ^[[8m), so a terminal shows
// only the forged OK. The HTML report escapes them (cli/report.cc
// HtmlEscape); the JSON output escapes them too.
// Fixed (common/utf8.h TerminalSafe in cli/eval.cc Report and the judge's
// ResultToText): 792 bytes printed, no ESC (the test EvalTest.
// TerminalEscapesFromACandidateArePrintedAsText pins the report itself).
TEST(RedTeam, r14_ansi_forge) {
  const ExecutorEval e = EvalThroughExecutor("r14_ansi_forge", "");
  if (!e.skipped.empty()) GTEST_SKIP() << e.skipped;
  ASSERT_TRUE(e.started) << "the executor did not start:\n" << e.executor_stderr;
  const testing::Captured& c = e.eval;
  std::printf("REDTEAM r14_ansi_forge pkforge eval printed %zu bytes, %zu ESC\n", c.output.size(),
              static_cast<size_t>(std::count(c.output.begin(), c.output.end(), '\x1b')));
  EXPECT_NE(c.output.find("RUNTIME_ERROR"), std::string::npos) << c.output;
  EXPECT_EQ(c.output.find('\x1b'), std::string::npos)
      << "a candidate's terminal control sequences reach the operator's terminal raw:\n"
      << c.output;
}

// Round 15 (helper-redteam15, 2026-12-05, against f5230d8): the probes'
// "main thread" is the thread-group leader (judge_internal.h
// CandidateWindow::MainThreadsCpuNs reads ThreadCpuNs(pid, pid)). pkf_setup
// saves the harness's context (swapcontext), parks the leader on a private
// stack in a futex wait with every signal blocked, and a thread it created
// (baseline, allowed) resumes that context on the leader's stack: it returns
// from pkf_setup and runs the harness's command loop, every pkf_run
// included, for the rest of the evaluation. The leader's CPU time stays 0,
// so every probe is main_idle (inconclusive); with none late or starved
// batch_progress says "not judged" and passes without a flag. The calls
// fuse whole batches, drips honest. r15_parked_leader_sleep (futex-sleeping
// exchange, so no stop comes late): OK 11.4-13.0x, batch_progress passed
// "not judged" in every launch (only batch_consistency flags: 75th
// percentile); r15_parked_leader_fuse (spinning exchange): OK 8.4-12.3x,
// late stops flag it. control_flag_epoch OK 4.8-5.8x in the same minutes.
// Fixed (progress_probe.h kIdleExcuseLimit: a candidate over 1.5x faster
// than the reference is judged on what its probes found): sleep CHEAT 15 of
// 16 launches (the other OK 7.1x, within the honest band), fuse 16 of 16
// (13:15-13:20 UTC).
TEST(RedTeam, r15_parked_leader_sleep) {
  R13ExpectUnderHonestEpoch("r15_parked_leader_sleep", 4);
}
// _fuse after the fixes: CHEAT_DETECTED 9 of 10 (14:20 UTC); the other OK
// 13.2x, flagged (2 of 4 conclusive probes behind when the schedule's cap
// was reached): the chunk/fusion residual's rate, so behind the pending flag
// (4 launches would fail a third of CI runs).
TEST(RedTeamPending, r15_parked_leader_fuse) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 15 (CHEAT 9 of 10 after the fix, one OK 13.2x flagged); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R13ExpectUnderHonestEpoch("r15_parked_leader_fuse", 4);
}

// Round 15: row 25's interrupt storm through disk write-back, which no
// seccomp rule can refuse (write, sync_file_range). r15_writeback_storm's
// rank 0 dirties every other page of a 2 MiB region of an unnamed /tmp file
// at the last call of each timed batch and starts their write-back
// (SYNC_FILE_RANGE_WRITE, no wait): the completions interrupt CPU 1 (the
// ranks' CPU; every virtio-blk interrupt lands there on this VM) while the
// candidate is frozen. pkf_run is the naive reference. OK 0.54x (256 pages),
// 0.92-0.95x (16-48 pages), 0.85x (16 pages, every rank) against
// control_naive 0.98-0.99x: submitting costs the candidate what the
// completions cost the reference; the judge holds. Bounded by 1.2x
// control_naive's speedup.
TEST(RedTeam, r15_writeback_storm) {
  const double honest = HonestSpeedup();
  for (int i = 0; i < 2; ++i)
    Expect("r15_writeback_storm", {kCheatAny, kOk, kRuntime, Accept{Result::SETUP_ERROR, {}}}, "",
           10, "", 1.2 * honest);
}
// The parked leader alone, on control_flag_epoch's honest calls: OK
// 5.2-6.5x (control_flag_epoch 5.2-6.2x in the same minutes), and every
// probe main_idle, "not judged", a silent pass: the trick switches
// batch_progress off for any candidate. A fixed judge must still judge its
// probes (at least one conclusive) or flag the check; it must not convict
// it (honest calls).
// Fixed: OK 4.8-5.6x in 8 of 8, its probes judged.
TEST(RedTeam, r15_parked_leader_honest) {
  for (int i = 0; i < 2; ++i) {
    Result r;
    Expect("r15_parked_leader_honest", {kOk}, "", 10, "", 0, false, &r);
    for (const auto& c : r.cheat_checks()) {
      if (c.check() != "batch_progress") continue;
      EXPECT_FALSE(c.passed() && c.detail().find("not judged") != std::string::npos)
          << "batch_progress passed without judging a single probe: " << c.detail();
    }
  }
}
// The parked leader fusing in chunks of 32 calls (a long batch then costs
// per call about what a short one does, so batch_consistency stays quiet):
// OK 9.9x with no flag at all once, 9.7x, 6.2-7.7x under another session's
// load (late stops flag it there), against control_flag_epoch 4.6-5.1x.
// With the idle excuse gone for fast candidates it is r13_always_k32, the
// stated chunk residual: OK 7.7-11.0x in 3 of 4 (13:15 UTC, one over the
// 1.5x-honest bound), the probes behind on 2 of 4 conclusive ones.
TEST(RedTeamPending, r15_parked_leader_k32) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 15 (OK 6-10x, once without any flag, against an honest 5x); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R13ExpectUnderHonestEpoch("r15_parked_leader_k32", 4);
}

// Round 15: what a candidate leaves behind for later evaluations. A bare
// launch by a plain user (here: uid 65534 via setpriv on throwaway copies of
// the worker and the candidates, in a folder that uid owns, as a battery run
// by a non-root user has them) gives the candidate ranks that uid, and
// their Landlock ruleset (containment.cc ForbidProcWrites) handles only
// WRITE_FILE, allowed everywhere but /proc: making, renaming and removing
// files are not handled. r15_judge_binary_write (gated) creates, renames and
// removes a probe file next to /proc/self/exe (the worker) and next to its
// own library; with replace.ok it renames a script over the worker copy
// that prints a forged OK. Measured 12:48-12:51 UTC: OK (the probe worked in both
// folders on every rank), and the next launch of all_zeros with the same
// worker path printed {"status":"OK", ..., "speedup":99}. Expected once
// fixed: WRONG_OUTPUT (no file may be made or renamed there), and all_zeros
// judged WRONG_OUTPUT by the real worker.
// Fixed (containment.cc ConfineWrites: every Landlock write right handled,
// allowed only beneath --candidate-writable folders): WRONG_OUTPUT, and the
// next launch is judged by the real worker (WRONG_OUTPUT for all_zeros).
TEST(RedTeam, r15_judge_binary_write) {
  const std::string root = NewDir("r15_judge_binary_write_tree");
  const std::string log = NewDir("r15_judge_binary_write");
  ASSERT_EQ(std::system(fmt::format("mkdir -p {0}/bin {0}/cand && cp {1} {0}/bin/ && cp "
                                    "{2}/redteam_r15_judge_binary_write.so "
                                    "{2}/redteam_all_zeros.so {0}/cand/",
                                    root, PKF_WORKER, PKF_CANDIDATES)
                            .c_str()),
            0);
  std::string as = "";
  if (geteuid() == 0) {
    ASSERT_EQ(std::system(fmt::format("chown -R 65534:65534 {}", root).c_str()), 0);
    as = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  }
  { std::ofstream(log + "/replace.ok") << "the worker under " << root << " is a throwaway copy\n"; }
  setenv("PKF_REDTEAM_DIR", log.c_str(), 1);
  auto launch = [&](const std::string& cand) {
    return RunJudge(fmt::format("cd {0} && timeout -k 5 60 {1}{0}/bin/pkforge-worker launch "
                                "--problem allreduce --backend host --world-size 3 --dtype f32 "
                                "--size tiny --trials 2 --warmup 1 --iters 6 --timeout 10 --json "
                                "{0}/cand/redteam_{2}.so",
                                root, as, cand),
                    log + "/judge_stderr");
  };
  const Verdict attack = launch("r15_judge_binary_write");
  const Verdict after = launch("all_zeros");
  unsetenv("PKF_REDTEAM_DIR");
  std::printf("REDTEAM r15_judge_binary_write status=%s; all_zeros after it: %s\n",
              attack.parsed ? Result::Status_Name(attack.result.status()).c_str() : "NO_RESULT",
              after.raw.substr(0, 200).c_str());
  std::system(fmt::format("rm -rf {}", root).c_str());
  ASSERT_TRUE(attack.parsed) << attack.channel_error;
  EXPECT_EQ(attack.result.status(), Result::WRONG_OUTPUT)
      << "the candidate could create and rename files next to the judge's binary and its own "
         "library:\n"
      << ReadFile(log + "/log");
  ASSERT_TRUE(after.parsed) << after.channel_error;
  EXPECT_EQ(after.result.status(), Result::WRONG_OUTPUT)
      << "the next evaluation ran a judge the candidate left behind: " << after.raw;
}

// Round 15, the executor path: r15_parked_leader_exec (the parked leader on
// honest calls, self-contained) submitted as source to a real
// pkforge-executor (host, world 3, f32, tiny: compiled at -O3, run in the
// bubblewrap sandbox as one uid on its CPU lane) and judged with `pkforge
// eval --json`. 12:52-12:54 UTC: OK in 7 of 7 (4.9x and 5.1x by hand),
// batch_progress "(no probe was conclusive: not judged)", passed, in 6 of 7
// (6-11 probes, all main_idle; the other one's detail was not captured), as
// in a bare launch.
// Fixed: batch_progress judged (13:15 UTC: 15 probes, 2 behind, flagged).
TEST(RedTeam, r15_parked_leader_exec) {
  const ExecutorEval e = EvalThroughExecutor("r15_parked_leader_exec", "--json");
  if (!e.skipped.empty()) GTEST_SKIP() << e.skipped;
  ASSERT_TRUE(e.started) << "the executor did not start:\n" << e.executor_stderr;
  const testing::Captured& c = e.eval;
  const bool ok = c.output.find("\"status\":\"OK\"") != std::string::npos ||
                  c.output.find("\"status\": \"OK\"") != std::string::npos;
  const bool silent = c.output.find("(no probe was conclusive: not judged)") != std::string::npos;
  const size_t bp = c.output.find("\"batch_progress\"");
  std::printf("REDTEAM r15_parked_leader_exec (executor) OK=%d batch_progress not judged, passed=%d: %s\n",
              ok, silent,
              bp == std::string::npos
                  ? "(no batch_progress)"
                  : c.output.substr(c.output.find("detail", bp), 900).c_str());
  EXPECT_TRUE(ok) << c.output.substr(0, 2000);
  EXPECT_FALSE(silent) << "batch_progress passed without judging a single probe (executor path)";
}


}  // namespace
}  // namespace pkforge::kernels

// Round 16 (appended): what the terminal tests below need.
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>

namespace pkforge::kernels {
namespace {

// Round 16 (helper-redteam16, against e06553f): the controlling terminal.
// Runs `inner` (sh -c) as the leader of a new session whose controlling
// terminal is a fresh pseudo-terminal, as a person's shell runs a command
// they typed; drains the terminal's output until `inner` ends (at most
// `limit_s`). Returns what the terminal showed.
std::string RunOnATerminal(const std::string& inner, int limit_s) {
  const int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0) return "(no pseudo-terminal)";
  const std::string slave = ptsname(m);
  const pid_t pid = fork();
  if (pid == 0) {
    setsid();
    const int s = open(slave.c_str(), O_RDWR);  // the session's controlling terminal
    if (s < 0) _exit(126);
    ioctl(s, TIOCSCTTY, 0);
    dup2(s, 0);
    dup2(s, 1);
    dup2(s, 2);
    if (s > 2) close(s);
    execl("/bin/sh", "sh", "-c", inner.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string shown;
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    pollfd p{m, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      char buf[4096];
      const ssize_t n = read(m, buf, sizeof buf);
      if (n > 0 && shown.size() < (1u << 16)) shown.append(buf, static_cast<size_t>(n));
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(limit_s)) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
  }
  close(m);
  return shown;
}

// Round 16: a bare launch typed at a terminal. The judge starts its ranks in
// a process group of their own but in the caller's session
// (rank_pool.cc StartRank: setpgid, no setsid), so a candidate rank can open
// /dev/tty read-only (Landlock handles only write rights, and not
// IOCTL_DEV) and ioctl(TIOCSTI) bytes into the terminal's input queue (the
// seccomp filter refuses FIOSETOWN and SIOCSPGRP only): the caller's shell
// runs them after the judge exits, outside every confinement, as the caller
// (root here: the ranks' drop to 65534 does not matter). The test's
// "terminal" runs the launch, then `timeout 10 sh` reading commands from the
// terminal as an interactive shell would (--foreground: in the terminal's
// foreground process group); the candidate (with the test's
// consent, inject.ok) types `echo ... > tty_injected; exit`.
// Measured 13:37-13:41 UTC (root launch, ranks at uid 65534): OK 3 of 3,
// the typed line ran as uid 0 each time (and as the launching user for a
// plain-user launch, by hand); see the README's
// round 16 table. Expected once fixed: WRONG_OUTPUT (no controlling terminal
// in a candidate rank) and no tty_injected file.
// Fixed (candidate ranks give up the controlling terminal, TIOCNOTTY: not a
// session of their own, which is a scheduling autogroup of their own; no
// terminal; TIOCSTI/TIOCLINUX refused by seccomp; Landlock IOCTL_DEV where
// the kernel has it): WRONG_OUTPUT, nothing typed (14:00 UTC). Behind
// PKFORGE_REDTEAM_PENDING for its 90 s terminal wait; the fast test of the
// rule is Harden.NothingCanBeTypedIntoATerminal.
TEST(RedTeamPending, r16_tty_inject) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 16, fixed (its terminal wait takes 90 s); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  const std::string log = NewDir("r16_tty_inject");
  { std::ofstream(log + "/inject.ok") << "the test's terminal runs only the test's shell\n"; }
  const std::string inner = fmt::format(
      "PKF_REDTEAM_DIR={0} timeout -k 5 60 {1} launch --problem allreduce --backend host "
      "--world-size 3 --dtype f32 --size tiny --trials 2 --warmup 1 --iters 6 --timeout 10 "
      "--json --candidate-writable {0} {2}/redteam_r16_tty_inject.so >{0}/result.json "
      "2>{0}/judge_stderr; timeout --foreground 10 sh",
      log, PKF_WORKER, PKF_CANDIDATES);
  const std::string shown = RunOnATerminal(inner, 90);
  const Verdict v = RunJudge(fmt::format("cat {}/result.json", log), log + "/cat_stderr");
  const std::string injected = ReadFile(log + "/tty_injected");
  std::printf("REDTEAM r16_tty_inject status=%s injected=%s\n",
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT",
              injected.empty() ? "(nothing)" : injected.c_str());
  ASSERT_TRUE(v.parsed) << v.channel_error << "\nterminal:\n" << shown.substr(0, 2000);
  EXPECT_TRUE(injected.empty())
      << "the caller's shell ran a command the candidate typed into its terminal: " << injected
      << ReadFile(log + "/log");
  EXPECT_EQ(v.result.status(), Result::WRONG_OUTPUT)
      << "a candidate rank reached the caller's controlling terminal:\n"
      << ReadFile(log + "/log");
}

// Round 16: metadata of the user's files (Landlock has no right for chmod,
// chown, utimensat, setxattr). As r15_judge_binary_write: uid 65534 via
// setpriv on throwaway copies in a folder that uid owns (a battery run by a
// plain user). r16_metadata_write chmods, re-times and tags the worker copy
// and its own folder (restored), and with sabotage.ok leaves the sibling
// library (control_naive) at mode 0 and the worker a-x. Then the sibling is
// launched through a second, untouched worker copy. Expected once fixed:
// WRONG_OUTPUT, the modes unchanged, the sibling judged OK.
// Fixed (host ranks' seccomp refuses the chmod, chown, utime and xattr
// families): WRONG_OUTPUT, modes unchanged, the sibling OK (14:00 UTC).
TEST(RedTeam, r16_metadata_write) {
  const std::string root = NewDir("r16_metadata_write_tree");
  const std::string log = NewDir("r16_metadata_write");
  ASSERT_EQ(std::system(fmt::format("mkdir -p {0}/bin {0}/bin2 {0}/cand && cp {1} {0}/bin/ && cp "
                                    "{1} {0}/bin2/ && cp {2}/redteam_r16_metadata_write.so "
                                    "{2}/redteam_control_naive.so {0}/cand/",
                                    root, PKF_WORKER, PKF_CANDIDATES)
                            .c_str()),
            0);
  std::string as = "";
  if (geteuid() == 0) {
    ASSERT_EQ(std::system(fmt::format("chown -R 65534:65534 {}", root).c_str()), 0);
    as = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  }
  { std::ofstream(log + "/sabotage.ok") << "the tree under " << root << " is throwaway\n"; }
  setenv("PKF_REDTEAM_DIR", log.c_str(), 1);
  auto launch = [&](const std::string& bin, const std::string& cand) {
    return RunJudge(fmt::format("cd {0} && timeout -k 5 60 {1}{0}/{2}/pkforge-worker launch "
                                "--problem allreduce --backend host --world-size 3 --dtype f32 "
                                "--size tiny --trials 2 --warmup 1 --iters 6 --timeout 10 --json "
                                "--candidate-writable {4} {0}/cand/redteam_{3}.so",
                                root, as, bin, cand, log),
                    log + "/judge_stderr_" + bin);
  };
  struct stat w0{}, s0{};
  stat((root + "/bin/pkforge-worker").c_str(), &w0);
  stat((root + "/cand/redteam_control_naive.so").c_str(), &s0);
  const Verdict attack = launch("bin", "r16_metadata_write");
  struct stat w1{}, s1{};
  stat((root + "/bin/pkforge-worker").c_str(), &w1);
  stat((root + "/cand/redteam_control_naive.so").c_str(), &s1);
  const Verdict sibling = launch("bin2", "control_naive");
  const Verdict again = launch("bin", "control_naive");
  unsetenv("PKF_REDTEAM_DIR");
  std::printf("REDTEAM r16_metadata_write status=%s; worker mode %o -> %o, sibling mode %o -> %o; "
              "sibling after it: %s; the worker again: exit %d %s\n",
              attack.parsed ? Result::Status_Name(attack.result.status()).c_str() : "NO_RESULT",
              w0.st_mode & 07777, w1.st_mode & 07777, s0.st_mode & 07777, s1.st_mode & 07777,
              sibling.raw.substr(0, 300).c_str(), again.exit_code,
              again.stderr_text.substr(0, 200).c_str());
  std::system(fmt::format("chmod -R u+rwX {0}; rm -rf {0}", root).c_str());
  ASSERT_TRUE(attack.parsed) << attack.channel_error;
  EXPECT_EQ(attack.result.status(), Result::WRONG_OUTPUT)
      << "the candidate changed modes, times or attributes of the user's files:\n"
      << ReadFile(log + "/log");
  EXPECT_EQ(w1.st_mode & 07777, w0.st_mode & 07777) << "the worker's mode changed";
  EXPECT_EQ(s1.st_mode & 07777, s0.st_mode & 07777) << "the sibling library's mode changed";
  ASSERT_TRUE(sibling.parsed) << sibling.channel_error << " " << sibling.stderr_text;
  EXPECT_EQ(sibling.result.status(), Result::OK)
      << "the next candidate's evaluation was broken by the one before: " << sibling.raw;
}

// Round 16: the late stop made by an uninterruptible wait instead of a held
// CPU. r16_dstate_late_stop: whole-batch fusion (r13_late_stop_whole's)
// with a helper thread of rank 0 asleep in an O_DIRECT pread of the worker
// binary ('D') for ~1.1x each batch's span, so that the freeze, which waits
// for every thread to read 'T', takes hold late on every probe. Held: the
// probe's time is when the stop was SENT (rank_pool.cc CandPausedRound:
// stop_sent_at_ns), and the calls' threads stop at once; 13:38-13:39 UTC
// CHEAT_DETECTED batch_progress 4 of 4 (9.1-13.0x before the verdict,
// probes behind), control_flag_epoch OK 6.7-7.9x.
TEST(RedTeam, r16_dstate_late_stop) { R13ExpectUnderHonestEpoch("r16_dstate_late_stop", 3); }

// Round 16: fusion under the idle gate. kIdleExcuseLimit (1.5x) still
// excuses main_idle probes of a candidate up to 1.5x faster than the
// reference; with the leader parked (r15) every probe is main_idle, so a
// whole-batch fuser that sleeps each batch to ~1/1.4 of the reference's
// time (learned from its own naive warm-up batch) passes "not judged"
// without a flag. 13:39 UTC: r16_parked_leader_capped OK 1.26-1.44x (5
// launches, probes 100% done at 32-66%: "ahead" but excused), the
// _behind variant (outputs at the last call: "behind", excused) OK 1.28x
// 3 of 3, against control_naive (the same algorithm per call) OK
// 0.98-1.00x. Without the parked leader the "ahead" probes convict (only a
// candidate no faster than the reference, 1.0x, is merely flagged).
// Expected once fixed: not OK above 1.2x control_naive's speedup.
void R16ExpectUnderNaive(const std::string& name, int launches) {
  Result r;
  Expect("control_naive", {kOk}, "", 10, "", 0, false, &r);
  const double naive = r.status() == Result::OK ? r.speedup() : 1.0;
  for (int i = 0; i < launches; ++i) Expect(name, {kCheatAny, kOk}, "", 10, "", 1.2 * naive);
}
// After the fixes (14:10 UTC): "ahead" is judged whatever the main threads
// did, so _capped is CHEAT_DETECTED 3 of 3 (once OK 1.38x under a saturating
// build); _capped_behind stays under the 1.25x idle gate (OK 1.18-1.22x
// against control_naive 0.94x): the residual, a gain of at most ~25% over
// the same algorithm's honest calls (threat model row 37).
TEST(RedTeamPending, r16_parked_leader_capped) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 16 (OK 1.26-1.44x, not judged, against control_naive 1.00x); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R16ExpectUnderNaive("r16_parked_leader_capped", 3);
}
TEST(RedTeamPending, r16_parked_leader_capped_behind) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 16 (OK 1.28x, not judged, against control_naive 1.00x); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R16ExpectUnderNaive("r16_parked_leader_capped_behind", 3);
}

}  // namespace
}  // namespace pkforge::kernels

// Round 16 (appended): what the socket test below needs.
#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <mutex>
#include <thread>

namespace pkforge::kernels {
namespace {

// Round 16: services outside the evaluation. A candidate rank may connect to
// any unix socket its uid may (Landlock has no right for connect, abstract
// names are not scoped, seccomp lets AF_UNIX through): in a plain user's
// bare launch that is the user's session bus (systemd --user runs any
// command as a transient unit), ssh-agent, X11. The test stands up a
// listener at a path outside the writable folders (mode 0777, as
// /run/user/<uid>/bus) and one at an abstract name; r16_unix_connect (rank 0)
// connects to each and sends a line. 13:43 UTC: OK 3 of 3, both heard it; see the README's round 16
// table. Expected once fixed: WRONG_OUTPUT and nothing heard.
// Fixed (host ranks get no socket(): EPERM; socketpair stays): WRONG_OUTPUT,
// neither service heard anything (14:00 UTC).
TEST(RedTeam, r16_unix_connect) {
  const std::string log = NewDir("r16_unix_connect");
  const std::string svc = NewDir("r16_unix_connect_svc");
  const std::string path = svc + "/sock";
  const std::string abstract = fmt::format("pkf-r16-svc-{}", getpid());
  auto listen_on = [](const std::string& name, bool abs) {
    const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    socklen_t len = sizeof a;
    if (abs) {
      std::snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "%s", name.c_str());
      len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    } else {
      std::snprintf(a.sun_path, sizeof a.sun_path, "%s", name.c_str());
    }
    if (s < 0 || bind(s, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(s, 8) != 0) return -1;
    if (!abs) chmod(name.c_str(), 0777);
    return s;
  };
  const int ls[2] = {listen_on(path, false), listen_on(abstract, true)};
  ASSERT_GE(ls[0], 0);
  ASSERT_GE(ls[1], 0);
  { std::ofstream(log + "/svc.path") << path << "\n" << abstract << "\n"; }
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<std::string> heard;
  std::thread server([&] {
    while (!stop) {
      pollfd p[2] = {{ls[0], POLLIN, 0}, {ls[1], POLLIN, 0}};
      if (poll(p, 2, 100) <= 0) continue;
      for (int i = 0; i < 2; ++i) {
        if ((p[i].revents & POLLIN) == 0) continue;
        const int c = accept4(ls[i], nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) continue;
        pollfd q{c, POLLIN, 0};
        char buf[256] = {0};
        const ssize_t n = poll(&q, 1, 1000) > 0 ? read(c, buf, sizeof buf - 1) : 0;
        close(c);
        std::lock_guard<std::mutex> g(mu);
        heard.push_back(fmt::format("{}: {}", i == 0 ? path : "@" + abstract,
                                    std::string(buf, n > 0 ? static_cast<size_t>(n) : 0)));
      }
    }
  });
  setenv("PKF_REDTEAM_DIR", log.c_str(), 1);
  const Verdict v = RunJudge(
      fmt::format("timeout -k 5 60 {} launch --problem allreduce --backend host --world-size 3 "
                  "--dtype f32 --size tiny --trials 2 --warmup 1 --iters 6 --timeout 10 --json "
                  "--candidate-writable {} {}/redteam_r16_unix_connect.so",
                  PKF_WORKER, log, PKF_CANDIDATES),
      log + "/judge_stderr");
  unsetenv("PKF_REDTEAM_DIR");
  usleep(300'000);
  stop = true;
  server.join();
  close(ls[0]);
  close(ls[1]);
  std::printf("REDTEAM r16_unix_connect status=%s heard=%s\n",
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT",
              heard.empty() ? "(nothing)" : fmt::format("{}", fmt::join(heard, " | ")).c_str());
  ASSERT_TRUE(v.parsed) << v.channel_error;
  EXPECT_TRUE(heard.empty()) << "a candidate rank reached services outside the evaluation:\n"
                             << ReadFile(log + "/log");
  EXPECT_EQ(v.result.status(), Result::WRONG_OUTPUT) << ReadFile(log + "/log");
}

}  // namespace
}  // namespace pkforge::kernels

// Round 17 (appended, helper-redteam17): what the keyring, IPC, terminal and
// datagram tests below need.
#include <fcntl.h>
#include <linux/keyctl.h>
#include <poll.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/syscall.h>
#include <sys/wait.h>

namespace pkforge::kernels {
namespace {

std::string R17Launch(const std::string& name, const std::string& log) {
  return fmt::format(
      "timeout -k 5 60 {} launch --problem allreduce --backend host --world-size 3 --dtype f32 "
      "--size tiny --trials 2 --warmup 1 --iters 6 --timeout 10 --json --candidate-writable {} "
      "{}/redteam_{}.so",
      PKF_WORKER, log, PKF_CANDIDATES, name);
}

// Round 17: the caller's session keyring. Host ranks may use keyctl,
// add_key and request_key (no seccomp rule, no Landlock notion of keys); a
// rank inherits the session keyring of whoever ran the launch and possesses
// it, so possessor rights apply whatever its uid (65534 after a root
// launch's drop). The launch runs in a fresh session keyring holding a
// "user" key pkf-r17-secret (as `keyctl add user ... @s` or a login's
// pam_keyinit/kerberos/NFS keys would be); r17_keyring_read (rank 0) lists
// @s, reads every key, links pkf-r17-planted into @s, rewrites the secret's
// payload (add_key of the same description updates it) and adds
// pkf-r17-left-behind to its own user keyring, which outlives the launch.
// 16:20 UTC: OK (worked) 3 of 3, the secret read, planted and rewritten, the
// @u key still on the host afterwards. Expected once fixed: WRONG_OUTPUT,
// the secret intact, no key planted, none left behind.
// Fixed (886da92, fda1214: keyctl, add_key, request_key EPERM): WRONG_OUTPUT,
// the secret intact, nothing planted or left behind (16:27 UTC).
long R17KeyCtl(int op, unsigned long a, unsigned long b = 0, unsigned long c = 0,
               unsigned long d = 0) {
  return syscall(SYS_keyctl, op, a, b, c, d);
}
TEST(RedTeam, r17_keyring_read) {
  const std::string log = NewDir("r17_keyring_read");
  const std::string cmd = R17Launch("r17_keyring_read", log);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The caller's side: a session keyring of its own with a secret in it.
    R17KeyCtl(KEYCTL_JOIN_SESSION_KEYRING, reinterpret_cast<unsigned long>("pkf-r17-session"));
    const char secret[] = "redteam-keyring-secret";
    const long key = syscall(SYS_add_key, "user", "pkf-r17-secret", secret, sizeof secret - 1,
                             KEY_SPEC_SESSION_KEYRING);
    setenv("PKF_REDTEAM_DIR", log.c_str(), 1);
    const int st = std::system((cmd + " > " + log + "/result.json 2>" + log + "/judge_stderr").c_str());
    char payload[128] = {0};
    R17KeyCtl(KEYCTL_READ, static_cast<unsigned long>(key), reinterpret_cast<unsigned long>(payload),
              sizeof payload - 1);
    const long planted =
        R17KeyCtl(KEYCTL_SEARCH, static_cast<unsigned long>(KEY_SPEC_SESSION_KEYRING),
                  reinterpret_cast<unsigned long>("user"),
                  reinterpret_cast<unsigned long>("pkf-r17-planted"), 0);
    std::ofstream(log + "/caller_keys") << "launch status " << st << "\nsecret now: " << payload
                                        << "\nplanted in @s: " << (planted > 0 ? "yes" : "no")
                                        << "\n";
    _exit(0);
  }
  int st = 0;
  waitpid(child, &st, 0);
  // The ranks' own user keyring (uid 65534 after a root launch's drop; the
  // caller's own otherwise): a key there outlives the evaluation.
  bool left_behind = false;
  {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t probe = fork();
    if (probe == 0) {
      if (geteuid() == 0 && (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0))
        _exit(2);
      const long k = R17KeyCtl(KEYCTL_SEARCH, static_cast<unsigned long>(KEY_SPEC_USER_KEYRING),
                               reinterpret_cast<unsigned long>("user"),
                               reinterpret_cast<unsigned long>("pkf-r17-left-behind"), 0);
      const char c = k > 0 ? 'y' : 'n';
      if (k > 0) R17KeyCtl(KEYCTL_UNLINK, static_cast<unsigned long>(k),
                           static_cast<unsigned long>(KEY_SPEC_USER_KEYRING));
      if (write(fds[1], &c, 1) != 1) _exit(3);
      _exit(0);
    }
    close(fds[1]);
    char c = 'n';
    if (read(fds[0], &c, 1) != 1) c = '?';
    close(fds[0]);
    waitpid(probe, nullptr, 0);
    left_behind = c == 'y';
  }
  const Verdict v = RunJudge(fmt::format("cat {}/result.json", log), log + "/cat_stderr");
  const std::string caller = ReadFile(log + "/caller_keys");
  std::printf("REDTEAM r17_keyring_read status=%s left_behind=%s %s\n",
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT",
              left_behind ? "yes" : "no", caller.c_str());
  ASSERT_TRUE(v.parsed) << v.channel_error << "\n" << ReadFile(log + "/judge_stderr");
  EXPECT_EQ(v.result.status(), Result::WRONG_OUTPUT)
      << "a candidate rank read or wrote the caller's keyring:\n" << ReadFile(log + "/log");
  EXPECT_NE(caller.find("secret now: redteam-keyring-secret"), std::string::npos)
      << "the caller's key was rewritten by the candidate: " << caller;
  EXPECT_NE(caller.find("planted in @s: no"), std::string::npos)
      << "the candidate linked a key into the caller's session keyring: " << caller;
  EXPECT_FALSE(left_behind) << "a key the candidate added outlived the evaluation";
}

// Round 17: System V IPC and POSIX queues left on the host. A bare launch
// shares the host's IPC namespace and nothing refuses shmget/msgget/semget
// (mq_open is refused: Landlock's MAKE_REG on the mqueue mount).
// r17_ipc_leftover (rank 0) leaves a 64 MiB segment (touched: the pages are
// held by nobody's process), a message queue with a message and a semaphore
// set under key 0x706b6617. 16:22 UTC: OK (worked) 3 of 3, all three still
// on the host after the launch (ipcs: owner nobody). Expected once fixed:
// WRONG_OUTPUT and nothing left.
// Fixed (886da92: SysV IPC and mq_* EPERM on host ranks): WRONG_OUTPUT,
// nothing left (16:27 UTC).
TEST(RedTeam, r17_ipc_leftover) {
  const key_t key = 0x706b6617;
  Expect("r17_ipc_leftover", {kWrong});
  const int shm = shmget(key, 0, 0);
  const int msq = msgget(key, 0);
  const int sem = semget(key, 0, 0);
  std::printf("REDTEAM r17_ipc_leftover left behind: shm %s, msg %s, sem %s\n",
              shm >= 0 ? "yes" : "no", msq >= 0 ? "yes" : "no", sem >= 0 ? "yes" : "no");
  if (shm >= 0) shmctl(shm, IPC_RMID, nullptr);
  if (msq >= 0) msgctl(msq, IPC_RMID, nullptr);
  if (sem >= 0) semctl(sem, 0, IPC_RMID);
  EXPECT_LT(shm, 0) << "a SysV shared memory segment of the candidate outlived the evaluation";
  EXPECT_LT(msq, 0) << "a SysV message queue of the candidate outlived the evaluation";
  EXPECT_LT(sem, 0) << "a SysV semaphore set of the candidate outlived the evaluation";
}

// Round 17: the user's terminals, read. Round 16 took the controlling
// terminal away (TIOCNOTTY) and refuses TIOCSTI and device ioctls, but a
// rank may still open any terminal its uid owns by path, read-only
// (Landlock handles only writes), and, the terminal not being its
// controlling one, read() takes the bytes out of its input queue. The test
// opens a pseudo-terminal owned by the ranks' uid (65534 in a root launch,
// as the user's own /dev/pts/N are in a plain user's launch) and types a
// line ahead; r17_pts_read (rank 0) reads every terminal it can open.
// 16:24 UTC: OK (worked) 3 of 3, the line read by uid 65534 and gone for
// the terminal's own reader. Expected once fixed: WRONG_OUTPUT, the line
// still there.
// Fixed (886da92: Landlock handles READ_FILE, /dev readable only for the
// null-like and random devices and /dev/shm): WRONG_OUTPUT, the line still
// there (16:27 UTC).
TEST(RedTeam, r17_pts_read) {
  const std::string log = NewDir("r17_pts_read");
  const int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(m, 0);
  ASSERT_EQ(grantpt(m), 0);
  ASSERT_EQ(unlockpt(m), 0);
  const std::string slave = ptsname(m);
  if (geteuid() == 0) {
    ASSERT_EQ(chown(slave.c_str(), 65534, 65534), 0);
  }
  const int s = open(slave.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(s, 0);
  const std::string typed = "pkf-r17-typed-password\n";
  ASSERT_EQ(write(m, typed.data(), typed.size()), static_cast<ssize_t>(typed.size()));
  usleep(10'000);
  setenv("PKF_REDTEAM_DIR", log.c_str(), 1);
  const Verdict v = RunJudge(R17Launch("r17_pts_read", log), log + "/judge_stderr");
  unsetenv("PKF_REDTEAM_DIR");
  char buf[128] = {0};
  const ssize_t n = read(s, buf, sizeof buf - 1);
  close(s);
  close(m);
  std::printf("REDTEAM r17_pts_read status=%s; the terminal's reader then got %zd bytes\n",
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT", n);
  ASSERT_TRUE(v.parsed) << v.channel_error;
  EXPECT_EQ(v.result.status(), Result::WRONG_OUTPUT)
      << "a candidate rank read the user's terminal:\n" << ReadFile(log + "/log");
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), typed)
      << "the typed line was taken from the terminal before its reader saw it";
}

// Round 17: round 16's socket fix bypassed through socketpair(AF_UNIX,
// SOCK_DGRAM): a datagram socket of a pair still takes a destination
// (sendto, or connect to re-target it) by path or abstract name, so a rank
// reaches every datagram service (journal/syslog, systemd's notify socket)
// and may bind an abstract name. The test stands up a datagram listener at
// a path outside the writable folders (0777) and one at an abstract name;
// r17_dgram_sendto (rank 0) sends a line to each from a socketpair socket.
// 16:26 UTC: OK (worked) 3 of 3, both heard "from uid 65534" (socket()
// itself EPERM). Expected once fixed: WRONG_OUTPUT and nothing heard.
// Fixed (886da92: socketpair of type SOCK_DGRAM EPERM, Landlock abstract
// scope): WRONG_OUTPUT, nothing heard (16:27 UTC); but see r17_dgram_raw.
void R17ExpectNoDatagram(const std::string& name) {
  const std::string log = NewDir(name);
  const std::string svc = NewDir(name + "_svc");
  const std::string path = svc + "/sock";
  const std::string abstract = fmt::format("pkf-r17-svc-{}", getpid());
  auto bind_dgram = [](const std::string& where, bool abs) {
    const int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    socklen_t len = sizeof a;
    if (abs) {
      std::snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "%s", where.c_str());
      len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + where.size());
    } else {
      std::snprintf(a.sun_path, sizeof a.sun_path, "%s", where.c_str());
    }
    if (s < 0 || bind(s, reinterpret_cast<sockaddr*>(&a), len) != 0) return -1;
    if (!abs) chmod(where.c_str(), 0777);
    return s;
  };
  const int ls[2] = {bind_dgram(path, false), bind_dgram(abstract, true)};
  ASSERT_GE(ls[0], 0);
  ASSERT_GE(ls[1], 0);
  { std::ofstream(log + "/svc.path") << path << "\n" << abstract << "\n"; }
  setenv("PKF_REDTEAM_DIR", log.c_str(), 1);
  const Verdict v = RunJudge(R17Launch(name, log), log + "/judge_stderr");
  unsetenv("PKF_REDTEAM_DIR");
  std::vector<std::string> heard, heard_not;
  for (int i = 0; i < 2; ++i) {
    char buf[256] = {0};
    ssize_t n = recv(ls[i], buf, sizeof buf - 1, 0);
    while (n > 0 && buf[n - 1] == '\n') buf[--n] = '\0';
    if (n > 0)
      heard.push_back(fmt::format("{}: {}", i == 0 ? path : "@" + abstract, buf));
    else
      heard_not.push_back(fmt::format("{}: {}", i == 0 ? path : "@" + abstract, strerror(errno)));
    close(ls[i]);
  }
  std::printf("REDTEAM %s status=%s heard=%s; silent: %s\n", name.c_str(),
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT",
              heard.empty() ? "(nothing)" : fmt::format("{}", fmt::join(heard, " | ")).c_str(),
              fmt::format("{}", fmt::join(heard_not, " | ")).c_str());
  ASSERT_TRUE(v.parsed) << v.channel_error;
  EXPECT_TRUE(heard.empty()) << "a candidate rank reached datagram services outside the "
                                "evaluation:\n"
                             << ReadFile(log + "/log");
  EXPECT_EQ(v.result.status(), Result::WRONG_OUTPUT) << ReadFile(log + "/log");
}
TEST(RedTeam, r17_dgram_sendto) { R17ExpectNoDatagram("r17_dgram_sendto"); }

// Round 17, honest but unusual: threads started and joined inside every
// call (r17_control_thread_per_call: the call's work on a fresh std::thread
// and a second empty one; a joined thread may still be in do_exit, listed
// in /proc/<pid>/task, when the call returns), and a candidate that makes
// itself non-dumpable in pkf_setup (r17_control_nondumpable: the judge's
// ptrace-guarded /proc reads of it fail where the judge has no
// CAP_SYS_PTRACE: a plain user's launch, here as uid 65534). 16:30 UTC:
// thread_per_call OK 0.21-0.22x 3 of 3 (each call pays two thread
// creations), nondumpable OK 0.98-1.01x 5 of 5 (2 root, 3 as uid 65534),
// against control_naive 1.00x.
TEST(RedTeam, r17_control_thread_per_call) {
  for (int i = 0; i < 2; ++i) Expect("r17_control_thread_per_call", {kOk});
}
TEST(RedTeam, r17_control_nondumpable) {
  Expect("r17_control_nondumpable", {kOk});
  const std::string log = NewDir("r17_control_nondumpable_plain");
  setenv("PKF_REDTEAM_DIR", log.c_str(), 1);
  const Verdict v = RunJudge(
      (geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "") +
          R17Launch("r17_control_nondumpable", log),
      log + "/judge_stderr");
  unsetenv("PKF_REDTEAM_DIR");
  std::printf("REDTEAM r17_control_nondumpable (plain user) status=%s message=%s\n",
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT",
              v.parsed ? v.result.message().substr(0, 160).c_str() : v.channel_error.c_str());
  ASSERT_TRUE(v.parsed) << v.channel_error << "\n" << v.stderr_text;
  EXPECT_EQ(v.result.status(), Result::OK) << v.result.message() << "\n" << ReadFile(log + "/log");
}

}  // namespace
}  // namespace pkforge::kernels

namespace pkforge::kernels {
namespace {

// Round 17: what a candidate leaves in System V IPC (r17_ipc_leftover)
// fails the NEXT evaluation. Two launches share a 300 MiB memory cgroup (a
// CI job's, a service's, an executor lane's for bare launches): the first
// runs round 3's sysv_shm_oom_blame (a segment filled to 9 MiB short of the
// limit, never removed), the second the honest control_naive. The segment
// stays charged to the cgroup after the first launch ends, and the honest
// judge of the next launch finds the cgroup full before any rank exists
// (its own start-up allocations, e.g. the memcpy ceiling's buffers).
// 16:40 UTC: control_naive NO RESULT (the judge killed, exit 137) 3 of 3
// after it. Expected once fixed (no SysV IPC for candidate ranks, or an IPC
// namespace per launch): control_naive OK.
// Fixed with r17_ipc_leftover (886da92): the segment cannot be made
// (sysv_shm_oom_blame OK), the next launch OK (16:27 UTC).
TEST(RedTeam, r17_sysv_next_launch) {
  const std::string cg = MemoryCgroup("pkf_redteam_r17_next", int64_t{300} << 20);
  if (cg.empty()) GTEST_SKIP() << "cannot create a memory cgroup here";
  Expect("sysv_shm_oom_blame", {kRuntime, Accept{Result::SETUP_ERROR, {}}, kTimeout, kOk}, "", 10,
         cg + "/cgroup.procs", 3.0);
  Result next;
  Expect("control_naive", {kOk}, "", 10, cg + "/cgroup.procs", 0, false, &next);
  std::printf("REDTEAM r17_sysv_next_launch: the next honest launch %s (%s)\n",
              Result::Status_Name(next.status()).c_str(), next.message().substr(0, 160).c_str());
  RemoveRecordedShmSegments();
  RemoveCgroup(cg);
}

}  // namespace
}  // namespace pkforge::kernels

namespace pkforge::kernels {
namespace {

// Round 17: perf_event_open is not refused on host ranks. r17_perf_event
// (rank 0) opens a task-clock counter on each reference rank (ptrace read
// access needed: the reference ranks are non-dumpable: EACCES) and a
// CPU-wide cpu-clock sampling event on its own CPU (an hrtimer that fires
// whoever runs there, also while the candidate is frozen and the reference
// is timed: row 25's storm; refused here by kernel.perf_event_paranoid = 2,
// allowed where it is <= 0). 16:50 UTC: WRONG_OUTPUT 2 of 2 (both EACCES; a
// counter on itself opens). Held on this host; environment-dependent.
RT(r17_perf_event, {kWrong})

// Round 17, honest but unusual: idle helper pools. r17_control_polling_pool
// (4 helpers per rank in a 200 us wait_for loop, naive calls) and
// r17_control_spin_pool (3 yield-spinning workers, one runs each call, the
// main thread yield-spins for it). Both slower than the reference, where a
// conviction is only a flag. 16:55 UTC: polling OK 0.64-0.65x 5 of 5, spin
// OK 0.57-0.59x 6 of 6.
TEST(RedTeam, r17_control_polling_pool) { Expect("r17_control_polling_pool", {kOk}); }
TEST(RedTeam, r17_control_spin_pool) { Expect("r17_control_spin_pool", {kOk}); }

// Round 17: an honest FAST candidate convicted. r17_control_epoch_polling =
// control_flag_epoch's barrier-free calls + r17_control_polling_pool's 4
// idle helpers per rank (200 us wait_for loop, never given work; candidate.h
// allows helper threads idle between calls). The helpers' timed waits
// expire while the rank is stopped, so at every thaw they all run before the
// main thread, and every 200 us after; the probes early in a batch read
// "behind, its main threads had hardly run (no excuse: faster than the
// reference)" or "own threads held the CPUs", both conclusive for a
// candidate over kIdleExcuseLimit (1.25x) faster than the reference.
// 16:15-16:30 UTC: CHEAT_DETECTED batch_progress 10 of 94 launches (6 of 25
// under a load average of ~11 from other sessions; 1 of 16 in this test at
// 886da92, which changed no probe rule), OK 2.1-3.2x otherwise;
// control_flag_epoch interleaved: OK 27 of 27. Expected once fixed: OK.
TEST(RedTeamPending, r17_control_epoch_polling) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 17 (honest, CHEAT_DETECTED batch_progress 10 of 94); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  for (int i = 0; i < 8; ++i) Expect("r17_control_epoch_polling", {kOk});
}

}  // namespace
}  // namespace pkforge::kernels

namespace pkforge::kernels {
namespace {

void R17ExpectNoDatagram(const std::string& name);

// Round 17 part 2 (against 886da92/fda1214): the datagram-pair fix
// bypassed. The filter refuses socketpair types equal to SOCK_DGRAM under
// the mask 0xf, but af_unix.c unix_create() turns SOCK_RAW into SOCK_DGRAM
// (with the datagram ops, no capability needed): r17_dgram_raw sends from a
// socketpair(AF_UNIX, SOCK_RAW) socket. 16:30 UTC: OK (worked) 3 of 3, the
// named datagram service heard "from uid 65534"; the abstract one heard
// nothing (Landlock's abstract-unix-socket scope: EPERM); a SOCK_RAW pair
// socket still binds an abstract name. Expected once fixed: WRONG_OUTPUT and
// nothing heard.
// Fixed (host filter: only stream and seqpacket pairs; no bind, connect,
// listen, accept): regular.
TEST(RedTeam, r17_dgram_raw) {
  R17ExpectNoDatagram("r17_dgram_raw");
}

// Round 17 part 2, honest: scratch idioms after Landlock handles READ_FILE
// (886da92): a memfd reopened read-only through /proc/self/fd/N,
// /dev/urandom, /proc/self/status. 16:30 UTC: OK 1.00x, every open worked.
TEST(RedTeam, r17_control_memfd_reopen) { Expect("r17_control_memfd_reopen", {kOk}); }

}  // namespace
}  // namespace pkforge::kernels

namespace pkforge::kernels {
namespace {

// Round 17 part 2: the fix of r17_dgram_sendto against the ABI's text.
// candidate.h still says "socket() (socketpair stays)", and since 886da92 a
// datagram pair is EPERM on host ranks: r17_control_dgram_pair (an idle
// helper thread woken through socketpair(AF_UNIX, SOCK_DGRAM), honest by the
// text) fails pkf_setup. 16:32 UTC: SETUP_ERROR 2 of 2 ("socketpair(AF_UNIX,
// SOCK_DGRAM): Operation not permitted" on every rank). Expected once
// settled: OK, or SETUP_ERROR with candidate.h naming the refused pair
// types (the test reads the header).
// Settled: candidate.h names the refused pair types: regular.
TEST(RedTeam, r17_control_dgram_pair) {
  std::string header = __FILE__;
  header = header.substr(0, header.rfind("/harness/")) + "/include/pkforge/candidate.h";
  const std::string abi = ReadFile(header);
  const bool documented = abi.find("SOCK_DGRAM") != std::string::npos ||
                          abi.find("datagram") != std::string::npos;
  std::printf("REDTEAM r17_control_dgram_pair: %s %s datagram pairs\n", header.c_str(),
              documented ? "names" : "does not name");
  if (documented)
    Expect("r17_control_dgram_pair", {kOk, Accept{Result::SETUP_ERROR, {}}});
  else
    Expect("r17_control_dgram_pair", {kOk});
}

}  // namespace
}  // namespace pkforge::kernels

// ---------------------------------------------------------------------------
// Round 18 (helper-redteam18, session 15, against 04b821c): bypasses of the
// round-17 containment fixes, and the path real clients take (a real
// pkforge-executor compiling candidate source).
#include <linux/sockios.h>
#include <signal.h>
#include <sys/syscall.h>

#include "kernels/harness/containment.h"

namespace pkforge::kernels {
namespace {

// Round 18: row 2's fcntl/ioctl refusals compare the command as 64 bits
// (containment.cc LoadCandidateSeccompFilter: SCMP_CMP_EQ on argument 1),
// but fcntl's and ioctl's command is `unsigned int` in the kernel: with the
// upper 32 bits set the filter lets it through and the kernel runs
// F_SETOWN / F_SETSIG / FIOSETOWN / TIOCSTI all the same.
// r18_fcntl_owner_hi (host ranks, bare launch as root): plain F_SETOWN on a
// reference rank EPERM, (1<<32)|F_SETOWN "ok" and F_GETOWN names the
// reference, (1<<32)|F_SETSIG SIGSTOP "ok", 3 of 3; the SIGIO itself is not
// delivered (reference state S: the ranks' uid 65534 against the
// references' root, and Landlock ABI 7's signal scope), WRONG_OUTPUT 3 of 3.
TEST(RedTeam, r18_fcntl_owner_hi) {
  for (int i = 0; i < 2; ++i) Expect("r18_fcntl_owner_hi", {kWrong});
}

// The same bypass where nothing else stands behind the filter: a cuda
// candidate rank (HardenCandidateProcess(drop_root=false,
// confine_writes=false, ...): no Landlock, no uid drop; in the executor's
// sandbox every process has one uid, in a bare root launch all are root) or
// a host rank on a kernel with Landlock ABI < 6 (Ubuntu 24.04's 6.8: ABI 4)
// inside the executor's sandbox. A process of the test's uid loads exactly
// the cuda candidate rank's hardening, then aims a SIGIO turned into
// SIGSTOP at a sibling process of the same uid (standing for a reference
// rank or the judge). 17:20 UTC: kill() EPERM, the (1<<32)|F_SETOWN route
// stopped the sibling, 3 of 3. Expected once fixed (argument 1 compared
// under the mask 0xffffffff, as sandbox/seccomp_filter.cc does): the
// sibling keeps running.
int R18SiblingStoppedThroughSigio(bool hi_bits, std::string* log) {
  const pid_t victim = fork();
  if (victim == 0) {
    for (;;) pause();
  }
  int report[2];
  if (victim < 0 || pipe(report) != 0) return -1;
  const pid_t attacker = fork();
  if (attacker == 0) {
    close(report[0]);
    auto say = [&](const std::string& s) {
      const ssize_t w = write(report[1], s.data(), s.size());
      (void)w;
    };
    if (auto st = HardenCandidateProcess(/*drop_root=*/false, /*confine_writes=*/false,
                                         /*forbid_timers=*/false, /*forbid_processes=*/false);
        !st.ok()) {
      say("harden: " + std::string(st.message()) + "\n");
      _exit(3);
    }
    say(fmt::format("kill(victim, SIGSTOP): {}\n", kill(victim, SIGSTOP) == 0 ? "ok" : strerror(errno)));
    const unsigned long long hi = hi_bits ? 1ULL << 32 : 0;
    int p[2];
    if (pipe(p) != 0) _exit(4);
    const long own = syscall(SYS_fcntl, p[0], hi | F_SETOWN, victim);
    say(fmt::format("fcntl({}F_SETOWN): {}\n", hi ? "(1<<32)|" : "", own == 0 ? "ok" : strerror(errno)));
    const long sig = syscall(SYS_fcntl, p[0], hi | F_SETSIG, SIGSTOP);
    say(fmt::format("fcntl({}F_SETSIG, SIGSTOP): {}\n", hi ? "(1<<32)|" : "", sig == 0 ? "ok" : strerror(errno)));
    fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK);
    const ssize_t w = write(p[1], "x", 1);
    (void)w;
    usleep(20'000);
    _exit(0);
  }
  close(report[1]);
  std::string got;
  char buf[512];
  for (ssize_t n; (n = read(report[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  close(report[0]);
  waitpid(attacker, nullptr, 0);
  usleep(20'000);
  std::string stat = ReadFile(fmt::format("/proc/{}/stat", victim));
  const size_t paren = stat.rfind(')');
  const bool stopped = paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'T';
  kill(victim, SIGKILL);
  waitpid(victim, nullptr, 0);
  *log = got;
  return stopped ? 1 : 0;
}

TEST(RedTeam, r18_fcntl_owner_filter_refuses_plain_command) {
  std::string log;
  EXPECT_EQ(R18SiblingStoppedThroughSigio(false, &log), 0) << log;
}

// Fixed by c86b88e (fcntl and ioctl commands compared under 0xffffffff):
// sibling running 3 of 3 (17:27 UTC): regular.
TEST(RedTeam, r18_fcntl_owner_hi_filter_only) {
  for (int i = 0; i < 3; ++i) {
    std::string log;
    const int stopped = R18SiblingStoppedThroughSigio(true, &log);
    std::printf("REDTEAM r18_fcntl_owner_hi_filter_only: sibling %s\n%s",
                stopped == 1 ? "STOPPED" : "running", log.c_str());
    EXPECT_EQ(stopped, 0) << log;
  }
}

}  // namespace
}  // namespace pkforge::kernels

namespace pkforge::kernels {
namespace {

// Round 18, the executor path: head-of-line blocking by the compile step.
// executor/pipeline.cc:515 takes one of compile_workers slots BEFORE the
// compiler looks in its cache, and holds it for the whole compile; a
// request that joins another's identical compile (compiler.cc Compile,
// single-flight) holds its slot while it waits. r18_compile_burn's compile
// runs 24 constant expressions just under g++'s ops limit: it burns one CPU
// until the compile timeout (120 s by default), and a timed-out compile is
// not cached, so it burns again on every request. 16:57 and 16:59 UTC,
// --compile-workers 2 (this VM's default: nproc), --host-slots 1: two burn
// requests (the same source twice: one cc1plus and one joiner; then two
// variants), then the honest r18_control_epoch_exec (a cache hit): it sat
// 96 s with nothing to show until the client gave up (2 of 2), the next one
// waited 16 s for the burn to time out ("compile 0 hit, queue 0, run 248"
// of 16391 ms: the wait is reported nowhere); afterwards OK 8.0-8.6x as
// before (8.2-8.5x). Here with --compile-workers 1 and a 20 s compile
// limit (config file): one burn, then the victim. Expected once fixed
// (cache lookups and joins outside the slots; a client's concurrent
// compiles bounded): the victim done within a few seconds.
struct R18Executor {
  std::string dir, address, skipped;
  int pid = -1;
  ~R18Executor() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      for (int i = 0; i < 100 && kill(pid, 0) == 0; ++i) usleep(100'000);
      if (kill(pid, 0) == 0) kill(pid, SIGKILL);
      waitpid(pid, nullptr, WNOHANG);
    }
  }
  std::string Bin() const {
    const std::string worker = PKF_WORKER;
    return worker.substr(0, worker.rfind('/'));
  }
  static std::string Source(const std::string& name, const std::string& ext = ".cc") {
    std::string s = __FILE__;
    return s.substr(0, s.rfind("harness/")) + "testdata/redteam/" + name + ext;
  }
  bool Start(const std::string& name, const std::string& config_json, const std::string& extra) {
    for (const std::string& f : {Bin() + "/pkforge-executor", Bin() + "/pkforge"})
      if (access(f.c_str(), X_OK) != 0) {
        skipped = f + " is missing";
        return false;
      }
    dir = NewDir(name);
    { std::ofstream(dir + "/token") << name << "-token-0123456789\n"; }
    chmod((dir + "/token").c_str(), 0600);
    { std::ofstream(dir + "/config.json") << config_json; }
    if (std::system(fmt::format(
            "{0}/pkforge-executor --listen 127.0.0.1:0 --data-dir {1}/data --gpus none "
            "--nvcc none --no-measure --token-file {1}/token --worker {2} --config "
            "{1}/config.json {3} >{1}/exec.out 2>{1}/exec.err & echo $! >{1}/exec.pid",
            Bin(), dir, PKF_WORKER, extra)
                        .c_str()) != 0)
      return false;
    pid = std::atoi(ReadFile(dir + "/exec.pid").c_str());
    for (int i = 0; i < 200 && address.empty(); ++i) {
      const std::string out = ReadFile(dir + "/exec.out");
      const size_t at = out.find("listening on ");
      if (at != std::string::npos && out.find('\n', at) != std::string::npos)
        address = out.substr(at + 13, out.find('\n', at) - at - 13);
      else
        usleep(100'000);
    }
    return !address.empty();
  }
  std::string EvalCommand(const std::string& source, const std::string& out) const {
    return fmt::format(
        "timeout -k 5 150 {}/pkforge eval --executor {} --token-file {}/token --problem allreduce "
        "--world-size 3 --dtype f32 --size tiny --quiet --json {} >{} 2>&1",
        Bin(), address, dir, source, out);
  }
};

// Fixed (the compiler takes a slot only to run the compiler: a cache hit
// or a joiner never waits for one): regular. Behaviour, not a time limit:
// the cache hit's result must be back while the burn still compiles (its
// result only comes at its 10 s compile limit).
TEST(RedTeam, r18_compile_burn_blocks_others) {
  R18Executor ex;
  if (!ex.Start("r18_compile_burn", "{\"compile_timeout_ms\": 10000}",
                "--host-slots 1 --compile-workers 1")) {
    if (!ex.skipped.empty()) GTEST_SKIP() << ex.skipped;
    FAIL() << "the executor did not start:\n" << ReadFile(ex.dir + "/exec.err");
  }
  const std::string victim = R18Executor::Source("r18_control_epoch_exec");
  // Once alone: compiled and cached.
  ASSERT_EQ(std::system(ex.EvalCommand(victim, ex.dir + "/warm.json").c_str()), 0)
      << ReadFile(ex.dir + "/warm.json");
  // Kept as .src (the build would compile it, for minutes): submitted as a .cc.
  const std::string burn = ex.dir + "/r18_compile_burn.cc";
  { std::ofstream(burn) << ReadFile(R18Executor::Source("r18_compile_burn", ".src")); }
  ASSERT_EQ(std::system((ex.EvalCommand(burn,
                                        ex.dir + "/burn.json") + " &").c_str()), 0);
  usleep(2'000'000);
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = std::system(ex.EvalCommand(victim, ex.dir + "/victim.json").c_str());
  const double waited_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string out = ReadFile(ex.dir + "/victim.json");
  const bool burn_still_compiling = ReadFile(ex.dir + "/burn.json").empty();
  std::printf("REDTEAM r18_compile_burn_blocks_others: the honest cache hit took %.1f s (rc %d), "
              "%s, the burn %s\n",
              waited_s, rc, out.find("\"OK\"") != std::string::npos ? "OK" : "not OK",
              burn_still_compiling ? "still compiling" : "already done");
  for (int i = 0; i < 250 && ReadFile(ex.dir + "/burn.json").empty(); ++i) usleep(100'000);
  EXPECT_NE(out.find("\"status\": \"OK\""), std::string::npos) << out;
  EXPECT_TRUE(burn_still_compiling) << "an evaluation whose compile is a cache hit waited for "
                                       "another request's compile (" << waited_s << " s)";
  EXPECT_NE(ReadFile(ex.dir + "/burn.json").find("TIMEOUT"), std::string::npos)
      << ReadFile(ex.dir + "/burn.json");
}

}  // namespace
}  // namespace pkforge::kernels

namespace pkforge::kernels {
namespace {

// Round 18, the executor path, what holds: the compile sandbox's view.
// A source asks __has_include (no error when absent) about the executor's
// token file, its data dir (the executor's lock, the compile cache), the
// repository, /root, /etc/hostname and /sys, and names each one it sees in
// a #warning (the compile output comes back to the client). 16:57 UTC: none
// seen (only /proc/sysvipc/shm, /proc/1/environ of the sandbox's own init,
// /dev/pts/ptmx and its own candidate.cc); an #include of a /proc file reads
// nothing (size 0). Regular: none may appear.
TEST(RedTeam, r18_compile_peek) {
  R18Executor ex;
  if (!ex.Start("r18_compile_peek", "{}", "--host-slots 1 --compile-workers 1")) {
    if (!ex.skipped.empty()) GTEST_SKIP() << ex.skipped;
    FAIL() << "the executor did not start:\n" << ReadFile(ex.dir + "/exec.err");
  }
  std::string src;
  const std::vector<std::string> paths = {ex.dir + "/token", ex.dir + "/data/.executor.lock",
                                          ex.dir + "/data/compile-cache/.lock",
                                          R18Executor::Source("r18_compile_peek", ".cc"),
                                          std::string(__FILE__), "/root/.bashrc", "/etc/hostname",
                                          "/sys/kernel/notes"};
  for (const std::string& p : paths)
    src += fmt::format("#if __has_include(\"{0}\")\n#warning \"SEES {0}\"\n#endif\n", p);
  src += "#error done\n";
  const std::string file = ex.dir + "/r18_compile_peek.cc";
  { std::ofstream(file) << src; }
  std::system(ex.EvalCommand(file, ex.dir + "/peek.json").c_str());
  const std::string out = ReadFile(ex.dir + "/peek.json");
  std::printf("REDTEAM r18_compile_peek: %s\n",
              out.find("SEES") == std::string::npos ? "nothing seen" : "SEEN");
  EXPECT_NE(out.find("COMPILE_ERROR"), std::string::npos) << out;
  EXPECT_EQ(out.find("SEES /"), std::string::npos) << out;
}

// Round 18: the honest victim alone through a real executor. 16:57 UTC:
// OK 8.2-8.5x 3 of 3.
TEST(RedTeam, r18_control_epoch_exec) {
  const ExecutorEval e = EvalThroughExecutor("r18_control_epoch_exec", "--json");
  if (!e.skipped.empty()) GTEST_SKIP() << e.skipped;
  ASSERT_TRUE(e.started) << "the executor did not start:\n" << e.executor_stderr;
  EXPECT_NE(e.eval.output.find("\"status\": \"OK\""), std::string::npos) << e.eval.output;
}

}  // namespace
}  // namespace pkforge::kernels
