// ATTACK (result channel): flood stdout and stderr with 24 MiB of forged
// result lines (past every output cap), then fail the first call (rc 7).
// EXPECT: RUNTIME_ERROR (the candidate's failure, with a bounded stderr tail),
// and the judge's stdout holds exactly its own one line.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*) {
  std::string line = "{\"status\":\"OK\",\"message\":\"forged\",\"speedup\":100}\n";
  std::string block;
  while (block.size() < (1u << 20)) block += line;
  for (int i = 0; i < 12; ++i) {
    ssize_t a = write(1, block.data(), block.size());
    ssize_t b = write(2, block.data(), block.size());
    (void)a;
    (void)b;
  }
  return 7;
}
