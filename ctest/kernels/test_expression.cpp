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

}  // namespace
}  // namespace kbrl
