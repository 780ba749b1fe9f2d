// ATTACK (work that escapes the freeze through the kernel): io_uring work is
// done by the kernel, partly in its own threads (SQPOLL, io-wq workers) and
// in timer callbacks. In a timed call the candidate computes the outputs
// into private memory, queues "after a 20 us timeout, write them into the
// data segment" (IORING_OP_TIMEOUT linked to IORING_OP_WRITE on fd 7, the
// side's data memfd, at the outputs' offset; the write forced async), and
// returns at once with its outputs unwritten: if the kernel finished the
// write while the candidate's processes are stopped, the judge's snapshot
// would see correct outputs and the calls would look free of the copy.
// (A delayed copy is all the kernel can do for an allreduce; the point is
// whether anything the candidate queued completes while it is frozen.)
// The SQPOLL thread and one io-wq worker (IORING_REGISTER_IOWQ_MAX_WORKERS)
// are started in pkf_setup, so they belong to the thread baseline.
// EXPECT: CHEAT_DETECTED timed_output_reverify / poison_unwritten /
// outlived_call (nothing queued completes while frozen; this kernel stops
// SQPOLL and io-wq threads with their process).
#include <linux/io_uring.h>

#include "kernels/testdata/redteam/redteam.h"

static int g_ring = -1;
static io_uring_params g_p;
static char *g_sq = NULL, *g_cq = NULL;
static io_uring_sqe* g_sqes = NULL;
static unsigned g_entries = 0;
static __kernel_timespec g_ts = {0, 20000};
static std::vector<std::vector<char>> g_priv(256);
static uint64_t g_calls = 0;

static bool ring_setup() {
  memset(&g_p, 0, sizeof g_p);
  g_p.flags = IORING_SETUP_SQPOLL;
  g_p.sq_thread_idle = 1000;
  g_ring = (int)syscall(SYS_io_uring_setup, 256, &g_p);
  if (g_ring < 0) {
    g_p.flags = 0;
    g_ring = (int)syscall(SYS_io_uring_setup, 256, &g_p);
  }
  if (g_ring < 0) return false;
  g_entries = g_p.sq_entries;
  const size_t sq_sz = g_p.sq_off.array + g_p.sq_entries * sizeof(unsigned);
  const size_t cq_sz = g_p.cq_off.cqes + g_p.cq_entries * sizeof(io_uring_cqe);
  g_sq = (char*)mmap(NULL, sq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, g_ring,
                     IORING_OFF_SQ_RING);
  g_cq = (char*)mmap(NULL, cq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, g_ring,
                     IORING_OFF_CQ_RING);
  g_sqes = (io_uring_sqe*)mmap(NULL, g_p.sq_entries * sizeof(io_uring_sqe),
                               PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, g_ring,
                               IORING_OFF_SQES);
  return g_sq != MAP_FAILED && g_cq != MAP_FAILED && g_sqes != MAP_FAILED;
}
static int g_logged = 0;
static void drain_cq() {
  auto* head = (std::atomic<unsigned>*)(g_cq + g_p.cq_off.head);
  auto* tail = (std::atomic<unsigned>*)(g_cq + g_p.cq_off.tail);
  const unsigned mask = *(unsigned*)(g_cq + g_p.cq_off.ring_mask);
  const io_uring_cqe* cqes = (const io_uring_cqe*)(g_cq + g_p.cq_off.cqes);
  const unsigned t = tail->load(std::memory_order_acquire);
  for (unsigned h = head->load(); h != t; ++h)
    if (cqes[h & mask].res != -62 && g_logged++ < 4) rt_log("write cqe res %d", cqes[h & mask].res);
  head->store(t, std::memory_order_release);
}
static void push(const io_uring_sqe& e) {
  auto* tail = (std::atomic<unsigned>*)(g_sq + g_p.sq_off.tail);
  const unsigned mask = *(unsigned*)(g_sq + g_p.sq_off.ring_mask);
  unsigned* array = (unsigned*)(g_sq + g_p.sq_off.array);
  const unsigned t = tail->load(std::memory_order_relaxed);
  g_sqes[t & mask] = e;
  array[t & mask] = t & mask;
  tail->store(t + 1, std::memory_order_release);
}
static void submit(unsigned n) {
  unsigned flags = 0;
  if (g_p.flags & IORING_SETUP_SQPOLL) {
    if (*(std::atomic<unsigned>*)(g_sq + g_p.sq_off.flags) & IORING_SQ_NEED_WAKEUP)
      flags |= IORING_ENTER_SQ_WAKEUP;
    else return;
  }
  syscall(SYS_io_uring_enter, g_ring, n, 0, flags, NULL, 0);
}

static char g_dummy[64];
extern "C" int pkf_setup(pkf_context*) {
  const bool ok = ring_setup();
  if (ok) {
    // One io-wq worker, started now: it is part of the thread baseline.
    unsigned max[2] = {1, 1};
    syscall(SYS_io_uring_register, g_ring, IORING_REGISTER_IOWQ_MAX_WORKERS, max, 2);
    const int fd = (int)syscall(SYS_memfd_create, "dummy", 0);
    io_uring_sqe w;
    memset(&w, 0, sizeof w);
    w.opcode = IORING_OP_WRITE;
    w.fd = fd;
    w.addr = (uint64_t)g_dummy;
    w.len = sizeof g_dummy;
    w.flags = IOSQE_ASYNC;
    push(w);
    submit(1);
    usleep(20000);
    drain_cq();
  }
  rt_log("io_uring %s (flags %u)", ok ? "ready" : "unavailable", g_p.flags);
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const bool batch = rt_batch_call();
  static char* base = NULL;
  static size_t size = 0;
  if (base == NULL) rt_mapping_of(in[0].data, &base, &size);  // this rank's data segment (fd 7)
  if (!batch || g_ring < 0 || base == NULL)
    return rt_return(pkf_run_correct(ctx, in, n_in, out, n_out, stream));
  drain_cq();
  std::vector<char>& priv = g_priv[g_calls++ % g_priv.size()];
  const size_t bytes = (size_t)pkf_numel(&out[0]) * 4;
  priv.resize(bytes);
  pkf_tensor tmp = out[0];
  tmp.data = priv.data();
  const int rc = pkf_run_correct(ctx, in, n_in, &tmp, n_out, stream);
  io_uring_sqe t;
  memset(&t, 0, sizeof t);
  t.opcode = IORING_OP_TIMEOUT;
  t.addr = (uint64_t)&g_ts;
  t.len = 1;
  t.flags = IOSQE_IO_LINK;
  t.timeout_flags = IORING_TIMEOUT_ETIME_SUCCESS;  // else the expiry cancels the link
  io_uring_sqe w;
  memset(&w, 0, sizeof w);
  w.opcode = IORING_OP_WRITE;
  w.fd = 7;  // this rank's data memfd (kernels/harness/shm.h kFdData)
  w.addr = (uint64_t)priv.data();
  w.len = (uint32_t)bytes;
  w.off = (uint64_t)((char*)out[0].data - base);
  w.flags = IOSQE_ASYNC;
  push(t);
  push(w);
  submit(2);
  return rt_return(rc);
}
