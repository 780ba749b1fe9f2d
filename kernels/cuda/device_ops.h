// Device-side operations of the trusted cuda rank (kernels/cuda/rank_cuda.cc):
// input generation (bit-identical to the host generator, harness/rng.h),
// poisoning, on-device comparison, digests and byte diffs. All work is
// enqueued on `stream`; functions returning a value synchronize it.
// Thread safety: none needed (one rank = one thread).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/harness/protocol.h"
#include "pkforge/candidate.h"

namespace pkforge::kernels::cuda {

// dst[e] = round_to_dtype(GenFloat(key, e, lo, hi)) for e < numel (lo == hi:
// GenValue's [-1, 1); else the float range of FloatInput); integer dtypes:
// GenInt(key, e, lo, hi) (the host's FillInput, harness/tensor_ops.h).
cudaError_t GenerateInput(void* dst, pkf_dtype dtype, uint64_t key, int64_t numel,
                          cudaStream_t stream, int64_t lo = 0, int64_t hi = 0);
// Fills with PoisonBits(dtype) (1- and 8-byte dtypes: 0xa5 in every byte).
cudaError_t PoisonDevice(void* dst, pkf_dtype dtype, int64_t numel, uint32_t bits,
                         cudaStream_t stream);

// Scratch for the reductions below (one per rank process).
struct DeviceScratch {
  unsigned long long* words = nullptr;  // device, kScratchWords
  unsigned long long* host = nullptr;   // pinned mirror
};
inline constexpr int kScratchWords = 8;
cudaError_t CreateScratch(DeviceScratch* s);

// The host Check semantics (tensor_ops.h CompareOutput) on device: mismatches
// (|a-e| > atol + rtol |e| or NaN; integers: a != e), unwritten (poison bits), max abs/rel error, first
// mismatch index; expected/actual at that index are read back here.
cudaError_t CompareOutputs(const void* actual, const void* expected, pkf_dtype dtype,
                           int64_t numel, double atol, double rtol, uint32_t poison_bits,
                           const DeviceScratch& s, cudaStream_t stream, CheckRecord* out);
// Batched comparisons (the rank's check, poison check and progress probe):
// each comparison writes its own record of
// kScratchWords words (CompareOutputs' layout: mismatches, unwritten, max
// abs, max rel, first index; DiffKernel: the count in word 0) without
// waiting; FinishRecords copies every record to the pinned mirror and
// waits once for all of them.
struct RecordScratch {
  unsigned long long* words = nullptr;  // device, cap records
  unsigned long long* host = nullptr;   // pinned mirror
  int64_t cap = 0;
};
cudaError_t EnsureRecords(RecordScratch* s, int64_t n);
cudaError_t ResetRecords(const RecordScratch& s, int64_t n, cudaStream_t stream);
cudaError_t LaunchCompare(const void* actual, const void* expected, pkf_dtype dtype, int64_t numel,
                          double atol, double rtol, uint32_t poison_bits,
                          unsigned long long* record, cudaStream_t stream);
cudaError_t LaunchDiff(const void* a, const void* b, int64_t bytes, unsigned long long* record,
                       cudaStream_t stream);
cudaError_t FinishRecords(const RecordScratch& s, int64_t n, cudaStream_t stream);
// A comparison's record (host copy) as CompareOutputs reports it; on a
// mismatch the two values at the first index are read back (synchronous).
cudaError_t RecordToCheck(const unsigned long long* record, const void* actual,
                          const void* expected, pkf_dtype dtype, int64_t numel, CheckRecord* out);
// A one-thread kernel that keeps `stream` busy for about `ns` nanoseconds
// (launch-ahead: see Run in rank_cuda.cc).
cudaError_t LaunchDelay(int64_t ns, cudaStream_t stream);
// Reads all `bytes` of `p` (into L2 and the TLBs of this context); `sink` is
// device memory that is practically never written (see TouchKernel).
cudaError_t TouchBuffer(const void* p, int64_t bytes, unsigned long long* sink,
                        cudaStream_t stream);

// Number of bytes that differ.
cudaError_t CountDiffBytes(const void* a, const void* b, int64_t bytes, const DeviceScratch& s,
                           cudaStream_t stream, uint64_t* out);
// Order-independent 64-bit digest of `bytes` (even) bytes.
cudaError_t DigestBytes(const void* p, int64_t bytes, const DeviceScratch& s, cudaStream_t stream,
                        uint64_t* out);

}  // namespace pkforge::kernels::cuda
