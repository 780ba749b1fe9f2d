// Output conventions shared by every `pkforge` command that prints records:
//
//  - one `-o, --output table|json|csv` option (the formats a command supports;
//    `--json` stays as an alias of `-o json`);
//  - JSON is never assembled by string concatenation: protobuf messages go
//    through ProtoJson (proto field names, i.e. snake_case, and zero values
//    printed), everything else through nlohmann::json;
//  - CSV fields are quoted by CsvField.
//
// Thread safety: plain functions; commands run on the main thread.
#pragma once

#include <CLI/CLI.hpp>
#include <google/protobuf/message.h>

#include <memory>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace pkforge::cli {

enum class OutputFormat { kTable, kJson, kCsv };

// Adds `-o,--output FORMAT` (one of `allowed`, default "table") and the
// `--json` alias to `cmd`; *format is the chosen name after parsing.
// `extra_names` are further long names for -o (e.g. "--format" where that
// spelling existed before).
void AddOutputOption(CLI::App* cmd, std::string* format,
                     const std::vector<std::string>& allowed = {"table", "json", "csv"},
                     const std::string& extra_names = "");

OutputFormat ParseOutputFormat(const std::string& format);

// Proto3 JSON with the .proto field names (snake_case) and every scalar field
// printed, zero values included; `pretty` adds newlines and indentation.
std::string ProtoJson(const google::protobuf::Message& m, bool pretty = true);

// The same, as a parsed nlohmann value, to embed a message in a larger object.
nlohmann::json ProtoJsonValue(const google::protobuf::Message& m);

// Dumps `j` (pretty) with invalid UTF-8 replaced, never throwing.
std::string DumpJson(const nlohmann::json& j, int indent = 2);

// One CSV field (RFC 4180): quoted when it holds a comma, quote or newline.
std::string CsvField(const std::string& s);

// A CSV line from fields, each quoted as needed, ending in "\n".
std::string CsvLine(const std::vector<std::string>& fields);

// "% of roofline" for people: a fraction above 1 means the measurement beat
// the measured ceiling, which a correct kernel cannot; it is reported as
// suspect instead of as a number (issue 18 item 5).
std::string RooflineText(double fraction);
inline constexpr const char* kSuspectRoofline = "suspect (>100% of the measured ceiling)";

}  // namespace pkforge::cli
