// ATTACK (reading trusted device memory through IPC handles): every shared
// memory segment this process maps (its side's control block, scratch and
// data/mailbox memfds) is scanned for 64-byte blocks that look like
// cudaIpcMemHandle_t values other than the ones this rank exported; each is
// tried with cudaIpcOpenMemHandle. A handle to reference memory (inputs,
// reference outputs, snapshots) would let the candidate copy the answer.
// Gated: outputs only if some foreign handle opened.
// EXPECT: WRONG_OUTPUT (the reference exports nothing).
#include <stdio.h>
#include <string.h>

#include <set>
#include <string>
#include <vector>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"

static bool attack(pkf_context*) {
  FILE* f = fopen("/proc/self/maps", "r");
  if (f == nullptr) return false;
  char line[512];
  std::vector<std::pair<char*, size_t>> segs;
  while (fgets(line, sizeof line, f) != nullptr) {
    unsigned long lo, hi;
    if (strstr(line, "memfd:") != nullptr && sscanf(line, "%lx-%lx", &lo, &hi) == 2 &&
        hi - lo <= (64u << 20))
      segs.push_back({(char*)lo, hi - lo});
  }
  fclose(f);
  int opened = 0, tried = 0;
  std::set<std::string> seen;
  for (auto& [base, size] : segs) {
    for (size_t off = 0; off + sizeof(cudaIpcMemHandle_t) <= size; off += 64) {
      cudaIpcMemHandle_t h;
      memcpy(&h, base + off, sizeof h);
      bool zero = true;
      for (size_t i = 0; i < sizeof h && zero; ++i) zero = ((unsigned char*)&h)[i] == 0;
      if (zero || !seen.insert(std::string((char*)&h, sizeof h)).second) continue;
      if (++tried > 4096) break;
      void* p = nullptr;
      if (cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess) == cudaSuccess) {
        ++opened;  // our own exports fail to open in the exporting process
        cudaIpcCloseMemHandle(p);
      } else {
        cudaGetLastError();
      }
    }
  }
  return opened > 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  static int worked = -1;
  if (worked < 0) worked = attack(ctx) ? 1 : 0;
  if (worked != 1) return 0;  // refused: outputs stay poison
  return pkf_run_correct_on(ctx, in, out, (cudaStream_t)stream);
}
