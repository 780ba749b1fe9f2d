#include "orchestrator/testing/fake_executor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include "common/sha256.h"
#include "fmt/format.h"

namespace pkforge::orchestrator::testing {

v1::EvaluationResult FakeResult(const std::string& source) {
  v1::EvaluationResult r;
  const std::string sha = Sha256Hex(source);
  r.set_candidate_sha256(sha);
  if (source.find("FAKE_COMPILE_ERROR") != std::string::npos) {
    r.set_status(v1::EvaluationResult::COMPILE_ERROR);
    r.set_message("fake compile error");
    r.mutable_compile()->set_output("candidate.cc:1: error: fake");
    return r;
  }
  if (source.find("FAKE_WRONG_OUTPUT") != std::string::npos) {
    r.set_status(v1::EvaluationResult::WRONG_OUTPUT);
    r.set_message("rank 0 output y: 3 mismatches");
    return r;
  }
  const double speedup =
      0.5 + static_cast<double>(std::stoul(sha.substr(0, 8), nullptr, 16) % 2000) / 1000.0;
  r.set_status(v1::EvaluationResult::OK);
  r.set_message(fmt::format("ok, {:.3f}x", speedup));
  r.set_speedup(speedup);
  r.mutable_reference()->set_median_us(100);
  r.mutable_reference()->set_samples(10);
  r.mutable_candidate()->set_median_us(100 / speedup);
  r.mutable_candidate()->set_samples(10);
  r.mutable_roofline()->set_candidate_fraction(std::min(1.0, 0.3 * speedup));
  return r;
}

class FakeExecutor::Service final : public v1::Executor::Service {
 public:
  explicit Service(FakeExecutorOptions o) : o_(std::move(o)), delay_ms_(o_.delay_ms) {}

  grpc::Status Check(grpc::ServerContext* ctx) const {
    if (o_.token.empty()) return grpc::Status::OK;
    auto it = ctx->client_metadata().find("authorization");
    if (it == ctx->client_metadata().end() ||
        std::string(it->second.data(), it->second.size()) != "Bearer " + o_.token) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "bad token");
    }
    return grpc::Status::OK;
  }

  grpc::Status DescribeDevice(grpc::ServerContext* ctx, const v1::DescribeDeviceRequest*,
                              v1::DeviceInfo* resp) override {
    if (auto s = Check(ctx); !s.ok()) return s;
    resp->set_executor_id(o_.executor_id);
    resp->set_hostname("fakehost");
    resp->set_pkforge_version("fake");
    resp->add_backends(v1::BACKEND_HOST);
    resp->add_backends(v1::BACKEND_CUDA);
    resp->set_usable_gpus(o_.usable_gpus);
    resp->set_cpu_cores(2);
    for (int i = 0; i < o_.usable_gpus; ++i) {
      auto* g = resp->add_gpus();
      g->set_index(i);
      g->set_name("Fake GPU");
      g->set_memory_bytes(o_.gpu_memory_bytes);
      g->set_healthy(true);
    }
    resp->mutable_ceilings()->set_hbm_gbps(4000);
    resp->mutable_ceilings()->set_peer_gbps(400);
    resp->mutable_ceilings()->set_source("table");
    return grpc::Status::OK;
  }

  grpc::Status ListProblems(grpc::ServerContext* ctx, const v1::ListProblemsRequest* req,
                            v1::ListProblemsResponse* resp) override {
    if (auto s = Check(ctx); !s.ok()) return s;
    for (const char* name : {"allgather", "allreduce", "reducescatter"}) {
      auto* p = resp->add_problems();
      p->set_name(name);
      p->set_category("collective");
      p->set_statement_markdown(fmt::format("# {}\nA fake statement.", name));
      p->add_backends(v1::BACKEND_HOST);
      p->add_backends(v1::BACKEND_CUDA);
      p->add_dtypes(v1::DTYPE_F32);
      p->add_dtypes(v1::DTYPE_F16);
      p->add_dtypes(v1::DTYPE_BF16);
      p->add_size_presets("tiny");
      p->add_size_presets("default");
      p->set_min_world_size(1);
      p->set_max_world_size(64);
      if (req->world_size() > 0) {
        auto* in = p->add_inputs();
        in->set_name("x");
        in->set_dtype(v1::DTYPE_F32);
        in->add_shape(1024);
        auto* out = p->add_outputs();
        out->set_name("y");
        out->set_dtype(v1::DTYPE_F32);
        out->add_shape(1024);
      }
      if (req->include_reference_source()) p->set_reference_source("// fake reference\n");
    }
    return grpc::Status::OK;
  }

  grpc::Status Evaluate(grpc::ServerContext* ctx, const v1::EvaluateRequest* req,
                        grpc::ServerWriter<v1::EvaluateProgress>* writer) override {
    if (auto s = Check(ctx); !s.ok()) return s;
    if (req->source().empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "source is empty");
    }
    if (!o_.refuse_evaluations.empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, o_.refuse_evaluations);
    }
    if (busy_.fetch_add(1) < o_.busy_first) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "executor busy: evaluations in flight (max_in_flight)");
    }
    const int now_in = in_flight_.fetch_add(1) + 1;
    int prev = max_in_flight_.load();
    while (now_in > prev && !max_in_flight_.compare_exchange_weak(prev, now_in)) {
    }
    started_.fetch_add(1);
    if (!o_.log_file.empty()) {
      std::lock_guard lock(log_mu_);
      if (FILE* f = std::fopen(o_.log_file.c_str(), "a")) {
        std::fprintf(f, "evaluate %s\n", req->client_tag().c_str());
        std::fclose(f);
      }
    }
    if (!o_.shapes_log_file.empty()) {
      std::lock_guard lock(log_mu_);
      if (FILE* f = std::fopen(o_.shapes_log_file.c_str(), "a")) {
        std::string sizes;
        for (const auto& s : req->size_ladder()) sizes += (sizes.empty() ? "" : ",") + s;
        std::fprintf(f, "%s\thidden=%d\tsizes=%s\tprecise=%d\n", req->client_tag().c_str(),
                     req->hidden_shapes() ? 1 : 0, sizes.c_str(), req->precise_timing() ? 1 : 0);
        std::fclose(f);
      }
    }
    struct Leave {
      std::atomic<int>* n;
      ~Leave() { n->fetch_sub(1); }
    } leave{&in_flight_};
    const auto start = std::chrono::steady_clock::now();
    const std::string id = fmt::format("fake_eval_{}", started_.load());
    const int delay = delay_ms_.load();
    auto elapsed_ms = [&] {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
          .count();
    };
    // Sleeps `ms`, returning false when the caller cancelled.
    auto wait = [&](int ms) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
      while (std::chrono::steady_clock::now() < until) {
        if (ctx->IsCancelled()) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min(ms, 2)));
      }
      return !ctx->IsCancelled();
    };
    v1::EvaluateProgress msg;
    msg.set_evaluation_id(id);
    msg.mutable_compiling()->set_cache_hit(false);
    msg.set_elapsed_ms(elapsed_ms());
    if (!writer->Write(msg) || !wait(delay / 4)) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    }
    msg.mutable_queued()->set_position(0);
    msg.set_elapsed_ms(elapsed_ms());
    if (!writer->Write(msg) || !wait(delay / 4)) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    }
    msg.mutable_running()->set_phase(v1::PHASE_TIMING);
    msg.set_elapsed_ms(elapsed_ms());
    if (!writer->Write(msg) || !wait(delay - 2 * (delay / 4))) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    }
    // A held evaluation waits (running) until the test releases it.
    if (req->source().find("FAKE_HOLD") != std::string::npos) {
      while (!released_.load()) {
        if (!wait(2)) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
      }
    }
    v1::EvaluationResult r = FakeResult(req->source());
    r.set_evaluation_id(id);
    r.set_problem(req->problem());
    r.set_backend(req->backend());
    r.set_world_size(req->world_size());
    r.set_executor_id(o_.executor_id);
    r.mutable_stages()->set_queue_ms(static_cast<double>(delay / 4));
    r.mutable_stages()->set_compile_ms(static_cast<double>(delay / 4));
    r.mutable_stages()->set_run_ms(static_cast<double>(delay - 2 * (delay / 4)));
    r.mutable_stages()->set_total_ms(elapsed_ms());
    *msg.mutable_result() = std::move(r);
    msg.set_elapsed_ms(elapsed_ms());
    writer->Write(msg);
    finished_.fetch_add(1);
    return grpc::Status::OK;
  }

  FakeExecutorOptions o_;
  std::atomic<int> delay_ms_;
  std::atomic<int> started_{0};
  std::atomic<int> busy_{0};
  std::atomic<int> finished_{0};
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
  std::atomic<bool> released_{false};
  std::mutex log_mu_;
};

absl::StatusOr<std::unique_ptr<FakeExecutor>> FakeExecutor::Start(FakeExecutorOptions options) {
  std::unique_ptr<FakeExecutor> f(new FakeExecutor());
  const std::string listen = options.listen;
  rpc::ServerOptions so;
  so.listen = listen;
  so.tls_cert_file = options.tls_cert;
  so.tls_key_file = options.tls_key;
  so.reflection = false;
  f->service_ = std::make_unique<Service>(std::move(options));
  so.services = {f->service_.get()};
  auto server = rpc::GrpcServer::Start(so);
  if (!server.ok()) {
    return absl::Status(server.status().code(),
                        fmt::format("fake executor: {}", std::string(server.status().message())));
  }
  f->server_ = *std::move(server);
  f->port_ = f->server_->port();
  return f;
}

FakeExecutor::~FakeExecutor() { Shutdown(); }

void FakeExecutor::Shutdown() {
  if (server_) {
    server_->Stop(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
    server_.reset();
  }
}

int FakeExecutor::evaluations_started() const { return service_->started_.load(); }
int FakeExecutor::busy_answers() const {
  return std::min(service_->busy_.load(), service_->o_.busy_first);
}
int FakeExecutor::evaluations_finished() const { return service_->finished_.load(); }
int FakeExecutor::max_in_flight() const { return service_->max_in_flight_.load(); }
void FakeExecutor::set_delay_ms(int ms) { service_->delay_ms_.store(ms); }
void FakeExecutor::ReleaseHeld() { service_->released_.store(true); }

}  // namespace pkforge::orchestrator::testing
