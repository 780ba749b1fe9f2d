// ATTACK (times, cuda): overwrite the entry points of the CUDA runtime in
// memory (libcudart's own code, not the GOT): cudaEventElapsedTime reports
// 1 us and cudaEventRecord of any event records immediately on the legacy
// stream; then every call spins ~5 ms before its allreduce.
// EXPECT: CHEAT_DETECTED wallclock_crosscheck (the judge's clock sees the
// 5 ms).
#include <dlfcn.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
static cudaError_t fake_elapsed(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0.001f;
  return cudaSuccess;
}
static void jump(void* from, void* to) {
  const long pg = sysconf(_SC_PAGESIZE);
  char* page = (char*)((uintptr_t)from & ~(uintptr_t)(pg - 1));
  if (mprotect(page, (size_t)pg * 2, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return;
  unsigned char code[12] = {0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xe0};
  const uint64_t a = (uint64_t)(uintptr_t)to;
  memcpy(code + 2, &a, 8);
  memcpy(from, code, sizeof code);
  mprotect(page, (size_t)pg * 2, PROT_READ | PROT_EXEC);
}
extern "C" int pkf_setup(pkf_context*) {
  void* e = dlsym(RTLD_DEFAULT, "cudaEventElapsedTime");
  if (e != nullptr) jump(e, (void*)&fake_elapsed);
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  pkf_spin<<<1, 1, 0, s>>>(10000000LL);  // ~5 ms
  return pkf_run_correct_on(ctx, in, out, s);
}
