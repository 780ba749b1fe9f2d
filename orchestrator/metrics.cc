#include "orchestrator/metrics.h"

#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "common/status.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace pkforge::orchestrator {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

Metrics::Metrics()
    : bucket_bounds_{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
      bucket_counts_(bucket_bounds_.size() + 1, 0) {}

void Metrics::EventCommitted(double s) {
  events_committed_.fetch_add(1);
  std::lock_guard lock(mu_);
  size_t i = 0;
  while (i < bucket_bounds_.size() && s > bucket_bounds_[i]) ++i;
  ++bucket_counts_[i];
  latency_sum_s_ += s;
  ++latency_count_;
}

void Metrics::EvaluationFinished(const std::string& status) {
  std::lock_guard lock(mu_);
  ++evaluations_by_status_[status];
}

void Metrics::SetJobsByState(std::function<std::map<std::string, int64_t>()> fn) {
  std::lock_guard lock(mu_);
  jobs_by_state_ = std::move(fn);
}

void Metrics::SetExecutorGauges(std::function<std::pair<int64_t, int64_t>()> fn) {
  std::lock_guard lock(mu_);
  executors_ = std::move(fn);
}

std::string Metrics::Render() const {
  std::function<std::map<std::string, int64_t>()> jobs_fn;
  std::function<std::pair<int64_t, int64_t>()> exec_fn;
  {
    std::lock_guard lock(mu_);
    jobs_fn = jobs_by_state_;
    exec_fn = executors_;
  }
  std::string out;
  // Callbacks run outside mu_: they take their owners' locks.
  if (jobs_fn) {
    out += "# HELP pkforge_jobs Jobs by state (queued/running: this process; others: database).\n";
    out += "# TYPE pkforge_jobs gauge\n";
    for (const auto& [state, n] : jobs_fn()) {
      out += fmt::format("pkforge_jobs{{state=\"{}\"}} {}\n", state, n);
    }
  }
  if (exec_fn) {
    auto [healthy, total] = exec_fn();
    out += "# HELP pkforge_executors Configured executors.\n# TYPE pkforge_executors gauge\n";
    out += fmt::format("pkforge_executors {}\n", total);
    out += "# HELP pkforge_executors_healthy Executors that passed the last health check.\n";
    out += fmt::format("# TYPE pkforge_executors_healthy gauge\npkforge_executors_healthy {}\n",
                       healthy);
  }
  out += "# HELP pkforge_jobs_submitted_total Jobs accepted by SubmitJob.\n";
  out += fmt::format("# TYPE pkforge_jobs_submitted_total counter\npkforge_jobs_submitted_total {}\n",
                     jobs_submitted_.load());
  out += "# HELP pkforge_events_committed_total Events committed to the trajectory database.\n";
  out += fmt::format(
      "# TYPE pkforge_events_committed_total counter\npkforge_events_committed_total {}\n",
      events_committed_.load());
  out += "# HELP pkforge_watch_streams Open WatchJob streams.\n";
  out += fmt::format("# TYPE pkforge_watch_streams gauge\npkforge_watch_streams {}\n",
                     watch_streams_.load());
  out += "# HELP pkforge_llm_calls_total LLM calls recorded.\n";
  out += fmt::format("# TYPE pkforge_llm_calls_total counter\npkforge_llm_calls_total {}\n",
                     llm_calls_.load());
  out += "# HELP pkforge_llm_tokens_total Prompt plus completion tokens of recorded LLM calls.\n";
  out += fmt::format("# TYPE pkforge_llm_tokens_total counter\npkforge_llm_tokens_total {}\n",
                     llm_tokens_.load());
  std::lock_guard lock(mu_);
  out += "# HELP pkforge_evaluations_total Evaluations finished, by result status.\n";
  out += "# TYPE pkforge_evaluations_total counter\n";
  for (const auto& [status, n] : evaluations_by_status_) {
    out += fmt::format("pkforge_evaluations_total{{status=\"{}\"}} {}\n", status, n);
  }
  out += "# HELP pkforge_event_commit_seconds Event commit plus fan-out to watchers.\n";
  out += "# TYPE pkforge_event_commit_seconds histogram\n";
  int64_t cumulative = 0;
  for (size_t i = 0; i < bucket_bounds_.size(); ++i) {
    cumulative += bucket_counts_[i];
    out += fmt::format("pkforge_event_commit_seconds_bucket{{le=\"{}\"}} {}\n", bucket_bounds_[i],
                       cumulative);
  }
  cumulative += bucket_counts_.back();
  out += fmt::format("pkforge_event_commit_seconds_bucket{{le=\"+Inf\"}} {}\n", cumulative);
  out += fmt::format("pkforge_event_commit_seconds_sum {}\n", latency_sum_s_);
  out += fmt::format("pkforge_event_commit_seconds_count {}\n", latency_count_);
  return out;
}

// ------------------------------------------------------------------- http

struct MetricsHttpServer::Impl {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor{io};
  const Metrics* metrics = nullptr;
  std::thread thread;
  std::atomic<bool> stopping{false};

  void Serve() {
    while (!stopping.load()) {
      asio::ip::tcp::socket socket(io);
      boost::system::error_code ec;
      acceptor.accept(socket, ec);
      if (ec) {
        if (stopping.load()) return;
        continue;
      }
      beast::flat_buffer buffer;
      http::request<http::string_body> req;
      http::read(socket, buffer, req, ec);
      if (ec) continue;
      http::response<http::string_body> res;
      res.version(req.version());
      res.keep_alive(false);
      if (req.method() == http::verb::get && req.target() == "/metrics") {
        res.result(http::status::ok);
        res.set(http::field::content_type, "text/plain; version=0.0.4");
        res.body() = metrics->Render();
      } else if (req.method() == http::verb::get && req.target() == "/healthz") {
        res.result(http::status::ok);
        res.body() = "ok\n";
      } else {
        res.result(http::status::not_found);
        res.body() = "not found: try /metrics\n";
      }
      res.prepare_payload();
      http::write(socket, res, ec);
      socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    }
  }
};

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& address, const Metrics* metrics) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(fmt::format("metrics address '{}': expected HOST:PORT", address));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost") host = "127.0.0.1";
  int port = std::atoi(address.c_str() + colon + 1);
  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer());
  server->impl_ = std::make_unique<Impl>();
  Impl& impl = *server->impl_;
  impl.metrics = metrics;
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(host, ec);
  if (ec) return absl::InvalidArgumentError(fmt::format("metrics address '{}': {}", address, ec.message()));
  asio::ip::tcp::endpoint ep(ip, static_cast<uint16_t>(port));
  impl.acceptor.open(ep.protocol(), ec);
  if (!ec) impl.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl.acceptor.bind(ep, ec);
  if (!ec) impl.acceptor.listen(16, ec);
  if (ec) return absl::UnavailableError(fmt::format("metrics listen on {}: {}", address, ec.message()));
  server->port_ = impl.acceptor.local_endpoint().port();
  impl.thread = std::thread([&impl] { impl.Serve(); });
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (!impl_) return;
  impl_->stopping.store(true);
  // Closing the acceptor from another thread does not reliably wake a blocked
  // accept(); shutting the listening socket down does.
  ::shutdown(impl_->acceptor.native_handle(), SHUT_RDWR);
  if (impl_->thread.joinable()) impl_->thread.join();
  boost::system::error_code ec;
  impl_->acceptor.close(ec);
}

}  // namespace pkforge::orchestrator
