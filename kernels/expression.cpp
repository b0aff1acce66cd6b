#include "expression.h"

#include <algorithm>
#include <cctype>
#include <string>

#include <kbrl/error.h>

namespace kbrl {
namespace {

/// A recursive-descent parser that evaluates as it goes.
class Parser {
 public:
  Parser(std::string_view text, const TaskSpec& task) : text_(text), task_(task) {}

  int64_t parse() {
    const int64_t value = expr();
    skip_space();
    if (pos_ != text_.size()) fail(fmt::format("unexpected '{}'", text_.substr(pos_)));
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("bad expression '{}': {}", text_, what));
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!accept(c)) {
      fail(pos_ < text_.size() ? fmt::format("expected '{}' at '{}'", c, text_.substr(pos_))
                               : fmt::format("expected '{}' at the end", c));
    }
  }

  std::string_view identifier() {
    skip_space();
    const size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '_' || text_[pos_] == '.'))
      ++pos_;
    return text_.substr(start, pos_ - start);
  }

  void check_overflow(bool overflow) const {
    if (overflow) fail("integer overflow");
  }

  int64_t expr() {
    int64_t value = term();
    for (;;) {
      int64_t rhs = 0;
      if (accept('+')) {
        rhs = term();
        check_overflow(__builtin_add_overflow(value, rhs, &value));
      } else if (accept('-')) {
        rhs = term();
        check_overflow(__builtin_sub_overflow(value, rhs, &value));
      } else {
        return value;
      }
    }
  }

  int64_t term() {
    int64_t value = unary();
    for (;;) {
      if (accept('*')) {
        const int64_t rhs = unary();
        check_overflow(__builtin_mul_overflow(value, rhs, &value));
      } else if (accept('/') || accept('%')) {
        const bool modulo = text_[pos_ - 1] == '%';
        const int64_t rhs = unary();
        if (rhs == 0) fail(modulo ? "modulo by zero" : "division by zero");
        if (rhs == -1 && value == INT64_MIN) fail("integer overflow");
        value = modulo ? value % rhs : value / rhs;
      } else {
        return value;
      }
    }
  }

  int64_t unary() {
    if (accept('-')) {
      const int64_t value = unary();
      if (value == INT64_MIN) fail("integer overflow");
      return -value;
    }
    return primary();
  }

  int64_t integer() {
    int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      const int digit = text_[pos_++] - '0';
      if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, digit, &value))
        fail("integer literal too large");
    }
    if (pos_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) ||
                                text_[pos_] == '_' || text_[pos_] == '.'))
      fail(fmt::format("bad integer literal at '{}'", text_.substr(pos_)));
    return value;
  }

  const TensorSpec& tensor_argument() {
    const std::string_view name = identifier();
    if (name.empty()) fail("expected a tensor name");
    const TensorSpec* tensor = find_tensor(task_, name);
    if (!tensor) fail(fmt::format("unknown tensor '{}' (task {} has {})", name, task_.id,
                                  tensor_names()));
    return *tensor;
  }

  std::string tensor_names() const {
    std::string names;
    for (const auto* group : {&task_.inputs, &task_.parameters, &task_.outputs})
      for (const auto& t : *group) names += (names.empty() ? "" : ", ") + t.name;
    return names.empty() ? "no tensors" : names;
  }

  int64_t call(std::string_view name) {
    expect('(');
    int64_t value = 0;
    if (name == "numel") {
      value = tensor_argument().numel();
    } else if (name == "size") {
      const TensorSpec& tensor = tensor_argument();
      expect(',');
      int64_t dim = expr();
      const auto rank = static_cast<int64_t>(tensor.shape.size());
      if (dim < -rank || dim >= rank)
        fail(fmt::format("dimension {} out of range for '{}' of shape {}", dim, tensor.name,
                         format_shape(tensor.shape)));
      value = tensor.shape[static_cast<size_t>(dim < 0 ? dim + rank : dim)];
    } else {
      const int64_t a = expr();
      expect(',');
      const int64_t b = expr();
      if (name == "min") {
        value = std::min(a, b);
      } else if (name == "max") {
        value = std::max(a, b);
      } else {  // cdiv
        if (b <= 0) fail(fmt::format("cdiv by {} (the divisor must be positive)", b));
        if (a < 0) fail(fmt::format("cdiv of negative {}", a));
        value = a / b + (a % b != 0 ? 1 : 0);
      }
    }
    expect(')');
    return value;
  }

  int64_t primary() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c))) return integer();
    if (accept('(')) {
      const int64_t value = expr();
      expect(')');
      return value;
    }
    const std::string_view name = identifier();
    if (name == "numel" || name == "size" || name == "cdiv" || name == "min" || name == "max")
      return call(name);
    if (name.empty()) fail(fmt::format("unexpected '{}'", text_.substr(pos_)));
    fail(fmt::format("unknown name '{}' (functions: cdiv, min, max, numel, size)", name));
  }

  std::string_view text_;
  const TaskSpec& task_;
  size_t pos_ = 0;
};

}  // namespace

bool tensor_name_matches(std::string_view spec_name, std::string_view name) {
  if (spec_name.size() != name.size()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char a = spec_name[i] == '.' ? '_' : spec_name[i];
    const char b = name[i] == '.' ? '_' : name[i];
    if (a != b) return false;
  }
  return true;
}

const TensorSpec* find_tensor(const TaskSpec& task, std::string_view name) {
  for (const auto* group : {&task.inputs, &task.parameters, &task.outputs})
    for (const auto& t : *group)
      if (tensor_name_matches(t.name, name)) return &t;
  return nullptr;
}

int64_t evaluate_expression(std::string_view text, const TaskSpec& task) {
  return Parser(text, task).parse();
}

}  // namespace kbrl
