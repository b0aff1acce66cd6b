#include "candidate_file_fields.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>

#include <kbrl/error.h>

#include "expression.h"

namespace kbrl::candidate_file_detail {
namespace {

int find_index(const std::vector<TensorSpec>& tensors, std::string_view name) {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensor_name_matches(tensors[i].name, name)) return static_cast<int>(i);
  return -1;
}

std::string names_of(const auto& items) {
  std::string names;
  for (const auto& item : items) names += (names.empty() ? "" : ", ") + item.name;
  return names.empty() ? "none" : names;
}

}  // namespace


[[noreturn]] void fail(std::string what) { throw LineError{std::move(what)}; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

/// Splits at `sep` outside parentheses (sep == ' ' splits at any run of whitespace).
std::vector<std::string> split_top_level(std::string_view s, char sep) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (const char c : s) {
    const bool at_sep = sep == ' ' ? std::isspace(static_cast<unsigned char>(c)) != 0 : c == sep;
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (at_sep && depth == 0) {
      if (sep != ' ' || !current.empty()) parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (sep != ' ' || !current.empty()) parts.push_back(current);
  return parts;
}


Fields parse_fields(std::string_view rest, std::initializer_list<std::string_view> keys) {
  Fields fields;
  std::string* last = nullptr;
  for (auto& token : split_top_level(rest, ' ')) {
    const auto eq = token.find('=');
    const bool is_key = eq != std::string::npos && eq > 0 &&
                        std::all_of(token.begin(), token.begin() + static_cast<long>(eq),
                                    [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
    if (!is_key) {
      if (last) {
        *last += token;
      } else {
        fields.heads.push_back(token);
      }
      continue;
    }
    std::string key = token.substr(0, eq);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string legal;
      for (auto k : keys) legal += (legal.empty() ? "" : ", ") + std::string(k);
      fail(fmt::format("unknown key '{}' (expected {})", quote_input(key, 40), legal));
    }
    auto [it, inserted] = fields.values.emplace(key, token.substr(eq + 1));
    if (!inserted) fail(fmt::format("'{}' given twice", key));
    last = &it->second;
  }
  return fields;
}

int64_t eval(std::string_view text, const TaskSpec& task) {
  try {
    return evaluate_expression(text, task);
  } catch (const InputError& e) {
    fail(e.what());
  }
}

/// 1 to 3 comma-separated expressions, each within [1, limit of that axis].
Dim3 parse_dim3(const std::string& key, const std::string& text, const TaskSpec& task,
                const int64_t (&limits)[3]) {
  const auto parts = split_top_level(text, ',');
  if (text.empty() || parts.size() > 3)
    fail(fmt::format("{}= takes 1 to 3 comma-separated expressions, got '{}'", key, quote_input(text)));
  uint32_t v[3] = {1, 1, 1};
  const char* axis = "xyz";
  for (size_t i = 0; i < parts.size(); ++i) {
    const int64_t value = eval(parts[i], task);
    if (value <= 0)
      fail(fmt::format("{}.{} is {} ('{}'): every {} dimension must be at least 1", key, axis[i],
                       value, quote_input(trim(parts[i])), key));
    if (value > limits[i])
      fail(fmt::format("{}.{} is {} ('{}'): CUDA allows at most {}", key, axis[i], value,
                       quote_input(trim(parts[i])), limits[i]));
    v[i] = static_cast<uint32_t>(value);
  }
  return {v[0], v[1], v[2]};
}

uint32_t parse_smem(const std::string& text, const TaskSpec& task) {
  const int64_t value = eval(text, task);
  if (value < 0 || value > plan_limits::kMaxSharedBytes)
    fail(fmt::format("smem is {}: dynamic shared memory must be 0 to {} bytes (227 KiB, the most a "
                     "block can have on any GPU)", value, plan_limits::kMaxSharedBytes));
  return static_cast<uint32_t>(value);
}


KernelArg resolve_arg(std::string_view arg, const TaskSpec& task, const Candidate& candidate) {
  const auto colon = arg.find(':');
  if (colon == std::string_view::npos)
    fail(fmt::format("argument '{}' has no kind (in:, param:, out:, scratch:, scalar:, f32:, "
                     "i32:, i64:)", quote_input(arg)));
  const std::string_view kind = arg.substr(0, colon);
  const std::string_view value = trim(arg.substr(colon + 1));
  const std::string quoted_arg = quote_input(arg);
  const std::string quoted_value = quote_input(value, 40);
  auto tensor_arg = [&](ArgKind k, const std::vector<TensorSpec>& group, const char* what) {
    const int index = find_index(group, value);
    if (index < 0)
      fail(fmt::format("unknown {} '{}' in '{}' (task {} {}s: {})", what, quoted_value, quoted_arg,
                       task.id, what, names_of(group)));
    return KernelArg{k, index};
  };
  if (kind == "in") return tensor_arg(ArgKind::input, task.inputs, "input");
  if (kind == "param") return tensor_arg(ArgKind::parameter, task.parameters, "parameter");
  if (kind == "out") return tensor_arg(ArgKind::output, task.outputs, "output");
  if (kind == "scratch" || kind == "scalar") {
    const bool scratch = kind == "scratch";
    const size_t n = scratch ? candidate.scratch.size() : task.scalars.size();
    for (size_t i = 0; i < n; ++i) {
      const std::string& name = scratch ? candidate.scratch[i].name : task.scalars[i].name;
      if (name == value) return {scratch ? ArgKind::scratch : ArgKind::task_scalar, static_cast<int>(i)};
    }
    fail(fmt::format("unknown {} '{}' in '{}' (declared: {})", kind, quoted_value, quoted_arg,
                     scratch ? names_of(candidate.scratch) : names_of(task.scalars)));
  }
  if (kind == "f32") {
    KernelArg out{ArgKind::f32};
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out.value);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size())
      fail(fmt::format("bad number '{}' in '{}'", quoted_value, quoted_arg));
    return out;
  }
  if (kind == "i32" || kind == "i64") {
    KernelArg out{kind == "i32" ? ArgKind::i32 : ArgKind::i64};
    out.ivalue = eval(value, task);
    if (kind == "i32" && (out.ivalue < INT32_MIN || out.ivalue > INT32_MAX))
      fail(fmt::format("'{}' is {}, outside the int32 range", quoted_arg, out.ivalue));
    return out;
  }
  fail(fmt::format("unknown argument kind '{}' in '{}' (in, param, out, scratch, scalar, f32, i32, "
                   "i64)", quote_input(kind, 40), quoted_arg));
}

bool is_identifier(std::string_view s) {
  return !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0])) &&
         std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

/// Does `source` mention `name` as a whole identifier?
bool mentions(std::string_view source, std::string_view name) {
  for (size_t pos = source.find(name); pos != std::string_view::npos;
       pos = source.find(name, pos + 1)) {
    auto is_id = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    const bool left = pos == 0 || !is_id(source[pos - 1]);
    const bool right = pos + name.size() >= source.size() || !is_id(source[pos + name.size()]);
    if (left && right) return true;
  }
  return false;
}

/// The directive of a line (`// kbrl: <rest>`), or nullopt for ordinary source.
std::optional<std::string_view> directive(std::string_view line) {
  line = trim(line);
  if (line.substr(0, 2) != "//") return std::nullopt;
  line = trim(line.substr(2));
  if (line.substr(0, 5) != "kbrl:") return std::nullopt;
  return trim(line.substr(5));
}

}  // namespace kbrl::candidate_file_detail
