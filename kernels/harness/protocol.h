// Judge <-> rank process protocol: fixed-size binary messages over pipes.
//
// Commands go judge -> rank on kFdCmd, replies rank -> judge on kFdReply. Both
// are smaller than PIPE_BUF, so each write is atomic. A candidate rank process
// can write anything on its reply pipe: the judge validates magic and op and
// trusts nothing in a candidate reply except as a claim to be cross-checked
// (times against its own wall clock; outputs are read by reference ranks).
//
// Also the segment layout, computed identically by judge and ranks from the
// evaluation's parameters (so no layout travels over a channel).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/harness/problem.h"

namespace pkforge::kernels {

inline constexpr uint32_t kMagic = 0x504b4631;  // "PKF1"

enum Op : uint32_t {
  kOpSetup = 1,     // both: load candidate / prepare reference, pkf_setup
  kOpGen = 2,       // ref: generate inputs of `slot` from `seed` into both sides, poison outputs
  kOpRun = 3,       // both: barrier, time one call on `slot`
  kOpCheck = 4,     // ref: compare candidate outputs/inputs of `slot` with reference
  kOpDigest = 5,    // ref: hash of candidate outputs of `slot`
  kOpSnapshot = 6,  // ref: remember candidate outputs of `slot`
  kOpSnapCompare = 7,  // ref: bytes that differ from the snapshot
  kOpPoison = 8,    // ref: poison candidate outputs of `slot`
  kOpExit = 9,      // both: pkf_teardown, exit
  kOpSync = 10,     // both: cuda: device-wide synchronize (work that outlived the call); host: no-op
};

struct Cmd {
  uint32_t magic;
  uint32_t op;
  uint32_t slot;
  uint32_t pad;
  uint64_t seed;
};

inline constexpr int kMaxOutputs = 4;

struct CheckRecord {
  int64_t elements;
  int64_t mismatches;
  int64_t unwritten;
  int64_t first_index;  // -1 when none
  double max_abs;
  double max_rel;
  double expected;
  double actual;
};

struct Reply {
  uint32_t magic;
  uint32_t op;
  int32_t rc;
  uint32_t n_checks;
  int64_t t0_ns;  // CLOCK_MONOTONIC (system-wide, comparable with the judge's)
  int64_t t1_ns;
  uint64_t value;         // digest / differing bytes
  uint64_t input_diff;    // kOpCheck: bytes of candidate inputs that differ from the originals
  CheckRecord checks[kMaxOutputs];
  char message[256];
};
static_assert(sizeof(Reply) < 4096, "replies must be atomic pipe writes");

// Placement of one tensor inside a side's data segment.
struct Placed {
  int64_t offset = 0;
  int64_t bytes = 0;
  int64_t numel = 0;
  TensorDesc desc;
};

struct DataLayout {
  int world = 0;
  int slots = 0;
  int64_t slot_bytes = 0;
  int64_t total_bytes = 0;
  int64_t elem_bytes = 0;
  std::vector<std::vector<Placed>> in;   // [rank][i], offsets within a slot
  std::vector<std::vector<Placed>> out;  // [rank][o]
  int64_t max_rank_bytes = 0;            // inputs + outputs of the largest rank
  int64_t SlotBase(int slot) const { return slot * slot_bytes; }
};

DataLayout MakeLayout(const Problem& p, const Dims& dims, int world, pkf_dtype dtype, int slots);

// NaN bit patterns written into outputs before calls (detects unwritten outputs).
uint32_t PoisonBits(pkf_dtype dtype);
void PoisonBuffer(void* data, int64_t numel, pkf_dtype dtype);

}  // namespace pkforge::kernels
