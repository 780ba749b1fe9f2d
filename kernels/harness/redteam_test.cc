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
// A thread the first call started that sleeps in pause() for ever: since
// session 16 an idle thread the first call leaves behind is a helper, as if
// pkf_setup had started it (an OpenMP team or a pool started on first use:
// r20_control_lazy_pool, r20_control_openmp_lazy were convicted 9 of 9); it
// does nothing, so OK (at the control's speed) is right. Still running after
// the first call: r20_first_call_spinner; left by a later call:
// threads_at_call_time.
RT(atk_thread_left_running, {kOk, Cheat({"outlived_call"})}, "", 10, "", 1.5)
RT(r20_first_call_spinner, {Cheat({"outlived_call"})})
// Round 21 (the first-call rule): a socket read with SO_RCVTIMEO is a timed
// sleep the judge saw as a plain read (rcvtimeo_finisher: WRONG_OUTPUT 5 of
// 5, the thread kept; rcvtimeo_spinner: OK 5 of 5 spinning after it), and a
// busy /dev/zero read loop is no wait (devzero_spinner: OK 5 of 5). Now host
// ranks cannot set socket timeouts (the finisher's read then never returns:
// its outputs stay unwritten; the spinner never spins) and only reads of
// pipes, sockets and eventfds count as waiting.
RT(r21_rcvtimeo_finisher, {kWrong, Cheat({"outlived_call"})})
RT(r21_rcvtimeo_spinner, {Cheat({"outlived_call"}), kOk}, "", 10, "", 1.5)
RT(r21_devzero_spinner, {Cheat({"outlived_call"})})
RT(r20_control_lazy_pool, {kOk})
RT(r20_control_openmp_lazy, {kOk})
// An honest candidate 210x slower than the reference (8 MiB of mmap a call):
// TIMEOUT 6 of 6 at --timeout 10 with the reference's 128-call batches
// (round 20); host batches now shrink for it too (at most 4x): OK.
TEST(RedTeam, r20_control_mmap_per_call) {
  setenv("PKFORGE_R20_MMAP_KIB", "8192", 1);
  Expect("r20_control_mmap_per_call", {kOk});
  unsetenv("PKFORGE_R20_MMAP_KIB");
}
// An honest pkf_teardown of 2 s CPU a rank at world size 3 (the ranks share
// a CPU here: ~6 s of wall time): TIMEOUT 4 of 4 under the fixed 5 s
// teardown limit whatever --timeout said (round 20); teardown now gets
// --timeout (at least 5 s).
TEST(RedTeam, r20_control_slow_teardown) {
  setenv("PKFORGE_R20_TEARDOWN_CPU_MS", "2000", 1);
  setenv("PKFORGE_R20_TEARDOWN_SLEEP_MS", "0", 1);
  Expect("r20_control_slow_teardown", {kOk}, "", 20);
  unsetenv("PKFORGE_R20_TEARDOWN_CPU_MS");
  unsetenv("PKFORGE_R20_TEARDOWN_SLEEP_MS");
}
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

}  // namespace
}  // namespace pkforge::kernels
