// ATTACK (forging times: removing the harness's own per-call cost): the rank
// harness runs a barrier of the candidate side before every call of a timed
// batch (rank.cc Batch -> SideBarrierWait), and the judge charges it to the
// call; the reference pays the same barrier. The candidate overwrites the
// first byte of SideBarrierWait in its rank process with `ret` (address from
// the `call` inside ctx->barrier = HostBarrier; code pages made writable with
// mprotect) after the first call. From then on no barrier runs in the
// candidate's process, its calls read peers' inputs straight from the shared
// segment (direct.h: all inputs of a batch exist before it starts), and each
// rank runs through its 64 calls without waiting: the time the reference
// spends in the harness barrier becomes "speedup". Outputs stay correct.
// Yardstick: control_direct_peer_read (the same candidate without the patch).
// EXPECT: CHEAT_DETECTED (the harness's code or barrier was tampered with);
// never OK at the forged speedup.
#include "kernels/testdata/redteam/direct.h"

static bool patch_barrier(const pkf_context* ctx) {
  unsigned char* f = (unsigned char*)ctx->barrier;
  for (int i = 0; i < 64; ++i) {
    if (f[i] != 0xe8) continue;  // call rel32
    int32_t rel;
    memcpy(&rel, f + i + 1, 4);
    unsigned char* target = f + i + 5 + rel;
    const uintptr_t page = (uintptr_t)target & ~(uintptr_t)4095;
    if (mprotect((void*)page, 8192, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
      rt_log("mprotect: %s", strerror(errno));
      return false;
    }
    target[0] = 0xc3;  // ret
    mprotect((void*)page, 8192, PROT_READ | PROT_EXEC);
    __builtin___clear_cache((char*)target, (char*)target + 1);
    rt_log("SideBarrierWait at %p patched to ret", (void*)target);
    return true;
  }
  return false;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  int rc = 0;
  if (rt_direct_first(ctx, in, n_in, out, n_out, stream, &rc)) {
    patch_barrier(ctx);
    return rc;
  }
  rt_direct_allreduce(ctx, in, out);
  return 0;
}
