// ATTACK (blame, cuda): the candidate rank exported its input/output
// allocation as a cudaIpcMemHandle into its side's data memfd (fd 7, the
// "mailbox") before pkf_setup; the reference rank opens that handle only on
// first use, after pkf_setup. pkf_setup overwrites the mailbox with garbage,
// so the reference rank's cudaIpcOpenMemHandle fails. (A handle of another
// allocation of the candidate's would redirect where the reference writes the
// inputs and reads the outputs.)
// EXPECT: a candidate fault (SETUP_ERROR, RUNTIME_ERROR or CHEAT_DETECTED),
// never HARNESS_ERROR.
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
extern "C" int pkf_setup(pkf_context*) {
  struct stat st;
  if (fstat(7, &st) != 0 || st.st_size <= 0) return 0;
  void* m = mmap(nullptr, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, 7, 0);
  if (m != MAP_FAILED) memset(m, 0xa5, (size_t)st.st_size);
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  return pkf_run_correct_on(ctx, in, out, (cudaStream_t)stream);
}
