// The prompts a language-model policy sends (kernels/prompt.h) and the semantics sentences they
// show (reference/task_semantics.h): coverage of all 100 tasks, the task's shapes and scaffold,
// worked examples of other tasks that realize as answers, versions, SDPO feedback caps, size.
#include <algorithm>
#include <cctype>
#include <iostream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <kbrl/error.h>
#include <kernels/action.h>
#include <kernels/scaffold.h>
#include <kernels/prompt.h>
#include <reference/task_registry.h>
#include <reference/task_semantics.h>

namespace kbrl {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Does `name` occur in `text` as a whole token (not inside a longer identifier)?
bool mentions(std::string_view text, std::string_view name) {
  for (size_t at = text.find(name); at != std::string_view::npos; at = text.find(name, at + 1)) {
    const bool left = at == 0 || !identifier_char(text[at - 1]);
    const size_t end = at + name.size();
    const bool right = end == text.size() || !identifier_char(text[end]);
    if (left && right) return true;
  }
  return false;
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

struct ShownExample {
  int task_id;
  std::string answer;
};

/// The examples a prompt shows: "## Example i: task N (...)" and the cuda block after "Answer:".
std::vector<ShownExample> shown_examples(const std::string& user) {
  std::vector<ShownExample> out;
  const std::regex head(R"(## Example \d+: task (\d+) \()");
  for (auto it = std::sregex_iterator(user.begin(), user.end(), head); it != std::sregex_iterator();
       ++it) {
    const size_t answer = user.find("Answer:\n```cuda\n", it->position());
    EXPECT_NE(answer, std::string::npos);
    const size_t begin = answer + std::string("Answer:\n```cuda\n").size();
    const size_t end = user.find("\n```\n", begin);
    out.push_back({std::stoi((*it)[1]), user.substr(begin, end + 1 - begin)});
  }
  return out;
}

PromptOptions with(TextStyle style, int shots, SystemPrompt system = SystemPrompt::reasoning) {
  PromptOptions o;
  o.style = style;
  o.shots = shots;
  o.system = system;
  return o;
}

TEST(TaskSemantics, EveryTaskNamesEveryTensor) {
  std::set<std::string> texts;
  for (int id = 1; id <= 100; ++id) {
    SCOPED_TRACE(fmt::format("task {}", id));
    const TaskSpec task = task_spec(id, Scale::kernelbench);
    const std::string text(task_semantics(id));
    EXPECT_GE(text.size(), 20u);
    EXPECT_LE(text.size(), 500u) << text;
    EXPECT_EQ(text.back(), '.') << text;
    // Convolutions with the same module differ only in their shapes (55 and 63, say).
    if (task.family != Family::conv) {
      EXPECT_TRUE(texts.insert(text).second) << "shared: " << text;
    }
    for (const auto* group : {&task.inputs, &task.parameters, &task.outputs})
      for (const auto& t : *group) EXPECT_TRUE(mentions(text, t.name)) << t.name << ": " << text;
    for (const auto& s : task.scalars) EXPECT_TRUE(mentions(text, s.name)) << s.name << ": " << text;
  }
  for (int id : {0, 101, -1}) EXPECT_THROW(task_semantics(id), InputError);
}

// Spot checks of details a model would get wrong without them.
TEST(TaskSemantics, StateTheReferencesDetails) {
  auto has = [](int id, const std::string& part) {
    EXPECT_TRUE(contains(std::string(task_semantics(id)), part)) << id << ": " << task_semantics(id);
  };
  has(47, "keepdim");
  has(36, "1e-5");
  has(38, "mean");
  has(51, "first index on ties");
  has(98, "/ B");
  has(100, "targets[j]");
  has(44, "/ 8");
  has(27, "1.6732632423543772");
  has(29, "threshold 20");
  has(50, "stride 4, padding 2");
  has(50, "+ bias[co]");
  has(75, "stride (2,3), padding (1,2), dilation (2,1)");
  has(75, "groups 4");
  has(72, "output_padding 1");
  has(76, "x[n,ci,3*l+4*k]");
  has(80, "x[n,ci,h-2+2*kh,w-4+3*kw]");
  has(82, "weight[c,0,kh,kw]");
  has(57, "h=ih+kh");
  has(73, "groups 1");
}

TEST(Prompt, ShowsTheTaskShapesAndScaffold) {
  for (int id : {5, 19, 86, 95}) {
    for (Scale scale : {Scale::kernelbench, Scale::small}) {
      SCOPED_TRACE(fmt::format("task {} at {}", id, to_string(scale)));
      const TaskSpec task = task_spec(id, scale);
      const Prompt p = build_prompt(task);
      EXPECT_TRUE(contains(p.user, task.name));
      EXPECT_TRUE(contains(p.user, std::string(task_semantics(id))));
      for (const auto* group : {&task.inputs, &task.parameters, &task.outputs})
        for (const auto& t : *group)
          EXPECT_TRUE(contains(p.user, fmt::format("{}: {} {}", t.name,
                                                   t.dtype == DType::i64 ? "int64" : "float32",
                                                   format_shape(t.shape))))
              << t.name;
      EXPECT_TRUE(contains(p.user, scaffold_prelude(task)));
      EXPECT_TRUE(contains(p.user, scaffold_signature(task) + " {"));
      EXPECT_TRUE(contains(p.user, "KBRL_GRID_STRIDE_LOOP(i, n)"));
      EXPECT_TRUE(contains(p.user, "block = 256"));
      EXPECT_TRUE(contains(p.user, "exactly one ```cuda block"));
      EXPECT_TRUE(contains(p.user, "-maxrregcount=N"));  // the allowed compile options
      EXPECT_TRUE(contains(p.user, "NVRTC"));
      EXPECT_TRUE(contains(p.system, "```cuda"));
    }
  }
  const Prompt scalar = build_prompt(task_spec(5, Scale::kernelbench));
  EXPECT_TRUE(contains(scalar.user, "scalar s = 3.14")) << scalar.user;
  const Prompt dotted = build_prompt(task_spec(86, Scale::kernelbench));
  EXPECT_TRUE(contains(dotted.user, "depthwise.weight (argument depthwise_weight)"));
  const Prompt huge = build_prompt(task_spec(45, Scale::kernelbench));  // 4.3e9 input elements
  EXPECT_TRUE(contains(huge.user, "beyond 2^31: 64-bit indices"));
}

TEST(Prompt, FileStyleShowsThePlanFormatNotTheScaffold) {
  const TaskSpec task = task_spec(19, Scale::kernelbench);
  const Prompt p = build_prompt(task, with(TextStyle::file, 2));
  EXPECT_TRUE(contains(p.user, "// kbrl: launch <kernel> grid="));
  EXPECT_TRUE(contains(p.user, "scratch:<name>"));
  EXPECT_FALSE(contains(p.user, scaffold_signature(task)));
  EXPECT_FALSE(contains(p.user, "// kbrl: scaffold block="));  // no scaffold-form example
  const auto examples = shown_examples(p.user);
  ASSERT_EQ(examples.size(), 2u);
  for (const auto& e : examples) {
    EXPECT_NE(e.task_id, 19);
    EXPECT_TRUE(contains(e.answer, "// kbrl: launch ")) << e.answer;
    const Realized r = realize(task_spec(e.task_id, task.scale), {ActionKind::text, {}, e.answer});
    EXPECT_TRUE(r.candidate.has_value()) << r.format_error;
    EXPECT_EQ(r.style, TextStyle::file);
  }
}

// K examples of other tasks, distinct, and each a body a model could have written: it realizes
// into a candidate for its own task.
TEST(Prompt, ExamplesAreOtherTasksAndRealize) {
  for (TextStyle style : {TextStyle::body, TextStyle::file}) {
    for (int id = 1; id <= 100; ++id) {
      for (int shots = 0; shots <= kMaxPromptShots; ++shots) {
        SCOPED_TRACE(fmt::format("task {}, {} style, {} shots", id, to_string(style), shots));
        const TaskSpec task = task_spec(id, Scale::kernelbench);
        const Prompt p = build_prompt(task, with(style, shots));
        const auto examples = shown_examples(p.user);
        ASSERT_EQ(examples.size(), static_cast<size_t>(shots));
        EXPECT_EQ(count(p.user, "## Example "), static_cast<size_t>(shots));
        std::set<int> ids;
        for (const auto& e : examples) {
          EXPECT_NE(e.task_id, id);
          EXPECT_TRUE(ids.insert(e.task_id).second) << "example task shown twice: " << e.task_id;
          if (style == TextStyle::body && shots == kMaxPromptShots && id <= 24) {
            const TaskSpec et = task_spec(e.task_id, task.scale);
            EXPECT_TRUE(contains(p.user, scaffold_signature(et)));
            const Realized r = realize(et, {ActionKind::text, {}, "```cuda\n" + e.answer + "```\n"});
            EXPECT_TRUE(r.candidate.has_value()) << r.format_error << "\n" << e.answer;
            EXPECT_FALSE(contains(e.answer, "// Known-good")) << "header comment left in";
            EXPECT_FALSE(contains(e.answer, "kbrl_forward")) << "a body, not a kernel";
          }
        }
      }
    }
  }
}

TEST(Prompt, ExamplesPreferTheTasksFamily) {
  auto first_example = [](int id) {
    const auto e = shown_examples(build_prompt(task_spec(id, Scale::small)).user);
    return e.empty() ? 0 : e.front().task_id;
  };
  EXPECT_EQ(first_example(19), 5);   // elementwise: the other elementwise body
  EXPECT_EQ(first_example(5), 19);
  EXPECT_EQ(first_example(24), 23);  // log-softmax: the softmax body
  EXPECT_EQ(first_example(48), 47);  // mean: the sum body
  EXPECT_EQ(first_example(42), 44);  // max pooling: the average pooling body
  EXPECT_EQ(first_example(52), 47);  // argmin: a related family (reduction)
  const auto file = shown_examples(build_prompt(task_spec(2, Scale::small), with(TextStyle::file, 1)).user);
  ASSERT_EQ(file.size(), 1u);
  EXPECT_EQ(file[0].task_id, 1);  // gemm: the gemm file
}

TEST(Prompt, VersionsNameTheOptions) {
  const TaskSpec task = task_spec(19, Scale::small);
  EXPECT_EQ(build_prompt(task).version, "kbrl-prompt-1/body/shots=1/system=reasoning");
  std::set<std::string> versions;
  for (TextStyle style : {TextStyle::body, TextStyle::file})
    for (int shots : {0, 1, 4})
      for (SystemPrompt system : {SystemPrompt::reasoning, SystemPrompt::none})
        EXPECT_TRUE(versions.insert(build_prompt(task, with(style, shots, system)).version).second);
  PromptOptions teacher = with(TextStyle::file, 0, SystemPrompt::none);
  teacher.feedback = PromptFeedback{"ok", "", "", 1.5, 1.0, 1.5};
  teacher.demonstration = "// kbrl: scaffold\ny[0] = 0;";
  EXPECT_EQ(build_prompt(task, teacher).version,
            "kbrl-prompt-1/file/shots=0/system=none/feedback/demonstration");
  // Every SDPO teacher prompt ends by asking to correctly solve the original question (report 003,
  // 3.6); alone, that is the prompt-only teacher's prompt.
  PromptOptions prompt_only = with(TextStyle::file, 0, SystemPrompt::none);
  prompt_only.resolve = true;
  const Prompt po = build_prompt(task, prompt_only);
  EXPECT_EQ(po.version, "kbrl-prompt-1/file/shots=0/system=none/teacher");
  EXPECT_TRUE(contains(po.user, "\nCorrectly solve the original question.\n"));
  EXPECT_FALSE(contains(build_prompt(task, with(TextStyle::file, 0, SystemPrompt::none)).user, "Correctly solve"));
  EXPECT_TRUE(build_prompt(task).version.starts_with(kPromptTemplateVersion));
}

TEST(Prompt, SystemPartAndText) {
  const TaskSpec task = task_spec(19, Scale::small);
  const Prompt none = build_prompt(task, with(TextStyle::body, 1, SystemPrompt::none));
  EXPECT_TRUE(none.system.empty());
  EXPECT_EQ(none.text(), none.user);
  const Prompt reasoning = build_prompt(task);
  EXPECT_TRUE(contains(reasoning.system, "coalesced"));
  EXPECT_TRUE(contains(reasoning.system, "grid-stride"));
  EXPECT_EQ(reasoning.text(), reasoning.system + "\n\n" + reasoning.user);
  EXPECT_EQ(reasoning.user, none.user);
  EXPECT_EQ(build_prompt(task).text(), reasoning.text());  // deterministic
  EXPECT_EQ(to_string(SystemPrompt::none), "none");
  EXPECT_EQ(parse_system_prompt("reasoning"), SystemPrompt::reasoning);
  EXPECT_THROW(parse_system_prompt("verbose"), InputError);
}

/// The compile log block of a feedback prompt.
std::string log_block(const std::string& user) {
  const std::string open = "compile log (excerpt):\n```text\n";
  const size_t begin = user.find(open);
  if (begin == std::string::npos) return {};
  const size_t from = begin + open.size();
  return user.substr(from, user.find("```\n", from) - from);
}

TEST(Prompt, FeedbackShowsOutcomeAndCappedLog) {
  const TaskSpec task = task_spec(19, Scale::small);
  PromptOptions o;
  PromptFeedback f;
  f.outcome = "compile_error";
  f.detail = "kbrl_model.cu(3): error: identifier \"yy\" is undefined";
  for (int i = 0; i < 200; ++i) f.compile_log += fmt::format("kbrl_model.cu({}): error: problem {}\n", i, i);
  o.feedback = f;
  const Prompt p = build_prompt(task, o);
  EXPECT_TRUE(contains(p.user, "Execution feedback of a previous attempt"));
  EXPECT_TRUE(contains(p.user, "outcome: compile_error"));
  EXPECT_TRUE(contains(p.user, "identifier \"yy\" is undefined"));
  EXPECT_FALSE(contains(p.user, "speedup over PyTorch:"));  // not timed
  EXPECT_FALSE(contains(p.user, "median"));
  const std::string block = log_block(p.user);
  EXPECT_TRUE(contains(block, "problem 0\n"));
  EXPECT_FALSE(contains(block, "problem 40\n"));
  EXPECT_TRUE(contains(block, "more bytes of the log cut"));
  const std::string excerpt = block.substr(0, block.find("[..."));
  EXPECT_LE(static_cast<size_t>(std::count(excerpt.begin(), excerpt.end(), '\n')), kPromptLogLines);
  EXPECT_LE(excerpt.size(), kPromptLogBytes);

  // One overlong line: cut at the byte cap.
  f.compile_log = std::string(100000, 'e');
  f.detail = std::string(5000, 'd');
  o.feedback = f;
  const std::string long_block = log_block(build_prompt(task, o).user);
  EXPECT_LE(long_block.substr(0, long_block.find("[...")).size(), kPromptLogBytes + 1);
  EXPECT_TRUE(contains(long_block, "[... 95904 more bytes of the log cut]")) << long_block.substr(4090);
  EXPECT_FALSE(contains(build_prompt(task, o).user, std::string(kPromptDetailBytes + 1, 'd')));

  // A timed attempt: speedup and both medians; a short log is shown whole.
  f = {"ok", "", "warning: unused variable\n", 0.85, 1.25, 1.0625};
  o.feedback = f;
  const Prompt timed = build_prompt(task, o);
  EXPECT_TRUE(contains(timed.user, "outcome: ok"));
  EXPECT_TRUE(contains(timed.user, "speedup over PyTorch: 0.850x"));
  EXPECT_TRUE(contains(timed.user, "kernel median: 1.2500 ms"));
  EXPECT_TRUE(contains(timed.user, "PyTorch median: 1.0625 ms"));
  EXPECT_EQ(log_block(timed.user), "warning: unused variable\n");
}

TEST(Prompt, DemonstrationIsFenced) {
  PromptOptions o;
  o.demonstration = "KBRL_GRID_STRIDE_LOOP(i, y_numel) y[i] = x[i] > 0.f ? x[i] : 0.f;";
  const Prompt p = build_prompt(task_spec(20, Scale::small), o);
  EXPECT_TRUE(contains(p.user, "# A correct solution from the same batch\n```cuda\n" +
                                   *o.demonstration + "\n```\n"));
  // Code holding a fence gets a longer one.
  o.demonstration = "// ``` inside\n";
  EXPECT_TRUE(contains(build_prompt(task_spec(20, Scale::small), o).user, "````cuda\n// ``` inside\n````\n"));
}

TEST(Prompt, ShotsOutOfRangeAreInputErrors) {
  const TaskSpec task = task_spec(19, Scale::small);
  EXPECT_THROW(build_prompt(task, with(TextStyle::body, -1)), InputError);
  EXPECT_THROW(build_prompt(task, with(TextStyle::body, kMaxPromptShots + 1)), InputError);
  EXPECT_NO_THROW(build_prompt(task, with(TextStyle::body, 0)));
  EXPECT_NO_THROW(build_prompt(task, with(TextStyle::file, kMaxPromptShots)));
}

// The size budget (prompt.h): a one-shot body prompt with reasoning fits a small model's context.
TEST(Prompt, OneShotBodyPromptsStayCompact) {
  size_t largest = 0;
  int largest_id = 0;
  for (int id = 1; id <= 100; ++id) {
    const size_t bytes = build_prompt(task_spec(id, Scale::kernelbench)).text().size();
    EXPECT_LE(bytes, kPromptOneShotBodyMaxBytes) << "task " << id;
    if (bytes > largest) largest = bytes, largest_id = id;
  }
  std::cout << "largest one-shot body prompt: task " << largest_id << ", " << largest << " bytes\n";
  EXPECT_GT(largest, 3000u);  // the prompt is not accidentally empty
}

}  // namespace
}  // namespace kbrl
