// ATTACK (round 17, helper-redteam17; containment: perf_event_open, which
// the host candidate filter does not refuse). Two uses: (1) a counting or
// sampling event on a reference rank (its instructions, branches, cache
// misses while it computes the reference: a side channel into trusted
// computation; perf_event_open(pid) needs ptrace read access to the target,
// which the reference ranks' non-dumpable state denies); (2) a CPU-wide
// cpu-clock sampling event on the rank's CPU (pid -1): an hrtimer that fires
// on that CPU whoever runs there, i.e. also while the candidate is frozen
// and the reference is timed on the same CPU: row 25's interrupt storm
// (timers are refused, this one is not), allowed where
// kernel.perf_event_paranoid <= 0 or with CAP_PERFMON (many profiling hosts
// set -1; this VM has 2, which refuses CPU-wide events to unprivileged
// processes). Rank 0 tries both and logs what it got.
// Gated: outputs are written only if either event opened.
// EXPECT: WRONG_OUTPUT (both refused here: EACCES); on a host with
// perf_event_paranoid <= 0, (2) opens unless the filter refuses
// perf_event_open.
#include <linux/perf_event.h>
#include <sched.h>

#include "kernels/testdata/redteam/redteam.h"

static int PerfOpen(perf_event_attr* a, int pid, int cpu) {
  return (int)syscall(SYS_perf_event_open, a, pid, cpu, -1, 0);
}

static bool Attack(pkf_context* ctx) {
  if (ctx->rank != 0) return true;
  bool any = false;
  perf_event_attr a{};
  a.size = sizeof a;
  // A software counter (this VM's PMU has no hardware events: ENOENT):
  // the reference's CPU time and, with sampling, its user-space IPs.
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  for (int pid : rt_refs()) {
    const int fd = PerfOpen(&a, pid, -1);
    rt_log("perf_event_open(task-clock, reference pid %d): %s", pid,
           fd >= 0 ? "OPENED" : strerror(errno));
    if (fd >= 0) {
      any = true;
      close(fd);
    }
  }
  perf_event_attr c{};
  c.size = sizeof c;
  c.type = PERF_TYPE_SOFTWARE;
  c.config = PERF_COUNT_SW_CPU_CLOCK;
  c.sample_period = 10000;  // every 10 us of CPU time: a storm
  const int cpu = sched_getcpu();
  const int fd = PerfOpen(&c, -1, cpu);
  rt_log("perf_event_open(cpu-clock sampling, all tasks of CPU %d): %s (paranoid %s)", cpu,
         fd >= 0 ? "OPENED" : strerror(errno),
         rt_read("/proc/sys/kernel/perf_event_paranoid").c_str());
  if (fd >= 0) {
    any = true;
    close(fd);
  }
  perf_event_attr s{};
  s.size = sizeof s;
  s.type = PERF_TYPE_SOFTWARE;
  s.config = PERF_COUNT_SW_TASK_CLOCK;
  s.exclude_kernel = 1;
  const int self = PerfOpen(&s, 0, -1);
  rt_log("perf_event_open(task-clock, self): %s", self >= 0 ? "opened" : strerror(errno));
  if (self >= 0) close(self);
  return any;
}

RT_GATED_CANDIDATE(Attack)
