// Prompt builder for the LLM agent (design section 8).
//
// A prompt is two messages. The system message holds what is fixed for a job
// (so providers can cache it): the role and rules, the candidate ABI (the text
// of kernels/include/pkforge/candidate.h, embedded at build time), the reply
// format (full file or SEARCH/REPLACE edits) and a sheet of multi-GPU design
// principles. The user message holds the hardware (from the executor's
// DeviceInfo; measured ceilings are said to override the sheet's figures),
// the problem statement, its tensors and reference implementation, the
// feedback of earlier attempts (oldest first) and the current file to improve.
//
// Context budget: token counts are estimated as ceil(bytes / 4) -- close to
// real tokenizers for English and code, and deliberately provider-agnostic.
// When the estimate exceeds PromptInputs::context_tokens the builder trims, in
// this order, until it fits: (1) whole feedback entries, oldest first;
// (2) the principles sheet, replaced by its short form; (3) the reference
// source, cut from the end with a marker. The role, rules, ABI, reply format,
// problem statement and the current file are never trimmed; if they alone
// exceed the budget the prompt is returned anyway with over_budget set.
//
// Threading: pure functions of their inputs; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/llm_client.h"
#include "common/v1_names.h"
#include "pkforge/v1/executor.pb.h"
#include "pkforge/v1/orchestrator.pb.h"

namespace pkforge::agent {

// Estimated tokens of `text`: ceil(size / 4).
int64_t EstimateTokens(std::string_view text);

// One earlier attempt, rendered for the LLM.
struct Feedback {
  std::string title;  // e.g. "Attempt 3 (turn 2): COMPILE_ERROR"
  std::string body;   // what happened, with the details an engineer would want
};

struct RenderLimits {
  size_t compiler_output_chars = 4000;
  size_t stderr_chars = 1500;
  size_t profile_chars = 3000;
  int max_output_checks = 6;
};

// Renders an evaluation result: status and message, compiler output, rank
// failures and timeouts, mismatch details (rank, output, trial, first
// mismatching index and coordinates, expected vs actual, errors vs
// tolerances), failed anti-cheat checks, timings, speedup, % of roofline, bus
// bandwidth, flags, profiler and sanitizer summaries.
std::string RenderResult(const v1::EvaluationResult& result, const RenderLimits& limits = {});

// One line: "OK, 1.23x vs reference, 41% of roofline" / "COMPILE_ERROR".
std::string SummarizeResult(const v1::EvaluationResult& result);

struct PromptInputs {
  const v1::JobSpec* spec = nullptr;         // required
  const v1::ProblemInfo* problem = nullptr;  // required
  const v1::DeviceInfo* device = nullptr;    // required (may be empty)
  std::vector<Feedback> history;             // oldest first
  std::string base_source;                   // the file to improve / edit; "" when none yet
  std::string base_description;              // e.g. "current best: correct, 1.31x faster ..."
  std::string extra_instruction;             // strategy hint, e.g. "candidate 2 of 4: ..."
  int64_t context_tokens = 32000;
};

struct Prompt {
  std::vector<ChatMessage> messages;
  int64_t estimated_tokens = 0;
  int32_t feedback_included = 0;
  int32_t feedback_dropped = 0;
  bool principles_shortened = false;
  bool reference_trimmed = false;
  bool over_budget = false;
};

Prompt BuildPrompt(const PromptInputs& in);

// The reply-format instructions (also used by tests and `pkforge llm check`).
std::string ReplyFormatInstructions(v1::Backend backend);

// "cuda" | "host" | "unspecified", "f32" | "bf16" | ...: the project's one
// table of v1 enum names (common/v1_names.h), re-exported for the agent's callers.
using pkforge::BackendName;
using pkforge::DtypeName;

}  // namespace pkforge::agent
