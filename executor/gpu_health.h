// GpuHealthGate: what happens to a GPU after an evaluation crashed or hung
// on it (design section 7: "GPU health check after a crash or timeout").
//
// A candidate that faulted or was killed mid-kernel may leave its GPU in a
// bad state (sticky error, wedged context, ECC). Before such a GPU serves
// anyone else, the health check (Devices::CheckGpu: `pkforge-cuda-rank
// health`, a small known kernel in a sandboxed child) runs on it; a GPU that
// fails leaves the DeviceQueue's pool for good (MarkUnhealthy, with the
// reason shown by DescribeDevice), so later evaluations never get it, and the
// evaluation's result says so in a flag.
//
// The check is a function so the decision can be exercised without a GPU.
//
// Thread safety: stateless; call from the evaluation's thread (the check
// blocks for up to its own timeout).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "executor/device_queue.h"
#include "pkforge/v1/common.pb.h"

namespace pkforge::executor {

// True when an evaluation that ended with `status` must have its GPUs
// checked before they are reused: a cuda run that crashed or hung.
bool NeedsGpuHealthCheck(v1::Backend backend, v1::EvaluationResult::Status status);

// A GPU is retired only after its check failed this many times, the
// attempts `kHealthRetryDelays` apart: right after a crashed or killed
// evaluation the driver may still be tearing its contexts down, and a new
// process's CUDA initialisation waits for that (H100, 2026-12-05: the check
// after an illegal-address crash timed out "during driver initialisation"
// at 10 s, and one failed check took the executor's only GPU out of the
// pool for good: every later evaluation failed with "0 usable").
inline constexpr int kHealthAttempts = 3;
inline constexpr int kHealthRetryDelaysMs[kHealthAttempts - 1] = {5'000, 20'000};

// Runs `check` on every GPU of `gpus` (the evaluation's lease, still held),
// again after each delay while it fails (`sleep_ms`: the wait, replaceable
// in tests); one that fails every attempt is marked unhealthy in `queue`
// with a reason naming `what` (e.g. "after evaluation eval_...
// (RUNTIME_ERROR)") and the last message. Returns one flag per retired GPU
// and one per GPU that passed only on a later attempt, for the evaluation's
// result.
std::vector<std::string> RetireFailedGpus(
    const std::vector<int>& gpus, const std::function<absl::Status(int gpu)>& check,
    DeviceQueue* queue, const std::string& what,
    const std::function<void(int ms)>& sleep_ms = nullptr);

}  // namespace pkforge::executor
