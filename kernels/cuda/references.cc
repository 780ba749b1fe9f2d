#include "kernels/cuda/references.h"

// PKF_FOR_EACH_PROBLEM: kernels/problems/problems.list, generated at configure time.
#include "kernels/problems/problem_list.inc"

#define PKF_CUDA_REFERENCE(NAME)                                                              \
  extern "C" int pkf_cuda_ref_##NAME##_setup(pkf_context*);                                   \
  extern "C" int pkf_cuda_ref_##NAME##_run(pkf_context*, const pkf_tensor*, int32_t,          \
                                           pkf_tensor*, int32_t, void*);                      \
  extern "C" void pkf_cuda_ref_##NAME##_teardown(pkf_context*);
PKF_FOR_EACH_PROBLEM(PKF_CUDA_REFERENCE)

namespace pkforge::kernels::cuda {

const CudaReference* FindCudaReference(std::string_view name) {
#define PKF_ENTRY(NAME) \
  {#NAME, pkf_cuda_ref_##NAME##_setup, pkf_cuda_ref_##NAME##_run, pkf_cuda_ref_##NAME##_teardown},
  static const CudaReference kAll[] = {PKF_FOR_EACH_PROBLEM(PKF_ENTRY)};
#undef PKF_ENTRY
  for (const CudaReference& r : kAll)
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace pkforge::kernels::cuda
