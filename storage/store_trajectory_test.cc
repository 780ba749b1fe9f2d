// The trajectory store: turns, LLM calls, candidates and evaluations (the
// job's best speedup), input validation, and events (sequence numbers,
// statistics, reopening, a failed batch, a held write lock). Helpers in
// store_test_util.h.

#include <sqlite3.h>

#include <cctype>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/ids.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/store.h"
#include "storage/store_test_util.h"

namespace pkforge::storage {
namespace {

using ::testing::HasSubstr;

// --------------------------------------------------------------- trajectory

TEST_F(StoreTest, TurnsAndLlmCallsRoundTrip) {
  std::string job = NewJob();
  TurnRecord t1{NewId("turn"), job, 1, 2000, 20, "refine"};
  TurnRecord t0{NewId("turn"), job, 0, 1000, 10, "initial"};
  ASSERT_TRUE(store_->AddTurn(t1).ok());
  ASSERT_TRUE(store_->AddTurn(t0).ok());
  TurnRecord dup_index{NewId("turn"), job, 1, 3000, 30, ""};
  EXPECT_TRUE(absl::IsAlreadyExists(store_->AddTurn(dup_index)));
  EXPECT_TRUE(absl::IsAlreadyExists(store_->AddTurn(t0)));
  auto turns = store_->ListTurns(job);
  ASSERT_TRUE(turns.ok());
  ASSERT_EQ(turns->size(), 2u);
  EXPECT_EQ((*turns)[0].id, t0.id);
  EXPECT_EQ((*turns)[0].note, "initial");
  EXPECT_EQ((*turns)[1].id, t1.id);
  EXPECT_EQ((*turns)[1].started_wall_us, 2000);
  EXPECT_EQ((*turns)[1].elapsed_ms, 20);

  LlmCallRecord call;
  call.id = NewId("llm");
  call.job_id = job;
  call.turn_id = t0.id;
  call.provider = "openai";
  call.model = "gpt-x";
  call.prompt = R"([{"role":"user","content":"write a kernel"}])";
  call.reply = std::string("line1\nline2\0binary", 18);
  call.prompt_tokens = 1234;
  call.completion_tokens = 567;
  call.latency_ms = 8123.5;
  call.cost_usd = 0.0125;
  call.attempts = 3;
  call.error = "";
  call.wall_us = 1'700'000'000'300'000;
  call.elapsed_ms = 15;
  ASSERT_TRUE(store_->AddLlmCall(call).ok());
  LlmCallRecord no_turn = call;
  no_turn.id = NewId("llm");
  no_turn.turn_id = "";
  no_turn.elapsed_ms = 5;
  no_turn.error = "rate limited";
  ASSERT_TRUE(store_->AddLlmCall(no_turn).ok());

  auto calls = store_->ListLlmCalls(job);
  ASSERT_TRUE(calls.ok());
  ASSERT_EQ(calls->size(), 2u);
  EXPECT_EQ((*calls)[0].id, no_turn.id);  // elapsed order
  EXPECT_EQ((*calls)[0].turn_id, "");
  EXPECT_EQ((*calls)[0].error, "rate limited");
  const LlmCallRecord& c = (*calls)[1];
  EXPECT_EQ(c.id, call.id);
  EXPECT_EQ(c.turn_id, t0.id);
  EXPECT_EQ(c.provider, "openai");
  EXPECT_EQ(c.prompt, call.prompt);
  EXPECT_EQ(c.reply, call.reply);
  EXPECT_EQ(c.prompt_tokens, 1234);
  EXPECT_EQ(c.completion_tokens, 567);
  EXPECT_DOUBLE_EQ(c.latency_ms, 8123.5);
  EXPECT_DOUBLE_EQ(c.cost_usd, 0.0125);
  EXPECT_EQ(c.attempts, 3);
  EXPECT_EQ(c.wall_us, call.wall_us);

  // A turn of another job, or an unknown turn, is refused.
  std::string other = NewJob();
  LlmCallRecord wrong_turn = call;
  wrong_turn.id = NewId("llm");
  wrong_turn.job_id = other;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AddLlmCall(wrong_turn)));
  wrong_turn.turn_id = NewId("turn");
  EXPECT_TRUE(absl::IsNotFound(store_->AddLlmCall(wrong_turn)));
  EXPECT_TRUE(store_->ListLlmCalls(other)->empty());
  EXPECT_TRUE(absl::IsNotFound(store_->ListTurns(NewId("job")).status()));
}

TEST_F(StoreTest, CandidatesAreDeduplicatedAndHashChecked) {
  CandidateRecord c = MakeCandidate("__global__ void k() {}");
  auto first = store_->PutCandidate(c);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(*first);
  CandidateRecord again = c;
  again.first_seen_wall_us = 1'800'000'000'000'000;
  auto second = store_->PutCandidate(again);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(*second);
  auto got = store_->GetCandidate(c.sha256);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->source, c.source);
  EXPECT_EQ(got->backend, "cuda");
  EXPECT_EQ(got->first_seen_wall_us, c.first_seen_wall_us);  // the first sighting wins
  EXPECT_EQ(CountRows("candidates"), 1);

  CandidateRecord lying = MakeCandidate("a");
  lying.source = "b";
  absl::Status s = store_->PutCandidate(lying).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(std::string(s.message()), HasSubstr("sha256"));
  CandidateRecord upper = MakeCandidate("c");
  for (char& ch : upper.sha256) ch = static_cast<char>(toupper(ch));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->PutCandidate(upper).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->PutCandidate(MakeCandidate("")).status()));
  EXPECT_EQ(CountRows("candidates"), 1);
  EXPECT_TRUE(absl::IsNotFound(store_->GetCandidate(Sha256Hex("zzz")).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->GetCandidate("abc").status()));
}

TEST_F(StoreTest, EvaluationsRoundTripAndMaintainBestSpeedup) {
  std::string job = NewJob();
  CandidateRecord c1 = MakeCandidate("k1");
  CandidateRecord c2 = MakeCandidate("k2");
  ASSERT_TRUE(store_->PutCandidate(c1).ok());
  ASSERT_TRUE(store_->PutCandidate(c2).ok());
  TurnRecord turn{NewId("turn"), job, 0, 1, 0, ""};
  ASSERT_TRUE(store_->AddTurn(turn).ok());

  EvaluationRecord e1 = MakeEval(job, c1.sha256, 1.2, true, 3000);
  e1.turn_id = turn.id;
  ASSERT_TRUE(store_->AddEvaluation(e1).ok());
  EXPECT_DOUBLE_EQ(*store_->GetJob(job)->best_speedup, 1.2);
  EXPECT_EQ(store_->GetJob(job)->best_evaluation_id, e1.id);

  // Faster but wrong: no effect on best.
  EvaluationRecord wrong = MakeEval(job, c2.sha256, 9.0, false, 4000);
  ASSERT_TRUE(store_->AddEvaluation(wrong).ok());
  EXPECT_DOUBLE_EQ(*store_->GetJob(job)->best_speedup, 1.2);

  EvaluationRecord e2 = MakeEval(job, c2.sha256, 1.7, true, 5000);
  ASSERT_TRUE(store_->AddEvaluation(e2).ok());
  EXPECT_DOUBLE_EQ(*store_->GetJob(job)->best_speedup, 1.7);
  EXPECT_EQ(store_->GetJob(job)->best_evaluation_id, e2.id);

  // Slower or equal: the earlier best keeps the credit.
  ASSERT_TRUE(store_->AddEvaluation(MakeEval(job, c1.sha256, 1.1, true, 6000)).ok());
  ASSERT_TRUE(store_->AddEvaluation(MakeEval(job, c1.sha256, 1.7, true, 7000)).ok());
  EXPECT_EQ(store_->GetJob(job)->best_evaluation_id, e2.id);

  // Correct but untimed: recorded, best untouched.
  EvaluationRecord untimed = MakeEval(job, c1.sha256, std::nullopt, true, 500);
  untimed.candidate_median_us.reset();
  untimed.reference_median_us.reset();
  untimed.roofline_fraction.reset();
  ASSERT_TRUE(store_->AddEvaluation(untimed).ok());
  EXPECT_EQ(store_->GetJob(job)->best_evaluation_id, e2.id);

  auto evals = store_->ListEvaluations(job);
  ASSERT_TRUE(evals.ok());
  ASSERT_EQ(evals->size(), 6u);
  for (size_t i = 1; i < evals->size(); ++i) {
    EXPECT_LE((*evals)[i - 1].elapsed_ms, (*evals)[i].elapsed_ms);
  }
  const EvaluationRecord& u = (*evals)[0];
  EXPECT_EQ(u.id, untimed.id);
  EXPECT_FALSE(u.speedup.has_value());
  EXPECT_FALSE(u.candidate_median_us.has_value());
  EXPECT_FALSE(u.roofline_fraction.has_value());
  const EvaluationRecord& g = (*evals)[1];
  EXPECT_EQ(g.id, e1.id);
  EXPECT_EQ(g.turn_id, turn.id);
  EXPECT_EQ(g.candidate_sha256, c1.sha256);
  EXPECT_EQ(g.status, "OK");
  EXPECT_TRUE(g.correct);
  EXPECT_DOUBLE_EQ(*g.speedup, 1.2);
  EXPECT_DOUBLE_EQ(*g.candidate_median_us, 10.0);
  EXPECT_DOUBLE_EQ(*g.reference_median_us, 12.0);
  EXPECT_DOUBLE_EQ(*g.roofline_fraction, 0.5);
  EXPECT_EQ(g.result_json, e1.result_json);
  EXPECT_EQ(g.executor, "exec-0:7000");
  EXPECT_DOUBLE_EQ(g.queue_ms, 1.5);
  EXPECT_DOUBLE_EQ(g.compile_ms, 1200.25);
  EXPECT_DOUBLE_EQ(g.run_ms, 3000.5);
  EXPECT_EQ(g.wall_us, e1.wall_us);
  EXPECT_EQ((*evals)[2].status, "WRONG_OUTPUT");
  EXPECT_FALSE((*evals)[2].correct);

  EXPECT_TRUE(absl::IsAlreadyExists(store_->AddEvaluation(e1)));
}

// Successive-halving rungs at other iteration counts and the final
// re-measurement are stored with their settings and role, and stay out of
// the job's best and its evaluation count (issue #18 item 5).
TEST_F(StoreTest, RungsAtOtherSettingsAndTheFinalMeasurementStayOutOfTheBest) {
  std::string job = NewJob();
  CandidateRecord a = MakeCandidate("rung winner");
  CandidateRecord b = MakeCandidate("official");
  ASSERT_TRUE(store_->PutCandidate(a).ok());
  ASSERT_TRUE(store_->PutCandidate(b).ok());
  EvaluationRecord rung = MakeEval(job, a.sha256, 10.2, true, 100);
  rung.timed_iters = 10;
  rung.trials = 5;
  rung.comparable = false;
  ASSERT_TRUE(store_->AddEvaluation(rung).ok());
  EXPECT_FALSE(store_->GetJob(job)->best_speedup.has_value()) << "a rung made the best";
  EvaluationRecord official = MakeEval(job, b.sha256, 2.7, true, 200);
  ASSERT_TRUE(store_->AddEvaluation(official).ok());
  EXPECT_DOUBLE_EQ(*store_->GetJob(job)->best_speedup, 2.7);
  EvaluationRecord final_eval = MakeEval(job, a.sha256, 3.1, true, 300);
  final_eval.role = kRoleFinal;
  final_eval.roofline_fraction = 0.4;
  ASSERT_TRUE(store_->AddEvaluation(final_eval).ok());
  EXPECT_DOUBLE_EQ(*store_->GetJob(job)->best_speedup, 2.7) << "the final measurement made the best";
  EXPECT_EQ(store_->GetJob(job)->best_evaluation_id, official.id);

  auto evals = store_->ListEvaluations(job);
  ASSERT_TRUE(evals.ok());
  ASSERT_EQ(evals->size(), 3u);
  EXPECT_EQ((*evals)[0].timed_iters, 10);
  EXPECT_EQ((*evals)[0].trials, 5);
  EXPECT_FALSE((*evals)[0].comparable);
  EXPECT_EQ((*evals)[0].role, "search");
  EXPECT_TRUE((*evals)[1].comparable);
  EXPECT_EQ((*evals)[2].role, "final");

  auto s = store_->GetJobStats(job);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->evaluations, 2);
  EXPECT_EQ(s->last_evaluation_status, "OK");
  EXPECT_EQ(s->best_candidate_sha256, b.sha256);
  EXPECT_EQ(s->other_evaluations, 1);
  EXPECT_DOUBLE_EQ(s->other_best_speedup.value_or(0), 10.2);
  EXPECT_EQ(s->final_evaluation_id, final_eval.id);
  EXPECT_EQ(s->final_status, "OK");
  EXPECT_EQ(s->final_candidate_sha256, a.sha256);
  EXPECT_DOUBLE_EQ(s->final_speedup.value_or(0), 3.1);
  EXPECT_DOUBLE_EQ(s->final_roofline_fraction.value_or(0), 0.4);

  EvaluationRecord bad = MakeEval(job, a.sha256, 1.0, true, 400);
  bad.role = "rung";
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AddEvaluation(bad)));
}

// --------------------------------------------------------------- validation

TEST_F(StoreTest, InvalidInputWritesNothing) {
  std::string job = NewJob();
  CandidateRecord c = MakeCandidate("k");
  ASSERT_TRUE(store_->PutCandidate(c).ok());

  struct Case {
    const char* name;
    std::function<void(EvaluationRecord&)> mutate;
    absl::StatusCode code;
    const char* field;
  };
  std::vector<Case> eval_cases = {
      {"nan speedup", [](auto& e) { e.speedup = kNaN; }, absl::StatusCode::kInvalidArgument,
       "speedup"},
      {"inf speedup", [](auto& e) { e.speedup = kInf; }, absl::StatusCode::kInvalidArgument,
       "speedup"},
      {"zero speedup", [](auto& e) { e.speedup = 0.0; }, absl::StatusCode::kInvalidArgument,
       "speedup"},
      {"negative speedup", [](auto& e) { e.speedup = -1.0; }, absl::StatusCode::kInvalidArgument,
       "speedup"},
      {"nan median", [](auto& e) { e.candidate_median_us = kNaN; },
       absl::StatusCode::kInvalidArgument, "candidate_median_us"},
      {"nan ref median", [](auto& e) { e.reference_median_us = kNaN; },
       absl::StatusCode::kInvalidArgument, "reference_median_us"},
      {"negative elapsed", [](auto& e) { e.elapsed_ms = -1; }, absl::StatusCode::kInvalidArgument,
       "elapsed_ms"},
      {"negative wall", [](auto& e) { e.wall_us = -1; }, absl::StatusCode::kInvalidArgument,
       "wall_us"},
      {"negative queue", [](auto& e) { e.queue_ms = -0.5; }, absl::StatusCode::kInvalidArgument,
       "queue_ms"},
      {"nan compile", [](auto& e) { e.compile_ms = kNaN; }, absl::StatusCode::kInvalidArgument,
       "compile_ms"},
      {"bad id", [](auto& e) { e.id = "eval_123"; }, absl::StatusCode::kInvalidArgument, "id"},
      {"wrong id prefix", [](auto& e) { e.id = NewId("job"); }, absl::StatusCode::kInvalidArgument,
       "id"},
      {"bad job id", [](auto& e) { e.job_id = "job"; }, absl::StatusCode::kInvalidArgument,
       "job_id"},
      {"bad turn id", [](auto& e) { e.turn_id = "turn_?"; }, absl::StatusCode::kInvalidArgument,
       "turn_id"},
      {"empty status", [](auto& e) { e.status = ""; }, absl::StatusCode::kInvalidArgument,
       "status"},
      {"correct mismatch", [](auto& e) { e.status = "TIMEOUT"; },
       absl::StatusCode::kInvalidArgument, "correct"},
      {"unknown job", [](auto& e) { e.job_id = NewId("job"); }, absl::StatusCode::kNotFound, "job"},
      {"unknown turn", [](auto& e) { e.turn_id = NewId("turn"); }, absl::StatusCode::kNotFound,
       "turn"},
      {"unknown candidate", [&](auto& e) { e.candidate_sha256 = Sha256Hex("other"); },
       absl::StatusCode::kNotFound, "candidate"},
  };
  for (const Case& tc : eval_cases) {
    EvaluationRecord e = MakeEval(job, c.sha256, 2.0);
    tc.mutate(e);
    absl::Status s = store_->AddEvaluation(e);
    EXPECT_EQ(s.code(), tc.code) << tc.name << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(tc.field)) << tc.name;
  }
  EXPECT_EQ(CountRows("evaluations"), 0);
  EXPECT_FALSE(store_->GetJob(job)->best_speedup.has_value());

  // Jobs.
  JobRecord j = MakeJob();
  j.created_wall_us = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->CreateJob(j)));
  j = MakeJob();
  j.budget_wall_s = kNaN;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->CreateJob(j)));
  j = MakeJob();
  j.problem = "";
  absl::Status s = store_->CreateJob(j);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(std::string(s.message()), HasSubstr("problem"));
  j = MakeJob();
  j.world_size = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->CreateJob(j)));
  j = MakeJob();
  j.id = NewId("eval");
  EXPECT_TRUE(absl::IsInvalidArgument(store_->CreateJob(j)));
  EXPECT_EQ(CountRows("jobs"), 1);

  // Turns and LLM calls.
  TurnRecord t{NewId("turn"), job, 0, 0, -3, ""};
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AddTurn(t)));
  t = {NewId("turn"), job, -1, 0, 0, ""};
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AddTurn(t)));
  t = {NewId("turn"), NewId("job"), 0, 0, 0, ""};
  EXPECT_TRUE(absl::IsNotFound(store_->AddTurn(t)));
  EXPECT_EQ(CountRows("turns"), 0);

  LlmCallRecord call;
  call.id = NewId("llm");
  call.job_id = job;
  call.provider = "openai";
  call.model = "m";
  call.latency_ms = kNaN;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AddLlmCall(call)));
  call.latency_ms = 1;
  call.prompt_tokens = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AddLlmCall(call)));
  call.prompt_tokens = 1;
  call.attempts = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AddLlmCall(call)));
  call.attempts = 1;
  call.provider = "";
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AddLlmCall(call)));
  call.provider = "openai";
  call.job_id = NewId("job");
  EXPECT_TRUE(absl::IsNotFound(store_->AddLlmCall(call)));
  EXPECT_EQ(CountRows("llm_calls"), 0);

  // Events.
  EventRecord ev = MakeEvent(job, "{}");
  ev.elapsed_ms = -1;
  s = store_->AppendEvent(ev).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(std::string(s.message()), HasSubstr("elapsed_ms"));
  ev = MakeEvent(job, "{}");
  ev.wall_us = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AppendEvent(ev).status()));
  ev = MakeEvent(job, "{}", "");
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AppendEvent(ev).status()));
  ev = MakeEvent("job_bad", "{}");
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AppendEvent(ev).status()));
  ev = MakeEvent(NewId("job"), "{}");
  s = store_->AppendEvent(ev).status();
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_EQ(CountRows("events"), 0);
  EXPECT_EQ(*store_->LastEventSeq(job), 0);
  // The job's sequence is unaffected by the failures.
  EXPECT_EQ(*store_->AppendEvent(MakeEvent(job, "{}")), 1);
}

// ------------------------------------------------------------------- events

TEST_F(StoreTest, EventsGetSequentialSeqsAndReadAfterWithLimit) {
  std::string a = NewJob();
  std::string b = NewJob();
  for (int i = 1; i <= 20; ++i) {
    auto seq = store_->AppendEvent(MakeEvent(a, "{\"i\":" + std::to_string(i) + "}"));
    ASSERT_TRUE(seq.ok()) << seq.status();
    EXPECT_EQ(*seq, i);
    if (i % 4 == 0) {
      EXPECT_EQ(*store_->AppendEvent(MakeEvent(b, "{}")), i / 4);
    }
  }
  EXPECT_EQ(*store_->LastEventSeq(a), 20);
  EXPECT_EQ(*store_->LastEventSeq(b), 5);
  EXPECT_TRUE(absl::IsNotFound(store_->LastEventSeq(NewId("job")).status()));

  auto page = store_->ReadEvents(a, 5, 4);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 4u);
  for (int k = 0; k < 4; ++k) {
    const EventRecord& e = (*page)[k];
    EXPECT_EQ(e.seq, 6 + k);
    EXPECT_EQ(e.job_id, a);
    EXPECT_EQ(e.payload_json, "{\"i\":" + std::to_string(6 + k) + "}");
    EXPECT_EQ(e.type, "llm_call");
    EXPECT_EQ(e.wall_us, 1'700'000'000'200'000);
    EXPECT_EQ(e.elapsed_ms, 42);
  }
  EXPECT_EQ(store_->ReadEvents(a, 0)->size(), 20u);
  EXPECT_EQ(store_->ReadEvents(a, 18)->size(), 2u);
  EXPECT_TRUE(store_->ReadEvents(a, 20)->empty());
  EXPECT_TRUE(absl::IsNotFound(store_->ReadEvents(NewId("job"), 0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->ReadEvents(a, -1).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->ReadEvents(a, 0, 0).status()));

  // Events may still be appended after the job ends (e.g. "job_finished").
  ASSERT_TRUE(store_->UpdateJobState(a, JobState::kSucceeded).ok());
  EXPECT_EQ(*store_->AppendEvent(MakeEvent(a, "{}", "job_finished")), 21);
}

TEST_F(StoreTest, JobStatsAggregateTheTrajectory) {
  std::string job = NewJob();
  auto empty = store_->GetJobStats(job);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->turns, 0);
  EXPECT_EQ(empty->evaluations, 0);
  EXPECT_EQ(empty->tokens, 0);
  EXPECT_EQ(empty->last_evaluation_status, "");
  EXPECT_EQ(empty->best_candidate_sha256, "");
  EXPECT_FALSE(empty->best_roofline_fraction.has_value());
  EXPECT_EQ(empty->last_event_seq, 0);

  TurnRecord t0{NewId("turn"), job, 0, 1000, 10, ""};
  TurnRecord t1{NewId("turn"), job, 1, 2000, 20, ""};
  ASSERT_TRUE(store_->AddTurn(t0).ok());
  ASSERT_TRUE(store_->AddTurn(t1).ok());
  for (int i = 0; i < 2; ++i) {
    LlmCallRecord call;
    call.id = NewId("llm");
    call.job_id = job;
    call.provider = "openai";
    call.model = "gpt-x";
    call.prompt_tokens = 100;
    call.completion_tokens = 20 + i;
    call.cost_usd = 0.25;
    ASSERT_TRUE(store_->AddLlmCall(call).ok());
  }
  CandidateRecord fast = MakeCandidate("fast kernel");
  CandidateRecord slow = MakeCandidate("slow kernel");
  ASSERT_TRUE(store_->PutCandidate(fast).ok());
  ASSERT_TRUE(store_->PutCandidate(slow).ok());
  EvaluationRecord best = MakeEval(job, fast.sha256, 2.0, true, 100);
  best.roofline_fraction = 0.75;
  ASSERT_TRUE(store_->AddEvaluation(best).ok());
  ASSERT_TRUE(store_->AddEvaluation(MakeEval(job, slow.sha256, std::nullopt, false, 200)).ok());
  ASSERT_TRUE(store_->AppendEvent(MakeEvent(job, "{}")).ok());
  EventRecord last = MakeEvent(job, "{}");
  last.elapsed_ms = 777;
  ASSERT_TRUE(store_->AppendEvent(last).ok());
  // Another job's rows must not leak into the aggregate.
  std::string other = NewJob();
  ASSERT_TRUE(store_->AddEvaluation(MakeEval(other, fast.sha256, 9.0, true, 50)).ok());

  auto s = store_->GetJobStats(job);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->turns, 2);
  EXPECT_EQ(s->llm_calls, 2);
  EXPECT_EQ(s->tokens, 100 + 20 + 100 + 21);
  EXPECT_DOUBLE_EQ(s->cost_usd, 0.5);
  EXPECT_EQ(s->evaluations, 2);
  EXPECT_EQ(s->last_evaluation_status, "WRONG_OUTPUT");  // latest in elapsed order
  EXPECT_EQ(s->best_candidate_sha256, fast.sha256);
  ASSERT_TRUE(s->best_roofline_fraction.has_value());
  EXPECT_DOUBLE_EQ(*s->best_roofline_fraction, 0.75);
  EXPECT_EQ(s->last_event_seq, 2);
  EXPECT_EQ(s->last_event_elapsed_ms, 777);
  EXPECT_TRUE(absl::IsNotFound(store_->GetJobStats(NewId("job")).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->GetJobStats("nope").status()));
}

TEST_F(StoreTest, DataAndSequenceSurviveReopen) {
  std::string job = NewJob();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store_->AppendEvent(MakeEvent(job, "x")).ok());
  store_.reset();
  auto store = TrajectoryStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  store_ = std::move(store).value();
  EXPECT_EQ(store_->GetJob(job)->id, job);
  EXPECT_EQ(*store_->AppendEvent(MakeEvent(job, "y")), 4);
  // Closing the last connection checkpoints and removes the WAL.
  store_.reset();
  EXPECT_FALSE(std::filesystem::exists(path_ + "-wal"));
}

TEST_F(StoreTest, ZeroEventWallTimeMeansNow) {
  std::string job = NewJob();
  EventRecord ev = MakeEvent(job, "{}");
  ev.wall_us = 0;
  ASSERT_TRUE(store_->AppendEvent(ev).ok());
  EXPECT_GT(store_->ReadEvents(job, 0)->at(0).wall_us, 1'600'000'000'000'000);
}

// A failed batch must not leave the in-memory sequence cache ahead of the
// file. We provoke a failure by writing a row behind the store's back (which
// the contract forbids, so it is only a way to make a COMMIT-time constraint
// fail), then check the store recovers with contiguous seqs.
TEST_F(StoreTest, FailedBatchResetsSequenceCache) {
  std::string job = NewJob();
  ASSERT_EQ(*store_->AppendEvent(MakeEvent(job, "a")), 1);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    std::string sql =
        "INSERT INTO events (job_id, seq, wall_us, elapsed_ms, type, payload_json) "
        "VALUES ('" +
        job + "', 2, 1, 1, 'intruder', 'b')";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  absl::Status s = store_->AppendEvent(MakeEvent(job, "c")).status();
  EXPECT_TRUE(absl::IsAlreadyExists(s)) << s;
  auto seq = store_->AppendEvent(MakeEvent(job, "d"));
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(*seq, 3);
  auto events = store_->ReadEvents(job, 0);
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[2].payload_json, "d");
}

// Another process holding the write lock makes BEGIN fail after the busy
// timeout; every caller of that batch gets UNAVAILABLE and nothing is lost
// or skipped afterwards.
TEST_F(StoreTest, WriteLockTimeoutIsUnavailableAndRecoverable) {
  store_.reset();
  TrajectoryStore::Options opts;
  opts.busy_timeout_ms = 50;
  auto store = TrajectoryStore::Open(path_, opts);
  ASSERT_TRUE(store.ok());
  store_ = std::move(store).value();
  std::string job = NewJob();
  ASSERT_EQ(*store_->AppendEvent(MakeEvent(job, "1")), 1);

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  absl::Status s = store_->AppendEvent(MakeEvent(job, "lost")).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_TRUE(absl::IsUnavailable(store_->CreateJob(MakeJob())));
  ASSERT_EQ(sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);

  EXPECT_EQ(*store_->AppendEvent(MakeEvent(job, "2")), 2);
  EXPECT_EQ(store_->ReadEvents(job, 0)->size(), 2u);
}

}  // namespace
}  // namespace pkforge::storage
