#pragma once
// The host function's values and expressions (kernels/kernelbench_import.h): what each name of a
// KernelBench answer's host function holds, and C++ size arithmetic read as kbrl plan expressions
// over the task's shapes (kernels/expression.h).
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "expression.h"
#include "kernelbench_parts.h"
#include "kernelbench_text.h"

namespace kbrl::kernelbench {

/// What a name of the host function holds.
struct Value {
  enum class Kind { integer, number, scalar, tensor, output, pointer, dims } kind = Kind::integer;
  std::string expr;               // integer: a plan expression; pointer: the tensor's plan argument; scalar: its
                                  // plan argument (scalar:s)
  double number = 0;              // number: a float's value
  int tensor = -1;                // tensor: the task's input
  std::vector<std::string> dims;  // dims: a dim3's expressions
  int precedence = 0;             // integer: 0 an atom, 1 a product, 2 a sum (where parentheses are needed)
};

inline Value integer_value(std::string e, int precedence = 0) {
  Value r;
  r.expr = std::move(e);
  r.precedence = precedence;
  return r;
}

inline Value number_value(double v) {
  Value r;
  r.kind = Value::Kind::number;
  r.number = v;
  return r;
}

class Host {
 public:
  explicit Host(const TaskSpec& task) : task_(task) {}

  std::map<std::string, Value> names;

  /// A C++ expression as a plan expression (integer) or a float's value.
  Value eval(std::string_view text) {
    if (text.size() > kMaxExpressionLength)
      throw Unsupported(fmt::format("a host expression of {} characters (statement)", text.size()));
    tokens_ = tokenize(text);
    depth_ = 0;
    pos_ = 0;
    Value v = additive();
    if (pos_ != tokens_.size())
      throw Unsupported(fmt::format("the host code's expression '{}' is not read (statement)", trim(text).substr(0, 80)));
    return v;
  }

  std::string integer(std::string_view text) {
    const Value v = eval(text);
    if (v.kind != Value::Kind::integer)
      throw Unsupported(fmt::format("'{}' is not an integer expression of the task's sizes (statement)", trim(text).substr(0, 80)));
    return v.expr;
  }

  const TaskSpec& task() const { return task_; }

 private:
  static std::vector<std::string> tokenize(std::string_view s) {
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size();) {
      const char c = s[i];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
      } else if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
        size_t j = i;
        while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '.' ||
                                ((s[j] == '+' || s[j] == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E'))))
          ++j;
        out.emplace_back(s.substr(i, j - i));
        i = j;
      } else if (ident_char(c)) {
        size_t j = i;
        while (j < s.size() && (ident_char(s[j]) || (s.compare(j, 2, "::") == 0 && (j += 1)))) ++j;
        out.emplace_back(s.substr(i, j - i));
        i = j;
      } else if (s.compare(i, 2, "::") == 0) {
        i += 2;  // a leading :: (::min)
      } else {
        out.emplace_back(1, c);
        ++i;
      }
    }
    return out;
  }

  bool peek(std::string_view t) const { return pos_ < tokens_.size() && tokens_[pos_] == t; }
  const std::string& take() {
    if (pos_ >= tokens_.size()) throw Unsupported("an expression of the host code ends too soon (statement)");
    return tokens_[pos_++];
  }
  void expect(std::string_view t) {
    if (take() != t) throw Unsupported(fmt::format("expected '{}' in the host code's expression (statement)", t));
  }


  Value binary(const Value& a, const Value& b, char op) {
    if (a.kind == Value::Kind::integer && b.kind == Value::Kind::integer) {
      const int p = op == '+' || op == '-' ? 2 : 1;
      const std::string left = a.precedence > p ? "(" + a.expr + ")" : a.expr;
      const std::string right = b.precedence >= p ? "(" + b.expr + ")" : b.expr;
      return integer_value(left + " " + op + " " + right, p);
    }
    auto num = [&](const Value& v) {
      if (v.kind == Value::Kind::number) return v.number;
      if (v.kind == Value::Kind::integer) return static_cast<double>(evaluate_expression(v.expr, task_));
      throw Unsupported("a tensor in arithmetic (statement)");
    };
    const double x = num(a), y = num(b);
    switch (op) {
      case '+': return number_value(x + y);
      case '-': return number_value(x - y);
      case '*': return number_value(x * y);
      case '/': return number_value(x / y);
      default: throw Unsupported("% of a float (statement)");
    }
  }

  Value additive() {
    Value v = multiplicative();
    while (peek("+") || peek("-")) {
      const char op = take()[0];
      v = binary(v, multiplicative(), op);
    }
    return v;
  }

  Value multiplicative() {
    Value v = unary();
    while (peek("*") || peek("/") || peek("%")) {
      const char op = take()[0];
      v = binary(v, unary(), op);
    }
    return v;
  }

  static bool is_type(const std::string& t) {
    static const char* types[] = {"int", "long", "unsigned", "size_t", "int64_t", "int32_t", "uint32_t", "uint64_t",
                                  "float", "double", "ptrdiff_t", "short", "const", "signed"};
    return std::find(std::begin(types), std::end(types), t) != std::end(types);
  }

  Value unary() {
    // Every nesting (a sign, parentheses, a call's arguments, a cast) passes here: bounded as plan
    // expressions are (the recursion's depth is the stack's).
    if (++depth_ > kMaxExpressionDepth) throw Unsupported("a host expression nested too deep (statement)");
    struct Leave {
      int& depth;
      ~Leave() { --depth; }
    } leave{depth_};
    if (peek("-")) {
      take();
      const Value v = unary();
      return v.kind == Value::Kind::number ? number_value(-v.number) : binary(integer_value("0"), v, '-');
    }
    if (peek("+")) {
      take();
      return unary();
    }
    if (peek("(") && pos_ + 1 < tokens_.size() && is_type(tokens_[pos_ + 1])) {  // a C cast
      take();
      bool to_float = false;
      while (!peek(")")) to_float = to_float || tokens_[pos_] == "float" || tokens_[pos_] == "double", take();
      take();
      return cast(unary(), to_float);
    }
    return postfix();
  }

  Value cast(const Value& v, bool to_float) {
    if (!to_float) return v;
    if (v.kind == Value::Kind::integer) return number_value(static_cast<double>(evaluate_expression(v.expr, task_)));
    return v;
  }

  Value postfix() {
    Value v = primary();
    while (peek(".") || peek("[") || peek("-")) {
      if (peek("-")) {  // t->size(0) is not read; a minus is the caller's
        if (pos_ + 1 < tokens_.size() && tokens_[pos_ + 1] == ">") throw Unsupported("'->' in the host code (statement)");
        break;
      }
      if (peek("[")) {
        take();
        if (v.kind != Value::Kind::dims) throw Unsupported("indexing in the host code (statement)");
        const int64_t i = evaluate_expression(integer_of_additive(), task_);
        expect("]");
        if (i < 0 || i >= static_cast<int64_t>(v.dims.size())) throw Unsupported("an index past a shape (statement)");
        v = integer_value(v.dims[static_cast<size_t>(i)]);
        continue;
      }
      take();
      const std::string member = take();
      std::vector<std::string> args;
      if (peek("(")) {
        take();
        while (!peek(")")) {
          args.push_back(integer_of_additive());
          if (peek(",")) take();
        }
        take();
      }
      if (v.kind != Value::Kind::tensor && v.kind != Value::Kind::output)
        throw Unsupported(fmt::format("'.{}' of something not a tensor (statement)", member));
      const std::string t = tensor_name(v);
      const size_t rank = tensor_spec(v).shape.size();
      if (member == "numel") {
        v = integer_value("numel(" + t + ")");
      } else if ((member == "size" || member == "size(") && args.size() == 1) {
        v = integer_value("size(" + t + ", " + args[0] + ")");
      } else if (member == "sizes" && args.empty()) {
        v.kind = Value::Kind::dims;
        v.dims.clear();
        for (size_t d = 0; d < rank; ++d) v.dims.push_back(fmt::format("size({}, {})", t, d));
      } else if (member == "dim" || member == "ndimension") {
        v = integer_value(std::to_string(rank));
      } else if (member == "stride" && args.size() == 1) {
        const int64_t d = evaluate_expression(args[0], task_);
        std::string e = "1";
        for (size_t k = static_cast<size_t>(d < 0 ? d + static_cast<int64_t>(rank) : d) + 1; k < rank; ++k)
          e += fmt::format(" * size({}, {})", t, k);
        v = integer_value("(" + e + ")");
      } else {
        throw Unsupported(fmt::format("a torch operation in the host code: '.{}' (torch operation)", member));
      }
    }
    return v;
  }

  std::string integer_of_additive() {
    const Value v = additive();
    if (v.kind != Value::Kind::integer) throw Unsupported("a non-integer size (statement)");
    return v.expr;
  }

  Value primary() {
    const std::string t = take();
    if (t == "(") {
      Value v = additive();
      expect(")");
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '.') {
      std::string digits = t;
      const bool is_float = t.find_first_of(".eEfF") != std::string::npos && t.rfind("0x", 0) != 0;
      if (is_float) {
        while (!digits.empty() && (digits.back() == 'f' || digits.back() == 'F')) digits.pop_back();
        return number_value(std::stod(digits));
      }
      while (!digits.empty() && std::strchr("uUlL", digits.back())) digits.pop_back();
      return integer_value(std::to_string(std::stoll(digits, nullptr, 0)));
    }
    if (t == "static_cast" || t == "reinterpret_cast") {
      expect("<");
      bool to_float = false;
      while (!peek(">")) to_float = to_float || tokens_[pos_] == "float" || tokens_[pos_] == "double", take();
      take();
      expect("(");
      Value v = additive();
      expect(")");
      return cast(v, to_float);
    }
    if (t == "min" || t == "max" || t == "std::min" || t == "std::max" || t == "fmin" || t == "fmax") {
      expect("(");
      const std::string a = integer_of_additive();
      expect(",");
      const std::string b = integer_of_additive();
      expect(")");
      return integer_value((t.find("min") != std::string::npos ? "min(" : "max(") + a + ", " + b + ")");
    }
    if (t == "sizeof") {
      expect("(");
      std::string type;
      while (!peek(")")) type += take();
      take();
      if (type == "float" || type == "scalar_t" || type == "int" || type == "int32_t" || type == "unsigned")
        return integer_value("4");
      if (type == "double" || type == "int64_t" || type == "long" || type == "size_t") return integer_value("8");
      throw Unsupported(fmt::format("sizeof({}) in the host code (statement)", type));
    }
    auto it = names.find(t);
    if (it == names.end())
      throw Unsupported(fmt::format("the host code uses '{}', which it does not define (statement)", t));
    return it->second;
  }

 public:
  std::string tensor_name(const Value& v) const { return tensor_spec(v).name; }
  const TensorSpec& tensor_spec(const Value& v) const {
    return v.kind == Value::Kind::output ? task_.outputs.at(0) : task_.inputs.at(static_cast<size_t>(v.tensor));
  }

 private:
  const TaskSpec& task_;
  std::vector<std::string> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace kbrl::kernelbench
