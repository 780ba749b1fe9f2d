// ATTACK (cuda, red team round 32, helper-redteam32): r32_drip_gpu_agent
// padded. Each taken-over call stores `returned` R32_PAD_NS after the GPU
// saw its release, so that its dripped call less its free-running time lands
// inside the kShort/kSlow window (drip_check.cc ClassifyDrip) instead of
// under the floor. 6 us is a guess from the estimates in
// /work/helper-notes/redteam32.md (floor ~6-10 us, the unpadded agent
// ~2.5-5 us a call); set it from the unpadded agent's run: pad = the
// reference's "hand-off without its call" less the agent's dripped call, plus
// about half the allowance (the TimingDiag "drip N:" lines).
// EXPECT (not defended by queuing; round 30 finding 1): OK ~3.5x (its timed
// batches are r15_chunk_k8's) with batch_drip consistent; CHEAT_DETECTED
// batch_drip means the pad missed the window (short: pad more; slow: less),
// not that the attack cannot work.
#define R32_PAD_NS 6000
// MEASURED (H100, session 22, s22b): as r32_drip_gpu_agent (three waits CHEAT_DETECTED
// batch_drip; queued CHEAT_DETECTED input_mutation, its own replay's bug).
#include "kernels/testdata/redteam/cuda/r32_drip_gpu_agent.cu"
