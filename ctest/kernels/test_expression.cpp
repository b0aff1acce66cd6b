// Integer expressions of the launch plan (kernels/expression.h).
#include <gtest/gtest.h>

#include <kbrl/error.h>
#include <kernels/expression.h>

namespace kbrl {
namespace {

TaskSpec toy_task() {
  TaskSpec task;
  task.id = 7;
  task.inputs = {{"x", {4, 6, 8}, DType::f32}};
  task.parameters = {{"conv.weight", {3, 5}, DType::f32}};
  task.outputs = {{"y", {4, 6}, DType::f32}, {"loss", {}, DType::f32}};
  return task;
}

int64_t eval(std::string_view text) { return evaluate_expression(text, toy_task()); }

std::string error_of(std::string_view text) {
  try {
    eval(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Expression, Arithmetic) {
  EXPECT_EQ(eval("42"), 42);
  EXPECT_EQ(eval("1 + 2 * 3"), 7);
  EXPECT_EQ(eval("(1 + 2) * 3"), 9);
  EXPECT_EQ(eval("7 / 2"), 3);
  EXPECT_EQ(eval("-7 / 2"), -3);  // truncates toward zero, like C
  EXPECT_EQ(eval("7 % 3"), 1);
  EXPECT_EQ(eval("10 - 4 - 3"), 3);  // left associative
  EXPECT_EQ(eval("-(2 + 3)"), -5);
  EXPECT_EQ(eval("  2*  3 "), 6);
  EXPECT_EQ(eval("9223372036854775807"), INT64_MAX);
}

TEST(Expression, Functions) {
  EXPECT_EQ(eval("cdiv(10, 3)"), 4);
  EXPECT_EQ(eval("cdiv(9, 3)"), 3);
  EXPECT_EQ(eval("cdiv(0, 3)"), 0);
  EXPECT_EQ(eval("min(4, 9)"), 4);
  EXPECT_EQ(eval("max(4, 9)"), 9);
  EXPECT_EQ(eval("numel(x)"), 192);
  EXPECT_EQ(eval("numel(loss)"), 1);  // 0-d
  EXPECT_EQ(eval("size(x, 0)"), 4);
  EXPECT_EQ(eval("size(x, 2)"), 8);
  EXPECT_EQ(eval("size(x, -1)"), 8);
  EXPECT_EQ(eval("size(x, 1 + 1)"), 8);
  EXPECT_EQ(eval("numel(conv.weight)"), 15);
  EXPECT_EQ(eval("numel(conv_weight)"), 15);  // dots may be underscores
  EXPECT_EQ(eval("cdiv(numel(x), 256)"), 1);
  EXPECT_EQ(eval("min(cdiv(numel(x), 16), size(y, 0) * 2)"), 8);
}

TEST(Expression, Errors) {
  EXPECT_NE(error_of("numel(z)").find("unknown tensor 'z'"), std::string::npos) << error_of("numel(z)");
  EXPECT_NE(error_of("numel(z)").find("x, conv.weight, y, loss"), std::string::npos);
  EXPECT_NE(error_of("size(x, 3)").find("dimension 3 out of range"), std::string::npos);
  EXPECT_NE(error_of("size(loss, 0)").find("out of range"), std::string::npos);
  EXPECT_NE(error_of("1 / 0").find("division by zero"), std::string::npos);
  EXPECT_NE(error_of("1 % 0").find("modulo by zero"), std::string::npos);
  EXPECT_NE(error_of("cdiv(4, 0)").find("cdiv by 0"), std::string::npos);
  EXPECT_NE(error_of("9223372036854775807 + 1").find("overflow"), std::string::npos);
  EXPECT_NE(error_of("4611686018427387904 * 2").find("overflow"), std::string::npos);
  EXPECT_NE(error_of("99999999999999999999").find("too large"), std::string::npos);
  EXPECT_NE(error_of("foo(3)").find("unknown name 'foo'"), std::string::npos);
  EXPECT_NE(error_of("(1 + 2").find("expected ')'"), std::string::npos);
  EXPECT_NE(error_of("1 2").find("unexpected '2'"), std::string::npos);
  EXPECT_NE(error_of("").find("unexpected end"), std::string::npos);
  EXPECT_NE(error_of("3x").find("bad integer literal"), std::string::npos);
  EXPECT_NE(error_of("min(1)").find("expected ','"), std::string::npos);
  EXPECT_NE(error_of("numel(x) +").find("bad expression 'numel(x) +'"), std::string::npos);
}

// A recursive parser must bound its depth: 30,000 parentheses or 200,000 minus signs used to
// overflow the stack (a segmentation fault with no message).
TEST(Expression, NestingIsBounded) {
  auto nested = [](int depth) {
    return std::string(static_cast<size_t>(depth), '(') + "1" + std::string(static_cast<size_t>(depth), ')');
  };
  EXPECT_EQ(eval(nested(63)), 1);
  EXPECT_EQ(eval(std::string(63, '-') + "5"), -5);
  EXPECT_EQ(eval("min(max(cdiv(size(x, -(1)), 3), 1), 2)"), 2);
  const std::string too_deep = error_of(nested(64));
  EXPECT_NE(too_deep.find("expression nesting deeper than 64"), std::string::npos) << too_deep;
  EXPECT_NE(error_of(std::string(64, '-') + "1").find("nesting deeper than 64"), std::string::npos);
  EXPECT_NE(error_of(std::string(40, '-') + "min(" + nested(30) + ", 1)").find("nesting deeper than 64"),
            std::string::npos);
  // What crashed before, now within the length limit's error or the depth's.
  const std::string parentheses = error_of(nested(30000));
  EXPECT_NE(parentheses.find("longer than 4096 characters"), std::string::npos) << parentheses.substr(0, 400);
  const std::string minus = error_of(std::string(200000, '-') + "1");
  EXPECT_NE(minus.find("longer than 4096 characters"), std::string::npos) << minus.substr(0, 400);
  const std::string deep_but_short = error_of(nested(2000));  // 4001 characters
  EXPECT_NE(deep_but_short.find("nesting deeper than 64"), std::string::npos) << deep_but_short.substr(0, 400);
}

TEST(Expression, LengthIsBounded) {
  std::string sum = "1";
  while (sum.size() + 2 <= kMaxExpressionLength) sum += "+1";
  ASSERT_LE(sum.size(), kMaxExpressionLength);
  EXPECT_EQ(eval(sum), static_cast<int64_t>(sum.size() / 2 + 1));
  const std::string longer = error_of(sum + "+1");
  EXPECT_NE(longer.find("longer than 4096 characters"), std::string::npos) << longer.substr(0, 400);
  EXPECT_NE(longer.find("(4097 characters)"), std::string::npos) << longer.substr(0, 400);
}

// Messages quote at most 120 characters of the input: a bad token at the end of a long expression
// used to echo all of it (400 KB for a 400 KB expression).
TEST(Expression, ErrorsQuoteAWindowOfLongInput) {
  std::string sum = "1";
  while (sum.size() < 4000) sum += "+1";
  ASSERT_EQ(sum.size(), 4001u);
  const std::string bad = sum + "+q";  // 'q' at character 4003 of 4003
  const std::string message = error_of(bad);
  EXPECT_LT(message.size(), 400u) << message;
  EXPECT_NE(message.find("unknown name 'q'"), std::string::npos) << message;
  EXPECT_NE(message.find("(4003 characters, error at character 4003)"), std::string::npos) << message;
  EXPECT_NE(message.find("bad expression '...1+1+1"), std::string::npos) << message;  // a window
  EXPECT_NE(message.find("+1+q' ("), std::string::npos) << message;  // ending at the error
  // An error early in a long expression shows its start.
  const std::string early = error_of("numel(z) " + sum);
  EXPECT_LT(early.size(), 400u) << early;
  EXPECT_NE(early.find("bad expression 'numel(z) 1+1+1"), std::string::npos) << early;
  EXPECT_NE(early.find("...' (4010 characters, error at character 7): unknown tensor 'z'"),
            std::string::npos) << early;
  // A long unknown name, a long rest after a complete expression, a 400 KB expression.
  EXPECT_LT(error_of("numel(" + std::string(3000, 'z') + ")").size(), 400u);
  EXPECT_LT(error_of("1 " + std::string(3000, '2')).size(), 400u);
  EXPECT_LT(error_of(sum + std::string(400000, '+') + "x").size(), 400u);
}

TEST(Expression, QuoteInput) {
  EXPECT_EQ(quote_input("abc"), "abc");
  EXPECT_EQ(quote_input(std::string(120, 'a')), std::string(120, 'a'));
  EXPECT_EQ(quote_input(std::string(121, 'a')), std::string(120, 'a') + "... (121 characters)");
  EXPECT_EQ(quote_input("abcdef", 3), "abc... (6 characters)");
}

}  // namespace
}  // namespace kbrl
