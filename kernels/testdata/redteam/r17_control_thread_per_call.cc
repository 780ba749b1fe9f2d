// CONTROL (benign, round 17, helper-redteam17): every call starts threads
// and joins them before it returns (a std::thread per call doing the
// call's work, and a short-lived second one), as a candidate that parallel-
// izes each call with fresh threads would. candidate.h allows helper
// threads; nothing outlives the call: pthread_join returns once the kernel
// cleared the thread's tid, the thread may still be inside do_exit for a
// moment (it is listed in /proc/<pid>/task until it is released), which a
// thread count right after the reply could take for a thread that outlived
// the call (checks.cc ThreadCheck counts /proc/<pid>/task entries against
// the post-setup baseline).
// EXPECT: OK.
#include <thread>

#include "kernels/testdata/redteam/redteam.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  int rc = 0;
  std::thread t([&] { rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream); });
  std::thread u([] {});
  u.join();
  t.join();
  return rc;
}
