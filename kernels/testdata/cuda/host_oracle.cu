// Test-only cuda candidate (any problem): the problem's HOST reference (the
// oracle) run on copies of the device inputs. Its ranks exchange through a
// host shared-memory segment of their own (named after the judge's pid, the
// common parent) and the harness's host barrier. Evaluated with --backend
// cuda it checks the cuda reference against the host oracle on the device
// comparison path: OK means they agree within the problem's tolerance.
#include <cuda_runtime.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "pkforge/candidate.h"
#define pkf_run pkf_run_host_oracle
#include PKF_REFERENCE_FILE
#undef pkf_run

namespace {
struct OracleState {
  pkf_context host;  // host view: peer_scratch in the shared segment
  std::vector<void*> scratch;
  std::vector<uint32_t*> flags;
};
}  // namespace

extern "C" int pkf_setup(pkf_context* ctx) {
  char name[64];
  snprintf(name, sizeof name, "/pkforge-oracle-%d", (int)getppid());
  const size_t bytes = ctx->scratch_bytes * (size_t)ctx->world_size;
  int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
  if (fd < 0) return 1;
  if (ftruncate(fd, (off_t)bytes) != 0) return 2;
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) return 3;
  ctx->barrier(ctx);  // every rank mapped it: the name can go
  if (ctx->rank == 0) shm_unlink(name);
  auto* st = new OracleState();
  st->host = *ctx;
  for (int r = 0; r < ctx->world_size; ++r)
    st->scratch.push_back(static_cast<char*>(base) + (size_t)r * ctx->scratch_bytes);
  st->host.peer_scratch = st->scratch.data();
  st->host.peer_flags = ctx->peer_flags;  // unused by host references
  st->host.nccl = nullptr;
  ctx->user_state = st;
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  auto* st = static_cast<OracleState*>(ctx->user_state);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  std::vector<std::vector<char>> hin(n_in), hout(n_out);
  std::vector<pkf_tensor> tin(in, in + n_in), tout(out, out + n_out);
  for (int i = 0; i < n_in; ++i) {
    hin[i].resize(pkf_numel(&in[i]) * pkf_dtype_size(in[i].dtype));
    if (cudaMemcpyAsync(hin[i].data(), in[i].data, hin[i].size(), cudaMemcpyDeviceToHost, s) != cudaSuccess)
      return 100;
    tin[i].data = hin[i].data();
  }
  for (int o = 0; o < n_out; ++o) {
    hout[o].resize(pkf_numel(&out[o]) * pkf_dtype_size(out[o].dtype));
    tout[o].data = hout[o].data();
  }
  if (cudaStreamSynchronize(s) != cudaSuccess) return 101;
  st->host.rank = ctx->rank;
  st->host.barrier = ctx->barrier;
  int rc = pkf_run_host_oracle(&st->host, tin.data(), n_in, tout.data(), n_out, nullptr);
  if (rc != 0) return rc;
  for (int o = 0; o < n_out; ++o)
    if (cudaMemcpyAsync(out[o].data, hout[o].data(), hout[o].size(), cudaMemcpyHostToDevice, s) != cudaSuccess)
      return 102;
  return cudaStreamSynchronize(s) == cudaSuccess ? 0 : 103;
}
