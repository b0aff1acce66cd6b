#include "action.h"

#include <cctype>
#include <regex>

#include <kbrl/error.h>

#include "candidate_file.h"
#include "generator.h"
#include "kernelbench_import.h"
#include "scaffold.h"

namespace kbrl {
namespace {

constexpr std::string_view kModelFile = "model_output.cu";
constexpr std::string_view kKernelBenchFile = "kernelbench_answer.cu";  // the file imported from one

std::string normalize_newlines(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      out += '\n';
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

bool blank(std::string_view line) {
  for (char c : line)
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  return true;
}

/// Drops leading and trailing blank lines.
std::string trim_blank_lines(const std::string& text) {
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t end = text.find('\n', begin);
    const std::string_view line(text.data() + begin, (end == std::string::npos ? text.size() : end) - begin);
    if (!blank(line) || end == std::string::npos) break;
    begin = end + 1;
  }
  size_t stop = text.size();
  while (stop > begin && std::isspace(static_cast<unsigned char>(text[stop - 1]))) --stop;
  // keep the trailing spaces of the last non-blank line out too; code never needs them
  return text.substr(begin, stop - begin);
}

/// The fence of a line ("```" or "~~~", three or more), or "" when it is not a fence line.
std::string_view fence_of(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i + 3 > line.size()) return {};
  const char c = line[i];
  if (c != '`' && c != '~') return {};
  size_t j = i;
  while (j < line.size() && line[j] == c) ++j;
  if (j - i < 3) return {};
  return line.substr(i, j - i);
}

/// A scanner over C++ source that knows comments, string and character literals.
class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}
  size_t size() const { return s_.size(); }

  /// Index after the literal or comment starting at i, or i when none starts there.
  size_t skip_non_code(size_t i) const {
    if (s_.compare(i, 2, "//") == 0) {
      const size_t e = s_.find('\n', i);
      return e == std::string_view::npos ? s_.size() : e;
    }
    if (s_.compare(i, 2, "/*") == 0) {
      const size_t e = s_.find("*/", i + 2);
      return e == std::string_view::npos ? s_.size() : e + 2;
    }
    if (s_[i] == '"' || s_[i] == '\'') {
      const char q = s_[i];
      size_t j = i + 1;
      while (j < s_.size() && s_[j] != q && s_[j] != '\n') j += s_[j] == '\\' ? 2 : 1;
      return std::min(j + 1, s_.size());
    }
    return i;
  }

  /// The first index >= i that is code and not white space.
  size_t next_code(size_t i) const {
    while (i < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[i]))) {
        ++i;
        continue;
      }
      const size_t j = skip_non_code(i);
      if (j == i || s_[i] == '"' || s_[i] == '\'') return i;
      i = j;
    }
    return s_.size();
  }

  /// Index of the bracket matching the opening one at `open` ('(' or '{'), or npos.
  size_t match(size_t open) const {
    const char o = s_[open], c = o == '(' ? ')' : '}';
    int depth = 0;
    for (size_t i = open; i < s_.size();) {
      const size_t j = skip_non_code(i);
      if (j != i) {
        i = j;
        continue;
      }
      if (s_[i] == o) ++depth;
      if (s_[i] == c && --depth == 0) return i;
      ++i;
    }
    return std::string_view::npos;
  }

  /// The first index >= i holding `ch` in code (outside comments and literals), or npos.
  size_t find_code(char ch, size_t i) const {
    while (i < s_.size()) {
      const size_t j = skip_non_code(i);
      if (j != i) {
        i = j;
        continue;
      }
      if (s_[i] == ch) return i;
      ++i;
    }
    return std::string_view::npos;
  }

  /// Brace balance over the code (literals and comments skipped); 0 when balanced.
  int brace_balance() const {
    int depth = 0;
    for (size_t i = 0; i < s_.size();) {
      const size_t j = skip_non_code(i);
      if (j != i) {
        i = j;
        continue;
      }
      depth += s_[i] == '{' ? 1 : s_[i] == '}' ? -1 : 0;
      if (depth < 0) return depth;
      ++i;
    }
    return depth;
  }

  /// The code alone: comments and literals blanked to spaces (for keyword searches).
  std::string code_only() const {
    std::string out(s_);
    for (size_t i = 0; i < s_.size();) {
      const size_t j = skip_non_code(i);
      if (j == i) {
        ++i;
        continue;
      }
      for (size_t k = i; k < j; ++k)
        if (out[k] != '\n') out[k] = ' ';
      i = j;
    }
    return out;
  }

 private:
  std::string_view s_;
};

bool starts_word(std::string_view s, size_t i, std::string_view word) {
  if (s.compare(i, word.size(), word) != 0) return false;
  const size_t e = i + word.size();
  return e >= s.size() || !(std::isalnum(static_cast<unsigned char>(s[e])) || s[e] == '_');
}

/// Does a top-level helper definition (not a statement of the body) start at i?
bool helper_starts(std::string_view s, size_t i) {
  if (s[i] == '#') return true;
  for (std::string_view w : {"__device__", "__forceinline__", "__noinline__", "static", "inline", "template",
                             "struct", "union", "enum", "typedef", "using", "namespace", "__constant__",
                             "constexpr", "extern", "__host__"})
    if (starts_word(s, i, w)) return true;
  return false;
}

/// The index after the top-level item starting at i: a preprocessor line (with continuations), a
/// definition with a braced body (and its optional ';'), or a declaration up to ';'. npos when it
/// does not end.
size_t item_end(const Scanner& sc, std::string_view s, size_t i) {
  if (s[i] == '#') {
    size_t e = i;
    while (true) {
      e = s.find('\n', e);
      if (e == std::string_view::npos) return s.size();
      if (e > 0 && s[e - 1] == '\\') {
        ++e;
        continue;
      }
      return e + 1;
    }
  }
  const size_t brace = sc.find_code('{', i), semi = sc.find_code(';', i);
  if (semi != std::string_view::npos && (brace == std::string_view::npos || semi < brace)) return semi + 1;
  if (brace == std::string_view::npos) return std::string_view::npos;
  const size_t close = sc.match(brace);
  if (close == std::string_view::npos) return std::string_view::npos;
  const size_t after = sc.next_code(close + 1);
  return after < s.size() && s[after] == ';' ? after + 1 : close + 1;
}

struct BodyParts {
  std::string helpers, body, error;
};

/// Splits body-style code into helper definitions and the kernel's body.
BodyParts split_body(const std::string& code) {
  const Scanner sc(code);
  const std::string bare = sc.code_only();
  BodyParts p;
  static const std::regex main_fn(R"(\bint\s+main\s*\()");
  if (std::regex_search(bare, main_fn)) {
    p.error = "the code defines main(): a candidate is device code only (the harness owns the host side)";
    return p;
  }
  if (sc.brace_balance() != 0) {
    p.error = "unbalanced braces in the code (a truncated answer?)";
    return p;
  }
  // A complete kbrl_forward definition: its braces hold the body, what precedes it the helpers.
  static const std::regex forward_def(R"(\bkbrl_forward\s*\()");
  std::smatch m;
  if (std::regex_search(bare, m, forward_def)) {
    const size_t paren = static_cast<size_t>(m.position(0) + m.length(0) - 1);
    const size_t close_paren = sc.match(paren);
    const size_t open = close_paren == std::string::npos ? std::string::npos : sc.next_code(close_paren + 1);
    if (open >= code.size() || code[open] != '{') {
      p.error = "kbrl_forward is named but not defined with a body";
      return p;
    }
    const size_t close = sc.match(open);
    const size_t line_start = code.rfind('\n', static_cast<size_t>(m.position(0)));
    // the definition's first line: back to the start of its declaration (extern "C" __global__ ...)
    size_t decl = line_start == std::string::npos ? 0 : line_start + 1;
    while (decl > 0) {  // a signature split over lines: `extern "C" __global__ void\nkbrl_forward(`
      const size_t prev = code.rfind('\n', decl - 2);
      const std::string_view line(code.data() + (prev == std::string::npos ? 0 : prev + 1),
                                  decl - 1 - (prev == std::string::npos ? 0 : prev + 1));
      if (line.find("__global__") == std::string_view::npos && line.find("extern") == std::string_view::npos) break;
      decl = prev == std::string::npos ? 0 : prev + 1;
    }
    if (sc.next_code(close + 1) < code.size()) {
      p.error = "code after the kbrl_forward definition: put helpers before it";
      return p;
    }
    p.helpers = code.substr(0, decl);
    p.body = code.substr(open + 1, close - open - 1);
  } else {
    size_t i = sc.next_code(0);
    size_t helpers_end = 0;
    while (i < code.size() && helper_starts(code, i)) {
      const size_t e = item_end(sc, code, i);
      if (e == std::string::npos) {
        p.error = "a helper definition that does not end";
        return p;
      }
      helpers_end = e;
      i = sc.next_code(e);
    }
    p.helpers = code.substr(0, helpers_end);
    p.body = code.substr(helpers_end);
  }
  if (Scanner(p.body).next_code(0) >= p.body.size()) {
    p.error = "no kernel body in the code (only helpers or comments)";
    return p;
  }
  static const std::regex global_fn(R"(\b__global__\b)");
  if (std::regex_search(Scanner(p.body).code_only(), global_fn) ||
      std::regex_search(Scanner(p.helpers).code_only(), global_fn)) {
    p.error = "the code defines a __global__ kernel other than kbrl_forward: answer with the body of "
              "kbrl_forward (or a candidate file with `// kbrl: launch` lines)";
    return p;
  }
  return p;
}

bool has_plan_line(const std::string& code) {
  static const std::regex plan(R"((^|\n)[ \t]*//[ \t]*kbrl:)");
  return std::regex_search(code, plan);
}

}  // namespace

std::string_view to_string(ActionKind k) { return enum_name(k); }
ActionKind parse_action_kind(std::string_view s) { return parse_enum<ActionKind>(s); }
std::string_view to_string(TextStyle s) { return enum_name(s); }
TextStyle parse_text_style(std::string_view s) { return parse_enum<TextStyle>(s); }

std::string extract_code(std::string_view raw) {
  const std::string text = normalize_newlines(raw);
  std::vector<std::string> blocks;
  std::string current;
  std::string_view open_fence;  // empty: outside a block
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + begin, end - begin);
    const std::string_view fence = fence_of(line);
    if (open_fence.empty()) {
      if (!fence.empty()) {
        open_fence = fence;
        current.clear();
      }
    } else if (!fence.empty() && fence[0] == open_fence[0] && fence.size() >= open_fence.size() &&
               blank(line.substr(line.find(fence) + fence.size()))) {
      blocks.push_back(current);
      open_fence = {};
    } else {
      current.append(line).append("\n");
    }
    begin = end + 1;
  }
  if (!open_fence.empty()) blocks.push_back(current);  // the closing fence is missing
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
    if (!blank(*it)) return trim_blank_lines(*it);
  return blocks.empty() ? trim_blank_lines(text) : std::string();  // only empty blocks: no code
}

Realized realize(const TaskSpec& task, const Action& action) {
  Realized r;
  r.raw = action.kind == ActionKind::text ? action.text : action.config.str();
  if (action.kind == ActionKind::knobs) {
    r.candidate = generator_for(task.id).generate(task, action.config);
    return r;
  }
  if (action.text.size() > kMaxActionTextBytes) {
    r.format_error = fmt::format("the text has {} bytes; at most {} are read", action.text.size(), kMaxActionTextBytes);
    return r;
  }
  r.code = extract_code(action.text);
  if (blank(r.code)) {
    r.format_error = "no code in the text";
    return r;
  }
  if (is_kernelbench_answer(r.code)) {
    const KernelBenchImport imported = import_kernelbench_answer(r.code, task);
    if (!imported.unsupported.empty()) {
      r.format_error = "a KernelBench-format answer kbrl cannot read: " + imported.unsupported;
      r.failure = Outcome::unsupported_format;
      return r;
    }
    r.code = imported.candidate_file;
    r.style = TextStyle::file;
    try {
      r.candidate = parse_candidate_file(r.code, task, kKernelBenchFile);
    } catch (const InputError& e) {
      r.format_error = e.what();
    }
    return r;
  }
  if (has_plan_line(r.code)) {
    r.style = TextStyle::file;
    try {
      r.candidate = parse_candidate_file(r.code, task, kModelFile);
    } catch (const InputError& e) {
      r.format_error = e.what();
    }
    return r;
  }
  r.style = TextStyle::body;
  BodyParts parts = split_body(r.code);
  if (!parts.error.empty()) {
    r.format_error = std::move(parts.error);
    return r;
  }
  ScaffoldOptions options;
  options.helpers = std::move(parts.helpers);
  try {
    r.candidate = scaffold(task, parts.body, options);
  } catch (const InputError& e) {
    r.format_error = e.what();
  }
  return r;
}

}  // namespace kbrl
