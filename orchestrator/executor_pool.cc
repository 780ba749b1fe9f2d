#include "orchestrator/executor_pool.h"

#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/byte_buffer.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <fstream>
#include <future>
#include <sstream>

#include "absl/time/time.h"
#include "common/files.h"
#include "common/net.h"
#include "common/grpc_status.h"
#include "common/logging.h"
#include "common/status.h"
#include "fmt/format.h"
#include "orchestrator/convert.h"
#include "rpc/credentials.h"
#include "spdlog/spdlog.h"

namespace pkforge::orchestrator {

struct ExecutorPool::Executor {
  ExecutorEndpoint endpoint;  // address: the one dialled (a dns target's resolved HOST:PORT)
  std::string target;         // the target it came from (== address unless dns)
  std::string token;  // "" = none
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Executor::Stub> stub;
  std::unique_ptr<grpc::GenericStub> generic;

  // Guarded by ExecutorPool::mu_.
  bool healthy = false;
  bool probed = false;
  std::string last_error = "not checked yet";
  int64_t last_seen_wall_us = 0;
  int32_t in_flight = 0;
  int64_t completed = 0;
  v1::DeviceInfo device;
  std::vector<v1::ProblemInfo> problems;
  bool draining = false;  // no longer listed: no new evaluations, removed when idle
};

struct ExecutorPool::Wanted {
  ExecutorEndpoint endpoint;
  std::string target;
  std::string tls_name;  // dns: verify the certificate against the resolved name
};

namespace {

void AddAuth(grpc::ClientContext* ctx, const std::string& token) {
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
}

void SetDeadlineSeconds(grpc::ClientContext* ctx, double s) {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::microseconds(static_cast<int64_t>(s * 1e6)));
}

// An executor that dropped the call (killed, restarted, network gone) as
// opposed to one that answered with an error about the request.
bool ExecutorLost(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED:  // server-side abort; ours is checked first
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::INTERNAL:   // e.g. RST_STREAM mid-body
    case grpc::StatusCode::UNKNOWN:
      return true;
    default:
      return false;
  }
}

bool HasBackend(const google::protobuf::RepeatedField<int>& backends, v1::Backend b) {
  return std::find(backends.begin(), backends.end(), static_cast<int>(b)) != backends.end();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ExecutorPool>> ExecutorPool::Create(Options options) {
  std::unique_ptr<ExecutorPool> pool(new ExecutorPool(std::move(options)));
  Options& o = pool->options_;
  if (!o.resolver) o.resolver = SystemResolver();
  if (!o.default_token_file.empty()) {
    ASSIGN_OR_RETURN(pool->default_token_, ReadTokenFile(o.default_token_file, TokenRole::kSend,
                                                         "executor_token_file"));
    RegisterSecret(pool->default_token_);
  }
  for (const auto& ep : o.executors) {
    ASSIGN_OR_RETURN(ExecutorTarget t, ParseExecutorTarget(ep.address));
    if (t.dns) pool->dynamic_ = true;
  }
  if (!o.executors_file.empty()) pool->dynamic_ = true;
  // At start every executor that can be created must be (a missing token or
  // CA is a configuration error); names that do not resolve yet are not.
  absl::Status create_error;
  absl::Status s = pool->RefreshImpl(true, &create_error);
  RETURN_IF_ERROR(create_error);
  bool file_never_read = false;
  {
    absl::MutexLock refresh(&pool->refresh_mu_);
    file_never_read = pool->file_mtime_ns_ < 0;
  }
  if (!s.ok() && !o.executors_file.empty() && file_never_read) return s;
  if (!s.ok()) spdlog::warn("executors: {}", std::string(s.message()));
  return pool;
}

absl::StatusOr<ExecutorPool::ExecutorPtr> ExecutorPool::MakeExecutor(const Wanted& w) const {
  const ExecutorEndpoint& ep = w.endpoint;
  auto e = std::make_shared<Executor>();
  e->endpoint = ep;
  e->target = w.target;
  e->token = default_token_;
  if (!ep.token_file.empty()) {
    ASSIGN_OR_RETURN(e->token,
                     ReadTokenFile(ep.token_file, TokenRole::kSend, "executors[].token_file"));
    RegisterSecret(e->token);
  }
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> creds,
                   rpc::ChannelCredentials(ep.tls, ep.tls_ca_file, "executors[].tls_ca_file"));
  grpc::ChannelArguments args;
  // Dialled by address, verified by the name that was resolved.
  if (ep.tls && !w.tls_name.empty()) args.SetSslTargetNameOverride(w.tls_name);
  // A restarted executor must be picked up within a health interval, not
  // after gRPC's default reconnect backoff (up to two minutes).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetMaxReceiveMessageSize(64 << 20);
  e->channel = grpc::CreateCustomChannel(ep.address, creds, args);
  e->stub = v1::Executor::NewStub(e->channel);
  e->generic = std::make_unique<grpc::GenericStub>(e->channel);
  return e;
}

absl::Status ExecutorPool::Refresh(bool force_file_read) {
  return RefreshImpl(force_file_read, nullptr);
}

absl::Status ExecutorPool::RefreshImpl(bool force_file_read, absl::Status* create_error) {
  absl::MutexLock refresh(&refresh_mu_);
  absl::Status first;
  auto note = [&first](const absl::Status& s) {
    if (first.ok() && !s.ok()) first = s;
  };

  // 1. The executors file, when asked or changed; on any error the previous
  //    targets stay (a half-written file never empties the pool).
  const std::string& path = options_.executors_file;
  if (!path.empty()) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      note(absl::NotFoundError(fmt::format("executors file {}: cannot read ({}); keeping its {} "
                                           "previous target(s)",
                                           path, std::strerror(errno), file_targets_.size())));
    } else {
      const int64_t mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
      if (force_file_read || mtime_ns != file_mtime_ns_ || st.st_size != file_size_) {
        auto targets = ReadExecutorsFile(path);
        if (targets.ok()) {
          if (*targets != file_targets_ || file_mtime_ns_ < 0) {
            spdlog::info("executors file {}: {} target(s)", path, targets->size());
          }
          file_targets_ = std::move(*targets);
          file_mtime_ns_ = mtime_ns;
          file_size_ = st.st_size;
        } else {
          note(absl::Status(targets.status().code(),
                            fmt::format("{} (keeping the {} previous target(s))",
                                        std::string(targets.status().message()),
                                        file_targets_.size())));
        }
      }
    }
  }

  // 2. What should exist: one executor per static target and per address of
  //    each dns target. Targets whose name failed to resolve for a
  //    temporary reason keep their executors.
  std::vector<Wanted> wanted;
  std::set<std::string> keep_targets;
  std::vector<std::string> resolve_errors;
  auto expand = [&](const ExecutorEndpoint& ep) {
    auto t = ParseExecutorTarget(ep.address);
    if (!t.ok()) return note(t.status());
    if (!t->dns) {
      wanted.push_back(Wanted{ep, ep.address, ""});
      return;
    }
    auto ips = options_.resolver->Resolve(t->host);
    if (!ips.ok()) {
      if (!absl::IsNotFound(ips.status())) keep_targets.insert(ep.address);
      resolve_errors.push_back(fmt::format("{}: {}{}", ep.address, std::string(ips.status().message()),
                                           absl::IsNotFound(ips.status())
                                               ? " (no executor behind it)"
                                               : " (keeping its executors)"));
      note(absl::Status(ips.status().code(), resolve_errors.back()));
      return;
    }
    for (const auto& ip : *ips) {
      Wanted w{ep, ep.address, t->host};
      w.endpoint.address = JoinHostPort(ip, t->port);
      wanted.push_back(std::move(w));
    }
  };
  for (const auto& ep : options_.executors) expand(ep);
  for (const auto& target : file_targets_) {
    ExecutorEndpoint ep = options_.file_defaults;
    ep.address = target;
    expand(ep);
  }
  if (resolve_errors != resolve_errors_) {
    for (const auto& e : resolve_errors) spdlog::warn("executor discovery: {}", e);
    resolve_errors_ = resolve_errors;
  }

  // 3. Create the new executors outside the pool's lock (files, channels).
  std::set<std::string> present, listed;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& e : executors_) present.insert(e->endpoint.address);
  }
  std::vector<ExecutorPtr> added;
  for (const auto& w : wanted) {
    if (!listed.insert(w.endpoint.address).second || present.count(w.endpoint.address)) continue;
    auto e = MakeExecutor(w);
    if (!e.ok()) {
      absl::Status err = Annotate(e.status(), "executor " + w.endpoint.address);
      spdlog::error("{}", std::string(err.message()));
      if (create_error != nullptr && create_error->ok()) *create_error = err;
      note(err);
      continue;
    }
    added.push_back(std::move(*e));
  }

  // 4. Apply: drain what is no longer listed, take back what is listed
  //    again, add the new ones.
  {
    absl::MutexLock lock(&mu_);
    for (const auto& e : executors_) {
      const bool want = listed.count(e->endpoint.address) || keep_targets.count(e->target);
      if (want && e->draining) {
        e->draining = false;
        spdlog::info("executor {} is listed again by {}", e->endpoint.address, e->target);
      } else if (!want && !e->draining) {
        e->draining = true;
        spdlog::info("executor {} left ({} no longer lists it): draining, {} evaluation(s) in "
                     "flight",
                     e->endpoint.address, e->target, e->in_flight);
      }
    }
    ReapDrainedLocked();
    for (auto& e : added) {
      if (e->target != e->endpoint.address || dynamic_) {
        spdlog::info("executor {} joined (from {})", e->endpoint.address, e->target);
      }
      executors_.push_back(std::move(e));
    }
    if (!added.empty()) recheck_ = true;
  }
  wake_cv_.SignalAll();
  health_cv_.SignalAll();
  return first;
}

void ExecutorPool::ReapDrainedLocked() {
  executors_.erase(std::remove_if(executors_.begin(), executors_.end(),
                                  [](const ExecutorPtr& e) {
                                    if (!e->draining || e->in_flight > 0) return false;
                                    spdlog::info("executor {} removed (drained)",
                                                 e->endpoint.address);
                                    return true;
                                  }),
                   executors_.end());
}

ExecutorPool::ExecutorPool(Options options) : options_(std::move(options)) {}

ExecutorPool::~ExecutorPool() { Stop(); }

void ExecutorPool::Start() {
  CheckNow();
  absl::MutexLock lock(&mu_);
  if (health_thread_.joinable() || stopping_) return;
  health_thread_ = std::thread([this] { HealthLoop(); });
}

void ExecutorPool::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_cv_.SignalAll();
  health_cv_.SignalAll();
  if (health_thread_.joinable()) health_thread_.join();
}

void ExecutorPool::HealthLoop() {
  using Steady = std::chrono::steady_clock;
  auto after = [](double s) {
    return Steady::now() + std::chrono::microseconds(static_cast<int64_t>(s * 1e6));
  };
  Steady::time_point next_health = after(options_.health_interval_s);
  Steady::time_point next_discovery = after(options_.discovery_interval_s);
  mu_.Lock();
  while (!stopping_) {
    const Steady::time_point until =
        dynamic_ ? std::min(next_health, next_discovery) : next_health;
    while (!stopping_ && !recheck_) {
      const auto left = until - Steady::now();
      if (left <= left.zero()) break;
      wake_cv_.WaitWithTimeout(&mu_, absl::FromChrono(left));
    }
    if (stopping_) break;
    const Steady::time_point now = Steady::now();
    const bool discover = dynamic_ && now >= next_discovery;
    const bool health = recheck_ || now >= next_health;
    recheck_ = false;
    mu_.Unlock();
    if (discover) {
      (void)Refresh(false);  // logs what changed and what failed
      next_discovery = after(options_.discovery_interval_s);
    }
    if (health) {
      CheckNow();
      next_health = after(options_.health_interval_s);
    }
    mu_.Lock();
  }
  mu_.Unlock();
}

void ExecutorPool::CheckNow() {
  std::vector<ExecutorPtr> snapshot;
  {
    absl::MutexLock lock(&mu_);
    snapshot = executors_;
  }
  for (auto& e : snapshot) CheckOne(*e);
  health_cv_.SignalAll();
}

void ExecutorPool::CheckOne(Executor& e) {
  auto fail = [&](const std::string& what, const grpc::Status& s) {
    std::string err = fmt::format("{}: {} ({})", what, s.error_message(),
                                  static_cast<int>(s.error_code()));
    absl::MutexLock lock(&mu_);
    if (e.healthy || !e.probed || e.last_error != err) {
      spdlog::warn("executor {} unhealthy: {}", e.endpoint.address, err);
    }
    e.healthy = false;
    e.probed = true;
    e.last_error = err;
  };
  // grpc.health.v1.Health/Check through the generic stub: the request
  // (service "") is the empty message; the reply's field 1 is the status.
  {
    grpc::ClientContext ctx;
    SetDeadlineSeconds(&ctx, options_.rpc_timeout_s);
    AddAuth(&ctx, e.token);
    grpc::ByteBuffer request(nullptr, 0);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    e.generic->UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                         &response, [&done](grpc::Status s) { done.set_value(std::move(s)); });
    grpc::Status s = done.get_future().get();
    if (s.ok()) {
      std::vector<grpc::Slice> slices;
      std::string bytes;
      if (response.Dump(&slices).ok()) {
        for (const auto& sl : slices) bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
      }
      google::protobuf::UnknownFieldSet fields;
      int64_t serving = 0;
      if (fields.ParseFromString(bytes)) {
        for (int i = 0; i < fields.field_count(); ++i) {
          if (fields.field(i).number() == 1 &&
              fields.field(i).type() == google::protobuf::UnknownField::TYPE_VARINT) {
            serving = static_cast<int64_t>(fields.field(i).varint());
          }
        }
      }
      if (serving != 1) {  // 1 = SERVING
        fail("health", grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                    fmt::format("health status {}", serving)));
        return;
      }
    } else if (s.error_code() != grpc::StatusCode::UNIMPLEMENTED) {
      fail("health", s);
      return;
    }
  }
  v1::DeviceInfo device;
  {
    grpc::ClientContext ctx;
    SetDeadlineSeconds(&ctx, options_.rpc_timeout_s);
    AddAuth(&ctx, e.token);
    grpc::Status s = e.stub->DescribeDevice(&ctx, v1::DescribeDeviceRequest(), &device);
    if (!s.ok()) return fail("DescribeDevice", s);
  }
  v1::ListProblemsResponse problems;
  {
    grpc::ClientContext ctx;
    SetDeadlineSeconds(&ctx, options_.rpc_timeout_s);
    AddAuth(&ctx, e.token);
    grpc::Status s = e.stub->ListProblems(&ctx, v1::ListProblemsRequest(), &problems);
    if (!s.ok()) return fail("ListProblems", s);
  }
  absl::MutexLock lock(&mu_);
  if (!e.healthy) spdlog::info("executor {} healthy ({} problems, {} usable GPUs)",
                               e.endpoint.address, problems.problems_size(), device.usable_gpus());
  e.healthy = true;
  e.probed = true;
  e.last_error.clear();
  e.last_seen_wall_us = options_.clock->NowWallMicros();
  e.device = std::move(device);
  e.problems.assign(problems.problems().begin(), problems.problems().end());
}

std::vector<v1::ExecutorStatus> ExecutorPool::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<v1::ExecutorStatus> out;
  for (const auto& e : executors_) {
    v1::ExecutorStatus s;
    s.set_address(e->endpoint.address);
    s.set_healthy(e->healthy);
    s.set_last_error(e->draining ? fmt::format("draining: {} no longer lists it{}{}", e->target,
                                               e->last_error.empty() ? "" : "; ", e->last_error)
                                 : e->last_error);
    s.set_last_seen_wall_us(e->last_seen_wall_us);
    s.set_in_flight(e->in_flight);
    s.set_completed(e->completed);
    *s.mutable_device() = e->device;
    out.push_back(std::move(s));
  }
  return out;
}

std::pair<int64_t, int64_t> ExecutorPool::HealthyAndTotal() const {
  absl::MutexLock lock(&mu_);
  int64_t healthy = 0;
  for (const auto& e : executors_) healthy += e->healthy ? 1 : 0;
  return {healthy, static_cast<int64_t>(executors_.size())};
}

std::vector<v1::ProblemInfo> ExecutorPool::Problems() const {
  absl::MutexLock lock(&mu_);
  std::vector<v1::ProblemInfo> out;
  for (const auto& e : executors_) {
    if (!e->healthy || e->draining) continue;
    for (const auto& p : e->problems) {
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const v1::ProblemInfo& q) { return q.name() == p.name(); });
      if (it == out.end()) {
        out.push_back(p);
        continue;
      }
      for (int b : p.backends()) {
        if (!HasBackend(it->backends(), static_cast<v1::Backend>(b))) it->add_backends(
            static_cast<v1::Backend>(b));
      }
      it->set_min_world_size(std::min(it->min_world_size(), p.min_world_size()));
      it->set_max_world_size(std::max(it->max_world_size(), p.max_world_size()));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.name() < b.name(); });
  return out;
}

bool ExecutorPool::CanRunLocked(const Executor& e, v1::Backend backend, const std::string& problem,
                                int32_t world_size) const {
  if (!e.healthy || e.draining) return false;
  if (e.device.backends_size() > 0 && !HasBackend(e.device.backends(), backend)) return false;
  if (backend == v1::BACKEND_CUDA && e.device.usable_gpus() < world_size) return false;
  for (const auto& p : e.problems) {
    if (p.name() != problem) continue;
    if (p.backends_size() > 0 && !HasBackend(p.backends(), backend)) return false;
    if (p.max_world_size() > 0 && world_size > p.max_world_size()) return false;
    if (p.min_world_size() > 0 && world_size < p.min_world_size()) return false;
    return true;
  }
  return false;
}

ExecutorPool::ExecutorPtr ExecutorPool::PickLocked(v1::Backend backend,
                                                  const std::string& problem, int32_t world_size,
                                                  const std::vector<ExecutorPtr>& exclude) const {
  ExecutorPtr best;
  const size_t n = executors_.size();
  // Start at a rotating offset so ties spread over executors.
  for (size_t k = 0; k < n; ++k) {
    const ExecutorPtr& e = executors_[(round_robin_ + k) % n];
    if (std::find(exclude.begin(), exclude.end(), e) != exclude.end()) continue;
    if (!CanRunLocked(*e, backend, problem, world_size)) continue;
    if (!best || e->in_flight < best->in_flight) best = e;
  }
  return best;
}

absl::Status ExecutorPool::CheckRunnable(const v1::JobSpec& spec) const {
  absl::MutexLock lock(&mu_);
  bool any_healthy = false, problem_known = false, backend_ok = false, size_ok = false;
  for (const auto& e : executors_) {
    if (!e->healthy || e->draining) continue;
    any_healthy = true;
    for (const auto& p : e->problems) {
      if (p.name() != spec.problem()) continue;
      problem_known = true;
      if (p.backends_size() > 0 && !HasBackend(p.backends(), spec.backend())) continue;
      if (e->device.backends_size() > 0 && !HasBackend(e->device.backends(), spec.backend())) {
        continue;
      }
      backend_ok = true;
      if (CanRunLocked(*e, spec.backend(), spec.problem(), spec.world_size())) size_ok = true;
    }
  }
  if (!any_healthy) {
    return absl::UnavailableError(
        executors_.empty() ? "no executor is configured or discovered (--executor HOST:PORT, "
                             "--executor dns:///NAME:PORT, --executors-file)"
                           : "no executor is healthy; see ListExecutors");
  }
  if (!problem_known) {
    return absl::InvalidArgumentError(
        fmt::format("spec.problem: '{}' is not offered by any healthy executor", spec.problem()));
  }
  if (!backend_ok) {
    return absl::InvalidArgumentError(fmt::format(
        "spec.backend: no healthy executor runs '{}' on backend {}", spec.problem(),
        BackendName(spec.backend())));
  }
  if (!size_ok) {
    return absl::InvalidArgumentError(fmt::format(
        "spec.world_size: {} is outside what any executor offers for '{}' on {} (problem bounds "
        "or usable GPUs)",
        spec.world_size(), spec.problem(), BackendName(spec.backend())));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::ProblemInfo> ExecutorPool::DescribeProblem(const v1::JobSpec& spec) const {
  std::vector<ExecutorPtr> tried;
  absl::Status last = absl::UnavailableError(
      fmt::format("no healthy executor can run '{}' on {} with world size {}", spec.problem(),
                  BackendName(spec.backend()), spec.world_size()));
  while (true) {
    ExecutorPtr picked;
    {
      absl::MutexLock lock(&mu_);
      picked = PickLocked(spec.backend(), spec.problem(), spec.world_size(), tried);
    }
    if (!picked) return last;
    tried.push_back(picked);
    const Executor& e = *picked;
    v1::ListProblemsRequest req;
    req.set_world_size(spec.world_size());
    req.set_dtype(spec.dtype());
    if (spec.has_size()) *req.mutable_size() = spec.size();
    req.set_include_reference_source(true);
    v1::ListProblemsResponse resp;
    grpc::ClientContext ctx;
    SetDeadlineSeconds(&ctx, options_.rpc_timeout_s);
    AddAuth(&ctx, e.token);
    grpc::Status s = e.stub->ListProblems(&ctx, req, &resp);
    if (!s.ok()) {
      last = Annotate(FromGrpcStatus(s), "ListProblems on " + e.endpoint.address);
      if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
          s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
        return last;  // the configuration itself is wrong; another executor says the same
      }
      continue;
    }
    for (const auto& p : resp.problems()) {
      if (p.name() == spec.problem()) return p;
    }
    last = absl::NotFoundError(
        fmt::format("executor {} no longer lists problem '{}'", e.endpoint.address, spec.problem()));
  }
}

absl::StatusOr<v1::DeviceInfo> ExecutorPool::DeviceFor(const v1::JobSpec& spec) const {
  absl::MutexLock lock(&mu_);
  ExecutorPtr e = PickLocked(spec.backend(), spec.problem(), spec.world_size(), {});
  if (!e) return absl::UnavailableError("no healthy executor can run the job");
  return e->device;
}

std::string ExecutorPool::NoExecutorReasonLocked(v1::Backend backend, const std::string& problem,
                                                 int32_t world_size) const {
  std::string why = fmt::format("no healthy executor can run '{}' on {} with world size {}",
                                problem, BackendName(backend), world_size);
  std::string down;
  int listed = 0;
  for (const auto& e : executors_) {
    if (e->healthy || e->draining || listed >= 4) continue;
    ++listed;
    down += fmt::format("{}{}: {}", down.empty() ? "" : "; ", e->endpoint.address,
                        e->last_error.substr(0, 200));
  }
  if (!down.empty()) why += " (unhealthy: " + down + ")";
  return why;
}

absl::StatusOr<ExecutorPool::ExecutorPtr> ExecutorPool::WaitForExecutor(
    v1::Backend backend, const std::string& problem, int32_t world_size,
    const std::vector<ExecutorPtr>& tried, const agent::CancelToken& cancel,
    WaitObserver* observer, bool reserve) {
  const Clock* clock = options_.clock;
  // The job's budget bounds the wait (the token's deadline); without one,
  // dispatch_wait_s does.
  const bool has_deadline = cancel.RemainingMicros() != agent::CancelToken::kNoDeadline;
  const int64_t wait_until =
      clock->NowMonotonicMicros() + static_cast<int64_t>(options_.dispatch_wait_s * 1e6);
  bool reported = false;
  ExecutorPtr i;
  absl::Status gave_up;
  mu_.Lock();
  while (true) {
    i = PickLocked(backend, problem, world_size, tried);
    // An executor tried before is taken again once it is healthy again (a
    // restarted executor): better than failing the evaluation.
    if (!i && !tried.empty()) i = PickLocked(backend, problem, world_size, {});
    if (i) break;
    if (stopping_) {
      gave_up = absl::UnavailableError("the orchestrator is stopping");
      break;
    }
    if (!cancel.status().ok()) {
      gave_up = cancel.status();
      break;
    }
    if (!has_deadline && clock->NowMonotonicMicros() >= wait_until) {
      gave_up = absl::UnavailableError(fmt::format(
          "{}; waited {:.0f} s", NoExecutorReasonLocked(backend, problem, world_size),
          options_.dispatch_wait_s));
      break;
    }
    if (!reported && observer != nullptr) {
      const std::string why = NoExecutorReasonLocked(backend, problem, world_size);
      reported = true;
      mu_.Unlock();
      observer->WaitStarted(why);
      mu_.Lock();
      continue;
    }
    recheck_ = true;
    wake_cv_.SignalAll();
    // Woken by each finished health round; the timeout bounds how late a
    // cancellation is noticed.
    health_cv_.WaitWithTimeout(&mu_, absl::Milliseconds(50));
  }
  std::string address;
  if (i) {
    address = i->endpoint.address;
    if (reserve) {
      ++i->in_flight;
      ++round_robin_;
    }
  }
  mu_.Unlock();
  if (reported) observer->WaitEnded(address);
  if (!i) return gave_up;
  return i;
}

absl::Status ExecutorPool::AwaitRunnable(const v1::JobSpec& spec, const agent::CancelToken& cancel,
                                         WaitObserver* observer) {
  return WaitForExecutor(spec.backend(), spec.problem(), spec.world_size(), {}, cancel, observer,
                         false)
      .status();
}

absl::StatusOr<agent::EvaluationOutcome> ExecutorPool::Evaluate(
    const v1::EvaluateRequest& request, const agent::ProgressCallback& progress,
    const agent::CancelToken& cancel, WaitObserver* observer) {
  const Clock* clock = options_.clock;
  const int64_t start_mono = clock->NowMonotonicMicros();
  std::vector<ExecutorPtr> tried;
  absl::Status last_error;
  int busy_answers = 0;  // RESOURCE_EXHAUSTED: the executor's max_in_flight reached
  for (int attempt = 0; attempt <= options_.evaluation_retries; ++attempt) {
    // Dispatch: wait (bounded by the job's budget) for an executor.
    absl::StatusOr<ExecutorPtr> picked = WaitForExecutor(
        request.backend(), request.problem(), request.world_size(), tried, cancel, observer, true);
    if (!picked.ok()) {
      if (!cancel.status().ok()) return cancel.status();
      if (!last_error.ok()) return last_error;
      return picked.status();
    }
    tried.push_back(*picked);
    Executor& e = **picked;
    const double dispatch_ms =
        static_cast<double>(clock->NowMonotonicMicros() - start_mono) / 1e3;

    grpc::ClientContext ctx;
    AddAuth(&ctx, e.token);
    const int64_t remaining = cancel.RemainingMicros();
    if (remaining != agent::CancelToken::kNoDeadline) {
      ctx.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::microseconds(std::max<int64_t>(remaining, 1)));
    }
    auto cb = cancel.AddCallback([&ctx] { ctx.TryCancel(); });
    std::optional<v1::EvaluationResult> result;
    grpc::Status status;
    {
      std::unique_ptr<grpc::ClientReader<v1::EvaluateProgress>> reader =
          e.stub->Evaluate(&ctx, request);
      v1::EvaluateProgress msg;
      while (reader->Read(&msg)) {
        if (msg.has_result()) {
          result = std::move(*msg.mutable_result());
        } else if (progress) {
          progress(msg);
        }
      }
      status = reader->Finish();
    }
    cancel.RemoveCallback(cb);
    {
      absl::MutexLock lock(&mu_);
      --e.in_flight;
      if (result) ++e.completed;
      // A drained executor leaves once its last evaluation is back.
      if (e.draining && e.in_flight == 0) ReapDrainedLocked();
    }
    // Back-pressure, not a loss and not an answer about the request: the
    // executor holds max_in_flight evaluations (other clients', or more of
    // this orchestrator's than it had slots for). Wait and send it again, to
    // any executor, bounded by the job's budget; it never counts as a retry.
    // (API fuzzing, session 16: a replay job's candidate was dropped as "no
    // result" and the job ended SUCCEEDED with 0 evaluations.)
    if (!result && status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      tried.pop_back();
      --attempt;
      const int64_t wait_us = std::min<int64_t>(int64_t{20'000} << std::min(busy_answers, 6),
                                                2'000'000);
      if (busy_answers++ == 0)
        spdlog::info("executor {} busy ({}); waiting for a free slot", e.endpoint.address,
                     status.error_message());
      if (absl::Status st = cancel.SleepFor(wait_us); !st.ok()) return st;
      continue;
    }
    if (result && status.ok()) {
      agent::EvaluationOutcome out;
      out.executor = e.endpoint.address;
      out.queue_ms = dispatch_ms + result->stages().queue_ms();
      out.result = std::move(*result);
      return out;
    }
    if (!cancel.status().ok()) return cancel.status();
    if (status.ok()) {
      status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream ended without a result");
    }
    last_error = Annotate(FromGrpcStatus(status), "executor " + e.endpoint.address);
    if (!ExecutorLost(status)) return last_error;
    spdlog::warn("evaluation on executor {} lost ({}); {}", e.endpoint.address,
                 status.error_message(),
                 attempt < options_.evaluation_retries ? "retrying on another executor"
                                                       : "giving up");
    {
      absl::MutexLock lock(&mu_);
      e.healthy = false;
      e.last_error = std::string(last_error.message());
      recheck_ = true;
    }
    wake_cv_.SignalAll();
    if (!absl::IsUnavailable(last_error)) {
      last_error = absl::UnavailableError(last_error.message());
    }
  }
  return last_error;
}

}  // namespace pkforge::orchestrator
