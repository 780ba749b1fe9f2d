// The result of one evaluation while the judge builds it, and the book of its
// anti-cheat checks (kernels/harness/judge.h drives the evaluation).
//
// The first verdict stands: End() and HarnessFault() set the status only
// while it is unset or OK, so the earliest failure an evaluation meets is the
// one reported, whatever later steps add. A check keeps its first outcome
// unless a later report fails it: a check that has passed so far and now
// fails takes that failure's detail; once failed it stays failed with the
// detail of its first failure. PublishChecks() copies the book into the
// result at the end, failing checks first.
//
// Thread safety: none; used by the judge's single thread (one evaluation).
#pragma once

#include <map>
#include <string>

#include "pkforge/v1/common.pb.h"

namespace pkforge::kernels {

class Outcome {
 public:
  using Result = pkforge::v1::EvaluationResult;

  Result& result() { return result_; }
  // No verdict yet (the status is unset).
  bool undecided() const { return result_.status() == Result::STATUS_UNSPECIFIED; }

  // Sets the verdict unless an earlier one stands.
  void End(Result::Status status, const std::string& message);
  // HARNESS_ERROR, "not the candidate's fault", unless an earlier verdict stands.
  void HarnessFault(const std::string& message);
  // Records one outcome of the named check (see above for how outcomes merge).
  // flag_only: a failure flags the result but decides nothing by itself.
  void AddCheck(const std::string& name, bool passed, bool flag_only, const std::string& detail);
  // Appends `text` to the detail of check `name` if it was added and passed
  // (measurements that only exist once the evaluation is over).
  void AppendToPassedDetail(const std::string& name, const std::string& text);
  // A failed check that convicts: AddCheck(name, failed) and CHEAT_DETECTED
  // with "<name>: <detail>".
  void Cheat(const std::string& name, const std::string& detail);
  // True when check `name` was added and failed (flag-only or not).
  bool Failed(const std::string& name) const;
  // Appends every check to the result: failing ones first, by name otherwise.
  void PublishChecks();

 private:
  Result result_;
  std::map<std::string, pkforge::v1::CheatCheck> checks_;
};

}  // namespace pkforge::kernels
