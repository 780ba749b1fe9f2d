// The cuda references (kernels/problems/<name>/reference_cuda.cu), compiled
// into pkforge-cuda-rank with their ABI symbols renamed per problem
// (pkf_run -> pkf_cuda_ref_<name>_run, ...; kernels/CMakeLists.txt).
#pragma once

#include <string_view>

#include "pkforge/candidate.h"

namespace pkforge::kernels::cuda {

struct CudaReference {
  std::string_view name;
  pkf_setup_fn setup;
  pkf_run_fn run;
  pkf_teardown_fn teardown;
};

// nullptr when the problem has no cuda reference.
const CudaReference* FindCudaReference(std::string_view name);

}  // namespace pkforge::kernels::cuda
