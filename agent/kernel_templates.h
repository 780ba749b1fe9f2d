// Parameterized expert kernels for the search agent (the non-LLM baseline):
// allreduce, allgather and reducescatter, for the cuda and host backends.
//
// Problem contract (binding for these templates and for the problem suite):
// every tensor is row-major contiguous and the kernels work on numel (the
// product of the shape), so any 1-D/2-D shape works. dtypes f32, f16, bf16;
// f16/bf16 accumulate in f32 (in rank order 0..world-1, rounded once).
//   allreduce:     in[0] x (numel N) -> out[0] y (numel N), y = sum over ranks of x
//   allgather:     in[0] (numel N) -> out[0] (numel world*N), rank order
//   reducescatter: in[0] (numel world*N) -> out[0] (numel N); rank r gets the
//                  sum over ranks of elements [r*N, (r+1)*N)
// Every template is correct for any world size 1..64 and any numel (tails),
// and chunks its data through ctx->peer_scratch, never assuming the scratch is
// larger than the per-rank data. pkf_run returns 0 on success, otherwise a
// small error code (1 bad arguments, 2 too many ranks, 3 scratch too small, 4
// too few flags, 5 CUDA error, 6 dtype, 7 barrier failed).
//
// Mechanisms (KernelParams::algorithm):
//   cuda  allreduce      one_shot_pull  stage x in own scratch, barrier, every
//                                       rank loads all peers' chunks
//                                       (vectorized) and reduces
//                        one_shot_push  peer stores of x into every rank's
//                                       slot, barrier, local reduce
//                        two_shot       reduce-scatter by peer loads (each
//                                       rank reduces a 1/world slice), then
//                                       all-gather of the slices by peer loads
//                        copy_engine    cudaMemcpyAsync of x into every rank's
//                                       slot (copy engine, no SMs), barrier,
//                                       local reduce
//         allgather      pull_ld, push_st (peer loads / stores), copy_engine
//         reducescatter  pull_ld, push_st, copy_engine
//   host  allreduce      one_shot, two_shot;   allgather pull, push;
//         reducescatter  pull, push  (memcpy through the shared segment,
//                                     ctx->barrier between phases)
// Knobs: vec_bytes (bytes per vector access: 4, 8, 16; unaligned pointers
// fall back to scalar), threads per block, blocks (CTAs, i.e. SMs, used by
// the communication kernels; 0 = all SMs), chunk_bytes (pipeline chunk in the
// scratch), tile (host: elements reduced per inner tile). Cross-rank
// signalling on cuda: a one-block kernel per barrier writes an epoch to every
// peer's flag pad (st.release.sys) and spins on its own (ld.acquire.sys);
// epochs live in ctx->user_state, created in pkf_setup (or on first use),
// which also loads every kernel pkf_run may launch: CUDA loads kernels lazily
// on first launch, and a load can wait for the context's running kernels, so
// a first launch behind a spinning barrier could deadlock.
// World size 1: every problem here is y = x, so every template copies directly
// (copy_engine: cudaMemcpyAsync; the others: the vectorized copy kernel with
// their knobs; host: memcpy), without the scratch or a barrier.
// Not covered: TMA and multimem (NVLS) mechanisms and compute overlap.
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "pkforge/v1/common.pb.h"

namespace pkforge::agent {

struct KernelParams {
  std::string algorithm;
  int32_t vec_bytes = 16;
  int32_t threads = 512;
  int32_t blocks = 0;
  int64_t chunk_bytes = 1 << 20;
  int32_t tile = 1024;

  // "two_shot vec=16 threads=512 blocks=32 chunk=1MiB" (only the knobs that
  // matter for the backend/algorithm).
  std::string Describe(v1::Backend backend) const;
};

// The configurations the search explores, the baseline first; empty when the
// problem/backend has no templates.
std::vector<KernelParams> SearchSpace(std::string_view problem, v1::Backend backend);

struct GenerateOptions {
  // Test seam for compiling many instantiations in one translation unit:
  // appended to the exported symbols (pkf_run<suffix>, ...) and the variant's
  // namespace. The shared prelude is guarded so it is emitted once per TU.
  std::string symbol_suffix;
};

// The candidate source for `params`; INVALID_ARGUMENT for an unknown problem,
// backend or algorithm.
absl::StatusOr<std::string> GenerateKernel(std::string_view problem, v1::Backend backend,
                                           const KernelParams& params,
                                           const GenerateOptions& options = {});

}  // namespace pkforge::agent
