// The pkf_tensor descriptors a rank passes to pkf_run, built once per
// evaluation for every buffer slot instead of once per call in every batch.
//
// Contract. Build() fills one table row per slot (the rank's inputs, then
// its outputs, as the layout places them); Prepare() copies the rows of a
// command's calls into a scratch array sized once, so the harness code that
// runs between the command and the batch's first call is a copy of
// count x (inputs + outputs) descriptors, with no allocation. A call gets its
// own copy each batch: what it does to its descriptors does not outlive the
// batch. Lives in the rank process (the candidate's, for candidate ranks),
// like all harness code there: a candidate that corrupts it only misplaces
// its own calls' work, which the reference ranks' checks see.
//
// Why (host, world size 1, tiny, 2026-12-06): building the per-call vectors
// took 9-19 us of a ~140 us batch of 128 calls on this 2-core host (up to
// ~60 us under load), before the first call; the progress probes (elapsed
// from the command) then read honest candidates "behind" - CI's
// kernels_host_test convicted naive_host_moe_all2all at world size 1 on three
// such probes. Both sides paid it inside their timed batch as well.
//
// Not thread-safe; the rank's command loop owns it.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/harness/protocol.h"
#include "pkforge/candidate.h"

namespace pkforge::kernels {

class SlotTensors {
 public:
  // `at(slot, placed)`: the address of a placed tensor in a slot.
  template <class At>
  void Build(int slots, const std::vector<Placed>& in, const std::vector<Placed>& out, At at) {
    n_in_ = static_cast<int32_t>(in.size());
    n_out_ = static_cast<int32_t>(out.size());
    per_call_ = in.size() + out.size();
    table_.assign(static_cast<size_t>(slots) * per_call_, pkf_tensor{});
    for (int s = 0; s < slots; ++s) {
      pkf_tensor* row = &table_[static_cast<size_t>(s) * per_call_];
      size_t i = 0;
      for (const auto* v : {&in, &out})
        for (const Placed& p : *v) {
          pkf_tensor& x = row[i++];
          std::memset(&x, 0, sizeof x);
          x.data = at(s, p);
          x.dtype = p.dtype;
          x.ndim = static_cast<int32_t>(p.desc.shape.size());
          for (size_t d = 0; d < p.desc.shape.size() && d < 8; ++d) x.shape[d] = p.desc.shape[d];
        }
    }
    scratch_.assign(static_cast<size_t>(slots) * per_call_, pkf_tensor{});
  }

  // The descriptors of `cmd`'s calls, call k at In(k)/Out(k). `cmd` has
  // passed BadSlots (every slot below the count Build saw).
  void Prepare(const Cmd& cmd) {
    if (per_call_ == 0) return;
    for (uint32_t k = 0; k < cmd.count; ++k)
      std::memcpy(&scratch_[k * per_call_], &table_[cmd.SlotAt(k) * per_call_],
                  per_call_ * sizeof(pkf_tensor));
  }
  // One call on `slot` (kOpRun): its descriptors at In(0)/Out(0).
  void PrepareOne(int slot) {
    if (per_call_ == 0) return;
    std::memcpy(scratch_.data(), &table_[static_cast<size_t>(slot) * per_call_],
                per_call_ * sizeof(pkf_tensor));
  }

  pkf_tensor* In(uint32_t k) { return scratch_.data() + k * per_call_; }
  pkf_tensor* Out(uint32_t k) { return scratch_.data() + k * per_call_ + n_in_; }
  int32_t n_in() const { return n_in_; }
  int32_t n_out() const { return n_out_; }

 private:
  int32_t n_in_ = 0, n_out_ = 0;
  size_t per_call_ = 0;
  std::vector<pkf_tensor> table_, scratch_;
};

}  // namespace pkforge::kernels
