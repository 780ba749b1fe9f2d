#include "executor/service.h"


#include <deque>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "common/ids.h"
#include "common/log_text.h"
#include "kernels/harness/problem_info.h"
#include "spdlog/spdlog.h"

namespace pkforge::executor {

// Named (not in an anonymous namespace): Call, a member of an exported
// class, points at it.
class EvalReactor;

struct ExecutorService::Call {
  std::string id;
  Cancellation cancel;
  std::mutex mu;
  EvalReactor* reactor = nullptr;  // null after OnDone
  std::deque<v1::EvaluateProgress> pending;
  bool writing = false;
  bool finish_requested = false;
  bool finished = false;
  bool client_gone = false;
  grpc::Status final_status;

  void Send(const v1::EvaluateProgress& msg);
  void Finish(const grpc::Status& status);
  void Pump(std::unique_lock<std::mutex>& lock);
};

class EvalReactor final : public grpc::ServerWriteReactor<v1::EvaluateProgress> {
 public:
  explicit EvalReactor(std::shared_ptr<ExecutorService::Call> call) : call_(std::move(call)) {}
  // For calls rejected before any work started.
  static EvalReactor* Rejected(const grpc::Status& status) {
    auto* r = new EvalReactor(nullptr);
    r->Finish(status);
    return r;
  }
  void OnWriteDone(bool ok) override {
    std::unique_lock lock(call_->mu);
    call_->writing = false;
    if (!ok) {
      // The client is gone: stop writing, cancel the evaluation; Finish()
      // still comes when the evaluation thread returns.
      call_->client_gone = true;
      call_->pending.clear();
      lock.unlock();
      call_->cancel.Cancel();
      lock.lock();
    }
    call_->Pump(lock);
  }
  void OnCancel() override {
    if (call_) call_->cancel.Cancel();
  }
  void OnDone() override {
    if (call_) {
      std::lock_guard lock(call_->mu);
      call_->reactor = nullptr;
    }
    delete this;
  }
  v1::EvaluateProgress current;  // the message being written (must outlive the write)

 private:
  std::shared_ptr<ExecutorService::Call> call_;
};

namespace {

std::string ClientKey(const grpc::CallbackServerContext* context, const v1::EvaluateRequest& r) {
  // The orchestrator tags requests "job_<id> turn N": one fairness group per
  // job. Untagged callers are grouped by their address (without the port).
  if (!r.client_tag().empty()) return r.client_tag().substr(0, r.client_tag().find(' '));
  std::string peer = context->peer();
  if (auto colon = peer.rfind(':'); colon != std::string::npos && peer.rfind("ipv", 0) == 0)
    peer.resize(colon);
  return peer;
}

}  // namespace

void ExecutorService::Call::Send(const v1::EvaluateProgress& msg) {
  std::unique_lock lock(mu);
  if (client_gone || finish_requested) return;
  pending.push_back(msg);
  Pump(lock);
}

void ExecutorService::Call::Finish(const grpc::Status& status) {
  std::unique_lock lock(mu);
  if (finish_requested) return;
  finish_requested = true;
  final_status = status;
  Pump(lock);
}

// Decides under the lock, acts outside it (a reaction may run on another
// thread and take the lock). The reactor cannot go away in between: OnDone
// only follows Finish, which only Pump calls, once, when no write is out.
void ExecutorService::Call::Pump(std::unique_lock<std::mutex>& lock) {
  if (reactor == nullptr || writing || finished) return;
  EvalReactor* r = reactor;
  if (!pending.empty()) {
    r->current = std::move(pending.front());
    pending.pop_front();
    writing = true;
    lock.unlock();
    r->StartWrite(&r->current);
    lock.lock();
    return;
  }
  if (finish_requested) {
    finished = true;
    const grpc::Status s = final_status;
    lock.unlock();
    r->Finish(s);
    lock.lock();
  }
}

ExecutorService::ExecutorService(const ExecutorConfig* config, Pipeline* pipeline, Devices* devices,
                                 DeviceQueue* queue, Compiler* compiler, Metrics* metrics,
                                 std::string token)
    : config_(config),
      pipeline_(pipeline),
      devices_(devices),
      queue_(queue),
      compiler_(compiler),
      metrics_(metrics),
      token_(token) {
  metrics_->SetCallback("pkforge_executor_in_flight", [this] { return double(in_flight()); });
}

ExecutorService::~ExecutorService() {
  CancelAll();
  WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(60));
}

grpc::Status ExecutorService::CheckAuth(const grpc::CallbackServerContext* context) const {
  if (token_.empty()) return grpc::Status::OK;
  const auto& md = context->client_metadata();
  auto it = md.find("authorization");
  if (it == md.end())
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "missing bearer token (metadata 'authorization: Bearer <token>')");
  if (!token_.Matches(std::string_view(it->second.data(), it->second.size())))
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid bearer token");
  return grpc::Status::OK;
}

grpc::ServerWriteReactor<v1::EvaluateProgress>* ExecutorService::Evaluate(
    grpc::CallbackServerContext* context, const v1::EvaluateRequest* request) {
  if (grpc::Status auth = CheckAuth(context); !auth.ok()) {
    metrics_->Add("pkforge_executor_rejected_total", 1, "reason=\"unauthenticated\"");
    return EvalReactor::Rejected(auth);
  }
  if (shutting_down_.load())
    return EvalReactor::Rejected(grpc::Status(grpc::StatusCode::UNAVAILABLE, "executor shutting down"));
  if (absl::Status valid = pipeline_->Validate(*request); !valid.ok()) {
    metrics_->Add("pkforge_executor_rejected_total", 1, "reason=\"invalid\"");
    return EvalReactor::Rejected(ToGrpcStatus(valid));
  }
  auto call = std::make_shared<Call>();
  call->id = NewId("eval");
  {
    absl::MutexLock lock(&mu_);
    if (static_cast<int>(calls_.size()) >= config_->max_in_flight)
      return EvalReactor::Rejected(grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          absl::StrCat("executor busy: ", calls_.size(), " evaluations in flight (max_in_flight)")));
    calls_.insert(call);
  }
  auto* reactor = new EvalReactor(call);
  call->reactor = reactor;
  const std::string key = ClientKey(context, *request);
  // Client text is escaped in the log (log_text.h), even though Validate
  // already refused control characters in the tag.
  spdlog::info("evaluation {} accepted: {} world_size={} tag='{}' from {}", call->id,
               LogSafe(request->problem()), request->world_size(), LogSafe(request->client_tag()),
               LogSafe(context->peer()));
  std::thread([this, call, req = *request, key] {
    auto result = pipeline_->Run(req, call->id, key,
                                 [call](const v1::EvaluateProgress& m) { call->Send(m); },
                                 &call->cancel);
    if (result.ok()) {
      v1::EvaluateProgress last;
      last.set_evaluation_id(call->id);
      last.set_elapsed_ms(result->stages().total_ms());
      *last.mutable_result() = *std::move(result);
      call->Send(last);
      call->Finish(grpc::Status::OK);
    } else if (shutting_down_.load() && result.status().code() == absl::StatusCode::kCancelled) {
      call->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                "executor shutting down: the evaluation was stopped"));
    } else {
      if (result.status().code() != absl::StatusCode::kCancelled)
        spdlog::error("evaluation {} failed: {}", call->id, result.status().ToString());
      call->Finish(ToGrpcStatus(result.status()));
    }
    absl::MutexLock lock(&mu_);
    calls_.erase(call);
    idle_cv_.SignalAll();
  }).detach();
  return reactor;
}

grpc::ServerUnaryReactor* ExecutorService::DescribeDevice(grpc::CallbackServerContext* context,
                                                          const v1::DescribeDeviceRequest* request,
                                                          v1::DeviceInfo* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (grpc::Status auth = CheckAuth(context); !auth.ok()) {
    reactor->Finish(auth);
    return reactor;
  }
  if (!request->remeasure()) {
    *response = devices_->Describe(*queue_);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  // Measuring takes seconds and the GPUs: never on a reactor thread.
  {
    absl::MutexLock lock(&mu_);
    ++detached_threads_;
  }
  std::thread([this, reactor, response] {
    absl::Status s = devices_->Remeasure();
    *response = devices_->Describe(*queue_);
    reactor->Finish(ToGrpcStatus(s));
    absl::MutexLock lock(&mu_);
    --detached_threads_;
    idle_cv_.SignalAll();
  }).detach();
  return reactor;
}

grpc::ServerUnaryReactor* ExecutorService::ListProblems(grpc::CallbackServerContext* context,
                                                        const v1::ListProblemsRequest* request,
                                                        v1::ListProblemsResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (grpc::Status auth = CheckAuth(context); !auth.ok()) {
    reactor->Finish(auth);
    return reactor;
  }
  auto listed = kernels::DescribeProblems(*request);
  if (!listed.ok()) {
    reactor->Finish(ToGrpcStatus(listed.status()));
    return reactor;
  }
  *response = *std::move(listed);
  if (!devices_->cuda_available()) {
    // Only the backends this executor can run.
    for (auto& p : *response->mutable_problems()) {
      p.clear_backends();
      p.add_backends(v1::BACKEND_HOST);
    }
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

void ExecutorService::BeginShutdown() { shutting_down_.store(true); }

bool ExecutorService::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  absl::MutexLock lock(&mu_);
  while (!calls_.empty() || detached_threads_ != 0) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= left.zero()) return false;
    idle_cv_.WaitWithTimeout(&mu_, absl::FromChrono(left));
  }
  return true;
}

void ExecutorService::CancelAll() {
  std::vector<std::shared_ptr<Call>> calls;
  {
    absl::MutexLock lock(&mu_);
    calls.assign(calls_.begin(), calls_.end());
  }
  for (auto& c : calls) c->cancel.Cancel();
  queue_->Poke();
}

int ExecutorService::in_flight() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(calls_.size());
}

}  // namespace pkforge::executor
