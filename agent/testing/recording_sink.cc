#include "agent/testing/recording_sink.h"

#include <chrono>
#include <thread>

#include "google/protobuf/util/json_util.h"

namespace pkforge::agent::testing {

absl::Status RecordingSink::Enter() {
  if (++inside_ > 1) overlapped_ = true;
  // Widen the window in which an unserialised second call would overlap.
  std::this_thread::sleep_for(std::chrono::microseconds(50));
  std::lock_guard<std::mutex> lock(mu_);
  if (fail_after_ == 0) return absl::UnavailableError("sink: disk full (scripted)");
  if (fail_after_ > 0) --fail_after_;
  return absl::OkStatus();
}

void RecordingSink::Leave() { --inside_; }

#define PKF_SINK_METHOD(Method, Type, vec, tag)       \
  absl::Status RecordingSink::Method(const Type& e) { \
    absl::Status s = Enter();                         \
    if (s.ok()) {                                     \
      std::lock_guard<std::mutex> lock(mu_);          \
      vec.push_back(e);                               \
      sequence_.push_back(tag);                       \
    }                                                 \
    Leave();                                          \
    return s;                                         \
  }

PKF_SINK_METHOD(OnTurnStarted, TurnEntry, turns_, "turn:" + e.turn_id)
PKF_SINK_METHOD(OnLlmCall, LlmCallEntry, llm_calls_, "llm:" + e.turn_id)
PKF_SINK_METHOD(OnCandidate, CandidateEntry, candidates_, "candidate:" + e.sha256)
PKF_SINK_METHOD(OnEvaluationStarted, EvaluationStartEntry, starts_,
                "start:" + e.evaluation_id + ":" + e.candidate_sha256)
PKF_SINK_METHOD(OnEvaluationFinished, EvaluationEntry, evaluations_, "end:" + e.evaluation_id)
PKF_SINK_METHOD(OnBestImproved, BestImprovedEntry, improvements_, "best:" + e.evaluation_id)
PKF_SINK_METHOD(OnLog, LogEntry, logs_, "log:" + e.text)
#undef PKF_SINK_METHOD

void RecordingSink::FailAfter(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_after_ = n;
}

#define PKF_SINK_GETTER(Name, Type, vec)          \
  std::vector<Type> RecordingSink::Name() const { \
    std::lock_guard<std::mutex> lock(mu_);        \
    return vec;                                   \
  }
PKF_SINK_GETTER(turns, TurnEntry, turns_)
PKF_SINK_GETTER(llm_calls, LlmCallEntry, llm_calls_)
PKF_SINK_GETTER(candidates, CandidateEntry, candidates_)
PKF_SINK_GETTER(evaluation_starts, EvaluationStartEntry, starts_)
PKF_SINK_GETTER(evaluations, EvaluationEntry, evaluations_)
PKF_SINK_GETTER(improvements, BestImprovedEntry, improvements_)
PKF_SINK_GETTER(logs, LogEntry, logs_)
PKF_SINK_GETTER(sequence, std::string, sequence_)
#undef PKF_SINK_GETTER

std::vector<std::string> RecordingSink::AllText() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& e : turns_) out.push_back(e.job_id + e.turn_id + e.note);
  for (const auto& e : llm_calls_) {
    out.push_back(e.job_id + e.call_id + e.turn_id + e.provider + e.model + e.prompt + e.reply +
                  e.error + e.note);
  }
  for (const auto& e : candidates_) out.push_back(e.source + e.origin + e.sha256);
  for (const auto& e : starts_) out.push_back(e.evaluation_id + e.candidate_sha256);
  for (const auto& e : evaluations_) {
    std::string json;
    (void)google::protobuf::util::MessageToJsonString(e.result, &json);
    out.push_back(e.evaluation_id + e.executor + e.error.ToString() + json);
  }
  for (const auto& e : logs_) out.push_back(e.level + e.text);
  return out;
}

}  // namespace pkforge::agent::testing
