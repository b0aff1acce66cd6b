#pragma once
// Chat templates of instruct models, as the text the model reads. The GGUF metadata or
// tokenizer_config.json carries a Jinja template; kbrl does not run Jinja: it recognizes the
// template's family by its markers and renders that family itself. Families: chatml
// (<|im_start|>role\n...<|im_end|>\n: SmolLM2, Qwen2), llama3 (<|start_header_id|>...<|eot_id|>),
// and plain (no template: "system\n\nuser\n\n" text, for base models). SmolLM2's and Qwen2's
// templates add a default system message when the conversation has none; the renderer does the
// same with the default found in the template text.
#include <string>
#include <vector>

namespace kbrl::lm {

enum class ChatFamily { plain, chatml, llama3 };

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
};

struct ChatTemplate {
  ChatFamily family = ChatFamily::plain;
  std::string default_system;  // "" = none
  std::string bos_text;        // prepended text (llama3: "<|begin_of_text|>"), "" = none
  /// The conversation followed by the opening of the assistant's turn (add_generation_prompt).
  std::string render(const std::vector<ChatMessage>& messages) const;
  /// The text that ends the assistant's turn ("<|im_end|>", "<|eot_id|>", "" for plain).
  std::string end_of_turn() const;
};

/// The family of a Jinja chat template's text ("" = plain). InputError for a template that is
/// none of the known families, naming the markers looked for.
ChatTemplate chat_template_from_jinja(const std::string& jinja);

}  // namespace kbrl::lm
