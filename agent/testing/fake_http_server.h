// A scripted HTTP/1.1 server for tests (Boost.Beast), listening on
// 127.0.0.1 with an ephemeral port. Each request gets the next scripted
// response (FIFO), or the default handler's when the script is empty. Faults
// a test can script: any status and headers (e.g. Retry-After), delays,
// dropping the connection mid-body (a truncated reply), resetting it before
// any reply, and never answering (until the client gives up or the server
// stops).
//
// Threading: Enqueue/SetDefault/requests may be called from any thread while
// the server runs; one thread per connection serves requests. The destructor
// stops the server, unblocking never-answering connections.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace pkforge::agent::testing {

struct ScriptedResponse {
  enum class Action {
    kRespond,      // send status, headers, body
    kDropMidBody,  // send headers (full Content-Length) and half the body, then close
    kReset,        // close at once (RST) without any reply
    kNeverAnswer,  // read the request and wait until the client or the server closes
  };
  Action action = Action::kRespond;
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  int delay_ms = 0;  // before replying
};

struct RecordedRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

class FakeHttpServer {
 public:
  using Handler = std::function<ScriptedResponse(const RecordedRequest&)>;

  static absl::StatusOr<std::unique_ptr<FakeHttpServer>> Start();
  ~FakeHttpServer();

  int port() const { return port_; }
  std::string base_url() const;  // "http://127.0.0.1:<port>"

  void Enqueue(ScriptedResponse response);
  void SetDefault(Handler handler);
  std::vector<RecordedRequest> requests() const;
  int request_count() const;

  // Canned provider replies.
  static ScriptedResponse OpenAiReply(const std::string& text, int prompt_tokens = 100,
                                      int completion_tokens = 50);
  static ScriptedResponse AnthropicReply(const std::string& text, int input_tokens = 100,
                                         int output_tokens = 50);
  static ScriptedResponse Status(int status, const std::string& body = "{}",
                                 std::vector<std::pair<std::string, std::string>> headers = {});

 private:
  struct Impl;
  FakeHttpServer();
  void Serve(int fd);
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace pkforge::agent::testing
