// HttpPost against the scripted local server: responses, faults, timeouts,
// cancellation. Plain http on 127.0.0.1 (TLS verification stays on and is
// exercised only by the https error case).
#include "agent/http.h"

#include <chrono>
#include <thread>

#include "agent/testing/fake_http_server.h"
#include "common/clock.h"
#include "gtest/gtest.h"

namespace pkforge::agent {
namespace {

using testing::FakeHttpServer;
using testing::ScriptedResponse;

class HttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = FakeHttpServer::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
  }
  HttpRequest Req(double timeout_s = 5) {
    HttpRequest r;
    r.url = server_->base_url() + "/chat/completions";
    r.headers = {"Content-Type: application/json", "Authorization: Bearer sk-test"};
    r.body = R"({"hello":"world"})";
    r.timeout_s = timeout_s;
    return r;
  }
  std::unique_ptr<FakeHttpServer> server_;
};

TEST_F(HttpTest, PostsBodyAndReturnsStatusHeadersBody) {
  server_->Enqueue(FakeHttpServer::Status(429, R"({"error":"slow down"})", {{"Retry-After", "7"}}));
  CancelToken token;
  auto r = HttpPost(Req(), token);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->headers["retry-after"], "7");
  EXPECT_EQ(r->body, R"({"error":"slow down"})");
  auto reqs = server_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].target, "/chat/completions");
  EXPECT_EQ(reqs[0].headers["authorization"], "Bearer sk-test");
  EXPECT_EQ(reqs[0].body, R"({"hello":"world"})");
}

TEST_F(HttpTest, NeverAnsweringServerTimesOut) {
  ScriptedResponse never;
  never.action = ScriptedResponse::Action::kNeverAnswer;
  server_->Enqueue(never);
  CancelToken token;
  const auto start = std::chrono::steady_clock::now();
  auto r = HttpPost(Req(0.3), token);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_GE(MsSince(start), 250);
  EXPECT_LT(MsSince(start), 1500);
}

TEST_F(HttpTest, TokenDeadlineBoundsTheAttempt) {
  ScriptedResponse never;
  never.action = ScriptedResponse::Action::kNeverAnswer;
  server_->Enqueue(never);
  CancelToken token;
  token.SetDeadline(SystemClock::Get()->NowMonotonicMicros() + 200'000);
  const auto start = std::chrono::steady_clock::now();
  auto r = HttpPost(Req(60), token);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_LT(MsSince(start), 1000);
}

TEST_F(HttpTest, CancelAbortsTransferPromptly) {
  ScriptedResponse never;
  never.action = ScriptedResponse::Action::kNeverAnswer;
  server_->Enqueue(never);
  CancelToken token;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    token.Cancel(absl::CancelledError("job cancelled"));
  });
  const auto start = std::chrono::steady_clock::now();
  auto r = HttpPost(Req(60), token);
  canceller.join();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  EXPECT_LT(MsSince(start), 600);
}

TEST_F(HttpTest, TruncatedBodyAndResetAreUnavailable) {
  ScriptedResponse drop = FakeHttpServer::OpenAiReply("hello");
  drop.action = ScriptedResponse::Action::kDropMidBody;
  server_->Enqueue(drop);
  ScriptedResponse reset;
  reset.action = ScriptedResponse::Action::kReset;
  server_->Enqueue(reset);
  CancelToken token;
  auto r1 = HttpPost(Req(), token);
  EXPECT_EQ(r1.status().code(), absl::StatusCode::kUnavailable) << r1.status();
  auto r2 = HttpPost(Req(), token);
  EXPECT_EQ(r2.status().code(), absl::StatusCode::kUnavailable) << r2.status();
  // Errors name the URL but never request headers.
  EXPECT_EQ(std::string(r2.status().message()).find("sk-test"), std::string::npos);
}

TEST_F(HttpTest, ConnectionRefusedIsUnavailable) {
  HttpRequest req = Req();
  const int port = server_->port();
  server_.reset();  // nothing listens there any more
  req.url = "http://127.0.0.1:" + std::to_string(port) + "/x";
  CancelToken token;
  auto r = HttpPost(req, token);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
}

TEST_F(HttpTest, OnlyHttpAndHttpsAreAllowed) {
  HttpRequest req = Req();
  req.url = "file:///etc/passwd";
  CancelToken token;
  auto r = HttpPost(req, token);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
}

TEST(RetryAfter, ParsesSecondsAndDates) {
  EXPECT_EQ(ParseRetryAfterMs("7", 0), 7000);
  EXPECT_EQ(ParseRetryAfterMs("0.5", 0), 500);
  EXPECT_EQ(ParseRetryAfterMs("-1", 0), -1);
  EXPECT_EQ(ParseRetryAfterMs("soon", 0), -1);
  EXPECT_EQ(ParseRetryAfterMs("", 0), -1);
  // Wed, 21 Oct 2015 07:28:00 GMT = 1445412480.
  EXPECT_EQ(ParseRetryAfterMs("Wed, 21 Oct 2015 07:28:00 GMT", 1445412470), 10'000);
  EXPECT_EQ(ParseRetryAfterMs("Wed, 21 Oct 2015 07:28:00 GMT", 1445412490), 0);
}

}  // namespace
}  // namespace pkforge::agent
