// The Python side of a KernelBench-format answer (kernelbench_parts.h): string literals, the
// load_inline call, and ModelNew's forward.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernelbench_import.h"
#include "kernelbench_parts.h"
#include "kernelbench_text.h"

namespace kbrl::kernelbench {
namespace {

/// The code with every string literal replaced by `__S<k>__` and every comment removed, and the
/// literals' values (escapes decoded unless raw).
struct Masked {
  std::string text;
  std::vector<std::string> strings;
};

void decode_escape(std::string_view s, size_t& i, std::string& out) {
  const char c = s[i];
  switch (c) {
    case 'n': out += '\n'; break;
    case 't': out += '\t'; break;
    case 'r': out += '\r'; break;
    case '0': out += '\0'; break;
    case '\\': out += '\\'; break;
    case '\'': out += '\''; break;
    case '"': out += '"'; break;
    case '\n': break;  // a line continuation
    default: out += '\\'; out += c;  // Python keeps unknown escapes as written
  }
}

Masked mask_python(std::string_view code) {
  Masked m;
  size_t i = 0;
  while (i < code.size()) {
    const char c = code[i];
    if (c == '#') {
      while (i < code.size() && code[i] != '\n') ++i;
      continue;
    }
    // A string literal, with an optional prefix (r, b, u, f, rb, ...).
    size_t prefix = 0;
    bool raw = false;
    while (prefix < 2 && i + prefix < code.size() && std::strchr("rRbBuUfF", code[i + prefix]) &&
           (i == 0 || !(std::isalnum(static_cast<unsigned char>(code[i - 1])) || code[i - 1] == '_'))) {
      raw = raw || code[i + prefix] == 'r' || code[i + prefix] == 'R';
      ++prefix;
    }
    const size_t q = i + prefix;
    if (q < code.size() && (code[q] == '"' || code[q] == '\'')) {
      const char quote = code[q];
      const bool triple = code.substr(q, 3) == std::string(3, quote);
      size_t j = q + (triple ? 3 : 1);
      std::string value;
      bool closed = false;
      while (j < code.size()) {
        if (code[j] == '\\' && j + 1 < code.size()) {
          if (raw) {
            value += code[j];
            value += code[j + 1];
          } else {
            ++j;
            decode_escape(code, j, value);
          }
          j += raw ? 2 : 1;
          continue;
        }
        if (triple ? code.substr(j, 3) == std::string(3, quote) : code[j] == quote) {
          j += triple ? 3 : 1;
          closed = true;
          break;
        }
        if (!triple && code[j] == '\n') break;
        value += code[j++];
      }
      if (!closed) throw Unsupported("a Python string literal is not terminated (syntax)");
      m.text += fmt::format("__S{}__", m.strings.size());
      m.strings.push_back(std::move(value));
      i = j;
      continue;
    }
    m.text += c;
    ++i;
  }
  return m;
}

/// The text between the parenthesis at `open` and its match.
std::string inside_parens(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '(' || s[i] == '[' || s[i] == '{') ++depth;
    if (s[i] == ')' || s[i] == ']' || s[i] == '}') {
      if (--depth == 0) return s.substr(open + 1, i - open - 1);
    }
  }
  throw Unsupported("unbalanced parentheses in the Python code (syntax)");
}

/// A masked literal's value ("__S3__" -> strings[3]), or nullopt.
std::optional<std::string> literal(const Masked& m, const std::string& token) {
  static const std::regex re(R"(^__S(\d+)__$)");
  std::smatch match;
  if (!std::regex_match(token, match, re)) return std::nullopt;
  return m.strings.at(std::stoul(match[1]));
}

size_t indentation(const std::string& line);
std::vector<std::string> lines_of(const std::string& text);

struct Extension {
  std::string cuda_source;
  std::vector<std::string> functions;
};

/// A load_inline source argument: a literal, a name bound to one at module level, or a list of those.
std::string source_value(const Masked& m, const std::map<std::string, std::string>& names, std::string value,
                         int depth = 0) {
  value = trim(value);
  if (value.size() >= 2 && (value.front() == '[' || value.front() == '(')) {
    if (depth > 8) throw Unsupported("load_inline's CUDA sources nested in lists too deep (syntax)");
    std::string joined;
    for (const std::string& part : split_top(value.substr(1, value.size() - 2)))
      joined += source_value(m, names, part, depth + 1) + "\n";
    return joined;
  }
  if (auto s = literal(m, value)) return *s;
  if (auto it = names.find(value); it != names.end()) return it->second;
  throw Unsupported(fmt::format("load_inline's CUDA source '{}' is not a string literal or a name bound to one",
                                value.substr(0, 60)));
}

std::vector<Extension> extensions(const Masked& m) {
  std::map<std::string, std::string> names;  // module-level NAME = "literal"
  for (const std::string& line : lines_of(m.text)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos || indentation(line) > 0) continue;
    const std::string name = trim(line.substr(0, eq));
    const bool identifier = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                            std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (auto value = literal(m, trim(line.substr(eq + 1))); identifier && value) names[name] = *value;
  }
  std::vector<Extension> found;
  for (size_t at = m.text.find("load_inline("); at != std::string::npos; at = m.text.find("load_inline(", at + 1)) {
    Extension e;
    bool has_source = false;
    for (const std::string& arg : split_top(inside_parens(m.text, at + 11))) {
      const size_t eq = arg.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = trim(arg.substr(0, eq)), value = trim(arg.substr(eq + 1));
      if (key == "cuda_sources") {
        e.cuda_source = source_value(m, names, value);
        has_source = true;
      } else if (key == "functions") {
        const std::string list = value.size() >= 2 && value.front() == '[' ? value.substr(1, value.size() - 2) : value;
        for (const std::string& f : split_top(list))
          if (auto name = literal(m, f)) e.functions.push_back(*name);
      }
    }
    if (has_source) found.push_back(std::move(e));
  }
  return found;
}

size_t indentation(const std::string& line) {
  size_t n = 0;
  while (n < line.size() && (line[n] == ' ' || line[n] == '\t')) ++n;
  return n;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return lines;
}

/// The lines of the block opened by the line at `header` (deeper indented, blank lines kept).
std::vector<std::string> block(const std::vector<std::string>& lines, size_t header) {
  std::vector<std::string> body;
  const size_t base = indentation(lines[header]);
  for (size_t i = header + 1; i < lines.size(); ++i) {
    if (trim(lines[i]).empty()) continue;
    if (indentation(lines[i]) <= base) break;
    body.push_back(lines[i]);
  }
  return body;
}

/// Joins a block's lines into statements (a statement runs on while its brackets are open).
std::vector<std::string> statements(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  for (const std::string& line : lines) {
    current += (current.empty() ? "" : " ") + trim(line);
    for (const char c : line) depth += (c == '(' || c == '[' || c == '{') - (c == ')' || c == ']' || c == '}');
    if (depth <= 0) {
      out.push_back(current);
      current.clear();
      depth = 0;
    }
  }
  if (!current.empty()) out.push_back(current);
  return out;
}

/// forward's parameter names (without self, annotations and defaults).
std::vector<std::string> parameter_names(const std::string& def) {
  const size_t open = def.find('(');
  std::vector<std::string> names;
  for (const std::string& p : split_top(inside_parens(def, open))) {
    std::string name = trim(p.substr(0, std::min(p.find(':'), p.find('='))));
    if (!name.empty() && name[0] == '*') throw Unsupported("forward takes *args (forward)");
    if (name != "self") names.push_back(name);
  }
  return names;
}

CallArg call_arg(std::string arg, const std::vector<std::string>& params, const TaskSpec& task) {
  static const std::regex suffix(R"(\.(contiguous|cuda|float)\(\s*\)\s*$)");
  for (std::string before; before != arg;) {
    before = arg;
    arg = trim(std::regex_replace(arg, suffix, ""));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i] != arg) continue;
    if (i < task.inputs.size()) return {CallArg::Kind::input, static_cast<int>(i), 0.0};
    if (i < task.inputs.size() + task.scalars.size())
      return {CallArg::Kind::scalar, static_cast<int>(i - task.inputs.size()), 0.0};
    throw Unsupported(fmt::format("forward's argument '{}' is not one of the task's inputs (forward)", arg));
  }
  try {
    size_t used = 0;
    const double v = std::stod(arg, &used);
    if (used == arg.size()) return {CallArg::Kind::number, 0, v};
  } catch (const std::exception&) {
  }
  throw Unsupported(fmt::format("forward passes '{}' to the extension: only its own arguments and number literals "
                                "are read (forward)", arg.substr(0, 60)));
}

}  // namespace

PythonAnswer read_python_answer(std::string_view code, const TaskSpec& task) {
  const Masked m = mask_python(code);
  const std::vector<std::string> lines = lines_of(m.text);
  size_t model = lines.size();
  for (size_t i = 0; i < lines.size(); ++i)
    if (trim(lines[i]).rfind("class ModelNew", 0) == 0) model = i;
  if (model == lines.size()) throw Unsupported("no class ModelNew");
  const std::vector<Extension> found = extensions(m);
  if (found.empty())
    throw Unsupported("no CUDA source: ModelNew compiles nothing with load_inline (a PyTorch rewrite is not a kernel)");
  const std::vector<std::string> cls = block(lines, model);
  std::vector<std::string> params, body;
  bool has_forward = false;
  for (size_t i = 0; i < cls.size(); ++i) {
    const std::string line = trim(cls[i]);
    if (line.rfind("def ", 0) != 0) continue;
    std::vector<std::string> def_body;
    const size_t base = indentation(cls[i]);
    for (size_t j = i + 1; j < cls.size() && indentation(cls[j]) > base; ++j) def_body.push_back(cls[j]);
    if (line.rfind("def __init__", 0) == 0) {
      static const std::regex weights(R"(nn\.(Parameter|Linear|Conv\w*|BatchNorm\w*|LayerNorm|Embedding|GroupNorm|InstanceNorm\w*)\b|register_buffer|torch\.(randn|rand|empty|zeros|ones)\()");
      for (const std::string& l : def_body)
        if (l.size() > 2000 || std::regex_search(l, weights))
          throw Unsupported("ModelNew creates weights or buffers of its own (parameters): the task's are not its");
    }
    if (line.rfind("def forward", 0) == 0) {
      params = parameter_names(statements({line}).front());
      body = statements(def_body);
      has_forward = true;
    }
  }
  if (!has_forward) throw Unsupported("ModelNew has no forward (forward)");
  std::vector<std::string> code_lines;
  for (const std::string& s : body)
    if (!literal(m, s)) code_lines.push_back(s);  // a docstring is not code
  static const std::regex call(R"(^return\s+([A-Za-z_][\w\.]*)\s*\((.*)\)\s*$)");
  std::smatch match;
  constexpr size_t kLongest = 2000;  // std::regex recurses per character: a bound on what it reads
  if (code_lines.size() != 1 || code_lines.front().size() > kLongest ||
      !std::regex_match(code_lines.front(), match, call))
    throw Unsupported("ModelNew.forward must return one call of the extension's function and do nothing else (forward)");
  const std::string callee = match[1];
  PythonAnswer answer;
  answer.function = callee.substr(callee.rfind('.') + 1);
  for (const Extension& e : found)
    for (const std::string& f : e.functions)
      if (f == answer.function) answer.cuda_source = e.cuda_source;
  if (answer.cuda_source.empty()) {
    if (found.size() > 1)
      throw Unsupported(fmt::format("forward calls '{}', which no load_inline's functions list names (forward)", callee));
    answer.cuda_source = found.front().cuda_source;  // one extension: its function, named or not
  }
  for (const std::string& arg : split_top(match.str(2))) answer.args.push_back(call_arg(arg, params, task));
  return answer;
}

}  // namespace kbrl::kernelbench

namespace kbrl {

bool is_kernelbench_answer(std::string_view code) { return code.find("class ModelNew") != std::string_view::npos; }

KernelBenchImport import_kernelbench_answer(std::string_view code, const TaskSpec& task) {
  try {
    const kernelbench::PythonAnswer answer = kernelbench::read_python_answer(code, task);
    return {kernelbench::translate_host_function(answer, task), ""};
  } catch (const kernelbench::Unsupported& e) {
    return {"", e.what()};
  } catch (const std::exception& e) {  // std::regex_error on pathological input, a stoul out of range
    return {"", fmt::format("the answer could not be read: {}", e.what())};
  }
}

}  // namespace kbrl
