// CONTROL (benign, round 17, helper-redteam17): a yield-spinning worker
// pool, as a naive "low-latency" candidate writes it. pkf_setup starts 3
// workers per rank that spin on an atomic job counter with
// std::this_thread::yield() (never sleeping); each call publishes a job,
// worker 0 runs the whole call (the naive allreduce), the main thread
// yield-spins until it is done, the other workers spin idle. Everything
// happens inside the calls (the workers are stopped with the rank between
// calls), nothing outlives a call, but 4 threads of the rank share its one
// CPU and the call's work waits behind the spinners: slow, and its probes
// read "behind" with its own threads holding the CPU ("own load").
// Looks for false positives of batch_progress / batch_drip /
// frozen_while_idle on an honest but CPU-hungry design.
// EXPECT: OK (slow).
#include <atomic>
#include <thread>

#include "kernels/testdata/redteam/redteam.h"

struct Job {
  pkf_context* ctx;
  const pkf_tensor* in;
  int32_t n_in;
  pkf_tensor* out;
  int32_t n_out;
  void* stream;
};
static std::atomic<uint64_t> posted{0}, done{0};
static std::atomic<bool> stop{false};
static Job job;
static int job_rc = 0;
static std::thread workers[3];

extern "C" int pkf_setup(pkf_context*) {
  for (int w = 0; w < 3; ++w)
    workers[w] = std::thread([w] {
      uint64_t seen = 0;
      while (!stop.load(std::memory_order_acquire)) {
        const uint64_t p = posted.load(std::memory_order_acquire);
        if (p == seen) {
          std::this_thread::yield();
          continue;
        }
        seen = p;
        if (w == 0) {
          job_rc = pkf_run_correct(job.ctx, job.in, job.n_in, job.out, job.n_out, job.stream);
          done.store(p, std::memory_order_release);
        }
      }
    });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  stop.store(true, std::memory_order_release);
  for (std::thread& t : workers) t.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  job = Job{ctx, in, n_in, out, n_out, stream};
  const uint64_t p = posted.load(std::memory_order_relaxed) + 1;
  posted.store(p, std::memory_order_release);
  while (done.load(std::memory_order_acquire) != p) std::this_thread::yield();
  return job_rc;
}
