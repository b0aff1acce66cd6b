// kbrl/csv.h: a model's text written into a CSV cell and read back. Escaped text is one line of
// well-formed UTF-8 whatever bytes the text held (a byte-level model may end inside a character),
// and unescaping gives the exact bytes back.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kbrl/csv.h>
#include <kbrl/utf8.h>

namespace kbrl {
namespace {

TEST(Csv, TextOfAnyBytesIsOneLineOfUtf8AndReadsBack) {
  const std::vector<std::string> texts = {
      "",
      "plain",
      "two\nlines\r\n\tand a \\ backslash",
      "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80",  // two-, three- and four-byte characters kept as they are
      "cut \xe2\x86",                               // a character cut at the end of the answer
      "stray \x97 and \xff\xfe bytes, an overlong \xc0\xaf, a surrogate \xed\xa0\x80",
      "looks escaped: \\x41 \\n",                   // a literal backslash-x is not a byte escape
      std::string("nul \0 byte", 10),
  };
  for (const std::string& text : texts) {
    SCOPED_TRACE(text);
    const std::string cell = csv::escape_text(text);
    EXPECT_TRUE(is_valid_utf8(cell)) << cell;
    EXPECT_EQ(cell.find_first_of("\n\r"), std::string::npos) << cell;
    EXPECT_EQ(csv::unescape_text(cell), text);
    // Through a CSV line's quoting too.
    const std::string line = csv::field(cell) + "," + csv::field("x");
    const std::vector<std::string> fields = csv::split_line(line);
    ASSERT_EQ(fields.size(), 2u);
    EXPECT_EQ(csv::unescape_text(fields[0]), text);
  }
  EXPECT_EQ(csv::escape_text("a\x97" "b"), "a\\x97b");
  EXPECT_EQ(csv::escape_text("\xe2\x86"), "\\xe2\\x86");
  // Cells written before byte escapes existed read as they did: an unknown or short escape stays.
  EXPECT_EQ(csv::unescape_text("\\q \\x4 \\xZZ \\"), "\\q \\x4 \\xZZ \\");
}

}  // namespace
}  // namespace kbrl
