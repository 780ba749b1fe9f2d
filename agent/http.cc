#include "agent/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>

#include "common/logging.h"
#include "common/status.h"
#include "fmt/format.h"

namespace pkforge::agent {
namespace {

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
  const CancelToken* cancel = nullptr;
  HttpResponse* response = nullptr;
  int64_t max_bytes = 0;
  bool too_large = false;
};

size_t OnBody(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * nmemb;
  if (static_cast<int64_t>(t->response->body.size() + n) > t->max_bytes) {
    t->too_large = true;
    return 0;  // makes curl fail with CURLE_WRITE_ERROR
  }
  t->response->body.append(data, n);
  return n;
}

size_t OnHeader(char* data, size_t size, size_t nitems, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * nitems;
  std::string line(data, n);
  // A new status line (e.g. after "100 Continue") starts a new header set.
  if (line.rfind("HTTP/", 0) == 0) t->response->headers.clear();
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    std::string value = line.substr(colon + 1);
    const size_t b = value.find_first_not_of(" \t");
    const size_t e = value.find_last_not_of(" \t\r\n");
    value = (b == std::string::npos) ? "" : value.substr(b, e - b + 1);
    t->response->headers[name] = value;
  }
  return n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->cancel->IsCancelled() ? 1 : 0;  // non-zero aborts the transfer
}

absl::Status CurlError(CURLcode code, const char* errbuf, const std::string& url,
                       double timeout_ms) {
  std::string detail = (errbuf != nullptr && errbuf[0] != '\0') ? errbuf : curl_easy_strerror(code);
  while (!detail.empty() && (detail.back() == '\n' || detail.back() == '\r')) detail.pop_back();
  const std::string msg = RedactSecrets(fmt::format("POST {}: {}", url, detail));
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return absl::DeadlineExceededError(
          AsAbsl(fmt::format("{} (attempt timeout {:.0f} ms)", msg, timeout_ms)));
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return absl::InvalidArgumentError(AsAbsl(msg));
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_ISSUER_ERROR:
      return absl::FailedPreconditionError(AsAbsl("TLS verification failed: " + msg));
    default:
      return absl::UnavailableError(AsAbsl(msg));
  }
}

}  // namespace

int64_t ParseRetryAfterMs(const std::string& value, int64_t now_wall_s) {
  if (value.empty()) return -1;
  char* end = nullptr;
  const double secs = std::strtod(value.c_str(), &end);
  if (end != value.c_str() && *end == '\0') {
    if (!std::isfinite(secs) || secs < 0) return -1;
    return static_cast<int64_t>(secs * 1000.0);
  }
  const time_t when = curl_getdate(value.c_str(), nullptr);
  if (when < 0) return -1;
  return std::max<int64_t>(0, (static_cast<int64_t>(when) - now_wall_s) * 1000);
}

absl::StatusOr<HttpResponse> HttpPost(const HttpRequest& request, const CancelToken& cancel) {
  GlobalInitOnce();
  RETURN_IF_ERROR(cancel.status());

  double timeout_ms = request.timeout_s * 1000.0;
  const int64_t remaining_us = cancel.RemainingMicros();
  bool bounded_by_deadline = false;
  if (remaining_us != CancelToken::kNoDeadline &&
      static_cast<double>(remaining_us) / 1000.0 <= timeout_ms) {
    timeout_ms = static_cast<double>(remaining_us) / 1000.0;
    bounded_by_deadline = true;
  }
  timeout_ms = std::max(timeout_ms, 1.0);

  CURL* easy = curl_easy_init();
  if (easy == nullptr) return absl::InternalError("curl_easy_init failed");
  CURLM* multi = curl_multi_init();
  if (multi == nullptr) {
    curl_easy_cleanup(easy);
    return absl::InternalError("curl_multi_init failed");
  }

  HttpResponse response;
  Transfer transfer{&cancel, &response, request.max_response_bytes};
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  for (const auto& h : request.headers) headers = curl_slist_append(headers, h.c_str());

  curl_easy_setopt(easy, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(easy, CURLOPT_POST, 1L);
  curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(easy, CURLOPT_USERAGENT, request.user_agent.c_str());
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!request.ca_bundle.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, request.ca_bundle.c_str());
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM-based DNS timeouts
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::max(1.0, request.connect_timeout_s * 1000.0)));
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(easy, CURLOPT_XFERINFODATA, &transfer);
  curl_multi_add_handle(multi, easy);

  // Cancellation wakes the poll loop at once instead of waiting for the next
  // progress tick (about one per second on an idle connection).
  const CancelToken::CallbackId wake = cancel.AddCallback([multi] { curl_multi_wakeup(multi); });

  const auto start = std::chrono::steady_clock::now();
  bool cancelled = false;
  CURLcode result = CURLE_OK;
  bool done = false;
  while (!done) {
    int running = 0;
    const CURLMcode mc = curl_multi_perform(multi, &running);
    if (mc != CURLM_OK) {
      result = CURLE_RECV_ERROR;
      std::snprintf(errbuf, sizeof(errbuf), "curl_multi_perform: %s", curl_multi_strerror(mc));
      break;
    }
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg == CURLMSG_DONE) {
        result = msg->data.result;
        done = true;
      }
    }
    if (done) break;
    if (cancel.IsCancelled()) {
      cancelled = true;
      break;
    }
    curl_multi_poll(multi, nullptr, 0, /*timeout_ms=*/100, nullptr);
  }
  cancel.RemoveCallback(wake);

  long code = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
  response.status = static_cast<int>(code);
  response.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  curl_multi_remove_handle(multi, easy);
  curl_multi_cleanup(multi);
  curl_easy_cleanup(easy);
  curl_slist_free_all(headers);

  if (cancelled || result == CURLE_ABORTED_BY_CALLBACK) {
    absl::Status s = cancel.status();
    if (!s.ok()) return s;
    return absl::CancelledError("transfer aborted");
  }
  if (transfer.too_large) {
    return absl::ResourceExhaustedError(
        AsAbsl(fmt::format("POST {}: response larger than {} bytes", RedactSecrets(request.url),
                           request.max_response_bytes)));
  }
  if (result != CURLE_OK) {
    // The job's deadline, not the attempt's timeout, may be what expired.
    // curl's timer can fire a millisecond early; wait for the deadline to
    // really pass so callers see DEADLINE_EXCEEDED from the token and stop,
    // instead of a retryable timeout with a sliver of budget left.
    if (result == CURLE_OPERATION_TIMEDOUT && bounded_by_deadline) {
      const int64_t left = cancel.RemainingMicros();
      if (left > 0 && left < 50'000) (void)cancel.SleepFor(left + 500);
    }
    absl::Status s = cancel.status();
    if (result == CURLE_OPERATION_TIMEDOUT && !s.ok()) return s;
    return CurlError(result, errbuf, request.url, timeout_ms);
  }
  return response;
}

}  // namespace pkforge::agent
