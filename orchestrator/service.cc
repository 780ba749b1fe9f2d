#include "orchestrator/service.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cmath>
#include <deque>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/ids.h"
#include "common/status.h"
#include "fmt/format.h"
#include "kernels/harness/eval_validation.h"
#include "kernels/harness/problem_info.h"
#include "orchestrator/convert.h"
#include "spdlog/spdlog.h"
#include "storage/plateau.h"
#include "storage/plateau_export.h"
#include "storage/plateau_loader.h"

namespace pkforge::orchestrator {

namespace asio = boost::asio;

namespace {

// gRPC carries a status message in a trailer; one past the client's metadata
// limit (8 KiB by default) turns the real error into RESOURCE_EXHAUSTED.
// Requests are validated so no message quotes a long client string; this is
// the backstop for any message that still grew long.
constexpr size_t kMaxStatusMessageBytes = 1024;

absl::Status Bounded(absl::Status s) {
  if (s.message().size() <= kMaxStatusMessageBytes) return s;
  size_t n = kMaxStatusMessageBytes;
  while (n > 0 && (static_cast<unsigned char>(s.message()[n]) & 0xC0) == 0x80) --n;
  return absl::Status(s.code(), absl::StrCat(s.message().substr(0, n), "... (",
                                             s.message().size(), " bytes)"));
}

absl::Status CheckLength(std::string_view field, const std::string& v, size_t max) {
  if (v.size() <= max) return absl::OkStatus();
  return InvalidField(field, fmt::format("{} bytes, longer than {}", v.size(), max));
}

// Filters and reasons: names and labels are at most this long when stored.
constexpr size_t kMaxFilterBytes = 256;
// AnalyzePlateau: the most job ids one request may list (a larger set is
// the selector's: problem, model, label, ...).
constexpr int kMaxPlateauJobIds = 10000;
constexpr size_t kMaxCancelReasonBytes = 512;
// AnalyzePlateau: every curve of the report has at most grid_points points
// per group and per fast_p threshold, so both are bounded.
constexpr int kMaxGridPoints = 2000;
constexpr int kMaxListedValues = 64;
constexpr int kMaxSelectedJobs = 10000;

// Every field bounded and named: the report's size (and this process's
// memory) grows with grid_points, thresholds and jobs.
absl::Status ValidatePlateauRequest(const v1::AnalyzePlateauRequest& req) {
  if (!v1::TimeAxis_IsValid(req.axis())) {
    return InvalidField("axis", fmt::format("unknown value {}", static_cast<int>(req.axis())));
  }
  if (!std::isfinite(req.epsilon()) || req.epsilon() < 0) {
    return InvalidField("epsilon",
                        fmt::format("{} (must be finite, >= 0; 0 = 0.01)", req.epsilon()));
  }
  if (!std::isfinite(req.window_s()) || req.window_s() < 0) {
    return InvalidField("window_s",
                        fmt::format("{} (must be finite, >= 0; 0 = rest of run)", req.window_s()));
  }
  if (req.grid_points() < 0 || req.grid_points() == 1 || req.grid_points() > kMaxGridPoints) {
    return InvalidField("grid_points",
                        fmt::format("{} (2..{}, 0 = 50)", req.grid_points(), kMaxGridPoints));
  }
  auto bounded_list = [](std::string_view field, int n) {
    return n > kMaxListedValues
               ? InvalidField(field, fmt::format("{} values, at most {}", n, kMaxListedValues))
               : absl::OkStatus();
  };
  RETURN_IF_ERROR(bounded_list("group_by", req.group_by_size()));
  RETURN_IF_ERROR(bounded_list("fast_p", req.fast_p_size()));
  RETURN_IF_ERROR(bounded_list("budgets_s", req.budgets_s_size()));
  RETURN_IF_ERROR(bounded_list("fractions", req.fractions_size()));
  for (const auto& k : req.group_by()) RETURN_IF_ERROR(CheckLength("group_by", k, 32));
  const v1::JobSelector& selector = req.jobs();
  if (selector.job_ids_size() > kMaxSelectedJobs) {
    return InvalidField("jobs.job_ids", fmt::format("{} ids, at most {}", selector.job_ids_size(),
                                                    kMaxSelectedJobs));
  }
  RETURN_IF_ERROR(CheckLength("jobs.problem", selector.problem(), kMaxFilterBytes));
  RETURN_IF_ERROR(CheckLength("jobs.model", selector.model(), kMaxFilterBytes));
  RETURN_IF_ERROR(CheckLength("jobs.strategy", selector.strategy(), kMaxFilterBytes));
  RETURN_IF_ERROR(CheckLength("jobs.agent_kind", selector.agent_kind(), kMaxFilterBytes));
  RETURN_IF_ERROR(CheckLength("jobs.label", selector.label(), kMaxFilterBytes));
  return absl::OkStatus();
}

}  // namespace

OrchestratorService::OrchestratorService(Options options, Deps deps)
    : options_(options),
      deps_(deps),
      pool_(static_cast<size_t>(std::max(1, options.threads))),
      timers_work_(asio::make_work_guard(timers_)) {
  timer_thread_ = std::thread([this] { timers_.run(); });
}

OrchestratorService::~OrchestratorService() { Shutdown(); }

void OrchestratorService::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  pool_.join();
  timers_work_.reset();
  timers_.stop();
  if (timer_thread_.joinable()) timer_thread_.join();
}

template <typename Fn>
grpc::ServerUnaryReactor* OrchestratorService::Unary(grpc::CallbackServerContext* ctx, Fn fn) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  if (grpc::Status s = deps_.auth->Check(ctx); !s.ok()) {
    reactor->Finish(s);
    return reactor;
  }
  asio::post(pool_, [reactor, fn = std::move(fn)]() mutable {
    reactor->Finish(ToGrpcStatus(Bounded(fn())));
  });
  return reactor;
}

// ------------------------------------------------------------------ unary

grpc::ServerUnaryReactor* OrchestratorService::SubmitJob(grpc::CallbackServerContext* ctx,
                                                         const v1::SubmitJobRequest* req,
                                                         v1::Job* resp) {
  return Unary(ctx, [this, req, resp]() -> absl::Status {
    ASSIGN_OR_RETURN(*resp, deps_.jobs->Submit(*req));
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* OrchestratorService::GetJob(grpc::CallbackServerContext* ctx,
                                                      const v1::GetJobRequest* req,
                                                      v1::Job* resp) {
  return Unary(ctx, [this, req, resp]() -> absl::Status {
    ASSIGN_OR_RETURN(*resp, deps_.jobs->Get(req->job_id()));
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* OrchestratorService::ListJobs(grpc::CallbackServerContext* ctx,
                                                        const v1::ListJobsRequest* req,
                                                        v1::ListJobsResponse* resp) {
  return Unary(ctx, [this, req, resp]() -> absl::Status {
    if (!v1::JobState_IsValid(req->state())) {
      return InvalidField("state", fmt::format("unknown value {}", static_cast<int>(req->state())));
    }
    RETURN_IF_ERROR(CheckLength("problem", req->problem(), kMaxFilterBytes));
    RETURN_IF_ERROR(CheckLength("model", req->model(), kMaxFilterBytes));
    RETURN_IF_ERROR(CheckLength("label", req->label(), kMaxFilterBytes));
    ASSIGN_OR_RETURN(*resp, deps_.jobs->List(*req));
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* OrchestratorService::CancelJob(grpc::CallbackServerContext* ctx,
                                                         const v1::CancelJobRequest* req,
                                                         v1::Job* resp) {
  return Unary(ctx, [this, req, resp]() -> absl::Status {
    // The reason is stored in the job's events: every ListJobs/GetJob repeats it.
    RETURN_IF_ERROR(CheckLength("reason", req->reason(), kMaxCancelReasonBytes));
    ASSIGN_OR_RETURN(*resp, deps_.jobs->Cancel(req->job_id(), req->reason()));
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* OrchestratorService::ListProblems(grpc::CallbackServerContext* ctx,
                                                            const v1::ListProblemsRequest* req,
                                                            v1::ListProblemsResponse* resp) {
  return Unary(ctx, [this, req, resp]() -> absl::Status {
    // As the executor's ListProblems (kernels/harness/problem_info.h): with
    // world_size the tensors of that configuration (a problem it does not
    // fit is listed without them), the reference only when asked. What the
    // executors offer (backends, world sizes) comes from the executors.
    if (req->world_size() < 0) return InvalidField("world_size", "must be >= 0");
    if (!v1::Dtype_IsValid(req->dtype())) {
      return InvalidField("dtype", fmt::format("unknown value {}", static_cast<int>(req->dtype())));
    }
    if (req->size().size_case() == v1::SizeSpec::kPreset &&
        !kernels::IsSizePreset(req->size().preset())) {
      return InvalidField("size.preset", fmt::format("{} is unknown (tiny, default, large)",
                                                     kernels::ClientText(req->size().preset())));
    }
    if (req->size().dims().values_size() > kernels::kMaxDims) {
      return InvalidField("size.dims", fmt::format("more than {} dimensions", kernels::kMaxDims));
    }
    for (const auto& [name, value] : req->size().dims().values()) {
      RETURN_IF_ERROR(CheckLength("size.dims", name, kernels::kMaxNameBytes));
    }
    for (auto& p : deps_.executors->Problems()) {
      p.clear_inputs();
      p.clear_outputs();
      p.clear_reference_source();
      auto local = kernels::FindProblem(p.name());
      if (local.ok()) {
        auto info = kernels::DescribeProblem(**local, *req);
        if (!info.ok() && req->world_size() > 0) {
          v1::ListProblemsRequest statics = *req;
          statics.set_world_size(0);
          info = kernels::DescribeProblem(**local, statics);
        }
        if (info.ok()) {
          *p.mutable_inputs() = info->inputs();
          *p.mutable_outputs() = info->outputs();
          p.set_reference_source(info->reference_source());
          if (p.statement_markdown().empty()) p.set_statement_markdown(info->statement_markdown());
        }
      }
      *resp->add_problems() = std::move(p);
    }
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* OrchestratorService::ListExecutors(grpc::CallbackServerContext* ctx,
                                                             const v1::ListExecutorsRequest* req,
                                                             v1::ListExecutorsResponse* resp) {
  return Unary(ctx, [this, req, resp]() -> absl::Status {
    (void)req;
    for (auto& e : deps_.executors->List()) *resp->add_executors() = std::move(e);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* OrchestratorService::GetTrajectory(grpc::CallbackServerContext* ctx,
                                                             const v1::GetTrajectoryRequest* req,
                                                             v1::Trajectory* resp) {
  return Unary(ctx, [this, req, resp] { return DoGetTrajectory(*req, resp); });
}

grpc::ServerUnaryReactor* OrchestratorService::AnalyzePlateau(
    grpc::CallbackServerContext* ctx, const v1::AnalyzePlateauRequest* req,
    v1::PlateauReport* resp) {
  return Unary(ctx, [this, req, resp] { return DoAnalyzePlateau(*req, resp); });
}

absl::Status OrchestratorService::DoGetTrajectory(const v1::GetTrajectoryRequest& req,
                                                  v1::Trajectory* resp) {
  // The job as GetJob shows it (live progress while it runs), the rest from
  // the store through the one conversion the CLI's offline commands share.
  ASSIGN_OR_RETURN(v1::Job job, deps_.jobs->Get(req.job_id()));
  convert::TrajectoryOptions options;
  options.include_sources = req.include_sources();
  options.include_llm_text = req.include_llm_text();
  options.include_results = req.include_results();
  ASSIGN_OR_RETURN(*resp, convert::LoadTrajectory(*deps_.store, req.job_id(), options,
                                                  SystemClock::Get()->NowWallMicros()));
  *resp->mutable_job() = std::move(job);
  return absl::OkStatus();
}

absl::Status OrchestratorService::DoAnalyzePlateau(const v1::AnalyzePlateauRequest& req,
                                                   v1::PlateauReport* resp) {
  RETURN_IF_ERROR(ValidatePlateauRequest(req));
  storage::PlateauOptions opts;
  opts.axis = req.axis() == v1::TIME_AXIS_ACTIVE ? storage::TimeAxis::kActive
                                                 : storage::TimeAxis::kElapsed;
  if (req.epsilon() != 0) opts.onset.epsilon = req.epsilon();
  if (req.window_s() > 0) opts.onset.window_s = req.window_s();
  if (req.group_by_size() > 0) {
    opts.group_by.clear();
    for (const auto& k : req.group_by()) {
      ASSIGN_OR_RETURN(auto key, storage::ParseGroupKey(k));
      opts.group_by.push_back(key);
    }
  }
  if (req.fast_p_size() > 0) opts.fast_p.assign(req.fast_p().begin(), req.fast_p().end());
  opts.budgets_s.assign(req.budgets_s().begin(), req.budgets_s().end());
  if (req.fractions_size() > 0) opts.fractions.assign(req.fractions().begin(), req.fractions().end());
  if (req.grid_points() > 0) opts.auto_grid_points = req.grid_points();
  RETURN_IF_ERROR(storage::ValidatePlateauOptions(opts));

  std::vector<storage::JobTrajectory> trajectories;
  const v1::JobSelector& sel = req.jobs();
  if (sel.job_ids_size() > 0) {
    // Every id checked, and none twice, before any job is loaded (a list of
    // 10,000 copies of one id loaded it 10,000 times: API fuzzing, session 16).
    if (sel.job_ids_size() > kMaxPlateauJobIds)
      return absl::InvalidArgumentError(fmt::format(
          "jobs.job_ids: {} ids, more than {}", sel.job_ids_size(), kMaxPlateauJobIds));
    std::set<std::string> seen;
    for (const auto& id : sel.job_ids()) {
      RETURN_IF_ERROR(Annotate(ValidateId(id, "job"), "jobs.job_ids"));
      if (!seen.insert(id).second)
        return absl::InvalidArgumentError(
            fmt::format("jobs.job_ids: job '{}' is listed twice", id));
    }
    for (const auto& id : sel.job_ids()) {
      ASSIGN_OR_RETURN(auto t, storage::LoadJobTrajectory(*deps_.store, id));
      trajectories.push_back(std::move(t));
    }
  } else {
    storage::JobFilter f;
    f.problem = sel.problem();
    f.model = sel.model();
    f.strategy = sel.strategy();
    f.agent_kind = sel.agent_kind();
    f.label = sel.label();
    f.limit = 100000;
    ASSIGN_OR_RETURN(trajectories, storage::LoadJobTrajectories(*deps_.store, f));
  }
  if (trajectories.empty()) return absl::NotFoundError("no jobs match the selector");
  ASSIGN_OR_RETURN(storage::PlateauReport report, storage::BuildPlateauReport(trajectories, opts));
  *resp = PlateauToProto(report, req.include_curves());
  if (req.include_svg()) {
    ASSIGN_OR_RETURN(std::string svg, storage::RenderPlateauSvg(report));
    resp->set_svg(std::move(svg));
  }
  return absl::OkStatus();
}

// -------------------------------------------------------------- WatchJob

// The state of one WatchJob stream, shared by the reactor (gRPC threads), the
// EventLog (appending threads), the pool (database reads) and the heartbeat
// timer. Only the thread that set writing_ (or finished_) under mu_ touches
// the reactor, outside mu_; the reactor lives until OnDone, which gRPC calls
// only after our Finish, after which no thread touches it.
class OrchestratorService::WatchCore final
    : public EventLog::Listener,
      public std::enable_shared_from_this<OrchestratorService::WatchCore> {
 public:
  WatchCore(OrchestratorService* svc, grpc::ServerWriteReactor<v1::WatchJobResponse>* reactor,
            v1::WatchJobRequest request)
      : svc_(svc), reactor_(reactor), req_(std::move(request)), timer_(svc->timers_) {}

  void Start() {
    svc_->deps_.metrics->WatchStreamOpened();
    auto self = shared_from_this();
    asio::post(svc_->pool_, [self] { self->Begin(); });
  }

  void OnEvent(const v1::Event& event) override {
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      if (static_cast<int>(live_.size()) >= svc_->options_.watch_buffer_events) {
        // Too far behind: forget the live buffer, catch up from SQLite.
        live_.clear();
        db_caught_up_ = false;
      } else {
        live_.push_back(event);
      }
    }
    Pump();
  }

  void OnWriteDone(bool ok) {
    {
      std::lock_guard lock(mu_);
      writing_ = false;
      if (!ok) cancelled_ = true;  // the client went away
    }
    Pump();
  }

  void OnCancel() {
    {
      std::lock_guard lock(mu_);
      cancelled_ = true;
    }
    Pump();
  }

 private:
  void Begin() {
    grpc::Status error;
    if (absl::Status s = Annotate(ValidateId(req_.job_id(), "job"), "job_id"); !s.ok()) {
      error = ToGrpcStatus(s);
    } else if (req_.after_seq() < 0) {
      error = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "after_seq must be >= 0");
    } else {
      auto record = svc_->deps_.store->GetJob(req_.job_id());
      if (!record.ok()) {
        error = ToGrpcStatus(record.status());
      } else {
        // Subscribe before the first database read: see event_log.h.
        if (!req_.no_follow()) {
          svc_->deps_.log->Subscribe(req_.job_id(), shared_from_this());
          subscribed_ = true;
        }
        auto last = svc_->deps_.store->LastEventSeq(req_.job_id());
        if (!last.ok()) {
          error = ToGrpcStatus(last.status());
        } else if (req_.after_seq() > *last) {
          // Seqs only grow and every event is committed before any watcher
          // sees it, so no client has seen this seq: following from there
          // would wait forever, also after the job ended (issue #15).
          error = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                               fmt::format("after_seq: {} is beyond the job's last event ({})",
                                           req_.after_seq(), *last));
        } else {
          std::lock_guard lock(mu_);
          target_seq_ = *last;
          terminal_at_start_ = storage::IsTerminal(record->state);
          state_ = ToProtoState(record->state);
          cursor_ = req_.after_seq();
        }
      }
    }
    {
      std::lock_guard lock(mu_);
      starting_ = false;
      if (!error.ok()) pending_error_ = error;
    }
    // The timer belongs to the timer thread: arm it there.
    std::weak_ptr<WatchCore> weak = shared_from_this();
    asio::post(svc_->timers_, [weak] {
      if (auto self = weak.lock()) self->ScheduleHeartbeat();
    });
    Pump();
  }

  // Runs on the timer thread only.
  void ScheduleHeartbeat() {
    const auto interval = std::chrono::microseconds(
        static_cast<int64_t>(svc_->options_.heartbeat_interval_s * 1e6));
    std::weak_ptr<WatchCore> weak = shared_from_this();
    timer_.expires_after(interval);
    timer_.async_wait([weak, interval](const boost::system::error_code& ec) {
      if (ec) return;
      auto self = weak.lock();
      if (!self) return;
      {
        std::lock_guard lock(self->mu_);
        if (self->finished_) return;
        const auto idle = std::chrono::steady_clock::now() - self->last_write_;
        if (idle >= interval * 9 / 10) self->heartbeat_due_ = true;
      }
      self->ScheduleHeartbeat();
      self->Pump();
    });
  }

  static bool IsTerminalEvent(const v1::Event& e) {
    return e.has_state_changed() && IsTerminal(e.state_changed().state());
  }

  // Decides the next step under mu_ and performs it outside.
  void Pump() {
    enum { kNone, kWrite, kFinish, kRead } action = kNone;
    grpc::Status finish_status;
    int64_t read_after = 0;
    {
      std::lock_guard lock(mu_);
      if (finished_ || writing_ || starting_) return;
      while (!replay_.empty() && replay_.front().seq() <= cursor_) replay_.pop_front();
      while (!live_.empty() && live_.front().seq() <= cursor_) live_.pop_front();
      std::deque<v1::Event>* source = nullptr;
      if (!replay_.empty() && replay_.front().seq() == cursor_ + 1) {
        source = &replay_;
      } else if (!live_.empty() && live_.front().seq() == cursor_ + 1) {
        source = &live_;
      }
      if (cancelled_) {
        action = kFinish;
        finish_status = grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled");
      } else if (!pending_error_.ok()) {
        action = kFinish;
        finish_status = pending_error_;
      } else if (req_.no_follow() && cursor_ >= target_seq_) {
        action = kFinish;
      } else if (source != nullptr) {
        response_.Clear();
        *response_.mutable_event() = std::move(source->front());
        source->pop_front();
        cursor_ = response_.event().seq();
        if (response_.event().has_state_changed()) state_ = response_.event().state_changed().state();
        if (IsTerminalEvent(response_.event())) terminal_sent_ = true;
        action = kWrite;
      } else if (terminal_sent_) {
        action = kFinish;
      } else if (terminal_at_start_ && db_caught_up_ && cursor_ >= target_seq_) {
        action = kFinish;  // a finished job without a terminal event (older writer)
      } else if (!db_caught_up_ || !live_.empty()) {
        // Not read yet, fell behind, or a gap before the first live event.
        if (!reading_) {
          reading_ = true;
          read_after = cursor_;
          action = kRead;
        }
      } else if (heartbeat_due_) {
        heartbeat_due_ = false;
        response_.Clear();
        auto* hb = response_.mutable_heartbeat();
        hb->set_wall_us(SystemClock::Get()->NowWallMicros());
        hb->set_last_seq(cursor_);
        hb->set_state(state_);
        action = kWrite;
      }
      if (action == kWrite) {
        writing_ = true;
        last_write_ = std::chrono::steady_clock::now();
      }
      if (action == kFinish) finished_ = true;
    }
    switch (action) {
      case kWrite:
        reactor_->StartWrite(&response_);
        break;
      case kFinish: {
        if (subscribed_) svc_->deps_.log->Unsubscribe(req_.job_id(), this);
        asio::post(svc_->timers_, [self = shared_from_this()] { self->timer_.cancel(); });
        svc_->deps_.metrics->WatchStreamClosed();
        reactor_->Finish(finish_status);
        break;
      }
      case kRead: {
        auto self = shared_from_this();
        asio::post(svc_->pool_, [self, read_after] { self->Read(read_after); });
        break;
      }
      case kNone:
        break;
    }
  }

  void Read(int64_t after) {
    const int batch = svc_->options_.watch_read_batch;
    auto records = svc_->deps_.store->ReadEvents(req_.job_id(), after, batch);
    {
      std::lock_guard lock(mu_);
      reading_ = false;
      if (!records.ok()) {
        pending_error_ = ToGrpcStatus(records.status());
      } else {
        replay_.clear();
        for (const auto& r : *records) {
          if (r.seq <= cursor_) continue;
          auto ev = EventFromRecord(r);
          if (!ev.ok()) {
            pending_error_ = ToGrpcStatus(ev.status());
            break;
          }
          replay_.push_back(std::move(*ev));
        }
        db_caught_up_ = static_cast<int>(records->size()) < batch;
      }
    }
    Pump();
  }

  OrchestratorService* const svc_;
  grpc::ServerWriteReactor<v1::WatchJobResponse>* const reactor_;
  const v1::WatchJobRequest req_;
  asio::steady_timer timer_;  // used on the timer thread only
  bool subscribed_ = false;   // set in Begin before anything else can read it

  std::mutex mu_;
  bool starting_ = true;
  bool writing_ = false;
  bool finished_ = false;
  bool cancelled_ = false;
  bool reading_ = false;
  bool db_caught_up_ = false;
  bool heartbeat_due_ = false;
  bool terminal_sent_ = false;
  bool terminal_at_start_ = false;
  grpc::Status pending_error_;
  int64_t cursor_ = 0;      // seq of the last event written
  int64_t target_seq_ = 0;  // last seq when the watch began (no_follow stops there)
  v1::JobState state_ = v1::JOB_STATE_UNSPECIFIED;
  std::deque<v1::Event> replay_;  // from SQLite
  std::deque<v1::Event> live_;    // from the EventLog
  v1::WatchJobResponse response_;  // the message being written
  std::chrono::steady_clock::time_point last_write_ = std::chrono::steady_clock::now();
};

class OrchestratorService::WatchReactor final
    : public grpc::ServerWriteReactor<v1::WatchJobResponse> {
 public:
  WatchReactor(OrchestratorService* svc, const v1::WatchJobRequest& req)
      : core_(std::make_shared<WatchCore>(svc, this, req)) {
    core_->Start();
  }
  void OnWriteDone(bool ok) override { core_->OnWriteDone(ok); }
  void OnCancel() override { core_->OnCancel(); }
  void OnDone() override { delete this; }

 private:
  std::shared_ptr<WatchCore> core_;
};

grpc::ServerWriteReactor<v1::WatchJobResponse>* OrchestratorService::WatchJob(
    grpc::CallbackServerContext* ctx, const v1::WatchJobRequest* req) {
  if (grpc::Status s = deps_.auth->Check(ctx); !s.ok()) {
    class Denied final : public grpc::ServerWriteReactor<v1::WatchJobResponse> {
     public:
      explicit Denied(const grpc::Status& s) { Finish(s); }
      void OnDone() override { delete this; }
    };
    return new Denied(s);
  }
  return new WatchReactor(this, *req);
}

}  // namespace pkforge::orchestrator
