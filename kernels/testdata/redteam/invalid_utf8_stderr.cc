// ATTACK (result channel / blame): the judge copies the last 2000 bytes of a
// failing candidate rank's stderr into the result (RankFailure.stderr_tail, a
// proto3 string, which must be valid UTF-8). The candidate prints bytes that
// are not UTF-8 and fails its first call: if the judge's JSON printer
// rejects the message, the judge prints "{}" (ResultToJson) or nothing: no
// verdict instead of the candidate's RUNTIME_ERROR.
// EXPECT: RUNTIME_ERROR (the candidate's own failure, reported).
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*) {
  const char bad[] = "candidate says \xff\xfe\xc3\x28 \xed\xa0\x80 (not UTF-8)\n";
  for (int i = 0; i < 40; ++i) fwrite(bad, 1, sizeof bad - 1, stderr);
  fflush(stderr);
  return 1;
}
