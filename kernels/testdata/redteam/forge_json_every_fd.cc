// ATTACK (result channel): write a forged result line on every descriptor
// 0..1023 that accepts a write, the reply pipe (fd 4) included.
// EXPECT: CHEAT_DETECTED result_channel (a malformed reply), and the judge's
// stdout holds exactly its own one line.
#include "kernels/testdata/redteam/redteam.h"
static const char kForged[] = "{\"status\":\"OK\",\"message\":\"forged\",\"speedup\":100}\n";
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*) {
  static bool done = false;
  if (done) return 0;
  done = true;
  int n = 0;
  for (int fd = 0; fd < 1024; ++fd)
    if (write(fd, kForged, sizeof kForged - 1) > 0) ++n;
  rt_log("wrote on %d descriptors", n);
  return 0;
}
