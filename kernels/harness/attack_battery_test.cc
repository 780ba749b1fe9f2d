// An attack battery: every candidate of kernels/testdata/attacks/attacks.cc
// through `pkforge-worker launch` (host backend, allreduce, world size 3, f32,
// tiny) with the verdict the judge must give (docs/threat-model.md). Besides
// each verdict: never HARNESS_ERROR for anything a candidate did, no exploit
// marker, and no process the candidate started alive afterwards. Plus the
// output policy: every problem and dtype rejects all-zero outputs, and
// outputs copied from the inputs wherever that is not the answer. (The
// larger red-team battery is kernels/harness/redteam_test.cc.)
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "kernels/harness/problem.h"
#include "pkforge/v1/common.pb.h"

namespace {

using Result = pkforge::v1::EvaluationResult;
namespace fs = std::filesystem;

struct Launched {
  Result result;
  std::string raw;
};

Launched Launch(const std::string& candidate, const std::string& dir,
                const std::string& problem = "allreduce", int world = 3,
                const std::string& dtype = "f32", const std::string& extra = "--timeout 20") {
  const std::string cmd = fmt::format(
      "PKF_REDTEAM_DIR={} {} launch --problem {} --backend host --world-size {} --dtype {} "
      "--size tiny --trials 2 --warmup 1 --iters 6 {} --json {}/{}.so 2>/dev/null",
      dir, PKF_WORKER, problem, world, dtype, extra, PKF_CANDIDATES, candidate);
  Launched l;
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return l;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) l.raw.append(buf, n);
  pclose(f);
  google::protobuf::util::JsonParseOptions o;
  o.ignore_unknown_fields = true;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(l.raw, &l.result, o).ok())
      << cmd << "\n" << l.raw.substr(0, 2000);
  return l;
}

std::string Failing(const Result& r) {
  std::string s;
  for (const auto& c : r.cheat_checks())
    if (!c.passed() && !c.flag_only()) s += (s.empty() ? "" : ",") + c.check();
  return s;
}

struct Attack {
  std::string name;
  std::set<Result::Status> allowed;
  std::set<std::string> checks;  // for CHEAT_DETECTED: one of these must fail ({} = any)
  double max_speedup = 0;        // OK verdicts: the speedup stays plausible (0 = no bound)
  std::string extra = "--timeout 20";
};

const Result::Status kWrong = Result::WRONG_OUTPUT, kCheat = Result::CHEAT_DETECTED,
                     kOk = Result::OK;

std::vector<Attack> Battery() {
  std::vector<Attack> a;
  // Reaching trusted processes: the exploit must be refused (then the
  // candidate answers wrong on purpose).
  for (const char* n :
       {"proc_fd_ref", "proc_environ_ref", "proc_mem_ref", "proc_maps_ref", "proc_map_files_ref",
        "proc_fd_judge_stdout", "proc_environ_judge", "kill_ref_sigstop", "kill_ref_sigkill",
        "kill_judge", "kill_process_group", "kill_everyone", "tgkill_ref", "sigqueue_ref",
        "pidfd_signal_ref", "sigio_owner_ref", "setpriority_ref", "affinity_ref", "prlimit_ref",
        "sched_fifo_ref", "ptrace_ref", "process_vm_readv_ref", "new_user_namespace",
        "capabilities_kept"})
    a.push_back({n, {kWrong}, {}});
  // The verdict channel.
  a.push_back({"fake_result_on_stdout", {kWrong}, {}});
  a.push_back({"flood_output", {kWrong}, {}});
  a.push_back({"garbage_on_reply_channel", {kCheat}, {"result_channel"}});
  a.push_back({"forged_reply_then_work", {kCheat}, {}});
  // Times.
  a.push_back({"patch_clock_gettime", {kOk}, {}, 3.0});
  // Starving the reference.
  a.push_back({"cpu_hog_threads", {kOk}, {}, 3.0});
  a.push_back({"cpu_hog_process", {kCheat}, {"outlived_call"}});
  // Work outside the measured interval.
  // (Rank 0 skips the call its helper "precomputed" and leaves its peers in
  // the barrier: its own deadlock.)
  a.push_back({"precompute_helper_thread", {kWrong, kCheat, Result::TIMEOUT}, {}, 0,
               "--timeout 3"});
  a.push_back({"return_early_thread_finishes", {kWrong, kCheat}, {"outlived_call"}});
  a.push_back({"return_early_setup_thread_finishes", {kWrong, kCheat}, {}});
  // Where the kernel lets a timer's SIGCONT continue a stopped process, the
  // thaw sees the CPU time it used (frozen_while_idle); where it does not
  // (seen on Linux 6.18), the freeze simply holds and the spinning thread
  // only slows the candidate's own calls.
  a.push_back({"timer_sigcont_self", {kCheat, kOk}, {"frozen_while_idle"}, 1.5});
  a.push_back({"child_continues_parent", {kCheat}, {"outlived_call", "frozen_while_idle"}});
  // Containment.
  a.push_back({"fork_per_call_left_running", {kCheat}, {"outlived_call"}});
  a.push_back({"deep_setsid_chain", {kCheat}, {"outlived_call"}});
  a.push_back({"fork_bomb_bounded", {kCheat}, {"outlived_call"}});
  a.push_back({"daemon_at_teardown", {kCheat}, {"leftover_process"}});
  a.push_back({"thread_left_running", {kCheat}, {"outlived_call"}});
  // Blame: the candidate's own faults, never the harness's.
  a.push_back({"exit_in_call", {Result::RUNTIME_ERROR}, {}});
  a.push_back({"corrupt_own_control_block",
               {Result::TIMEOUT, Result::RUNTIME_ERROR, kWrong, kCheat}, {}, 0, "--timeout 3"});
  a.push_back({"stall_in_barrier", {Result::TIMEOUT}, {}, 0, "--timeout 3"});
  // Output policy.
  a.push_back({"zeros", {kWrong}, {}});
  a.push_back({"copy_inputs", {kWrong}, {}});
  a.push_back({"lower_precision", {kWrong}, {}});
  // Benign controls.
  a.push_back({"benign_idle_helper_thread", {kOk}, {}, 10.0});
  a.push_back({"benign_private_thread_joined", {kOk}, {}, 10.0});
  a.push_back({"benign_child_process_waited", {kOk}, {}, 10.0});
  return a;
}

class AttackBattery : public ::testing::TestWithParam<Attack> {};

TEST_P(AttackBattery, VerdictHolds) {
  const Attack& at = GetParam();
  const std::string dir =
      fs::temp_directory_path() / ("pkf_attack_" + at.name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Launched l = Launch("attack_" + at.name, dir, "allreduce", 3, "f32", at.extra);
  const Result& r = l.result;
  EXPECT_NE(r.status(), Result::HARNESS_ERROR) << l.raw.substr(0, 2000);
  EXPECT_TRUE(at.allowed.count(r.status()))
      << at.name << ": " << Result::Status_Name(r.status()) << " " << r.message();
  if (r.status() == kCheat && !at.checks.empty()) {
    bool hit = false;
    for (const auto& c : r.cheat_checks()) hit = hit || (!c.passed() && at.checks.count(c.check()));
    EXPECT_TRUE(hit) << at.name << ": failing checks " << Failing(r) << "; " << r.message();
  }
  if (r.status() == kOk && at.max_speedup > 0) {
    EXPECT_LT(r.speedup(), at.max_speedup) << at.name << " forged a speedup";
  }
  // No exploit worked.
  std::ifstream marker(dir + "/marker");
  std::string m((std::istreambuf_iterator<char>(marker)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(m.empty()) << at.name << ": " << m;
  // Nothing the candidate started is alive.
  std::ifstream pids(dir + "/pids");
  int pid;
  while (pids >> pid) {
    std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(st, line);
    const size_t close = line.rfind(')');
    const char state = close != std::string::npos && close + 2 < line.size() ? line[close + 2] : 'X';
    EXPECT_TRUE(line.empty() || state == 'Z' || state == 'X')
        << at.name << ": process " << pid << " outlived the evaluation (" << line << ")";
    if (!line.empty() && state != 'Z') kill(pid, SIGKILL);
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Battery, AttackBattery, ::testing::ValuesIn(Battery()),
                         [](const ::testing::TestParamInfo<Attack>& i) { return i.param.name; });

// Every problem and dtype rejects all-zero outputs; at world size 3 (where
// no problem is the identity) also outputs copied from the inputs.
TEST(OutputPolicy, ZerosAndCopiedInputsAreWrongForEveryProblemAndDtype) {
  const std::string dir = fs::temp_directory_path() / ("pkf_policy_" + std::to_string(getpid()));
  fs::create_directories(dir);
  for (const pkforge::kernels::Problem* p : pkforge::kernels::Problems()) {
    for (const char* dt : {"bf16", "f16", "f32"}) {
      for (int w : {1, 3}) {
        for (const char* cand : {"attack_zeros", "attack_copy_inputs"}) {
          if (w == 1 && std::string(cand) == "attack_copy_inputs") continue;  // collectives are y = x
          const Launched l = Launch(cand, dir, std::string(p->name), w, dt);
          EXPECT_EQ(l.result.status(), Result::WRONG_OUTPUT)
              << p->name << " " << dt << " w=" << w << " " << cand << ": " << l.result.message();
        }
      }
    }
  }
  fs::remove_all(dir);
}

}  // namespace
