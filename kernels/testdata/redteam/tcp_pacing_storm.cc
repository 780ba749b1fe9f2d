// ATTACK (round 10, starving the reference from the kernel, a new way to arm
// it): an interrupt storm on the ranks' CPU while the REFERENCE is timed,
// armed with TCP pacing instead of the kernel timers row 25 refuses
// (timerfd_create, timer_create, io_uring_setup, io_setup: EPERM).
//
// What the attacker read: containment.cc HardenCandidateProcess refuses
// those four syscalls and nothing else that schedules kernel work for later;
// sockets are allowed (loopback exists in the executor's sandbox too: bwrap
// --unshare-net brings lo up). A TCP socket with SO_MAX_PACING_RATE set uses
// TCP's internal pacing (tcp_needs_internal_pacing): every queued skb departs
// at its own time from a per-socket hrtimer (tcp_pace_kick), in softirq
// context on the CPU that armed it, whether or not the sending process runs.
// MSG_EOR keeps each small send() its own skb. So one send() of 88 bytes
// (~2.5 us, in the candidate's call) buys one future hrtimer interrupt + a
// loopback transmit + receive + ACK (~20-35 us measured on this VM, charged
// to whatever task runs then): a 10x lever that the freeze (SIGSTOP) does not
// stop, as timerfds were before row 25.
// - pkf_setup (rank 0; every rank shares CPU 1 on this 2-CPU host): opens
//   RT_TCP_CONNS loopback connections (the accept side never read: a frozen
//   receiver still ACKs from the kernel), TCP_NODELAY, SO_MAX_PACING_RATE.
// - the last call of a timed batch (the harness's Cmd on the stack,
//   chunk_lookahead.h): on the next connection of a pool opened in
//   pkf_setup, queues one "lead" skb (its pacing delay keeps the storm off
//   the judge's stop of my own ranks) and 200 skbs of 88 B (~13 ms at
//   1.5 MB/s); returns. The storm runs while the judge snapshots my outputs
//   and times whatever comes next (the reference's batch ~75% of the time);
//   my next call, whatever it is, aborts it first (close with SO_LINGER
//   {1, 0}: a RST purges the unsent skbs), so it never slows my own batches.
// pkf_run itself is the naive reference: any speedup above control_naive's
// (~1.0x) is forged.
// Knobs (measurements): $PKF_REDTEAM_DIR/tcp_storm.conf
//   "<conns> <pacing bytes/s> <skbs per conn> <skb bytes> <lead bytes> <mode>"
//   mode 2 (default): one fresh connection of a pool per storm, aborted (RST)
//   when my next call starts; mode 0: one connection, storm after every
//   batch, never aborted; 1: only when the reference's
//   timed batch has not yet run in this pair (its ranks' voluntary context
//   switches, /proc/<pid>/status, since my previous batch; see ShouldStorm):
//   measured worse (probes, drips and short batches muddle the count).
// Measured (workers of 06:40-06:51, HEAD 1fc7ec1..4063682 + the lead's
// kOpTouch WT, w3 f32 tiny, load < 1; control_naive 0.97-1.00x in the same
// minutes; no check failed or flagged): mode 2 defaults OK 1.55 / 1.55 /
// 1.41x, at 2 MB/s x 250 skbs 1.56 / 1.29 / 1.41x (faster rates burst and
// miss: 4.7 MB/s 0.83x); mode 0 (1 conn, 150 skbs) OK 1.31 / 1.41 / 1.47 /
// 1.33 / 1.40 / 1.39 / 1.36x; 1 conn at 2 MB/s x 300 skbs OK 1.88 / 1.30x.
// EXPECT (fixed judge): not OK above ~1.3x (RedTeamPending.tcp_pacing_storm);
// e.g. candidate ranks get no AF_INET/AF_INET6 sockets on the host backend
// (seccomp), or the reference's timed batches are judged against the time
// its threads actually ran.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "kernels/testdata/redteam/chunk_lookahead.h"

namespace {
const uint32_t kOpDripCmd = 19;  // protocol.h kOpDrip
rt_slots g_ts;
std::vector<int> g_cli, g_srv;
long g_conns = 40, g_rate = 1500000, g_skbs = 200, g_len = 88, g_lead = 600, g_mode = 2;
int64_t g_storms = 0, g_batches = 0, g_sent = 0;
std::vector<int> g_refs;
int64_t g_sw_prev = -1;      // the reference ranks' voluntary switches at my last batch's end
bool g_prev_first = false;   // my previous batch ran before the reference's in its pair
char g_buf[70000];

int64_t RefSwitches() {
  int64_t sum = 0;
  for (int pid : g_refs) {
    const std::string s = rt_read("/proc/" + std::to_string(pid) + "/status");
    const size_t at = s.find("voluntary_ctxt_switches:");
    if (at == std::string::npos) return -1;
    sum += atoll(s.c_str() + at + 24);
  }
  return sum;
}

// Whether the reference's batch of this pair is still to come. Between my
// previous timed batch and this one the reference ranks ran: the reference
// batch that followed mine when I went first (c_prev calls), and this pair's
// reference batch when it went first (c_now calls); the naive reference
// switches a fixed number of times per call (per-call barriers), so their
// voluntary switches since then, in calls, tell which ran. A drip batch of
// mine resets the count (its pair's reference work all comes before it).
double g_per_call = 4.3;    // reference switches per call of a batch (the naive reference at
                            // world 3 here; then the least seen)
uint32_t g_prev_count = 0;  // calls of my previous timed batch
bool ShouldStorm(int64_t sw_now, uint32_t count) {
  if (g_mode == 0) return true;
  if (sw_now < 0) return false;
  if (g_sw_prev < 0) return false;  // my first batch: the trials before it say nothing
  const double delta = (double)(sw_now - g_sw_prev);
  if (g_batches < 14)
    rt_log("batch %lld (%u calls): reference switches since my last batch %.0f (prev first %d)",
           (long long)g_batches, count, delta, (int)g_prev_first);
  // One reference batch at least: learn its switches per call (the least).
  const double calls_pending = g_prev_first ? (double)g_prev_count : 0.0;
  if (delta > 2.0 * count) {
    const double per = delta / (calls_pending + (double)count);
    if (per < g_per_call) g_per_call = per;
  }
  const double calls = delta / g_per_call - calls_pending;
  return calls < 0.5 * count;
}

// Mode 2: one fresh connection per storm (a pool opened in pkf_setup); the
// storm still running when my next batch (or drip batch) starts is aborted
// there: close() with SO_LINGER {1, 0} sends a RST and purges the unsent,
// paced skbs. So no storm ever runs into my own batches, and each one can
// be long enough to cover whatever reference work comes before them.
size_t g_next = 0;
int g_active = -1;
void Abort() {
  if (g_active < 0) return;
  linger lg{1, 0};
  setsockopt(g_active, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  close(g_active);
  g_active = -1;
}
void ArmOne() {
  if (g_next >= g_cli.size()) return;  // pool used up: no more storms
  const int fd = g_cli[g_next++];
  if (g_lead > 0) send(fd, g_buf, (size_t)std::min<long>(g_lead, sizeof g_buf), MSG_DONTWAIT | MSG_EOR);
  for (long k = 0; k < g_skbs; ++k)
    if (send(fd, g_buf, (size_t)g_len, MSG_DONTWAIT | MSG_EOR) == g_len) ++g_sent;
  g_active = fd;
}

void Arm() {
  if (g_mode == 2) {
    ArmOne();
    return;
  }
  for (int fd : g_srv)
    while (recv(fd, NULL, 1 << 30, MSG_DONTWAIT | MSG_TRUNC) > 0) {
    }
  for (int fd : g_cli) {
    if (g_lead > 0) send(fd, g_buf, (size_t)std::min<long>(g_lead, sizeof g_buf), MSG_DONTWAIT | MSG_EOR);
    for (long k = 0; k < g_skbs; ++k)
      if (send(fd, g_buf, (size_t)g_len, MSG_DONTWAIT | MSG_EOR) == g_len) ++g_sent;
  }
}
}  // namespace

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank != 0) return 0;
  if (const char* dir = getenv("PKF_REDTEAM_DIR")) {
    FILE* f = fopen((std::string(dir) + "/tcp_storm.conf").c_str(), "r");
    if (f != NULL) {
      if (fscanf(f, "%ld %ld %ld %ld %ld %ld", &g_conns, &g_rate, &g_skbs, &g_len, &g_lead, &g_mode) != 6)
        rt_log("tcp_storm.conf: 6 numbers expected");
      fclose(f);
    }
  }
  g_refs = rt_refs();
  const int l = socket(AF_INET, SOCK_STREAM, 0);
  if (l < 0) {
    rt_log("socket refused: %s", strerror(errno));
    return 0;
  }
  sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(0x7f000001);
  socklen_t al = sizeof a;
  if (bind(l, (sockaddr*)&a, sizeof a) != 0 || listen(l, 64) != 0 ||
      getsockname(l, (sockaddr*)&a, &al) != 0) {
    rt_log("loopback listen failed: %s", strerror(errno));
    return 0;
  }
  for (long i = 0; i < g_conns; ++i) {
    const int c = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1, big = 8 << 20;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(c, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    if (connect(c, (sockaddr*)&a, sizeof a) != 0) {
      rt_log("connect failed: %s", strerror(errno));
      return 0;
    }
    const int s = accept(l, NULL, NULL);
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    unsigned long rate = (unsigned long)g_rate;
    if (setsockopt(c, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof rate) != 0)
      rt_log("SO_MAX_PACING_RATE: %s", strerror(errno));
    g_cli.push_back(c);
    g_srv.push_back(s);
  }
  close(l);
  rt_log("tcp_storm: %zu loopback connections paced at %ld B/s, %ld skbs of %ld B per storm, "
         "lead %ld B, mode %ld, %zu reference ranks",
         g_cli.size(), g_rate, g_skbs, g_len, g_lead, g_mode, g_refs.size());
  return 0;
}

extern "C" void pkf_teardown(pkf_context* ctx) {
  if (ctx->rank == 0)
    rt_log("teardown: %lld storms after %lld batches, %lld skbs queued", (long long)g_storms,
           (long long)g_batches, (long long)g_sent);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (g_active >= 0) Abort();  // mode 2: I run again, so the storm stops (before my work)
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  if (ctx->rank != 0 || g_cli.empty() || !rt_slots_init(&g_ts, ctx, in, out)) return rc;
  const int64_t slot = rt_slot_of(&g_ts, in[0].data);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  if (cmd != NULL && cmd->op == kOpDripCmd) {  // my drip batch: its pair's reference work is done
    if (g_batches < 14 && g_prev_first) rt_log("drip batch: reset");
    g_prev_first = false;
    if (g_mode == 1) g_sw_prev = RefSwitches();
    return rc;
  }
  if (cmd == NULL || cmd->op != kRtOpBatch || slot >= g_ts.ring) return rc;
  const uint32_t k = (uint32_t)((slot - (int64_t)cmd->slot + g_ts.ring) % g_ts.ring);
  static bool first_now = false;
  if (k == 0) first_now = g_mode != 1 || ShouldStorm(RefSwitches(), cmd->count);
  if (k + 1 != cmd->count) return rc;
  ++g_batches;
  if (first_now) {
    Arm();
    if (++g_storms % 8 == 1)
      rt_log("storm %lld after batch %lld (%u calls), %.2f reference switches per call",
             (long long)g_storms, (long long)g_batches, cmd->count, g_per_call);
  }
  g_prev_first = first_now;
  g_prev_count = cmd->count;
  if (g_mode == 1) g_sw_prev = RefSwitches();
  return rc;
}
