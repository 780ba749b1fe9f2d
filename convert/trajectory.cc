// LoadTrajectory (convert.h): the one place that turns a stored job into the
// v1::Trajectory both GetTrajectory and the CLI's offline report/show print.
#include <map>
#include <set>

#include "common/status.h"
#include "convert/convert.h"
#include "fmt/format.h"
#include "storage/plateau_loader.h"

namespace pkforge::convert {

absl::StatusOr<v1::Trajectory> LoadTrajectory(storage::TrajectoryStore& store,
                                              std::string_view job_id,
                                              const TrajectoryOptions& options,
                                              int64_t now_wall_us) {
  v1::Trajectory out;
  ASSIGN_OR_RETURN(*out.mutable_job(), LoadJob(store, job_id, now_wall_us));
  ASSIGN_OR_RETURN(storage::JobRecord record, store.GetJob(job_id));
  ASSIGN_OR_RETURN(auto turns, store.ListTurns(job_id));
  for (const auto& t : turns) {
    auto* p = out.add_turns();
    p->set_id(t.id);
    p->set_index(t.index);
    p->set_elapsed_ms(t.elapsed_ms);
    p->set_note(t.note);
  }
  ASSIGN_OR_RETURN(auto calls, store.ListLlmCalls(job_id));
  for (const auto& c : calls) {
    auto* p = out.add_llm_calls();
    p->set_id(c.id);
    p->set_turn_id(c.turn_id);
    p->set_provider(c.provider == "anthropic" ? v1::PROVIDER_ANTHROPIC
                    : c.provider == "openai"  ? v1::PROVIDER_OPENAI
                                              : v1::PROVIDER_UNSPECIFIED);
    p->set_model(c.model);
    if (options.include_llm_text) {
      p->set_prompt(c.prompt);
      p->set_reply(c.reply);
    }
    p->set_prompt_tokens(c.prompt_tokens);
    p->set_completion_tokens(c.completion_tokens);
    p->set_latency_ms(c.latency_ms);
    p->set_cost_usd(c.cost_usd);
    p->set_attempts(c.attempts);
    p->set_error(c.error);
    p->set_elapsed_ms(c.elapsed_ms);
  }
  ASSIGN_OR_RETURN(auto evals, store.ListEvaluations(job_id));
  // active_s as the plateau analysis defines it (plateau_loader.h). Its
  // points are the search evaluations in elapsed order, which is the order
  // ListEvaluations returns them in (the final measurement is not a point).
  const storage::JobTrajectory traj = storage::TrajectoryFromRecords(record, evals, now_wall_us);
  size_t point = 0;
  double last_active_s = 0;
  std::set<std::string> shas;
  double best = 0;
  for (const auto& e : evals) {
    const bool final_measurement = e.role == storage::kRoleFinal;
    auto* p = out.add_evaluations();
    p->set_id(e.id);
    p->set_turn_id(e.turn_id);
    p->set_candidate_sha256(e.candidate_sha256);
    p->set_status(ParseStatus(e.status));
    if (e.speedup) p->set_speedup(*e.speedup);
    p->set_elapsed_ms(e.elapsed_ms);
    if (!final_measurement && point < traj.points.size()) {
      last_active_s = traj.points[point++].active_s;
    }
    // The final measurement waited like the others; it shows the active
    // time of the search at its end.
    p->set_active_s(last_active_s);
    p->mutable_stages()->set_queue_ms(e.queue_ms);
    p->mutable_stages()->set_compile_ms(e.compile_ms);
    p->mutable_stages()->set_run_ms(e.run_ms);
    p->set_executor(e.executor);
    p->set_timed_iters(e.timed_iters);
    p->set_trials(e.trials);
    p->set_other_settings(!e.comparable);
    p->set_final_measurement(final_measurement);
    if (options.include_results && !e.result_json.empty()) {
      RETURN_IF_ERROR(FromStoredJson(e.result_json, p->mutable_result(),
                                     fmt::format("evaluation {}: result_json", e.id)));
    }
    shas.insert(e.candidate_sha256);
    // One axis: the job's own settings, search evaluations only.
    if (e.correct && e.speedup && e.comparable && !final_measurement && *e.speedup > best) {
      best = *e.speedup;
      auto* c = out.add_best_curve();
      c->set_t_s(static_cast<double>(e.elapsed_ms) / 1e3);
      c->set_best_speedup(best);
    }
  }
  for (const auto& sha : shas) {
    auto* c = out.add_candidates();
    c->set_sha256(sha);
    if (options.include_sources) {
      ASSIGN_OR_RETURN(storage::CandidateRecord rec, store.GetCandidate(sha));
      c->set_source(rec.source);
    }
  }
  return out;
}

}  // namespace pkforge::convert
