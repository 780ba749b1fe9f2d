#include "agent/reply_parser.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

#include "common/status.h"
#include "fmt/format.h"

namespace pkforge::agent {
namespace {

std::string Normalize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') continue;
    out += s[i];
  }
  return out;
}

std::vector<std::string_view> Lines(std::string_view s) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string_view::npos) {
      if (start < s.size()) lines.push_back(s.substr(start));
      break;
    }
    lines.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// "<<<<<<< SEARCH" etc.: 5-9 marker characters, then the word (if any).
bool IsMarker(std::string_view line, char c, std::string_view word) {
  line = Trim(line);
  size_t n = 0;
  while (n < line.size() && line[n] == c) ++n;
  if (n < 5 || n > 9) return false;
  std::string_view rest = Trim(line.substr(n));
  return rest == word;
}

absl::Status FeedbackError(std::string msg) { return absl::InvalidArgumentError(AsAbsl(msg)); }

std::string FirstLine(std::string_view s) {
  std::string_view l = s.substr(0, s.find('\n'));
  if (l.size() > 120) return std::string(l.substr(0, 120)) + "...";
  return std::string(l);
}

size_t CountOccurrences(std::string_view hay, std::string_view needle) {
  size_t count = 0;
  for (size_t pos = hay.find(needle); pos != std::string_view::npos;
       pos = hay.find(needle, pos + 1)) {
    ++count;
  }
  return count;
}

struct EditBlock {
  std::string search, replace;
};

// Returns the blocks, nullopt when the reply has no SEARCH marker at all.
absl::StatusOr<std::optional<std::vector<EditBlock>>> FindEdits(std::string_view text) {
  const auto lines = Lines(text);
  std::vector<EditBlock> blocks;
  bool any = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!IsMarker(lines[i], '<', "SEARCH")) continue;
    any = true;
    const int n = static_cast<int>(blocks.size()) + 1;
    size_t j = i + 1;
    std::string search, replace;
    while (j < lines.size() && !IsMarker(lines[j], '=', "")) {
      if (IsMarker(lines[j], '>', "REPLACE") || IsMarker(lines[j], '<', "SEARCH")) {
        return FeedbackError(fmt::format(
            "edit block {} is malformed: expected a line of ======= between SEARCH and REPLACE",
            n));
      }
      search += std::string(lines[j]) + "\n";
      ++j;
    }
    if (j >= lines.size()) {
      return FeedbackError(
          fmt::format("edit block {} is malformed: no ======= line after SEARCH", n));
    }
    ++j;
    while (j < lines.size() && !IsMarker(lines[j], '>', "REPLACE")) {
      if (IsMarker(lines[j], '<', "SEARCH") || IsMarker(lines[j], '=', "")) {
        return FeedbackError(fmt::format(
            "edit block {} is malformed: no >>>>>>> REPLACE line before the next marker", n));
      }
      replace += std::string(lines[j]) + "\n";
      ++j;
    }
    if (j >= lines.size()) {
      return FeedbackError(fmt::format(
          "edit block {} is malformed: no >>>>>>> REPLACE line (was the reply cut off?)", n));
    }
    blocks.push_back({std::move(search), std::move(replace)});
    i = j;
  }
  if (!any) return std::optional<std::vector<EditBlock>>();
  return std::optional<std::vector<EditBlock>>(std::move(blocks));
}

absl::StatusOr<std::string> ApplyEdits(const std::vector<EditBlock>& blocks, std::string file) {
  for (size_t b = 0; b < blocks.size(); ++b) {
    std::string search = blocks[b].search;
    std::string replace = blocks[b].replace;
    if (Trim(search).empty()) {
      return FeedbackError(
          fmt::format("edit block {} has an empty SEARCH section; copy the exact lines "
                      "to replace from the current file",
                      b + 1));
    }
    // The file may lack a final newline where the search text has one.
    size_t count = CountOccurrences(file, search);
    if (count == 0 && !search.empty() && search.back() == '\n') {
      search.pop_back();
      if (!replace.empty() && replace.back() == '\n') replace.pop_back();
      count = CountOccurrences(file, search);
    }
    if (count == 0) {
      return FeedbackError(fmt::format(
          "edit block {} of {} does not apply: its SEARCH text was not found in the current file "
          "(it starts with: \"{}\"). SEARCH must copy the current file exactly, whitespace "
          "included; earlier blocks are applied first. No edit was applied.",
          b + 1, blocks.size(), FirstLine(search)));
    }
    if (count > 1) {
      return FeedbackError(fmt::format(
          "edit block {} of {} is ambiguous: its SEARCH text occurs {} times in the current file "
          "(it starts with: \"{}\"); include more surrounding lines. No edit was applied.",
          b + 1, blocks.size(), count, FirstLine(search)));
    }
    file.replace(file.find(search), search.size(), replace);
  }
  return file;
}

bool AcceptedLanguage(std::string_view tag) {
  std::string t(Trim(tag));
  // "```cuda title=x.cu" and the like: the first word is the language.
  t = t.substr(0, t.find_first_of(" \t{"));
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  return t.empty() || t == "cuda" || t == "cu" || t == "cpp" || t == "c++" || t == "cxx" ||
         t == "cc" || t == "c";
}

struct Fence {
  std::string lang;
  std::string body;
  bool closed = false;
};

std::vector<Fence> FindFences(std::string_view text) {
  std::vector<Fence> fences;
  const auto lines = Lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view l = Trim(lines[i]);
    if (l.substr(0, 3) != "```" && l.substr(0, 3) != "~~~") continue;
    const std::string_view marker = l.substr(0, 3);
    Fence f;
    f.lang = std::string(l.substr(3));
    size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      if (Trim(lines[j]) == marker) {
        f.closed = true;
        break;
      }
      f.body += std::string(lines[j]) + "\n";
    }
    fences.push_back(std::move(f));
    i = j;
  }
  return fences;
}

}  // namespace

bool MentionsPkfRun(std::string_view source) {
  for (size_t pos = source.find("pkf_run"); pos != std::string_view::npos;
       pos = source.find("pkf_run", pos + 1)) {
    const bool left_ok = pos == 0 || !(std::isalnum(static_cast<unsigned char>(source[pos - 1])) ||
                                       source[pos - 1] == '_');
    size_t k = pos + 7;
    while (k < source.size() && std::isspace(static_cast<unsigned char>(source[k]))) ++k;
    if (left_ok && k < source.size() && source[k] == '(') return true;
  }
  return false;
}

absl::StatusOr<ParsedReply> ParseReply(std::string_view reply, std::string_view base) {
  const std::string text = Normalize(reply);
  ParsedReply out;
  ASSIGN_OR_RETURN(auto edits, FindEdits(text));
  if (edits.has_value()) {
    if (base.empty()) {
      return FeedbackError(
          "the reply has SEARCH/REPLACE edits but there is no current file to apply them to; "
          "reply with a complete file in one fenced code block");
    }
    ASSIGN_OR_RETURN(out.source, ApplyEdits(*edits, Normalize(base)));
    out.kind = ParsedReply::Kind::kEdits;
    out.edits_applied = static_cast<int32_t>(edits->size());
  } else {
    std::vector<Fence> fences = FindFences(text);
    const Fence* chosen = nullptr;
    const Fence* unclosed = nullptr;
    const Fence* longest = nullptr;
    for (const auto& f : fences) {
      if (!AcceptedLanguage(f.lang)) continue;
      if (!f.closed) {
        unclosed = &f;
        continue;
      }
      if (MentionsPkfRun(f.body)) chosen = &f;
      if (longest == nullptr || f.body.size() > longest->body.size()) longest = &f;
    }
    if (chosen == nullptr && unclosed != nullptr) {
      return FeedbackError(
          "the code block is not closed with ``` -- the reply was probably cut off at the token "
          "limit; write a shorter file or use SEARCH/REPLACE edits");
    }
    if (chosen == nullptr && longest == nullptr) {
      return FeedbackError(
          "the reply contains no code: reply with one complete file in a fenced code block "
          "(```cuda or ```cpp) or with SEARCH/REPLACE edit blocks");
    }
    out.source = (chosen != nullptr ? chosen : longest)->body;
    out.kind = ParsedReply::Kind::kFullFile;
  }
  if (Trim(out.source).empty()) return FeedbackError("the resulting file is empty");
  if (out.source.size() > kMaxCandidateBytes) {
    return FeedbackError(fmt::format("the file is {} bytes, more than the {} byte limit",
                                     out.source.size(), kMaxCandidateBytes));
  }
  if (!MentionsPkfRun(out.source)) {
    return FeedbackError(
        "the file does not define pkf_run: every candidate must export extern \"C\" int "
        "pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out, int32_t "
        "n_out, void* stream)");
  }
  return out;
}

}  // namespace pkforge::agent
