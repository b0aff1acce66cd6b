// Chat templates: recognize a Jinja template's family by its markers and render that family here
// (kbrl does not run Jinja). The renderings match llama-server's Jinja output for SmolLM2's,
// Qwen2.5's and Llama 3's templates (test_lm_files holds the reference strings).
#include <policies/lm/chat_template.h>

#include <kbrl/error.h>

#include <string_view>

namespace kbrl::lm {
namespace {

constexpr std::string_view kImStart = "<|im_start|>";
constexpr std::string_view kImEnd = "<|im_end|>";
constexpr std::string_view kHeaderStart = "<|start_header_id|>";
constexpr std::string_view kHeaderEnd = "<|end_header_id|>";
constexpr std::string_view kEotId = "<|eot_id|>";

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

/// Jinja's `trim` filter: strips leading and trailing whitespace. Llama 3's templates apply it to
/// every message's content.
std::string trimmed(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return "";
  const size_t last = text.find_last_not_of(kSpace);
  return std::string(text.substr(first, last - first + 1));
}

/// The text of a Jinja string literal's inside, its escapes (\n, \t, \', \", \\) resolved. A
/// literal's newline may be written as a real newline (SmolLM2's template in the GGUF) or as \n
/// (Qwen2.5's tokenizer_config.json), so both spellings are read.
std::string unescaped(std::string_view literal) {
  std::string out;
  for (size_t i = 0; i < literal.size(); ++i) {
    if (literal[i] != '\\' || i + 1 == literal.size()) {
      out += literal[i];
      continue;
    }
    const char next = literal[++i];
    switch (next) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      default: out += next; break;  // \\, \', \"
    }
  }
  return out;
}

/// Does the segment stay inside one string literal, i.e. hold no unescaped quote?
bool inside_one_literal(std::string_view segment) {
  for (size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] == '\\') {
      ++i;
      continue;
    }
    if (segment[i] == '\'' || segment[i] == '"') return false;
  }
  return true;
}

/// The default system message of a ChatML template: the text between "<|im_start|>system\n" and
/// "<|im_end|>" inside one string literal, which is the branch that runs when the conversation has
/// no system message. Other occurrences (e.g. '<|im_start|>system\n' + messages[0]['content'] +
/// ...) cross a literal's end and are skipped. "" when there is none.
std::string chatml_default_system(std::string_view jinja) {
  const std::string opener = std::string(kImStart) + "system";
  for (size_t at = jinja.find(opener); at != std::string_view::npos;
       at = jinja.find(opener, at + 1)) {
    size_t begin = at + opener.size();
    if (jinja.substr(begin, 1) == "\n") {
      begin += 1;
    } else if (jinja.substr(begin, 2) == "\\n") {
      begin += 2;
    } else {
      continue;
    }
    const size_t end = jinja.find(kImEnd, begin);
    if (end == std::string_view::npos) break;
    const std::string_view segment = jinja.substr(begin, end - begin);
    if (!segment.empty() && inside_one_literal(segment)) return unescaped(segment);
  }
  return "";
}

}  // namespace

ChatTemplate chat_template_from_jinja(const std::string& jinja) {
  ChatTemplate chat;
  if (trimmed(jinja).empty()) return chat;  // plain
  if (contains(jinja, kImStart) && contains(jinja, kImEnd)) {
    chat.family = ChatFamily::chatml;
    chat.default_system = chatml_default_system(jinja);
    return chat;
  }
  if (contains(jinja, kHeaderStart) && contains(jinja, kHeaderEnd) && contains(jinja, kEotId)) {
    chat.family = ChatFamily::llama3;
    // The templates write `bos_token` first; a Llama 3 vocabulary's is <|begin_of_text|>.
    chat.bos_text = "<|begin_of_text|>";
    return chat;
  }
  const std::string start = jinja.substr(0, 120);
  throw InputError(fmt::format(
      "chat template of an unknown family: kbrl renders chatml (markers {} and {}) and llama3 "
      "(markers {}, {} and {}), and found neither in the template, which begins: {:?}",
      kImStart, kImEnd, kHeaderStart, kHeaderEnd, kEotId, start));
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages) const {
  std::string out = bos_text;
  // SmolLM2's and Qwen2's templates add their default system message before the first message
  // when that message is not a system one (and add nothing to an empty conversation).
  const bool add_default_system =
      !default_system.empty() && !messages.empty() && messages.front().role != "system";
  switch (family) {
    case ChatFamily::plain:
      for (const ChatMessage& message : messages) out += message.content + "\n\n";
      return out;
    case ChatFamily::chatml:
      if (add_default_system) {
        out += fmt::format("{}system\n{}{}\n", kImStart, default_system, kImEnd);
      }
      for (const ChatMessage& message : messages) {
        out += fmt::format("{}{}\n{}{}\n", kImStart, message.role, message.content, kImEnd);
      }
      out += fmt::format("{}assistant\n", kImStart);
      return out;
    case ChatFamily::llama3:
      if (add_default_system) {
        out += fmt::format("{}system{}\n\n{}{}", kHeaderStart, kHeaderEnd, trimmed(default_system),
                           kEotId);
      }
      for (const ChatMessage& message : messages) {
        out += fmt::format("{}{}{}\n\n{}{}", kHeaderStart, message.role, kHeaderEnd,
                           trimmed(message.content), kEotId);
      }
      out += fmt::format("{}assistant{}\n\n", kHeaderStart, kHeaderEnd);
      return out;
  }
  throw InternalError("ChatTemplate::render: unknown chat family");
}

std::string ChatTemplate::end_of_turn() const {
  switch (family) {
    case ChatFamily::plain: return "";
    case ChatFamily::chatml: return std::string(kImEnd);
    case ChatFamily::llama3: return std::string(kEotId);
  }
  throw InternalError("ChatTemplate::end_of_turn: unknown chat family");
}

}  // namespace kbrl::lm
