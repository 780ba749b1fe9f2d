#include "agent/testing/fake_http_server.h"

#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <set>

#include "nlohmann/json.hpp"

namespace pkforge::agent::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct FakeHttpServer::Impl {
  asio::io_context io;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::thread accept_thread;

  mutable std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::deque<ScriptedResponse> script;
  Handler fallback;
  std::vector<RecordedRequest> requests;
  std::set<int> open_fds;
  std::vector<std::thread> connections;
};

FakeHttpServer::FakeHttpServer() : impl_(new Impl) {}

absl::StatusOr<std::unique_ptr<FakeHttpServer>> FakeHttpServer::Start() {
  std::unique_ptr<FakeHttpServer> s(new FakeHttpServer());
  beast::error_code ec;
  auto& impl = *s->impl_;
  impl.acceptor = std::make_unique<tcp::acceptor>(impl.io);
  tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
  impl.acceptor->open(ep.protocol(), ec);
  if (!ec) impl.acceptor->bind(ep, ec);
  if (!ec) impl.acceptor->listen(64, ec);
  if (ec) return absl::UnavailableError("fake http server: " + ec.message());
  s->port_ = impl.acceptor->local_endpoint().port();
  FakeHttpServer* self = s.get();
  impl.accept_thread = std::thread([self] {
    auto& im = *self->impl_;
    while (true) {
      beast::error_code aec;
      tcp::socket sock(im.io);
      im.acceptor->accept(sock, aec);
      std::lock_guard<std::mutex> lock(im.mu);
      if (im.stopping) break;
      if (aec) continue;
      const int fd = sock.release(aec);
      if (aec) continue;
      im.open_fds.insert(fd);
      im.connections.emplace_back([self, fd] { self->Serve(fd); });
    }
  });
  return s;
}

FakeHttpServer::~FakeHttpServer() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
    for (int fd : impl_->open_fds) ::shutdown(fd, SHUT_RDWR);
  }
  impl_->cv.notify_all();
  // Unblocks accept(); the accept thread then sees `stopping`.
  ::shutdown(impl_->acceptor->native_handle(), SHUT_RDWR);
  impl_->accept_thread.join();
  std::vector<std::thread> conns;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    conns.swap(impl_->connections);
  }
  for (auto& t : conns) t.join();
  beast::error_code ec;
  impl_->acceptor->close(ec);
}

std::string FakeHttpServer::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

void FakeHttpServer::Enqueue(ScriptedResponse response) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->script.push_back(std::move(response));
}

void FakeHttpServer::SetDefault(Handler handler) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->fallback = std::move(handler);
}

std::vector<RecordedRequest> FakeHttpServer::requests() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->requests;
}

int FakeHttpServer::request_count() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return static_cast<int>(impl_->requests.size());
}

void FakeHttpServer::Serve(int fd) {
  auto& im = *impl_;
  beast::error_code ec;
  tcp::socket sock(im.io);
  sock.assign(tcp::v4(), fd, ec);
  beast::flat_buffer buf;
  while (!ec) {
    http::request<http::string_body> req;
    http::read(sock, buf, req, ec);
    if (ec) break;
    RecordedRequest rec;
    rec.method = std::string(req.method_string());
    rec.target = std::string(req.target());
    for (const auto& f : req) {
      std::string name(f.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      rec.headers[name] = std::string(f.value());
    }
    rec.body = req.body();
    ScriptedResponse resp;
    {
      std::unique_lock<std::mutex> lock(im.mu);
      im.requests.push_back(rec);
      if (!im.script.empty()) {
        resp = std::move(im.script.front());
        im.script.pop_front();
      } else if (im.fallback) {
        Handler h = im.fallback;
        lock.unlock();
        resp = h(rec);
      } else {
        resp = Status(500, R"({"error":{"message":"no scripted response"}})");
      }
    }
    if (resp.delay_ms > 0) {
      std::unique_lock<std::mutex> lock(im.mu);
      im.cv.wait_for(lock, std::chrono::milliseconds(resp.delay_ms), [&] { return im.stopping; });
      if (im.stopping) break;
    }
    if (resp.action == ScriptedResponse::Action::kReset) {
      sock.set_option(asio::socket_base::linger(true, 0), ec);  // close sends RST
      break;
    }
    if (resp.action == ScriptedResponse::Action::kNeverAnswer) {
      char c;
      while (!ec) sock.read_some(asio::buffer(&c, 1), ec);  // until the peer or Stop closes
      break;
    }
    if (resp.action == ScriptedResponse::Action::kDropMidBody) {
      std::string head = "HTTP/1.1 " + std::to_string(resp.status) +
                         " OK\r\nContent-Type: application/json\r\nContent-Length: " +
                         std::to_string(resp.body.size()) + "\r\n\r\n";
      asio::write(sock, asio::buffer(head + resp.body.substr(0, resp.body.size() / 2)), ec);
      sock.shutdown(tcp::socket::shutdown_both, ec);
      break;
    }
    http::response<http::string_body> res{static_cast<http::status>(resp.status), req.version()};
    res.set(http::field::content_type, "application/json");
    for (const auto& [k, v] : resp.headers) res.set(k, v);
    res.body() = resp.body;
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    http::write(sock, res, ec);
    if (!req.keep_alive()) break;
  }
  {
    std::lock_guard<std::mutex> lock(im.mu);
    im.open_fds.erase(sock.native_handle());
  }
  beast::error_code ignored;
  sock.close(ignored);
}

ScriptedResponse FakeHttpServer::OpenAiReply(const std::string& text, int prompt_tokens,
                                             int completion_tokens) {
  nlohmann::json j = {{"id", "chatcmpl-test"},
                      {"object", "chat.completion"},
                      {"choices",
                       {{{"index", 0},
                         {"message", {{"role", "assistant"}, {"content", text}}},
                         {"finish_reason", "stop"}}}},
                      {"usage",
                       {{"prompt_tokens", prompt_tokens},
                        {"completion_tokens", completion_tokens},
                        {"total_tokens", prompt_tokens + completion_tokens}}}};
  ScriptedResponse r;
  r.body = j.dump();
  return r;
}

ScriptedResponse FakeHttpServer::AnthropicReply(const std::string& text, int input_tokens,
                                                int output_tokens) {
  nlohmann::json j = {
      {"id", "msg_test"},
      {"type", "message"},
      {"role", "assistant"},
      {"content", {{{"type", "text"}, {"text", text}}}},
      {"stop_reason", "end_turn"},
      {"usage", {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}}}};
  ScriptedResponse r;
  r.body = j.dump();
  return r;
}

ScriptedResponse FakeHttpServer::Status(int status, const std::string& body,
                                        std::vector<std::pair<std::string, std::string>> headers) {
  ScriptedResponse r;
  r.status = status;
  r.body = body;
  r.headers = std::move(headers);
  return r;
}

}  // namespace pkforge::agent::testing
