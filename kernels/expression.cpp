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
    if (text_.size() > kMaxExpressionLength)
      throw InputError(fmt::format("bad expression '{}': longer than {} characters (shorten it: "
                                   "cdiv, min, max, numel and size help)",
                                   quote_input(text_), kMaxExpressionLength));
    const int64_t value = expr();
    skip_space();
    if (pos_ != text_.size()) fail(fmt::format("unexpected '{}'", rest()));
    return value;
  }

 private:
  /// Opens one level of nesting for the lifetime of the guard; too deep is an error.
  class Nesting {
   public:
    explicit Nesting(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxExpressionDepth)
        p_.fail(fmt::format("expression nesting deeper than {} levels (each parenthesis, function "
                            "call and unary minus opens one): simplify it",
                            kMaxExpressionDepth));
    }
    ~Nesting() { --p_.depth_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

   private:
    Parser& p_;
  };

  /// The error, quoting the text (a window around the error position when the text is long).
  [[noreturn]] void fail(const std::string& what) const {
    if (text_.size() <= kMaxQuotedInput)
      throw InputError(fmt::format("bad expression '{}': {}", text_, what));
    const size_t at = std::min(pos_, text_.size());
    const size_t start = at > kMaxQuotedInput * 2 / 3 ? at - kMaxQuotedInput * 2 / 3 : 0;
    const size_t end = std::min(text_.size(), start + kMaxQuotedInput);
    throw InputError(fmt::format("bad expression '{}{}{}' ({} characters, error at character {}): {}",
                                 start > 0 ? "..." : "", text_.substr(start, end - start),
                                 end < text_.size() ? "..." : "", text_.size(), at + 1, what));
  }

  /// The unparsed rest of the text, as a message quotes it.
  std::string rest() const { return quote_input(text_.substr(std::min(pos_, text_.size())), 40); }

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
      fail(pos_ < text_.size() ? fmt::format("expected '{}' at '{}'", c, rest())
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
    const Nesting level(*this);
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
      fail(fmt::format("bad integer literal at '{}'", rest()));
    return value;
  }

  const TensorSpec& tensor_argument() {
    const std::string_view name = identifier();
    if (name.empty()) fail("expected a tensor name");
    const TensorSpec* tensor = find_tensor(task_, name);
    if (!tensor) {
      pos_ -= name.size();  // the error is at the name's start
      fail(fmt::format("unknown tensor '{}' (task {} has {})", quote_input(name, 40), task_.id,
                       tensor_names()));
    }
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
    if (name.empty()) fail(fmt::format("unexpected '{}'", rest()));
    pos_ -= name.size();  // the error is at the name's start
    fail(fmt::format("unknown name '{}' (functions: cdiv, min, max, numel, size)",
                     quote_input(name, 40)));
  }

  std::string_view text_;
  const TaskSpec& task_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

std::string quote_input(std::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  return fmt::format("{}... ({} characters)", text.substr(0, max_chars), text.size());
}

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
