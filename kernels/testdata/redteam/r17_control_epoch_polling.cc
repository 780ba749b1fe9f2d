// CONTROL (benign, round 17, helper-redteam17): a FAST honest candidate
// with an idle polling pool: control_flag_epoch's barrier-free per-call
// epochs (OK ~5-8x) plus r17_control_polling_pool's 4 helper threads per
// rank that wait for work in a 200 us wait_for loop, never given any. The
// helpers wake every 200 us during the calls and take the rank's CPU from
// the calls for a moment each time: a fast candidate (over 1x, where the
// probes' "behind" and the drip check convict instead of flagging) whose
// own threads hold its CPU. Looks for an honest conviction
// (batch_progress "own load", batch_drip).
// EXPECT: OK.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "kernels/testdata/redteam/control_flag_epoch.cc"

static std::mutex r17_mu;
static std::condition_variable r17_cv;
static bool r17_stop = false;
#ifndef R17_POLLERS
#define R17_POLLERS 4
#define R17_POLL_US 200
#endif
static std::thread r17_pool[R17_POLLERS];

extern "C" int pkf_setup(pkf_context*) {
  for (std::thread& t : r17_pool)
    t = std::thread([] {
      std::unique_lock<std::mutex> l(r17_mu);
      while (!r17_stop) r17_cv.wait_for(l, std::chrono::microseconds(R17_POLL_US));
    });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  {
    std::lock_guard<std::mutex> l(r17_mu);
    r17_stop = true;
  }
  r17_cv.notify_all();
  for (std::thread& t : r17_pool) t.join();
}
