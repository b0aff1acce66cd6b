// Chat templates (policies/lm/chat_template.h): family recognition, the default system message
// found in the template text, and renderings checked against llama-server's Jinja renderer.
//
// The reference strings were obtained ONCE from llama-server (llama.cpp commit 0c1e570, as vendored
// in llama_cpp_python 0.3.36; /props build_info "b1-0c1e570") with SmolLM2-135M-Instruct.Q4_1.gguf:
// POST {url}/apply-template {"messages": [...]}, the server started with the GGUF's own template
// (SmolLM2) or with --chat-template-file holding the Qwen2.5 / Llama 3 template below. They are
// committed here verbatim ("prompt" of the reply).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kbrl/error.h>
#include <policies/lm/chat_template.h>

namespace kbrl::lm {
namespace {

// SmolLM2-135M-Instruct's template, exactly as the GGUF's tokenizer.chat_template holds it (its
// string literals contain real newlines).
const std::string kSmolLM2Template =
    "{% for message in messages %}"
    "{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
    "{% endif %}";

// Qwen2.5-7B-Instruct's template, as llama.cpp's models/templates/Qwen-Qwen2.5-7B-Instruct.jinja
// holds it (newlines in its literals written as the Jinja escape \n).
const std::string kQwen25Template = R"JINJA({%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
)JINJA";

// The Llama 3 template of llama.cpp's tests/test-chat-template.cpp ("Llama-3").
const std::string kLlama3Template =
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}";

const std::vector<ChatMessage> kSystemUser = {
    {"system", "You write CUDA kernels."}, {"user", "Write a kernel that adds two vectors."}};
const std::vector<ChatMessage> kUserOnly = {{"user", "Hello!"}};
const std::vector<ChatMessage> kThreeTurns = {{"user", "Hello!"},
                                              {"assistant", "Hi. How can I help?"},
                                              {"user", "Add 2 and 3.\nThen stop."}};

TEST(ChatTemplate, SmolLM2IsChatmlWithItsDefaultSystemMessage) {
  const ChatTemplate chat = chat_template_from_jinja(kSmolLM2Template);
  EXPECT_EQ(chat.family, ChatFamily::chatml);
  EXPECT_EQ(chat.default_system, "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  EXPECT_EQ(chat.bos_text, "");
  EXPECT_EQ(chat.end_of_turn(), "<|im_end|>");
}

TEST(ChatTemplate, SmolLM2RendersAsLlamaServer) {
  const ChatTemplate chat = chat_template_from_jinja(kSmolLM2Template);
  EXPECT_EQ(chat.render(kSystemUser),
            "<|im_start|>system\nYou write CUDA kernels.<|im_end|>\n<|im_start|>user\nWrite a "
            "kernel that adds two vectors.<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(chat.render(kUserOnly),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
            "Face<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(chat.render(kThreeTurns),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
            "Face<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nHi. How "
            "can I help?<|im_end|>\n<|im_start|>user\nAdd 2 and 3.\nThen stop.<|im_end|>\n"
            "<|im_start|>assistant\n");
  // Whitespace is kept as it is and an empty message still gets its turn.
  EXPECT_EQ(chat.render({{"system", "  Spaces kept.  "}, {"user", ""}}),
            "<|im_start|>system\n  Spaces kept.  <|im_end|>\n<|im_start|>user\n<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplate, Qwen25DefaultSystemComesFromTheBranchWithoutASystemMessage) {
  // The template writes "<|im_start|>system\n" three times; only one occurrence holds the default
  // inside a single literal (the others end the literal or concatenate messages[0]['content']).
  const ChatTemplate chat = chat_template_from_jinja(kQwen25Template);
  EXPECT_EQ(chat.family, ChatFamily::chatml);
  EXPECT_EQ(chat.default_system, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
}

TEST(ChatTemplate, Qwen25RendersAsLlamaServer) {
  const ChatTemplate chat = chat_template_from_jinja(kQwen25Template);
  EXPECT_EQ(chat.render(kUserOnly),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
            "assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(chat.render(kSystemUser),
            "<|im_start|>system\nYou write CUDA kernels.<|im_end|>\n<|im_start|>user\nWrite a "
            "kernel that adds two vectors.<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(chat.render(kThreeTurns),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
            "assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nHi. "
            "How can I help?<|im_end|>\n<|im_start|>user\nAdd 2 and 3.\nThen stop.<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(chat.render({{"system", "  Spaces kept?  "}, {"user", "\n Trim me \n"}}),
            "<|im_start|>system\n  Spaces kept?  <|im_end|>\n<|im_start|>user\n\n Trim me \n"
            "<|im_end|>\n<|im_start|>assistant\n");
}

// llama-server rendered `bos_token` as SmolLM2's ("<|im_start|>"); with a Llama 3 vocabulary it is
// "<|begin_of_text|>", which ChatTemplate::bos_text holds. The references below are the server's
// strings with that one prefix swapped.
std::string with_llama3_bos(const std::string& server_prompt) {
  const std::string smollm2_bos = "<|im_start|>";
  EXPECT_EQ(server_prompt.rfind(smollm2_bos, 0), 0u);
  return "<|begin_of_text|>" + server_prompt.substr(smollm2_bos.size());
}

TEST(ChatTemplate, Llama3RendersAsLlamaServer) {
  const ChatTemplate chat = chat_template_from_jinja(kLlama3Template);
  EXPECT_EQ(chat.family, ChatFamily::llama3);
  EXPECT_EQ(chat.bos_text, "<|begin_of_text|>");
  EXPECT_EQ(chat.default_system, "");
  EXPECT_EQ(chat.end_of_turn(), "<|eot_id|>");
  EXPECT_EQ(chat.render(kUserOnly),
            with_llama3_bos("<|im_start|><|start_header_id|>user<|end_header_id|>\n\nHello!"
                            "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"));
  EXPECT_EQ(chat.render(kSystemUser),
            with_llama3_bos("<|im_start|><|start_header_id|>system<|end_header_id|>\n\nYou write "
                            "CUDA kernels.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
                            "Write a kernel that adds two vectors.<|eot_id|><|start_header_id|>"
                            "assistant<|end_header_id|>\n\n"));
  EXPECT_EQ(chat.render(kThreeTurns),
            with_llama3_bos("<|im_start|><|start_header_id|>user<|end_header_id|>\n\nHello!"
                            "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi. How "
                            "can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAdd "
                            "2 and 3.\nThen stop.<|eot_id|><|start_header_id|>assistant"
                            "<|end_header_id|>\n\n"));
  // The template trims every message (Jinja's `| trim`).
  EXPECT_EQ(chat.render({{"system", "  Spaces kept?  "}, {"user", "\n Trim me \n"}}),
            with_llama3_bos("<|im_start|><|start_header_id|>system<|end_header_id|>\n\nSpaces "
                            "kept?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nTrim me"
                            "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"));
}

TEST(ChatTemplate, ChatmlWithoutADefaultAddsNoSystemMessage) {
  // A plain ChatML template (no default system message in it).
  const ChatTemplate chat = chat_template_from_jinja(
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
      "{{ '<|im_start|>assistant\\n' }}{% endif %}");
  EXPECT_EQ(chat.family, ChatFamily::chatml);
  EXPECT_EQ(chat.default_system, "");
  EXPECT_EQ(chat.render(kUserOnly), "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, DefaultSystemEscapesAreResolved) {
  const ChatTemplate chat = chat_template_from_jinja(
      "{{ '<|im_start|>system\\nBe brief.\\nDon\\'t guess.<|im_end|>\\n' }}");
  EXPECT_EQ(chat.default_system, "Be brief.\nDon't guess.");
  EXPECT_EQ(chat.render({}), "<|im_start|>assistant\n");  // nothing to add a system message to
}

TEST(ChatTemplate, EmptyTemplateIsPlain) {
  for (const std::string text : {"", "  \n"}) {
    const ChatTemplate chat = chat_template_from_jinja(text);
    EXPECT_EQ(chat.family, ChatFamily::plain);
    EXPECT_EQ(chat.end_of_turn(), "");
    EXPECT_EQ(chat.render(kSystemUser),
              "You write CUDA kernels.\n\nWrite a kernel that adds two vectors.\n\n");
  }
}

TEST(ChatTemplate, UnknownFamilyIsAnInputErrorNamingTheMarkers) {
  try {
    chat_template_from_jinja(
        "{% for message in messages %}{{ '<start_of_turn>' + message['role'] }}{% endfor %}");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("<|im_start|>"), std::string::npos) << message;
    EXPECT_NE(message.find("<|start_header_id|>"), std::string::npos) << message;
    EXPECT_NE(message.find("<start_of_turn>"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace kbrl::lm
