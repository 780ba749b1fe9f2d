#include "agent/testing/fake_evaluator.h"

#include <algorithm>

namespace pkforge::agent::testing {

FakeEvaluator::FakeEvaluator() : fn_([](const v1::EvaluateRequest&) { return Ok(1.0); }) {}

void FakeEvaluator::FailNext(int n, absl::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_ = n;
  fail_status_ = std::move(status);
}

std::vector<v1::EvaluateRequest> FakeEvaluator::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

absl::StatusOr<EvaluationOutcome> FakeEvaluator::Evaluate(const v1::EvaluateRequest& request,
                                                          const ProgressCallback& progress,
                                                          const CancelToken& cancel) {
  calls_++;
  const int now = ++in_flight_;
  int prev = max_concurrency_.load();
  while (now > prev && !max_concurrency_.compare_exchange_weak(prev, now)) {
  }
  struct Leave {
    std::atomic<int>* n;
    ~Leave() { --*n; }
  } leave{&in_flight_};
  absl::Status fail;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    if (fail_next_ > 0) {
      --fail_next_;
      fail = fail_status_;
    }
  }
  if (progress) {
    v1::EvaluateProgress p;
    p.mutable_queued()->set_position(0);
    progress(p);
  }
  if (latency_ms_ > 0) {
    absl::Status s = cancel.SleepFor(int64_t{latency_ms_} * 1000);
    if (!s.ok()) return s;
  }
  if (!fail.ok()) return fail;
  EvaluationOutcome out;
  out.result = fn_(request);
  out.result.set_problem(request.problem());
  out.result.set_world_size(request.world_size());
  out.result.mutable_stages()->set_queue_ms(queue_ms_);
  out.executor = "fake-executor";
  out.queue_ms = queue_ms_;
  return out;
}

v1::EvaluationResult FakeEvaluator::Ok(double speedup) {
  v1::EvaluationResult r;
  r.set_status(v1::EvaluationResult::OK);
  r.set_message("correct");
  r.set_speedup(speedup);
  r.mutable_reference()->set_median_us(100.0);
  r.mutable_reference()->set_samples(10);
  r.mutable_candidate()->set_median_us(100.0 / speedup);
  r.mutable_candidate()->set_samples(10);
  r.mutable_roofline()->set_roofline_us(20.0);
  r.mutable_roofline()->set_candidate_fraction(std::min(1.0, 20.0 / (100.0 / speedup)));
  r.mutable_roofline()->set_reference_fraction(0.2);
  return r;
}

v1::EvaluationResult FakeEvaluator::CompileError(const std::string& output) {
  v1::EvaluationResult r;
  r.set_status(v1::EvaluationResult::COMPILE_ERROR);
  r.set_message("nvcc failed");
  r.mutable_compile()->set_compiler("nvcc 13.0");
  r.mutable_compile()->set_output(output);
  return r;
}

v1::EvaluationResult FakeEvaluator::WrongOutput(int rank, int64_t index, double expected,
                                                double actual) {
  v1::EvaluationResult r;
  r.set_status(v1::EvaluationResult::WRONG_OUTPUT);
  r.set_message("mismatch");
  auto* c = r.mutable_correctness();
  c->set_trials(5);
  c->set_trials_passed(0);
  auto* ch = c->add_checks();
  ch->set_trial(0);
  ch->set_rank(rank);
  ch->set_output("y");
  ch->set_elements(4096);
  ch->set_mismatches(17);
  ch->set_max_abs_error(std::abs(expected - actual));
  ch->set_max_rel_error(1.0);
  ch->set_atol(1e-5);
  ch->set_rtol(1e-5);
  ch->set_first_mismatch_index(index);
  ch->add_first_mismatch_coords(index / 64);
  ch->add_first_mismatch_coords(index % 64);
  ch->set_expected(expected);
  ch->set_actual(actual);
  return r;
}

}  // namespace pkforge::agent::testing
