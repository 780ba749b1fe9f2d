#include "cli/output.h"

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_join.h"
#include "fmt/format.h"

namespace pkforge::cli {

void AddOutputOption(CLI::App* cmd, std::string* format, const std::vector<std::string>& allowed,
                     const std::string& extra_names) {
  *format = "table";
  std::string names = "-o,--output";
  if (!extra_names.empty()) names += "," + extra_names;
  cmd->add_option(names, *format, absl::StrJoin(allowed, " | "))
      ->check(CLI::IsMember(allowed))
      ->capture_default_str();
  cmd->add_flag_callback(
      "--json", [format] { *format = "json"; }, "Same as -o json");
}

OutputFormat ParseOutputFormat(const std::string& format) {
  if (format == "json") return OutputFormat::kJson;
  if (format == "csv") return OutputFormat::kCsv;
  return OutputFormat::kTable;
}

std::string ProtoJson(const google::protobuf::Message& m, bool pretty) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = pretty;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  if (pretty && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

nlohmann::json ProtoJsonValue(const google::protobuf::Message& m) {
  return nlohmann::json::parse(ProtoJson(m, /*pretty=*/false), nullptr, /*allow_exceptions=*/false);
}

std::string DumpJson(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string CsvLine(const std::vector<std::string>& fields) {
  std::vector<std::string> quoted;
  quoted.reserve(fields.size());
  for (const auto& f : fields) quoted.push_back(CsvField(f));
  return absl::StrJoin(quoted, ",") + "\n";
}

std::string RooflineText(double fraction) {
  if (fraction > 1.0) return kSuspectRoofline;
  return fmt::format("{:.1f}% of the roofline", 100 * fraction);
}

}  // namespace pkforge::cli
