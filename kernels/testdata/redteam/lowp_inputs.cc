// OUTPUT POLICY self-test (lower precision than the dtype), generic: the
// problem's own host reference (PKF_REFERENCE_FILE) with every element it
// loads rounded to bf16 when the problem's dtype is f32 (half the input
// bandwidth; accumulation stays f32). Built for the problems whose reference
// loads elements (the compute ones; pure copies are exact anyway).
// EXPECT: WRONG_OUTPUT at f32 for every such problem and world size.
#include "pkforge/candidate.h"
#include "kernels/problems/common/host_math.h"
static inline float rt_lowp_load(const void* p, pkf_dtype dt, int64_t i) {
  const float v = pkf_load(p, dt, i);
  return dt == PKF_F32 ? pkf_bf16_to_f32(pkf_f32_to_bf16(v)) : v;
}
#define pkf_load rt_lowp_load
#include PKF_REFERENCE_FILE
