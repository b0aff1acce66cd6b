#include "cuda_text.h"

#include <cctype>
#include <map>
#include <string>

#include <kbrl/error.h>

#include "cuda_text_files.h"

namespace kbrl::cuda_text {
namespace {

constexpr std::string_view kMarker = "//@section ";

struct Section {
  std::string name;
  std::string text;
  bool has_placeholder = false;
};

/// Whether `text` holds @KEY@ (KEY: upper-case letters, digits, underscores; at least one).
bool has_placeholder(std::string_view text) {
  for (size_t at = text.find('@'); at != std::string_view::npos; at = text.find('@', at + 1)) {
    size_t end = at + 1;
    while (end < text.size() && (std::isupper(static_cast<unsigned char>(text[end])) ||
                                 std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '_'))
      ++end;
    if (end > at + 1 && end < text.size() && text[end] == '@') return true;
  }
  return false;
}

std::vector<Section> parse(const EmbeddedFile& file) {
  std::vector<Section> sections;
  bool drop_newline = false;
  auto close = [&] {
    if (sections.empty()) return;
    Section& s = sections.back();
    if (drop_newline && !s.text.empty() && s.text.back() == '\n') s.text.pop_back();
    s.has_placeholder = has_placeholder(s.text);
  };
  size_t pos = 0;
  while (pos < file.text.size()) {
    size_t eol = file.text.find('\n', pos);
    const size_t next = eol == std::string_view::npos ? file.text.size() : eol + 1;
    const std::string_view line = file.text.substr(pos, next - pos);
    if (line.starts_with(kMarker)) {
      close();
      std::string_view rest = line.substr(kMarker.size());
      while (!rest.empty() && (rest.back() == '\n' || rest.back() == ' ')) rest.remove_suffix(1);
      drop_newline = rest.ends_with(" nonl");
      if (drop_newline) rest.remove_suffix(5);
      KBRL_ASSERT(!rest.empty() && rest.find(' ') == std::string_view::npos,
                  "{}: a section marker needs one name: '{}'", file.name, line);
      for (const Section& s : sections)
        KBRL_ASSERT(s.name != rest, "{}: section '{}' given twice", file.name, rest);
      sections.push_back({std::string(rest), {}, false});
    } else if (!sections.empty()) {
      sections.back().text.append(line);
    }
    pos = next;
  }
  close();
  return sections;
}

const std::map<std::string, std::vector<Section>, std::less<>>& files() {
  static const auto parsed = [] {
    std::map<std::string, std::vector<Section>, std::less<>> out;
    for (const EmbeddedFile& f : embedded_files()) out.emplace(std::string(f.name), parse(f));
    return out;
  }();
  return parsed;
}

const std::vector<Section>& sections_of(std::string_view file) {
  const auto it = files().find(file);
  KBRL_ASSERT(it != files().end(), "no CUDA file '{}' embedded from kernels/generators/cuda/", file);
  return it->second;
}

const Section& find(std::string_view file, std::string_view name) {
  for (const Section& s : sections_of(file))
    if (s.name == name) return s;
  KBRL_ASSERT(false, "kernels/generators/cuda/{} has no section '{}'", file, name);
  __builtin_unreachable();
}

}  // namespace

const std::string& section(std::string_view file, std::string_view name) {
  const Section& s = find(file, name);
  KBRL_ASSERT(!s.has_placeholder, "{} section '{}' has placeholders: use fill()", file, name);
  return s.text;
}

std::string fill(std::string_view file, std::string_view name,
                 std::initializer_list<std::pair<std::string_view, std::string>> values) {
  std::string text = find(file, name).text;
  for (const auto& [key, value] : values) {
    std::string token(1, '@');  // "@KEY@" (built in steps: g++ 12 warns about "@" + key)
    token.append(key).push_back('@');
    size_t at = text.find(token);
    KBRL_ASSERT(at != std::string::npos, "{} section '{}' has no placeholder {}", file, name, token);
    for (; at != std::string::npos; at = text.find(token, at + value.size()))
      text.replace(at, token.size(), value);
  }
  KBRL_ASSERT(!has_placeholder(text), "{} section '{}': a placeholder was left without a value", file, name);
  return text;
}

std::vector<std::string> section_names(std::string_view file) {
  std::vector<std::string> names;
  for (const Section& s : sections_of(file)) names.push_back(s.name);
  return names;
}

}  // namespace kbrl::cuda_text
