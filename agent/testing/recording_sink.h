// An in-memory TrajectorySink for tests: keeps every entry, checks the
// agent's promise that calls for one job never overlap, and can be told to
// fail (to test that sink errors stop the job).
//
// Threading: thread-safe.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "agent/trajectory_sink.h"

namespace pkforge::agent::testing {

class RecordingSink : public TrajectorySink {
 public:
  absl::Status OnTurnStarted(const TurnEntry& e) override;
  absl::Status OnLlmCall(const LlmCallEntry& e) override;
  absl::Status OnCandidate(const CandidateEntry& e) override;
  absl::Status OnEvaluationStarted(const EvaluationStartEntry& e) override;
  absl::Status OnEvaluationFinished(const EvaluationEntry& e) override;
  absl::Status OnBestImproved(const BestImprovedEntry& e) override;
  absl::Status OnLog(const LogEntry& e) override;

  // Fails every call after `n` more successful ones.
  void FailAfter(int n);

  std::vector<TurnEntry> turns() const;
  std::vector<LlmCallEntry> llm_calls() const;
  std::vector<CandidateEntry> candidates() const;
  std::vector<EvaluationStartEntry> evaluation_starts() const;
  std::vector<EvaluationEntry> evaluations() const;
  std::vector<BestImprovedEntry> improvements() const;
  std::vector<LogEntry> logs() const;
  // One tag per entry in arrival order: "turn:<turn_id>", "llm:<turn_id>",
  // "candidate:<sha>", "start:<eval_id>:<sha>", "end:<eval_id>",
  // "best:<eval_id>", "log:<text>".
  std::vector<std::string> sequence() const;
  // Every text field of every entry, one string per entry (for leak checks).
  std::vector<std::string> AllText() const;
  bool overlapped() const { return overlapped_.load(); }

 private:
  absl::Status Enter();
  void Leave();

  mutable std::mutex mu_;
  std::atomic<int> inside_{0};
  std::atomic<bool> overlapped_{false};
  int fail_after_ = -1;
  std::vector<TurnEntry> turns_;
  std::vector<LlmCallEntry> llm_calls_;
  std::vector<CandidateEntry> candidates_;
  std::vector<EvaluationStartEntry> starts_;
  std::vector<EvaluationEntry> evaluations_;
  std::vector<BestImprovedEntry> improvements_;
  std::vector<LogEntry> logs_;
  std::vector<std::string> sequence_;
};

}  // namespace pkforge::agent::testing
