#include "agent/evaluator.h"

#include <utility>

#include "common/logging.h"
#include "common/status.h"

namespace pkforge::agent {

void FillFromOutcome(absl::StatusOr<EvaluationOutcome>& outcome, const CancelToken& cancel,
                     EvaluationEntry& entry) {
  if (outcome.ok()) {
    entry.result = std::move(outcome->result);
    entry.executor = outcome->executor;
    entry.queue_ms = outcome->queue_ms;
    entry.compile_ms = entry.result.stages().compile_ms();
    entry.run_ms = entry.result.stages().run_ms();
    return;
  }
  // A job that stops while evaluating reports why (cancel reason or wall
  // budget), whatever the evaluator made of it.
  const absl::Status error = cancel.IsCancelled() ? cancel.status() : outcome.status();
  entry.error = absl::Status(error.code(), AsAbsl(RedactSecrets(AsStd(error.message()))));
}

}  // namespace pkforge::agent
