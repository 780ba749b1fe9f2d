#include "common/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace pkforge {
namespace {

std::mutex& SecretsMu() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}
std::vector<std::string>& Secrets() {
  static auto* v = new std::vector<std::string>;
  return *v;
}

// %* : the message, redacted and (for json) escaped.
class MessageFlag final : public spdlog::custom_flag_formatter {
 public:
  explicit MessageFlag(bool json) : json_(json) {}
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string text = RedactSecrets(std::string_view(msg.payload.data(), msg.payload.size()));
    if (json_) text = JsonEscape(text);
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<MessageFlag>(json_);
  }

 private:
  bool json_;
};

}  // namespace

namespace {

// Length of the well-formed UTF-8 sequence at text[i] (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or 0 when it is not one.
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char c = b(0);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (b(k) < 0x80 || b(k) > 0xBF) return 0;
  return n;
}

}  // namespace

// Invalid UTF-8 (a truncated or binary byte from a compiler message, a
// candidate's output) becomes U+FFFD, so every json log line stays valid JSON.
std::string JsonEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t n = Utf8SequenceLength(text, i);
      if (n == 0) {
        out += "\\ufffd";
      } else {
        out.append(text.data() + i, n);
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

void RegisterSecret(std::string_view secret) {
  if (secret.size() < 4) return;  // too short to redact without mangling text
  std::lock_guard<std::mutex> lock(SecretsMu());
  for (const auto& s : Secrets()) {
    if (s == secret) return;
  }
  Secrets().emplace_back(secret);
}

std::string RedactSecrets(std::string_view text) {
  std::lock_guard<std::mutex> lock(SecretsMu());
  std::string out(text);
  for (const auto& s : Secrets()) absl::StrReplaceAll({{s, "***"}}, &out);
  return out;
}

absl::Status InitLogging(const LoggingOptions& options) {
  auto level = spdlog::level::from_str(options.level);
  if (level == spdlog::level::off && options.level != "off") {
    return absl::InvalidArgumentError(absl::StrCat(
        "log level '", options.level, "': expected trace|debug|info|warn|error|critical|off"));
  }
  if (options.format != "text" && options.format != "json") {
    return absl::InvalidArgumentError(
        absl::StrCat("log format '", options.format, "': expected text|json"));
  }
  spdlog::sink_ptr sink;
  if (options.file.empty()) {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  } else {
    try {
      sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(options.file, /*truncate=*/false);
    } catch (const spdlog::spdlog_ex& e) {
      return absl::UnavailableError(
          absl::StrCat("opening log file ", options.file, ": ", e.what()));
    }
  }
  const bool json = options.format == "json";
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  formatter->add_flag<MessageFlag>('*', json);
  if (json) {
    formatter->set_pattern(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","logger":"%n","thread":%t,"msg":"%*"})");
  } else {
    formatter->set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %L %n] %*");
  }
  sink->set_formatter(std::move(formatter));
  auto logger = std::make_shared<spdlog::logger>(options.name, sink);
  logger->set_level(level);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  return absl::OkStatus();
}

}  // namespace pkforge
