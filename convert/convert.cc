#include "convert/convert.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "common/status.h"
#include "fmt/format.h"

namespace pkforge::convert {

std::string AgentKindName(v1::AgentKind k) {
  switch (k) {
    case v1::AGENT_KIND_LLM:
      return "llm";
    case v1::AGENT_KIND_SEARCH:
      return "search";
    case v1::AGENT_KIND_REPLAY:
      return "replay";
    default:
      return "unspecified";
  }
}

std::string StrategyName(const v1::AgentConfig& a) {
  switch (a.kind()) {
    case v1::AGENT_KIND_SEARCH:
      return a.search_algorithm().empty() ? "successive_halving" : a.search_algorithm();
    case v1::AGENT_KIND_REPLAY:
      return "replay";
    default:
      break;
  }
  switch (a.strategy().kind()) {
    case v1::STRATEGY_BEST_OF_N:
      return "best_of_n";
    case v1::STRATEGY_TREE:
      return "tree";
    default:
      return "sequential";
  }
}

v1::JobState ToProtoState(storage::JobState s) {
  switch (s) {
    case storage::JobState::kQueued:
      return v1::JOB_STATE_QUEUED;
    case storage::JobState::kRunning:
      return v1::JOB_STATE_RUNNING;
    case storage::JobState::kSucceeded:
      return v1::JOB_STATE_SUCCEEDED;
    case storage::JobState::kFailed:
      return v1::JOB_STATE_FAILED;
    case storage::JobState::kCancelled:
      return v1::JOB_STATE_CANCELLED;
    case storage::JobState::kInterrupted:
      return v1::JOB_STATE_INTERRUPTED;
  }
  return v1::JOB_STATE_UNSPECIFIED;
}

storage::JobState FromProtoState(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_RUNNING:
      return storage::JobState::kRunning;
    case v1::JOB_STATE_SUCCEEDED:
      return storage::JobState::kSucceeded;
    case v1::JOB_STATE_FAILED:
      return storage::JobState::kFailed;
    case v1::JOB_STATE_CANCELLED:
      return storage::JobState::kCancelled;
    case v1::JOB_STATE_INTERRUPTED:
      return storage::JobState::kInterrupted;
    default:
      return storage::JobState::kQueued;
  }
}

bool IsTerminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED ||
         s == v1::JOB_STATE_CANCELLED || s == v1::JOB_STATE_INTERRUPTED;
}

std::string_view ProtoStateName(v1::JobState s) {
  if (s == v1::JOB_STATE_UNSPECIFIED) return "unspecified";
  return storage::JobStateName(FromProtoState(s));
}

absl::StatusOr<std::string> ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = false;
  auto s = google::protobuf::util::MessageToJsonString(m, &out, opts);
  if (!s.ok()) return absl::InternalError(fmt::format("to JSON: {}", s.ToString()));
  return out;
}

absl::Status FromJson(std::string_view json, google::protobuf::Message* m) {
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = false;
  auto s = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), m, opts);
  if (!s.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", m->GetDescriptor()->name(), s.ToString()));
  }
  return absl::OkStatus();
}

absl::Status FromStoredJson(std::string_view json, google::protobuf::Message* m,
                            std::string_view what) {
  google::protobuf::util::JsonParseOptions opts;
  // Rows written by a newer binary may carry fields this one does not know;
  // the rest is still worth showing.
  opts.ignore_unknown_fields = true;
  auto s = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), m, opts);
  if (!s.ok()) return absl::DataLossError(fmt::format("{}: {}", what, s.ToString()));
  return absl::OkStatus();
}

absl::StatusOr<v1::Job> JobFromRecord(const storage::JobRecord& job,
                                      const storage::JobStats& stats, int64_t now_wall_us) {
  v1::Job out;
  out.set_id(job.id);
  RETURN_IF_ERROR(FromStoredJson(job.spec_json, out.mutable_spec(),
                                 fmt::format("job {}: spec_json", job.id)));
  out.set_state(ToProtoState(job.state));
  out.set_created_wall_us(job.created_wall_us);
  out.set_started_wall_us(job.started_wall_us);
  out.set_finished_wall_us(job.finished_wall_us);
  if (job.started_wall_us > 0) {
    const int64_t end = job.finished_wall_us > 0 ? job.finished_wall_us : now_wall_us;
    out.set_elapsed_ms(std::max<int64_t>(0, (end - job.started_wall_us) / 1000));
  }
  out.set_turns(stats.turns);
  out.set_evaluations(stats.evaluations);
  out.set_tokens(stats.tokens);
  out.set_cost_usd(stats.cost_usd);
  if (job.best_speedup) out.set_best_speedup(*job.best_speedup);
  out.set_best_evaluation_id(job.best_evaluation_id);
  out.set_best_candidate_sha256(stats.best_candidate_sha256);
  out.set_best_roofline_fraction(stats.best_roofline_fraction.value_or(0));
  out.set_last_status(ParseStatus(stats.last_evaluation_status));
  out.set_error(job.error);
  out.set_other_settings_evaluations(stats.other_evaluations);
  if (stats.other_best_speedup) out.set_other_settings_best_speedup(*stats.other_best_speedup);
  out.set_final_evaluation_id(stats.final_evaluation_id);
  out.set_final_status(ParseStatus(stats.final_status));
  out.set_final_candidate_sha256(stats.final_candidate_sha256);
  if (stats.final_speedup) out.set_final_speedup(*stats.final_speedup);
  out.set_final_roofline_fraction(stats.final_roofline_fraction.value_or(0));
  return out;
}

absl::StatusOr<v1::Job> LoadJob(storage::TrajectoryStore& store, std::string_view job_id,
                                int64_t now_wall_us) {
  ASSIGN_OR_RETURN(storage::JobRecord record, store.GetJob(job_id));
  ASSIGN_OR_RETURN(storage::JobStats stats, store.GetJobStats(job_id));
  ASSIGN_OR_RETURN(v1::Job job, JobFromRecord(record, stats, now_wall_us));
  // The stop reason is the reason of the terminal state event.
  if (storage::IsTerminal(record.state) && stats.last_event_seq > 0) {
    auto last = store.ReadEvents(job_id, stats.last_event_seq - 1, 1);
    if (last.ok() && !last->empty() && (*last)[0].type == "state_changed") {
      v1::Event::JobStateChanged changed;
      if (FromStoredJson((*last)[0].payload_json, &changed, "state event").ok()) {
        job.set_stop_reason(changed.reason());
      }
    }
  }
  return job;
}

storage::JobRecord JobRecordFromProto(const v1::Job& j) {
  storage::JobRecord r;
  r.id = j.id();
  r.problem = j.spec().problem();
  r.backend = BackendName(j.spec().backend());
  r.world_size = j.spec().world_size();
  r.agent_kind = AgentKindName(j.spec().agent().kind());
  r.model = j.spec().agent().kind() == v1::AGENT_KIND_LLM ? j.spec().agent().llm().model() : "";
  r.strategy = StrategyName(j.spec().agent());
  r.label = j.spec().label();
  r.state = FromProtoState(j.state());
  r.created_wall_us = j.created_wall_us();
  r.started_wall_us = j.started_wall_us();
  r.finished_wall_us = j.finished_wall_us();
  r.budget_wall_s = j.spec().budget().wall_seconds();
  r.error = j.error();
  if (j.has_best_speedup()) r.best_speedup = j.best_speedup();
  r.best_evaluation_id = j.best_evaluation_id();
  return r;
}

namespace {

const google::protobuf::Message* PayloadOf(const v1::Event& e, std::string* type) {
  switch (e.payload_case()) {
    case v1::Event::kStateChanged:
      *type = "state_changed";
      return &e.state_changed();
    case v1::Event::kTurnStarted:
      *type = "turn_started";
      return &e.turn_started();
    case v1::Event::kLlmCall:
      *type = "llm_call";
      return &e.llm_call();
    case v1::Event::kEvaluationStarted:
      *type = "evaluation_started";
      return &e.evaluation_started();
    case v1::Event::kEvaluationFinished:
      *type = "evaluation_finished";
      return &e.evaluation_finished();
    case v1::Event::kBestImproved:
      *type = "best_improved";
      return &e.best_improved();
    case v1::Event::kLog:
      *type = "log";
      return &e.log();
    case v1::Event::kEvaluationAborted:
      *type = "evaluation_aborted";
      return &e.evaluation_aborted();
    case v1::Event::kWaitingForExecutor:
      *type = "waiting_for_executor";
      return &e.waiting_for_executor();
    default:
      return nullptr;
  }
}

}  // namespace

absl::StatusOr<storage::EventRecord> EventToRecord(const v1::Event& event) {
  storage::EventRecord r;
  const google::protobuf::Message* payload = PayloadOf(event, &r.type);
  if (payload == nullptr) return absl::InvalidArgumentError("event without payload");
  r.job_id = event.job_id();
  r.wall_us = event.wall_us();
  r.elapsed_ms = event.elapsed_ms();
  ASSIGN_OR_RETURN(r.payload_json, ToJson(*payload));
  return r;
}

absl::StatusOr<v1::Event> EventFromRecord(const storage::EventRecord& r) {
  v1::Event e;
  e.set_job_id(r.job_id);
  e.set_seq(r.seq);
  e.set_wall_us(r.wall_us);
  e.set_elapsed_ms(r.elapsed_ms);
  google::protobuf::Message* payload = nullptr;
  if (r.type == "state_changed") {
    payload = e.mutable_state_changed();
  } else if (r.type == "turn_started") {
    payload = e.mutable_turn_started();
  } else if (r.type == "llm_call") {
    payload = e.mutable_llm_call();
  } else if (r.type == "evaluation_started") {
    payload = e.mutable_evaluation_started();
  } else if (r.type == "evaluation_finished") {
    payload = e.mutable_evaluation_finished();
  } else if (r.type == "best_improved") {
    payload = e.mutable_best_improved();
  } else if (r.type == "evaluation_aborted") {
    payload = e.mutable_evaluation_aborted();
  } else if (r.type == "waiting_for_executor") {
    payload = e.mutable_waiting_for_executor();
  } else {
    // "log" and any type an older or newer writer used: shown as a log line so
    // a replay never silently drops a stored event.
    auto* log = e.mutable_log();
    if (r.type == "log") {
      payload = log;
    } else {
      log->set_level("info");
      log->set_text(fmt::format("{}: {}", r.type, r.payload_json));
      return e;
    }
  }
  RETURN_IF_ERROR(Annotate(FromJson(r.payload_json, payload),
                           fmt::format("event {} #{}", r.job_id, r.seq)));
  return e;
}

namespace {

void SetOpt(const std::optional<double>& v, std::function<void(double)> set) {
  if (v && std::isfinite(*v)) set(*v);
}

void AddCurve(const storage::BestSoFarCurve& curve,
              google::protobuf::RepeatedPtrField<v1::CurvePoint>* out) {
  for (const auto& s : curve.steps) {
    auto* p = out->Add();
    p->set_t_s(s.t);
    p->set_best_speedup(s.best);
  }
}

}  // namespace

v1::PlateauReport PlateauToProto(const storage::PlateauReport& report, bool include_curves) {
  v1::PlateauReport out;
  out.set_axis(report.options.axis == storage::TimeAxis::kActive ? v1::TIME_AXIS_ACTIVE
                                                                 : v1::TIME_AXIS_ELAPSED);
  out.set_epsilon(report.options.onset.epsilon);
  out.set_window_s(report.options.onset.window_s.value_or(0));
  for (const auto& j : report.jobs) {
    auto* p = out.add_jobs();
    p->set_job_id(j.job_id);
    p->set_problem(j.problem);
    p->set_model(j.model);
    p->set_strategy(j.strategy);
    p->set_agent_kind(j.agent_kind);
    p->set_label(j.label);
    p->set_duration_s(j.curve.end_s);
    p->set_evaluations(j.curve.evaluations);
    SetOpt(j.first_correct_s, [p](double v) { p->set_first_correct_s(v); });
    SetOpt(j.final_best, [p](double v) { p->set_final_best(v); });
    for (size_t i = 0; i < j.time_to_fraction_s.size() && i < report.options.fractions.size();
         ++i) {
      if (!j.time_to_fraction_s[i]) continue;
      auto* f = p->add_time_to_fraction();
      f->set_fraction(report.options.fractions[i]);
      f->set_t_s(*j.time_to_fraction_s[i]);
    }
    SetOpt(j.plateau_onset_s, [p](double v) { p->set_plateau_onset_s(v); });
    SetOpt(j.best_at_onset, [p](double v) { p->set_best_at_onset(v); });
    SetOpt(j.best_multi_size_score, [p](double v) { p->set_best_multi_size_score(v); });
    if (include_curves) AddCurve(j.curve, p->mutable_curve());
    p->set_other_settings_evaluations(j.curve.other_evaluations);
    SetOpt(j.curve.other_best, [p](double v) { p->set_other_settings_best(v); });
  }
  std::vector<std::string> key_names;
  for (auto k : report.options.group_by) key_names.emplace_back(storage::GroupKeyName(k));
  for (const auto& g : report.groups) {
    auto* p = out.add_groups();
    for (size_t i = 0; i < g.key_values.size() && i < key_names.size(); ++i) {
      (*p->mutable_key())[key_names[i]] = g.key_values[i];
    }
    p->set_jobs(g.jobs);
    p->set_share_correct(g.share_correct);
    SetOpt(g.median_final_best, [p](double v) { p->set_median_final_best(v); });
    SetOpt(g.median_plateau_onset_s, [p](double v) { p->set_median_onset_s(v); });
    SetOpt(g.median_first_correct_s, [p](double v) { p->set_median_first_correct_s(v); });
    if (include_curves) {
      for (const auto& b : g.curve) {
        auto* bp = p->add_band();
        bp->set_t_s(b.t);
        bp->set_p10(b.p10);
        bp->set_median(b.median);
        bp->set_p90(b.p90);
      }
    }
  }
  for (const auto& f : report.fast_p) {
    auto* p = out.add_fast_p();
    p->set_p(f.p);
    for (const auto& pt : f.points) {
      auto* c = p->add_share();
      c->set_t_s(pt.t);
      c->set_best_speedup(pt.share);
    }
  }
  for (const auto& t : report.truncation) {
    auto* p = out.add_truncation();
    p->set_budget_s(t.budget_s);
    p->set_jobs(t.jobs);
    p->set_share_correct(t.share_correct);
    SetOpt(t.median_best, [p](double v) { p->set_median_best(v); });
    SetOpt(t.mean_best, [p](double v) { p->set_mean_best(v); });
    SetOpt(t.geomean_best, [p](double v) { p->set_geomean_best(v); });
    SetOpt(t.p10_best, [p](double v) { p->set_p10_best(v); });
    SetOpt(t.p90_best, [p](double v) { p->set_p90_best(v); });
  }
  return out;
}

}  // namespace pkforge::convert
