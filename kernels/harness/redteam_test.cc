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
// The stderr tail in the result is valid UTF-8, the candidate's bad bytes
// U+FFFD (round 31: before, the raw bytes reached the JSON printer, which
// logged an error and printed them).
TEST(RedTeam, invalid_utf8_stderr) {
  Result r;
  Expect("invalid_utf8_stderr", {kRuntime}, "", 10, "", 0, false, &r);
  ASSERT_GT(r.failures_size(), 0);
  const std::string& tail = r.failures(0).stderr_tail();
  EXPECT_NE(tail.find("candidate says \xEF\xBF\xBD"), std::string::npos) << tail;
}
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
// Convicted by input_mutation; since session 19 the punch is refused (EPERM:
// containment.cc, red team round 25) and the candidate is simply honest.
RT(punch_hole_inputs, {Cheat({"input_mutation"}), kOk})
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
// (round 20); host batches now shrink for it too (at most 4x): OK. With 8
// MiB its timing phase took 6.0-8.7 s of the 10 alone and ran over beside
// the rest of the suite (session 21): 4 MiB a call (~100x slower than the
// reference) keeps the point with room.
TEST(RedTeam, r20_control_mmap_per_call) {
  setenv("PKFORGE_R20_MMAP_KIB", "4096", 1);
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
// 6). Settled by the ABI: candidate.h says child processes are not allowed
// and that starting any process on the host backend is CHEAT_DETECTED
// (outlived_call), which is what the judge answers (the rank's seccomp
// filter kills it in PHASE_SETUP). Regular since session 18.
TEST(RedTeam, control_helper_process) {
  Expect("control_helper_process", {Cheat({"outlived_call"})});
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

}  // namespace
}  // namespace pkforge::kernels
