#include "orchestrator/final_measurement.h"

#include "common/ids.h"
#include "common/logging.h"
#include "common/status.h"
#include "fmt/format.h"
#include "orchestrator/convert.h"

namespace pkforge::orchestrator {

absl::Status MeasureFinal(const FinalMeasurementEnv& env) {
  ASSIGN_OR_RETURN(storage::CandidateRecord candidate,
                   env.store->GetCandidate(env.candidate_sha256));
  v1::EvaluateRequest req = EvaluationOf(env.spec);
  // The verdict on shapes the search never saw, when the job asks for it.
  if (env.spec.eval().final_hidden_shapes()) req.set_hidden_shapes(true);
  // And measurement-grade timing (cuda), when the job asks for it.
  if (env.spec.eval().final_precise_timing()) req.set_precise_timing(true);
  req.set_source(candidate.source);
  const std::string evaluation_id = NewId("eval");
  req.set_client_tag(fmt::format("{} {} final measurement", env.job_id, evaluation_id));

  agent::LogEntry log;
  log.job_id = env.job_id;
  log.level = "info";
  log.text = fmt::format(
      "final measurement: evaluating the chosen candidate {} once more, fresh, at the job's "
      "own settings; its speedup is the job's result",
      env.candidate_sha256.substr(0, 12));
  log.wall_us = env.clock->NowWallMicros();
  log.elapsed_ms = env.elapsed_ms();
  RETURN_IF_ERROR(env.sink->OnLog(log));

  agent::EvaluationStartEntry start;
  start.job_id = env.job_id;
  start.evaluation_id = evaluation_id;
  start.candidate_sha256 = env.candidate_sha256;
  start.wall_us = env.clock->NowWallMicros();
  start.elapsed_ms = env.elapsed_ms();
  RETURN_IF_ERROR(env.sink->OnEvaluationStarted(start));

  // Not a child of the job's token: that one's deadline (the wall budget)
  // has passed. Its explicit cancellation is forwarded.
  agent::CancelToken token(env.clock);
  token.SetDeadline(env.clock->NowMonotonicMicros() +
                    static_cast<int64_t>(kFinalMeasurementTimeoutS * 1e6));
  const auto callback = env.job_cancel->AddCallback(
      [&] { token.Cancel(absl::CancelledError("the job was cancelled")); });
  auto outcome = env.evaluator->Evaluate(req, agent::ProgressCallback(), token);
  env.job_cancel->RemoveCallback(callback);

  agent::EvaluationEntry e;
  e.job_id = env.job_id;
  e.evaluation_id = evaluation_id;
  e.candidate_sha256 = env.candidate_sha256;
  e.started_wall_us = start.wall_us;
  e.started_elapsed_ms = start.elapsed_ms;
  e.timed_iters = req.timed_iters();
  e.trials = req.trials();
  e.comparable = true;
  e.final_measurement = true;
  agent::FillFromOutcome(outcome, token, e);
  e.wall_us = env.clock->NowWallMicros();
  e.elapsed_ms = env.elapsed_ms();
  return env.sink->OnEvaluationFinished(e);
}

}  // namespace pkforge::orchestrator
