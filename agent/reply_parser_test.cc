#include "agent/reply_parser.h"

#include "gtest/gtest.h"

namespace pkforge::agent {
namespace {

const char* kFile =
    "#include \"pkforge/candidate.h\"\n"
    "extern \"C\" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in,\n"
    "                        pkf_tensor* out, int32_t n_out, void* stream) {\n"
    "  int blocks = 8;\n"
    "  return launch(blocks);\n"
    "}\n";

TEST(ReplyParser, FullFileInFencedBlock) {
  for (const char* lang : {"cuda", "cu", "cpp", "c++", "c", "CUDA", ""}) {
    std::string reply = std::string("Here is my kernel.\n```") + lang + "\n" + kFile + "```\nDone.";
    auto r = ParseReply(reply, "");
    ASSERT_TRUE(r.ok()) << lang << ": " << r.status();
    EXPECT_EQ(r->source, kFile);
    EXPECT_EQ(r->kind, ParsedReply::Kind::kFullFile);
  }
}

TEST(ReplyParser, LastBlockDefiningPkfRunWins) {
  std::string reply =
      std::string("A helper first:\n```cuda\n__device__ int f() { return 1; }\n```\n") +
      "The file:\n```cuda\n" + kFile + "```\nAnd a shell line:\n```bash\nmake\n```\n";
  auto r = ParseReply(reply, "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->source, kFile);
}

TEST(ReplyParser, NoCodeIsFeedback) {
  auto r = ParseReply("I would use the copy engine for this size.", "");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("contains no code"), absl::string_view::npos);
  // A code block in another language is not code for us either.
  EXPECT_FALSE(ParseReply("```python\nprint(1)\n```", "").ok());
}

TEST(ReplyParser, MissingPkfRunIsFeedback) {
  auto r = ParseReply("```cuda\n__global__ void k() {}\n```", "");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("does not define pkf_run"), absl::string_view::npos);
  // "my_pkf_run(" is not pkf_run.
  EXPECT_FALSE(ParseReply("```cuda\nint my_pkf_run(int);\n```", "").ok());
}

TEST(ReplyParser, UnclosedFenceMeansCutOff) {
  auto r = ParseReply(std::string("```cuda\n") + kFile, "");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not closed"), absl::string_view::npos) << r.status();
}

TEST(ReplyParser, SearchReplaceEditsApplyInOrder) {
  std::string reply =
      "Two changes:\n"
      "```cuda\n"
      "<<<<<<< SEARCH\n"
      "  int blocks = 8;\n"
      "=======\n"
      "  int blocks = 32;\n"
      ">>>>>>> REPLACE\n"
      "```\n"
      "<<<<<<< SEARCH\n"
      "  return launch(blocks);\n"
      "=======\n"
      "  sync();\n"
      "  return launch(blocks);\n"
      ">>>>>>> REPLACE\n";
  auto r = ParseReply(reply, kFile);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kind, ParsedReply::Kind::kEdits);
  EXPECT_EQ(r->edits_applied, 2);
  EXPECT_NE(r->source.find("int blocks = 32;"), std::string::npos);
  EXPECT_NE(r->source.find("  sync();\n  return launch(blocks);"), std::string::npos);
  EXPECT_EQ(r->source.find("int blocks = 8;"), std::string::npos);
}

TEST(ReplyParser, EditsToleratCrlfAndMissingFinalNewline) {
  std::string base = kFile;
  base.pop_back();  // no final newline
  std::string reply = "<<<<<<< SEARCH\r\n}\r\n=======\r\n}  // end\r\n>>>>>>> REPLACE\r\n";
  auto r = ParseReply(reply, base);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(r->source.find("}  // end"), std::string::npos);
}

TEST(ReplyParser, EditThatDoesNotApplyNamesTheBlock) {
  std::string reply =
      "<<<<<<< SEARCH\n  int blocks = 8;\n=======\n  int blocks = 16;\n>>>>>>> REPLACE\n"
      "<<<<<<< SEARCH\n  return launch(grid);\n=======\n  return 0;\n>>>>>>> REPLACE\n";
  auto r = ParseReply(reply, kFile);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("edit block 2 of 2 does not apply"), absl::string_view::npos)
      << r.status();
  EXPECT_NE(r.status().message().find("return launch(grid);"), absl::string_view::npos);
}

TEST(ReplyParser, AmbiguousAndMalformedEdits) {
  std::string base = std::string(kFile) + "// blocks\n// blocks\n";
  auto r = ParseReply("<<<<<<< SEARCH\n// blocks\n=======\n\n>>>>>>> REPLACE\n", base);
  EXPECT_NE(r.status().message().find("occurs 2 times"), absl::string_view::npos) << r.status();
  r = ParseReply("<<<<<<< SEARCH\nint x;\n>>>>>>> REPLACE\n", kFile);
  EXPECT_NE(r.status().message().find("malformed"), absl::string_view::npos) << r.status();
  r = ParseReply("<<<<<<< SEARCH\nint x;\n=======\nint y;\n", kFile);
  EXPECT_NE(r.status().message().find("malformed"), absl::string_view::npos) << r.status();
  r = ParseReply("<<<<<<< SEARCH\n  int blocks = 8;\n=======\nx\n>>>>>>> REPLACE\n", "");
  EXPECT_NE(r.status().message().find("no current file"), absl::string_view::npos) << r.status();
}

TEST(ReplyParser, EditsMustKeepPkfRun) {
  auto r = ParseReply(
      "<<<<<<< SEARCH\nextern \"C\" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t "
      "n_in,\n=======\nint run_it(pkf_context* ctx, const pkf_tensor* in, int32_t n_in,\n>>>>>>> "
      "REPLACE\n",
      kFile);
  EXPECT_NE(r.status().message().find("does not define pkf_run"), absl::string_view::npos)
      << r.status();
}

}  // namespace
}  // namespace pkforge::agent
