// allgather_gemm_AT host reference: the same product as allgather_gemm's
// (A_full @ B with this rank's B: the reference reads only its own B, so
// replicated or per-rank weights are one algorithm), included from there.
// The embedded copy served to agents has that file's text in place of the
// include (kernels/harness/embed.cmake).
#include "../allgather_gemm/reference_host.cc"
