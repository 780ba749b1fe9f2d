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

std::string JsonEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (unsigned char c : text) {
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
