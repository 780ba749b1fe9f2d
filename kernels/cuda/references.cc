#include "kernels/cuda/references.h"

#define PKF_CUDA_REFERENCE(NAME)                                                              \
  extern "C" int pkf_cuda_ref_##NAME##_setup(pkf_context*);                                   \
  extern "C" int pkf_cuda_ref_##NAME##_run(pkf_context*, const pkf_tensor*, int32_t,          \
                                           pkf_tensor*, int32_t, void*);                      \
  extern "C" void pkf_cuda_ref_##NAME##_teardown(pkf_context*);
#define PKF_ALL_PROBLEMS(X)                                                                  \
  X(allreduce) X(allgather) X(reducescatter) X(alltoall) X(broadcast) X(reduce) X(gather)   \
  X(scatter) X(allgather_gemm) X(gemm_reducescatter) X(gemm_allreduce) X(tp_rmsnorm)

PKF_ALL_PROBLEMS(PKF_CUDA_REFERENCE)

namespace pkforge::kernels::cuda {

const CudaReference* FindCudaReference(std::string_view name) {
#define PKF_ENTRY(NAME) \
  {#NAME, pkf_cuda_ref_##NAME##_setup, pkf_cuda_ref_##NAME##_run, pkf_cuda_ref_##NAME##_teardown},
  static const CudaReference kAll[] = {PKF_ALL_PROBLEMS(PKF_ENTRY)};
#undef PKF_ENTRY
  for (const CudaReference& r : kAll)
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace pkforge::kernels::cuda
