// The LLM agent: sequential, best_of_n and tree strategies (see agent.h).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "agent/job_context.h"
#include "agent/reply_parser.h"
#include "common/status.h"
#include "fmt/format.h"

namespace pkforge::agent::internal {
namespace {

bool IsCorrect(const v1::EvaluationResult& r) {
  return r.status() == v1::EvaluationResult::OK && r.has_speedup() && std::isfinite(r.speedup()) &&
         r.speedup() > 0;
}

// Higher is better: correct candidates by speedup, then failures that are
// closest to working (a wrong answer is nearer than a compile error).
double Score(const v1::EvaluationResult& r) {
  if (IsCorrect(r)) return r.speedup();
  switch (r.status()) {
    case v1::EvaluationResult::WRONG_OUTPUT:
      return -1;
    case v1::EvaluationResult::RUNTIME_ERROR:
    case v1::EvaluationResult::TIMEOUT:
    case v1::EvaluationResult::SETUP_ERROR:
      return -2;
    case v1::EvaluationResult::CHEAT_DETECTED:
      return -3;
    case v1::EvaluationResult::HARNESS_ERROR:  // not the candidate's doing
      return -2;
    default:  // COMPILE_ERROR, unknown
      return -4;
  }
}

// One proposal within a turn: prompt, call, parse, evaluate.
struct Work {
  // Inputs.
  int attempt = 0;
  std::string label;  // "turn 3" or "turn 3, candidate 2 of 4"
  std::vector<Feedback> history;
  std::string base_source, base_sha, base_description;
  std::string extra_instruction;
  int parent_node = -1;  // tree
  // Outputs.
  absl::Status fatal;    // the job must fail
  bool skipped = false;  // no evaluation slot left
  bool cancelled = false;
  std::optional<Feedback> feedback;
  bool evaluated = false;
  std::string source, sha;
  v1::EvaluationResult result;
};

struct Node {
  int id = 0;
  int parent = -1;
  std::string source, sha;
  v1::EvaluationResult result;
  double score = 0;
  std::vector<Feedback> lineage;         // ancestors' attempts and its own
  std::vector<Feedback> child_feedback;  // replies for this node that could not be evaluated
};

class LlmAgent final : public Agent {
 public:
  LlmAgent(AgentEnv env, AgentOptions options, std::unique_ptr<LlmClient> owned)
      : ctx_(env, options), owned_client_(std::move(owned)) {
    client_ = env.llm != nullptr ? env.llm : owned_client_.get();
  }

  absl::StatusOr<AgentResult> Run() override {
    const v1::StrategyKind kind = ctx_.spec().agent().strategy().kind();
    absl::StatusOr<StopReason> stop = kind == v1::STRATEGY_TREE ? RunTree() : RunRounds();
    if (!stop.ok()) return stop.status();
    return ctx_.Finish(*stop);
  }

 private:
  const v1::LlmConfig& llm() const { return ctx_.spec().agent().llm(); }

  int32_t MaxTokens() const {
    return llm().max_tokens() > 0 ? llm().max_tokens() : ctx_.options().default_max_tokens;
  }
  int64_t ContextTokens() const {
    return llm().context_tokens() > 0 ? llm().context_tokens()
                                      : ctx_.options().default_context_tokens;
  }

  void DoWork(const std::string& turn_id, Work& w) {
    if (!ctx_.TryReserveEvaluation()) {
      w.skipped = true;
      return;
    }
    PromptInputs in;
    in.spec = &ctx_.spec();
    in.problem = &ctx_.env().problem;
    in.device = &ctx_.env().device;
    in.history = w.history;
    in.base_source = w.base_source;
    in.base_description = w.base_description;
    in.extra_instruction = w.extra_instruction;
    in.context_tokens = ContextTokens();
    const Prompt prompt = BuildPrompt(in);
    if (prompt.over_budget) {
      absl::Status s = ctx_.Log(
          turn_id, "warn",
          fmt::format("prompt of ~{} tokens exceeds the context budget of {} even after trimming",
                      prompt.estimated_tokens, in.context_tokens));
      if (!s.ok()) {
        ctx_.ReleaseEvaluation();
        w.fatal = s;
        return;
      }
    }

    auto call = ctx_.CallLlm(*client_, turn_id, prompt.messages, llm().temperature(), MaxTokens());
    if (!call.ok()) {
      ctx_.ReleaseEvaluation();
      w.fatal = call.status();
      return;
    }
    const LlmResult& r = call->result;
    if (!r.status.ok()) {
      ctx_.ReleaseEvaluation();
      if (ctx_.token().IsCancelled()) {
        w.cancelled = true;
      } else if (IsPermanentLlmError(r.status)) {
        w.fatal = Annotate(r.status, "LLM provider error that retrying cannot fix");
      } else {
        w.fatal = ctx_.Failure(JobContext::Kind::kLlm, r.status);
      }
      return;
    }
    ctx_.Success(JobContext::Kind::kLlm);

    auto parsed = ParseReply(r.text, w.base_source);
    if (!parsed.ok()) {
      ctx_.ReleaseEvaluation();
      std::string body(parsed.status().message());
      if (r.finish_reason == "length" || r.finish_reason == "max_tokens") {
        body += fmt::format(" (the reply stopped at the {} token limit)", MaxTokens());
      }
      w.feedback =
          Feedback{fmt::format("Attempt {} ({}): reply not usable", w.attempt, w.label), body};
      absl::Status s = ctx_.Log(turn_id, "info", "reply not usable: " + body);
      if (!s.ok()) w.fatal = s;
      return;
    }
    const bool edits = parsed->kind == ParsedReply::Kind::kEdits;
    auto ev = ctx_.Evaluate(turn_id, parsed->source, edits ? "llm:edits" : "llm:file", w.base_sha,
                            call->call_id);
    if (!ev.ok()) {
      w.fatal = ev.status();
      return;
    }
    if (!ev->error.ok()) {
      if (ctx_.token().IsCancelled()) {
        w.cancelled = true;
      } else {
        w.fatal = ctx_.Failure(JobContext::Kind::kEvaluation, ev->error);
        absl::Status s =
            ctx_.Log(turn_id, "warn", "evaluation without result: " + ev->error.ToString());
        if (w.fatal.ok() && !s.ok()) w.fatal = s;
      }
      return;
    }
    ctx_.Success(JobContext::Kind::kEvaluation);
    w.evaluated = true;
    w.source = std::move(parsed->source);
    w.sha = ev->sha256;
    w.result = ev->result;
    std::string how =
        edits ? fmt::format("{} SEARCH/REPLACE edit(s) applied to the {}.", parsed->edits_applied,
                            w.base_description.empty() ? "current file" : w.base_description)
              : "A complete file.";
    w.feedback =
        Feedback{fmt::format("Attempt {} ({}): {}", w.attempt, w.label, SummarizeResult(w.result)),
                 how + "\n" + RenderResult(w.result, ctx_.options().render)};
  }

  // Runs the works of one turn (concurrently when more than one).
  absl::Status RunWorks(const std::string& turn_id, std::vector<Work>& works) {
    RunConcurrently(static_cast<int>(works.size()), [&](int i) { DoWork(turn_id, works[i]); });
    for (const auto& w : works) RETURN_IF_ERROR(w.fatal);
    return absl::OkStatus();
  }

  // sequential (n = 1) and best_of_n.
  // A turn begun in the trajectory with `k` works, each numbered as the
  // next attempt (the sequential/best_of_n and tree strategies share this).
  struct OpenTurn {
    std::string id;
    int index = 0;  // 1-based, as the model is told
    std::vector<Work> works;
  };
  absl::StatusOr<OpenTurn> StartTurn(const std::string& note, int k) {
    ASSIGN_OR_RETURN(TurnInfo turn, ctx_.BeginTurn(note));
    OpenTurn open{turn.id, turn.index + 1, std::vector<Work>(static_cast<size_t>(k))};
    for (Work& w : open.works) w.attempt = ++attempts_;
    return open;
  }

  absl::StatusOr<StopReason> RunRounds() {
    const auto& strategy = ctx_.spec().agent().strategy();
    const bool best_of_n = strategy.kind() == v1::STRATEGY_BEST_OF_N;
    const int n =
        best_of_n ? (strategy.n() > 0 ? strategy.n() : ctx_.options().default_best_of_n) : 1;
    while (true) {
      if (auto stop = ctx_.CheckStop(/*starting_turn=*/true)) return *stop;
      const int k = std::max(1, std::min(n, ctx_.RemainingEvaluations()));
      std::string base_source, base_sha, base_desc;
      if (best_) {
        base_source = best_->source;
        base_sha = best_->sha;
        base_desc = "current best: " + SummarizeResult(best_->result);
      } else if (latest_) {
        base_source = latest_->source;
        base_sha = latest_->sha;
        base_desc = "most recent candidate, not correct yet: " + SummarizeResult(latest_->result);
      }
      const std::string note =
          best_of_n ? fmt::format("best_of_n: {} candidates from {}", k,
                                  base_desc.empty() ? "scratch" : base_desc)
                    : fmt::format("sequential: refine {}",
                                  base_desc.empty() ? "nothing yet (first file)" : base_desc);
      ASSIGN_OR_RETURN(OpenTurn turn, StartTurn(note, k));
      const std::string& turn_id = turn.id;
      const int turn_index = turn.index;
      std::vector<Work>& works = turn.works;
      for (int i = 0; i < k; ++i) {
        Work& w = works[i];
        w.label = k > 1 ? fmt::format("turn {}, candidate {} of {}", turn_index, i + 1, k)
                        : fmt::format("turn {}", turn_index);
        w.history = history_;
        w.base_source = base_source;
        w.base_sha = base_sha;
        w.base_description = base_desc;
        if (k > 1) {
          w.extra_instruction = fmt::format(
              "This is candidate {} of {} written from the same prompt in this turn; the best one "
              "is kept. Take a distinct approach (mechanism, schedule, tile or SM count) rather "
              "than the most obvious one.",
              i + 1, k);
        }
      }
      RETURN_IF_ERROR(RunWorks(turn_id, works));
      for (auto& w : works) {
        if (w.feedback) history_.push_back(*w.feedback);
        if (!w.evaluated) continue;
        Candidate c{w.source, w.sha, w.result};
        latest_ = c;
        if (IsCorrect(w.result) && (!best_ || w.result.speedup() > best_->result.speedup()))
          best_ = c;
      }
    }
  }

  absl::StatusOr<StopReason> RunTree() {
    const auto& strategy = ctx_.spec().agent().strategy();
    const int top_k = strategy.top_k() > 0 ? strategy.top_k() : ctx_.options().default_top_k;
    const int population_cap =
        std::max(top_k, strategy.population() > 0 ? strategy.population()
                                                  : ctx_.options().default_population);
    while (true) {
      if (auto stop = ctx_.CheckStop(/*starting_turn=*/true)) return *stop;
      const int k = std::max(1, std::min(top_k, ctx_.RemainingEvaluations()));
      // Best first; among equals the newest.
      std::sort(population_.begin(), population_.end(), [&](int a, int b) {
        if (nodes_[a].score != nodes_[b].score) return nodes_[a].score > nodes_[b].score;
        return a > b;
      });
      std::vector<int> parents;
      for (int i = 0; i < k; ++i) {
        parents.push_back(population_.empty() ? -1 : population_[i % population_.size()]);
      }
      std::string note =
          population_.empty()
              ? fmt::format("tree: {} root candidates", k)
              : fmt::format("tree: expand {} of {} nodes (best {})", k, population_.size(),
                            SummarizeResult(nodes_[population_[0]].result));
      ASSIGN_OR_RETURN(OpenTurn turn, StartTurn(note, k));
      const std::string& turn_id = turn.id;
      const int turn_index = turn.index;
      std::vector<Work>& works = turn.works;
      for (int i = 0; i < k; ++i) {
        Work& w = works[i];
        w.parent_node = parents[i];
        if (parents[i] < 0) {
          w.label = fmt::format("turn {}, root candidate {} of {}", turn_index, i + 1, k);
          w.history = root_feedback_;
          w.extra_instruction =
              "You are writing one of several independent first candidates of a "
              "search tree; take a distinct approach.";
        } else {
          const Node& p = nodes_[parents[i]];
          w.label = fmt::format("turn {}, expanding node {}", turn_index, p.id);
          w.history = p.lineage;
          w.history.insert(w.history.end(), p.child_feedback.begin(), p.child_feedback.end());
          w.base_source = p.source;
          w.base_sha = p.sha;
          w.base_description = fmt::format("node {}: {}", p.id, SummarizeResult(p.result));
          w.extra_instruction = fmt::format(
              "You are refining node {} of a search tree that keeps the {} best candidates; the "
              "feedback above is this node's lineage.",
              p.id, population_cap);
        }
      }
      RETURN_IF_ERROR(RunWorks(turn_id, works));
      for (auto& w : works) {
        if (!w.feedback) continue;
        if (!w.evaluated) {
          (w.parent_node < 0 ? root_feedback_ : nodes_[w.parent_node].child_feedback)
              .push_back(*w.feedback);
          continue;
        }
        Node node;
        node.id = static_cast<int>(nodes_.size());
        node.parent = w.parent_node;
        node.source = std::move(w.source);
        node.sha = w.sha;
        node.result = w.result;
        node.score = Score(w.result);
        node.lineage = w.parent_node < 0 ? root_feedback_ : nodes_[w.parent_node].lineage;
        node.lineage.push_back(*w.feedback);
        nodes_.push_back(std::move(node));
        population_.push_back(nodes_.back().id);
      }
      std::sort(population_.begin(), population_.end(), [&](int a, int b) {
        if (nodes_[a].score != nodes_[b].score) return nodes_[a].score > nodes_[b].score;
        return a > b;
      });
      if (static_cast<int>(population_.size()) > population_cap) population_.resize(population_cap);
    }
  }

  struct Candidate {
    std::string source, sha;
    v1::EvaluationResult result;
  };

  JobContext ctx_;
  std::unique_ptr<LlmClient> owned_client_;
  const LlmClient* client_ = nullptr;
  int attempts_ = 0;
  // sequential / best_of_n
  std::vector<Feedback> history_;
  std::optional<Candidate> best_, latest_;
  // tree
  std::vector<Node> nodes_;
  std::vector<int> population_;
  std::vector<Feedback> root_feedback_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Agent>> MakeLlmAgent(AgentEnv env, AgentOptions options) {
  std::unique_ptr<LlmClient> owned;
  if (env.llm == nullptr) {
    LlmClientOptions client_options = options.llm;
    if (!env.llm_api_key.empty()) client_options.api_key = env.llm_api_key;
    ASSIGN_OR_RETURN(owned, MakeLlmClient(env.spec.agent().llm(), std::move(client_options)));
  }
  return std::unique_ptr<Agent>(new LlmAgent(std::move(env), std::move(options), std::move(owned)));
}

}  // namespace pkforge::agent::internal
