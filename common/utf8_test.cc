#include "common/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace pkforge {
namespace {

size_t At(const std::string& s, uint32_t* cp) { return Utf8SequenceAt(s, 0, cp); }

TEST(Utf8SequenceAt, WellFormedSequences) {
  uint32_t cp = 0;
  EXPECT_EQ(At("A", &cp), 1u);
  EXPECT_EQ(cp, 0x41u);
  EXPECT_EQ(At("\xC3\xA9", &cp), 2u);  // é
  EXPECT_EQ(cp, 0xE9u);
  EXPECT_EQ(At("\xE2\x82\xAC", &cp), 3u);  // €
  EXPECT_EQ(cp, 0x20ACu);
  EXPECT_EQ(At("\xF0\x9F\x98\x80", &cp), 4u);  // U+1F600
  EXPECT_EQ(cp, 0x1F600u);
  EXPECT_EQ(At("\xF4\x8F\xBF\xBF", &cp), 4u);  // U+10FFFF
}

TEST(Utf8SequenceAt, MalformedSequencesAreZero) {
  uint32_t cp = 0;
  for (const std::string& bad : {std::string("\x80"), std::string("\xC0\xAF"),  // overlong '/'
                                std::string("\xC1\xBF"), std::string("\xE0\x80\xAF"),
                                std::string("\xED\xA0\x80"),      // surrogate D800
                                std::string("\xF4\x90\x80\x80"),  // > U+10FFFF
                                std::string("\xF5\x80\x80\x80"), std::string("\xC3"),
                                std::string("\xE2\x82"), std::string("\xC3\x41"),
                                std::string("\xFF")})
    EXPECT_EQ(At(bad, &cp), 0u) << testing::PrintToString(bad);
  EXPECT_EQ(Utf8SequenceAt("", 0, &cp), 0u);
  EXPECT_EQ(Utf8SequenceAt("ab", 5, &cp), 0u);
}

}  // namespace
}  // namespace pkforge

namespace pkforge {
namespace {

// Red team round 14 r14_ansi_forge: clear screen, home, a made-up verdict,
// then SGR 8 (conceal) to hide the real one.
TEST(TerminalSafe, ControlCharactersBecomeVisibleEscapes) {
  EXPECT_EQ(TerminalSafe("\x1b[2J\x1b[HOK: 41.724x\x1b[8m"),
            "\\x1b[2J\\x1b[HOK: 41.724x\\x1b[8m");
  EXPECT_EQ(TerminalSafe("line\n\tindented\r\x07\x7f"), "line\n\tindented\\x0d\\x07\\x7f");
  EXPECT_EQ(TerminalSafe("\xc2\x9b" "31m"), "\\u009b31m");  // C1 CSI
  EXPECT_EQ(TerminalSafe("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");
  EXPECT_EQ(TerminalSafe("bad \xff byte"), "bad \xEF\xBF\xBD byte");
  EXPECT_EQ(TerminalSafe(std::string_view("a\0b", 3)), "a\\x00b");
}

// A candidate's stderr bytes in a proto3 string (rank_pool.cc Tail, the
// executor's stderr tail): invalid bytes become U+FFFD, valid text (control
// characters included: JSON escapes them) stays as it was.
TEST(ValidUtf8, OnlyInvalidBytesAreReplaced) {
  EXPECT_EQ(ValidUtf8("plain \x1b[2J text\n"), "plain \x1b[2J text\n");
  EXPECT_EQ(ValidUtf8("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(ValidUtf8("\xff\xfe\xc3\x28"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD(");
  EXPECT_EQ(ValidUtf8("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(ValidUtf8("cut \xe2\x9c"), "cut \xEF\xBF\xBD\xEF\xBF\xBD");          // truncated
  EXPECT_EQ(ValidUtf8(std::string_view("a\0b", 3)), std::string("a\0b", 3));
  EXPECT_TRUE(IsValidUtf8(ValidUtf8("\xff\xc0\xaf x \xf4\x90\x80\x80")));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9 \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // a surrogate
}

}  // namespace
}  // namespace pkforge
