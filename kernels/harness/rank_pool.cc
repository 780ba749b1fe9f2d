#include "kernels/harness/rank_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string_view>
#include <thread>

#include "common/stats.h"
#include "common/unix_gc.h"
#include "common/utf8.h"
#include "fmt/format.h"

extern char** environ;

namespace pkforge::kernels {
namespace {

using Result = v1::EvaluationResult;

// How long stopping every candidate process may take.
constexpr int64_t kFreezeLimitNs = 2'000'000'000;
// Least time a round of reference ranks gets, whatever is left of the phase.
constexpr int64_t kRefRoundMinNs = 5'000'000'000;
// The reference's set-up (CUDA context, NCCL, its buffers) runs before any
// candidate code and can take long on a GPU still releasing the context of
// an evaluation killed just before (the executor's crash/hang test: over 5 s
// on the H200, a HARNESS_ERROR); nothing the candidate does can slow it.
constexpr int64_t kRefSetupMinNs = 60'000'000'000;

std::string SideName(bool ref) { return ref ? "reference" : "candidate"; }

// The last `max` bytes of a rank's captured stdout/stderr.
std::string Tail(int fd, size_t max) {
  off_t end = lseek(fd, 0, SEEK_END);
  if (end <= 0) return {};
  off_t start = end > static_cast<off_t>(max) ? end - static_cast<off_t>(max) : 0;
  std::string s(static_cast<size_t>(end - start), '\0');
  ssize_t n = pread(fd, s.data(), s.size(), start);
  s.resize(n > 0 ? static_cast<size_t>(n) : 0);
  // A proto3 string: bytes that are not UTF-8 would make the result's JSON
  // printer fail (red team invalid_utf8_stderr; round 31: protobuf only
  // logs it today, and ResultToJson would print "{}" if it refused).
  return ValidUtf8(s);
}

std::string SignalName(int sig) {
  const char* s = strsignal(sig);
  return s != nullptr ? s : fmt::format("signal {}", sig);
}

// PKFORGE_TIMING_DIAG=1: where a timed batch's wall time goes (stderr).
void Diag(const char* side, int64_t t_send, int64_t t_recv, int64_t stopped,
          const std::vector<Reply>& r) {
  static const bool on = std::getenv("PKFORGE_TIMING_DIAG") != nullptr;
  if (!on || r.empty()) return;
  const Reply& x = r[0];
  fmt::print(stderr,
             "timing-diag {} wake {:.1f} span {:.1f} tail {:.1f} freeze {:.1f} events {:.1f}\n",
             side, (x.t0_ns - t_send) / 1e3,
             x.value > 0 ? (static_cast<int64_t>(x.value) - x.t0_ns) / 1e3 : 0.0,
             x.value > 0 ? (t_recv - static_cast<int64_t>(x.value)) / 1e3 : 0.0,
             (stopped - t_recv) / 1e3, (x.t1_ns - x.t0_ns) / 1e3);
}

}  // namespace

// The kernel's count of OOM kills, system-wide and in memory cgroups alike
// (/proc/vmstat oom_kill, Linux >= 4.13); -1 when unknown.
int64_t RankPool::OomKillCount() {
  std::ifstream f("/proc/vmstat");
  std::string key;
  int64_t v = 0;
  while (f >> key >> v)
    if (key == "oom_kill") return v;
  return -1;
}


namespace {
// PrintRoundDiag's tallies are kept only with PKFORGE_TIMING_DIAG set: no
// clock read is added to a timed round otherwise.
bool RoundDiagOn() {
  static const bool on = std::getenv("PKFORGE_TIMING_DIAG") != nullptr;
  return on;
}
}  // namespace

bool RankPool::Send(const std::vector<RankProc*>& procs, const Cmd& cmd) {
  if (RoundDiagOn() && !procs.empty() && cmd.op < kOpSlots)
    op_sent_ns_[cmd.op + (procs[0]->ref ? 0 : kOpSlots)] = MonotonicNs();
  for (RankProc* p : procs) {
    // The command channel is non-blocking (StartRank) and a command is
    // smaller than PIPE_BUF, so it is written whole or not at all. The
    // harness reads every command before it replies, so the pipe is empty
    // when the judge writes; a full one was filled by someone else. Red team
    // round 14 r14_cmd_pipe_stall: a candidate rank of the judge's uid
    // reopened its command pipe through /proc/self/fd, wrote the harness's
    // reply itself, filled the pipe and slept: the judge, blocked in
    // write() on the frozen rank, never returned (killed at 40 s with a
    // 5 s phase limit).
    const ssize_t w = write(p->cmd_fd, &cmd, sizeof cmd);
    if (w == static_cast<ssize_t>(sizeof cmd)) continue;
    // A dead rank shows up as EPIPE here and as EOF in Collect, which attributes it.
    if (w < 0 && errno == EPIPE) continue;
    const std::string d = fmt::format(
        "{} rank {}: its command channel {} (something other than the harness wrote into it)",
        p->ref ? "reference" : "candidate", p->rank,
        w < 0 && errno == EAGAIN ? "was full" : fmt::format("took {} of {} bytes", w, sizeof cmd));
    v1::RankFailure* f = out_->result().add_failures();
    f->set_rank(p->rank);
    f->set_error("protocol violation: " + d);
    if (p->ref)
      out_->HarnessFault(d);
    else
      out_->Cheat("result_channel", d);
    return false;
  }
  return true;
}

void RankPool::Crash(RankProc* p, v1::Phase phase) {
  // The reply pipe closed: wait (bounded) for the exit status.
  for (int i = 0; i < 200 && !p->reaped; ++i) {
    if (waitpid(p->pid, &p->wstatus, WNOHANG) == p->pid)
      p->reaped = true;
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  v1::RankFailure* f = out_->result().add_failures();
  f->set_rank(p->rank);
  f->set_phase(phase);
  std::string what;
  if (p->reaped && WIFSIGNALED(p->wstatus)) {
    f->set_signal(WTERMSIG(p->wstatus));
    what = fmt::format("killed by signal {} ({})", WTERMSIG(p->wstatus),
                       SignalName(WTERMSIG(p->wstatus)));
  } else if (p->reaped && WIFEXITED(p->wstatus)) {
    f->set_exit_code(WEXITSTATUS(p->wstatus));
    what = fmt::format("exited with code {}", WEXITSTATUS(p->wstatus));
  } else {
    what = "closed its reply channel";
  }
  const std::string who = fmt::format("{} rank {}", p->ref ? "reference" : "candidate", p->rank);
  f->set_error(fmt::format("{} {} during {}", who, what, v1::Phase_Name(phase)));
  f->set_stderr_tail(Tail(p->err_fd, 2000));
  const int sig = p->reaped && WIFSIGNALED(p->wstatus) ? WTERMSIG(p->wstatus) : 0;
  // Killed by the OOM killer: memory ran out while the candidate ran. Its
  // ranks are the killer's first choice (oom_score_adj 1000), but memory it
  // left in files (tmpfs) stays charged after they die, and then a trusted
  // process goes next (red team tmpfs_file_oom_blame_default_size): an
  // out-of-memory failure, RUNTIME_ERROR, as the executor reports any OOM
  // kill in its sandbox (docs/threat-model.md).
  if (sig == SIGKILL && oom_kills0_ >= 0) {
    const int64_t ooms = OomKillCount();
    if (ooms > oom_kills0_) {
      out_->End(Result::RUNTIME_ERROR,
                fmt::format("out of memory during {}: the kernel's OOM killer killed {} ({} OOM "
                            "kills since the ranks started; the candidate's ranks go first)",
                            v1::Phase_Name(phase), who, ooms - oom_kills0_));
      return;
    }
  }
  // SIGSYS: a host candidate rank's seccomp filter killed it for starting a
  // process or for a syscall of another ABI (containment.h
  // HardenCandidateProcess).
  if (!p->ref && sig == SIGSYS) {
    out_->Cheat("outlived_call",
                fmt::format("{} tried to start a process, or made a system call of another ABI, "
                            "during {} (a candidate may start none: it could run beside or "
                            "outlive the calls unseen); killed by its seccomp filter (SIGSYS)",
                            who, v1::Phase_Name(phase)));
    return;
  }
  // No candidate process can reach a reference rank (containment.h), so a
  // reference that dies otherwise is the harness's failure, never the
  // candidate's.
  if (p->ref) {
    out_->HarnessFault(fmt::format("{} {} during {}", who, what, v1::Phase_Name(phase)));
    return;
  }
  out_->End(phase == v1::PHASE_SETUP ? Result::SETUP_ERROR : Result::RUNTIME_ERROR,
            fmt::format("{} {} during {}", who, what, v1::Phase_Name(phase)));
}

void RankPool::Timeout(const std::vector<RankProc*>& stuck, v1::Phase phase) {
  v1::TimeoutInfo* t = out_->result().mutable_timeout();
  t->set_phase(phase);
  t->set_limit_s(phase_limit_s_);
  // The limit that applied, rounded for people (teardown has its own).
  const double limit = std::round(phase_limit_s_ * 10) / 10;
  bool deadlock = false;
  std::string names, waiting, working;
  for (RankProc* p : stuck) {
    SideControl* c = controls_[p->ref ? 0 : 1];
    const bool in_barrier = c->in_barrier[p->rank].load() != 0;
    // Some ranks wait in the barrier for ranks that never arrive.
    for (RankProc* q : (p->ref ? refs_ : cands_))
      if (in_barrier && c->in_barrier[q->rank].load() == 0) deadlock = true;
    t->add_stuck_ranks(p->rank);
    v1::RankFailure* f = out_->result().add_failures();
    f->set_rank(p->rank);
    f->set_phase(phase);
    f->set_error(fmt::format("{} rank {} gave no reply within {} s ({})",
                             p->ref ? "reference" : "candidate", p->rank, limit,
                             in_barrier ? "waiting in the barrier"
                             : c->in_run[p->rank].load()
                                 ? (p->ref ? "inside the reference's code" : "inside the candidate's code")
                                 : "in the harness"));
    f->set_stderr_tail(Tail(p->err_fd, 2000));
    names += fmt::format("{}{}", names.empty() ? "" : ",", p->rank);
    // Which ranks wait for which: a rank still working is not necessarily
    // stuck (a slow call under a short limit reads the same as a hang).
    std::string& to = in_barrier ? waiting : working;
    to += fmt::format("{}{}", to.empty() ? "" : ",", p->rank);
  }
  t->set_deadlock(deadlock);
  bool ref_stuck = false;
  for (RankProc* p : stuck) ref_stuck = ref_stuck || p->ref;
  if (ref_stuck) {
    out_->HarnessFault(fmt::format("reference ranks {} gave no reply within {} s in {}", names,
                                   limit, v1::Phase_Name(phase)));
    return;
  }
  std::string why;
  if (deadlock && !working.empty())
    why = fmt::format(" (ranks {} wait in the barrier for ranks {}, still in their call)", waiting,
                      working);
  else if (deadlock)
    why = fmt::format(" (ranks {} wait in the barrier for peers that never arrive)", waiting);
  // The timing phase runs both sides' batches under one limit: a size whose
  // calls take milliseconds needs seconds of it (host, allreduce, default
  // size, world 3: ~5 s).
  if (phase == v1::PHASE_TIMING)
    why += fmt::format("; the timing phase runs the reference's and the candidate's batches "
                       "under one {} s limit, which a slow size can use up without any hang "
                       "(raise --timeout)",
                       limit);
  out_->End(Result::TIMEOUT, fmt::format("timeout in {} after {} s; stuck ranks {}{}",
                                         v1::Phase_Name(phase), limit, names, why));
}

bool RankPool::Collect(const std::vector<RankProc*>& procs, uint32_t op, v1::Phase phase,
                       std::vector<Reply>* replies) {
  replies->assign(procs.size(), Reply{});
  std::vector<bool> done(procs.size(), false);
  size_t remaining = procs.size();
  // A round of reference ranks gets at least kRefRoundMinNs of its own: the
  // phase deadline may have been used up by the candidate's rounds, and a
  // reference round cut short by it would be blamed on the harness (red
  // team: deadline_blame, teardown_deadline_blame returned just before the
  // deadline). The candidate's next round then times out, as it should.
  const bool reference_round = !procs.empty() && procs[0]->ref;
  const int64_t ref_min = phase == v1::PHASE_SETUP ? kRefSetupMinNs : kRefRoundMinNs;
  const int64_t deadline =
      reference_round ? std::max(deadline_ns_, MonotonicNs() + ref_min) : deadline_ns_;
  while (remaining > 0) {
    std::vector<pollfd> pfds;
    std::vector<size_t> idx;
    for (size_t i = 0; i < procs.size(); ++i)
      if (!done[i]) {
        pfds.push_back({procs[i]->reply_fd, POLLIN, 0});
        idx.push_back(i);
      }
    const int64_t left_ns = deadline - MonotonicNs();
    const int64_t left_ms = (left_ns + 999'999) / 1'000'000;
    if (left_ns <= 0) {
      std::vector<RankProc*> stuck;
      for (size_t i = 0; i < procs.size(); ++i)
        if (!done[i]) stuck.push_back(procs[i]);
      Timeout(stuck, phase);
      return false;
    }
    int n = poll(pfds.data(), pfds.size(), static_cast<int>(std::min<int64_t>(left_ms, 1000)));
    if (n < 0 && errno != EINTR) {
      out_->End(Result::RUNTIME_ERROR, "poll failed");
      return false;
    }
    for (size_t k = 0; k < pfds.size(); ++k) {
      if (pfds[k].revents == 0) continue;
      const size_t i = idx[k];
      RankProc* p = procs[i];
      Reply r;
      ssize_t got = read(p->reply_fd, &r, sizeof r);
      if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
        Crash(p, phase);
        return false;
      }
      if (got < 0) continue;
      if (got != static_cast<ssize_t>(sizeof r) || r.magic != kMagic || r.op != op) {
        v1::RankFailure* f = out_->result().add_failures();
        f->set_rank(p->rank);
        f->set_phase(phase);
        f->set_error("protocol violation: malformed reply (something wrote on the reply channel)");
        if (p->ref) {
          out_->HarnessFault(fmt::format("reference rank {}: malformed reply during {}", p->rank,
                                         v1::Phase_Name(phase)));
        } else {
          // Only candidate code writes anything but replies on its channel.
          const std::string d =
              fmt::format("candidate rank {} wrote a malformed reply on its channel during {}",
                          p->rank, v1::Phase_Name(phase));
          out_->Cheat("result_channel", d);
        }
        return false;
      }
      r.message[sizeof r.message - 1] = '\0';
      if (r.rc != 0 && (p->ref || op == kOpHello)) {
        v1::RankFailure* f = out_->result().add_failures();
        f->set_rank(p->rank);
        f->set_phase(phase);
        f->set_error(fmt::format("{} rank {}: {}", SideName(p->ref), p->rank,
                                 r.message[0] ? r.message : fmt::format("error {}", r.rc)));
        f->set_stderr_tail(Tail(p->err_fd, 2000));
        out_->HarnessFault(fmt::format("{} rank {}: {} during {}", SideName(p->ref), p->rank,
                                       r.message, v1::Phase_Name(phase)));
        return false;
      }
      if (r.rc != 0) {
        v1::RankFailure* f = out_->result().add_failures();
        f->set_rank(p->rank);
        f->set_phase(phase);
        f->set_error(fmt::format("{} rank {}: {}", p->ref ? "reference" : "candidate", p->rank,
                                 r.message[0] ? r.message : fmt::format("error {}", r.rc)));
        f->set_stderr_tail(Tail(p->err_fd, 2000));
        out_->End(phase == v1::PHASE_SETUP ? Result::SETUP_ERROR : Result::RUNTIME_ERROR,
                  fmt::format("rank {}: {} during {}", p->rank, r.message, v1::Phase_Name(phase)));
        return false;
      }
      (*replies)[i] = r;
      done[i] = true;
      --remaining;
    }
  }
  const int side = (!procs.empty() && !procs[0]->ref) ? kOpSlots : 0;
  if (RoundDiagOn() && op < kOpSlots && op_sent_ns_[op + side] > 0) {
    op_ns_[op + side] += MonotonicNs() - op_sent_ns_[op + side];
    ++op_rounds_[op + side];
    op_sent_ns_[op + side] = 0;
  }
  return true;
}

void RankPool::PrintRoundDiag() const {
  if (!RoundDiagOn()) return;
  // protocol.h's ops by number.
  static const char* const kNames[] = {
      "?",     "setup", "gen",    "run",  "check",  "digest", "snapshot", "snapcompare",
      "poison", "exit", "sync",   "batch", "poisoncheck", "idle", "hello", "switch",
      "progress", "init", "attach", "drip", "dripwatch"};
  constexpr int kNamed = sizeof kNames / sizeof kNames[0];
  for (int i = 0; i < 2 * kOpSlots; ++i)
    if (op_rounds_[i] > 0)
      fmt::print(stderr, "round-diag {} {:<11} rounds {:5d} total {:9.1f} ms mean {:8.1f} us\n",
                 i < kOpSlots ? "ref " : "cand", i % kOpSlots < kNamed ? kNames[i % kOpSlots] : "?",
                 op_rounds_[i], op_ns_[i] / 1e6, op_ns_[i] / 1e3 / op_rounds_[i]);
}

bool RankPool::Round(const std::vector<RankProc*>& procs, uint32_t op, uint32_t slot, uint64_t seed,
                     v1::Phase phase, std::vector<Reply>* replies, int64_t* wall_ns) {
  Cmd c{kMagic, op, slot, 1, 0, 0, seed};
  if (!procs.empty() && !procs[0]->ref) return CandRound(c, phase, replies, wall_ns);
  return RoundCmd(procs, c, phase, replies, wall_ns);
}

bool RankPool::Freeze(v1::Phase phase) {
  if (tree_.frozen()) return true;
  absl::Status st = tree_.Freeze(MonotonicNs() + kFreezeLimitNs);
  if (st.ok()) return true;
  v1::TimeoutInfo* t = out_->result().mutable_timeout();
  t->set_phase(phase);
  t->set_limit_s(kFreezeLimitNs / 1e9);
  out_->End(Result::TIMEOUT,
            fmt::format("timeout in {}: {}", v1::Phase_Name(phase), std::string(st.message())));
  return false;
}

bool RankPool::Thaw(const std::function<void()>& before_continue) {
  if (!tree_.frozen()) {
    if (before_continue) before_continue();
    return true;
  }
  const std::string broke = tree_.Thaw(before_continue);
  if (!broke.empty()) {
    const std::string d = "candidate code ran while it was frozen: " + broke;
    out_->Cheat("frozen_while_idle", d);
    return false;
  }
  ++frozen_windows_;
  return true;
}

// The command goes out while the candidate is still stopped, its clock
// starting then (*t_send); the SIGCONT follows (Thaw's before_continue). A
// failed send shows as a dead rank in Collect, as in RoundCmd.
bool RankPool::CommandThenThaw(const Cmd& cmd, int64_t* t_send) {
  bool sent = true;
  const bool thawed = Thaw([&] {
    *t_send = MonotonicNs();
    sent = Send(cands_, cmd);
  });
  return thawed && sent;
}

// The candidate's clock runs from the command until every candidate process
// is verified stopped, not until its replies arrive: a candidate that replies
// early and keeps working is still being timed (and is frozen mid-work, which
// the snapshot shows).
bool RankPool::CandRound(const Cmd& cmd, v1::Phase phase, std::vector<Reply>* replies,
                         int64_t* wall_ns, bool refreeze) {
  int64_t t_send = 0;
  if (!CommandThenThaw(cmd, &t_send)) return false;
  const bool ok = CollectRound(cands_, cmd.op, phase, t_send, replies, wall_ns);
  if (!ok || !refreeze) return ok;
  const int64_t t_recv = MonotonicNs();
  last_reply_ns_ = t_recv - t_send;
  last_reply_at_ns_ = t_recv;
  if (!Freeze(phase)) return false;
  if (wall_ns != nullptr) *wall_ns = tree_.stopped_at_ns() - t_send;
  if (cmd.op == kOpBatch) Diag("cand", t_send, t_recv, tree_.stopped_at_ns(), *replies);
  return true;
}

bool RankPool::CandPausedRound(
    const Cmd& cmd, v1::Phase phase, int64_t pause_after_ns,
    const std::function<bool(int64_t frozen_after_ns, bool pending)>& while_frozen,
    std::vector<Reply>* replies) {
  int64_t t_send = 0;
  if (!CommandThenThaw(cmd, &t_send)) return false;
  // Until the pause, or until every candidate rank has a reply waiting.
  std::vector<bool> ready(cands_.size(), false);
  auto all_ready = [&] { return std::all_of(ready.begin(), ready.end(), [](bool b) { return b; }); };
  auto poll_ready = [&](int64_t wait_ns) {
    std::vector<pollfd> pfds;
    std::vector<size_t> idx;
    for (size_t i = 0; i < cands_.size(); ++i)
      if (!ready[i]) {
        pfds.push_back({cands_[i]->reply_fd, POLLIN, 0});
        idx.push_back(i);
      }
    if (pfds.empty()) return;
    timespec ts{static_cast<time_t>(wait_ns / 1'000'000'000), static_cast<long>(wait_ns % 1'000'000'000)};
    if (ppoll(pfds.data(), pfds.size(), &ts, nullptr) <= 0) return;
    for (size_t k = 0; k < pfds.size(); ++k)
      if (pfds[k].revents != 0) ready[idx[k]] = true;
  };
  const int64_t pause_at = t_send + pause_after_ns;
  prctl(PR_SET_TIMERSLACK, 1UL);  // the pause to within microseconds, not the default 50 us
  for (int64_t now = MonotonicNs(); now < pause_at && !all_ready(); now = MonotonicNs())
    poll_ready(pause_at - now);
  if (!Freeze(phase)) return false;
  const int64_t frozen_after = tree_.stop_sent_at_ns() - t_send;
  poll_ready(0);  // replies written before the stop took hold
  if (!while_frozen(frozen_after, !all_ready())) return false;
  if (!Thaw()) return false;
  if (!Collect(cands_, cmd.op, phase, replies)) return false;
  if (RoundDiagOn() && !replies->empty()) {
    // Where the probe fell: the candidate's own first-call time (its clock,
    // a diagnosis only), the stop sent, the stop verified.
    int64_t t0 = 0;
    for (const Reply& x : *replies) t0 = std::max(t0, x.t0_ns);
    fmt::print(stderr, "probe-wake first call {:.1f} us, stop sent {:.1f} us, took hold {:.1f} us\n",
               (t0 - t_send) / 1e3, frozen_after / 1e3, (tree_.stopped_at_ns() - t_send) / 1e3);
  }
  return Freeze(phase);
}

bool RankPool::RefTimedRound(const Cmd& cmd, v1::Phase phase, std::vector<Reply>* replies,
                             int64_t* wall_ns) {
  // cuda: the same sequence as the candidate's: stopped, the command written,
  // continued, stopped again to end the clock (the wake-up from a stop costs
  // both sides alike; measured on the H200). Not on the host:
  // there the stop and continue right before the batch cost the reference
  // ranks their claim to a CPU shared with another busy process, so the stop
  // that ends their clock waited for that process's whole time slice
  // (~3.6 ms, PKFORGE_TIMING_DIAG "freeze") while the candidate's, continued
  // from a long stop, did not: world 1 beside `taskset -c 1 yes`, an
  // identical candidate read 5.7-12.6x with it and 0.80-0.95x without (idle:
  // 0.82-0.91x and 0.89-0.95x, world 3 0.99-1.00x and 0.96-1.00x).
  absl::Status st;
  int64_t t_send = 0;
  if (Cuda()) {
    st = ref_tree_.Freeze(MonotonicNs() + kFreezeLimitNs);
    if (!st.ok()) {
      out_->HarnessFault(fmt::format("stopping the reference ranks: {}", std::string(st.message())));
      return false;
    }
    bool sent = false, ok = true;
    ref_tree_.Thaw([&] {
      t_send = MonotonicNs();
      ok = Send(refs_, cmd);
      sent = true;
    });
    if (!sent) {  // a trusted process is not judged by the freeze's checks
      t_send = MonotonicNs();
      ok = Send(refs_, cmd);
    }
    if (!ok) return false;
    if (!CollectRound(refs_, cmd.op, phase, t_send, replies, wall_ns)) return false;
  } else if (!RoundCmd(refs_, cmd, phase, replies, wall_ns, &t_send)) {
    return false;
  }
  const int64_t t_recv = MonotonicNs();
  st = ref_tree_.Freeze(MonotonicNs() + kFreezeLimitNs);
  if (cmd.op == kOpBatch) {
    Diag("ref", t_send, t_recv, ref_tree_.stopped_at_ns(), *replies);
    int64_t first = 0;
    for (const Reply& x : *replies) first = std::max(first, x.t0_ns - t_send);
    ref_start_ns_.push_back(static_cast<double>(first));
  }
  if (!st.ok()) {
    out_->HarnessFault(fmt::format("stopping the reference ranks: {}", std::string(st.message())));
    return false;
  }
  *wall_ns = ref_tree_.stopped_at_ns() - t_send;
  ref_tree_.Thaw();
  return true;
}

double RankPool::RefStartMedianNs() const {
  return ref_start_ns_.empty() ? 0.0 : pkforge::Quantile(ref_start_ns_, 0.5);
}

bool RankPool::RoundCmd(const std::vector<RankProc*>& procs, const Cmd& c, v1::Phase phase,
                        std::vector<Reply>* replies, int64_t* wall_ns, int64_t* t_send_ns) {
  const int64_t t_send = MonotonicNs();
  if (t_send_ns != nullptr) *t_send_ns = t_send;
  if (!Send(procs, c)) return false;
  return CollectRound(procs, c.op, phase, t_send, replies, wall_ns);
}

bool RankPool::CollectRound(const std::vector<RankProc*>& procs, uint32_t op, v1::Phase phase,
                            int64_t t_send, std::vector<Reply>* replies, int64_t* wall_ns) {
  if (!Collect(procs, op, phase, replies)) return false;
  const int64_t t_recv = MonotonicNs();
  if (wall_ns != nullptr) *wall_ns = t_recv - t_send;
  if (op == kOpRun || op == kOpBatch) {
    // The rank's interval must lie inside the judge's: same system-wide clock.
    for (size_t i = 0; i < procs.size(); ++i) {
      const Reply& r = (*replies)[i];
      if (r.t0_ns < t_send || r.t1_ns > t_recv || r.t1_ns < r.t0_ns) {
        ++window_violations_;
        window_detail_ =
            fmt::format("rank {} reported [{}, {}] ns outside the judge's window [{}, {}]",
                        procs[i]->rank, r.t0_ns, r.t1_ns, t_send, t_recv);
      }
    }
  }
  return true;
}

void RankPool::KillAndReapAll() {
  // Every candidate process at any depth: stopped, then killed, until the
  // tree is empty (containment.h); then the ranks themselves.
  tree_.KillAll(MonotonicNs() + 10'000'000'000);
  if (pgid_ > 0) kill(-pgid_, SIGKILL);
  for (RankProc& p : procs_) {
    if (p.pid > 0 && !p.reaped) {
      kill(p.pid, SIGKILL);  // in case it left the process group
      waitpid(p.pid, &p.wstatus, 0);
      p.reaped = true;
    }
    for (int* fd : {&p.cmd_fd, &p.reply_fd, &p.err_fd})
      if (*fd >= 0) {
        close(*fd);
        *fd = -1;
      }
  }
  // Anything else re-parented to us (we are a child subreaper): kill and
  // reap until none is left, however deep the chain was.
  const int64_t deadline = MonotonicNs() + 10'000'000'000;
  while (MonotonicNs() < deadline) {
    bool any = false;
    std::ifstream children(fmt::format("/proc/self/task/{}/children", getpid()));
    int pid;
    while (children >> pid) {
      kill(pid, SIGKILL);
      any = true;
    }
    while (waitpid(-1, nullptr, WNOHANG) > 0) any = true;
    if (!any) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // What the ranks left in flight in a unix-socket cycle (memory, files: no
  // process holds them, the ranks' death frees nothing; common/unix_gc.h).
  if (absl::Status gc = CollectUnixSocketGarbage(); !gc.ok())
    fprintf(stderr, "pkforge: %s\n", std::string(gc.message()).c_str());
}

void RankPool::TrackProcesses() {
  std::vector<int> cand_pids, ref_pids;
  for (RankProc* p : cands_) cand_pids.push_back(p->pid);
  for (RankProc* p : refs_) ref_pids.push_back(p->pid);
  tree_ = CandidateProcesses(cand_pids, ref_pids);
  ref_tree_ = CandidateProcesses(ref_pids, cand_pids, /*adopt_orphans=*/false);
}

void RankPool::AwaitCandidateExit() {
  for (RankProc* p : cands_)
    for (int i = 0; i < 2000 && !p->reaped; ++i) {
      if (waitpid(p->pid, &p->wstatus, WNOHANG) == p->pid)
        p->reaped = true;
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

}  // namespace pkforge::kernels
