// The order of a timing phase's batches (Judge::Timing): which batch is a
// timed sample, a short batch, a drip batch or a progress probe, drawn from
// secret randomness as the phase goes.
//
// Contract:
// - Planned slots: Params::samples official samples plus a secret 0-2 more
//   (samples_wanted()), Params::shorts short batches and Params::drips drip
//   batches, in an order drawn at construction. Warm-up batches come first.
// - Progress probes are not planned: before a slot that is a sample, once
//   a long batch has given the candidate's span (Next's can_probe), the batch
//   is a probe with chance ProbeChance(samples_wanted()), drawn then; a probe
//   does not use up the slot, so the samples stay as many. Whatever a
//   candidate has seen of earlier probes, the next sample slot is probed with
//   that same chance (a fixed count of probes at secret places let a
//   candidate count them and fuse every batch after the last one: red team
//   round 12 probe_count_fuse / probe_gap_fuse).
// - Past the planned slots, while probes_settled() is false the schedule goes
//   on the same way (each batch a probe with the same chance, otherwise one
//   more sample) for up to kExtraProbes probes or kExtensionSlots batches;
//   then, while drips_settled() is false, up to kExtraDrips drip batches;
//   then kDone. Extra probes alone (the old rule) told a candidate that the
//   samples were over, and its honest behaviour on them diluted the findings
//   on the samples it had fused.
// Threading: none; one judge thread owns it. `rand` is called on that thread.
#pragma once

#include <cstdint>
#include <functional>
#include <set>

namespace pkforge::kernels {

class TimingSchedule {
 public:
  enum class Kind { kWarmup, kSample, kShort, kDrip, kProbe, kDone };
  struct Params {
    int warmup = 0;   // untimed batches first
    int samples = 6;  // official samples asked for (at least 1)
    int shorts = 0;   // short batches (batch_consistency)
    int drips = 0;    // drip batches (batch_drip, host)
  };
  // Probes wanted conclusive (ProgressSettled), at most this many more probes
  // or batches past the planned slots, at most kMaxProbes probes in all, at
  // most kExtraDrips more drip batches.
  static constexpr int kExtraProbes = 6;
  static constexpr int kExtensionSlots = 16;
  static constexpr int kMaxProbes = 40;
  static constexpr int kExtraDrips = 3;

  // The chance that a sample slot is preceded by a probe: max(5, samples/2)
  // probes expected among the samples after the first. 6 samples: 1/2 (a
  // candidate fusing r sample batches has none probed with chance 2^-r);
  // 15 samples: 0.35.
  static double ProbeChance(int samples);

  TimingSchedule(const Params& p, std::function<uint64_t()> rand);

  // The next batch. can_probe: a long timed batch has given the candidate's
  // span. The two predicates are asked only past the planned slots.
  Kind Next(bool can_probe, const std::function<bool()>& probes_settled,
            const std::function<bool()>& drips_settled);

  int samples_wanted() const { return samples_wanted_; }
  double probe_chance() const { return chance_; }
  // Whether the batch Next just returned is the last planned sample.
  bool last_planned_sample() const { return last_planned_; }
  // Probes and samples so far (samples: kSample batches, extension included).
  int probes() const { return probes_; }
  int samples() const { return samples_; }

 private:
  bool DrawProbe();

  std::function<uint64_t()> rand_;
  int warmup_left_;
  int samples_wanted_;
  int planned_;
  double chance_;
  std::set<int> shorts_, drips_;  // planned slot indices
  int slot_ = 0, planned_samples_ = 0;
  int samples_ = 0, probes_ = 0, extension_ = 0, extra_probes_ = 0, extra_drips_ = 0;
  bool last_planned_ = false;
};

}  // namespace pkforge::kernels
