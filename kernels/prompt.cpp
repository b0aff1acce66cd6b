#include "prompt.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <kbrl/error.h>
#include <kernels/kernel_catalog.h>
#include <kernels/scaffold.h>
#include <reference/task_registry.h>
#include <reference/task_semantics.h>

namespace kbrl {
namespace {

// harness/compile/compile_flags.h's kAllowedOptionsText, restated: policies/ does not depend on the harness.
constexpr std::string_view kAllowedOptions =
    "--use_fast_math, -ftz=true|false, -prec-div=true|false, -prec-sqrt=true|false, "
    "-fmad=true|false, --extra-device-vectorization, -maxrregcount=N (16..255), -lineinfo";

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "float32";
    case DType::i64: return "int64";
    case DType::b8: return "bool";
  }
  return "float32";
}

/// A fenced block whose fence is longer than any run of backticks in `content`.
std::string fenced(std::string_view lang, std::string_view content) {
  size_t longest = 0, run = 0;
  for (char c : content) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(std::max<size_t>(3, longest + 1), '`');
  std::string out = fence + std::string(lang) + "\n" + std::string(content);
  if (out.back() != '\n') out += '\n';
  return out + fence + "\n";
}

std::string tensor_lines(const TaskSpec& task) {
  std::string out;
  const std::pair<const char*, const std::vector<TensorSpec>*> groups[] = {
      {"input", &task.inputs}, {"parameter", &task.parameters}, {"output", &task.outputs}};
  for (const auto& [role, tensors] : groups) {
    for (const auto& t : *tensors) {
      const std::string id = scaffold_identifier(t.name);
      out += fmt::format("- {} {}{}: {} {} ({} elements{})\n", role, t.name,
                         id == t.name ? "" : fmt::format(" (argument {})", id), dtype_name(t.dtype),
                         format_shape(t.shape), t.numel(),
                         t.numel() > (int64_t{1} << 31) ? ", beyond 2^31: 64-bit indices" : "");
    }
  }
  for (const auto& s : task.scalars)
    out += fmt::format("- scalar {} = {} (a float argument)\n", s.name, s.value);
  return out;
}

/// "x: float32 [4096,393216] -> y: float32 [4096,393216]", for the examples.
std::string shapes_line(const TaskSpec& task) {
  auto list = [](const std::vector<TensorSpec>& tensors) {
    std::vector<std::string> parts;
    for (const auto& t : tensors)
      parts.push_back(fmt::format("{}: {} {}", t.name, dtype_name(t.dtype), format_shape(t.shape)));
    return parts;
  };
  std::vector<std::string> in = list(task.inputs);
  for (auto& p : list(task.parameters)) in.push_back(p);
  for (const auto& s : task.scalars) in.push_back(fmt::format("{} = {}", s.name, s.value));
  return fmt::format("{} -> {}", fmt::join(in, ", "), fmt::join(list(task.outputs), ", "));
}

constexpr std::string_view kSystem =
    "You are an expert CUDA engineer who writes fast, correct GPU kernels. Before answering, think "
    "briefly: how the work maps onto threads and blocks; how global memory is accessed (coalesced, "
    "contiguous per warp, vector loads when aligned, reuse through registers or shared memory); "
    "loops that stay correct for any grid (grid-stride) with 64-bit indices for large tensors; "
    "numerics identical to the fp32 reference (the same formula, fp32 or wider accumulation, no "
    "fast math); a deterministic reduction order (no floating-point atomics). Then give your "
    "answer as exactly one fenced ```cuda block.";

constexpr std::string_view kContract =
    "# How kbrl runs your code\n"
    "The harness owns the host side: it allocates and fills the tensors, owns the CUDA stream, "
    "launches the kernels and times them. You write device code only; NVRTC compiles it for the "
    "GPU (sm_90a on an H100). No host code, no main(), no #include of host or library headers, no "
    "cuBLAS/cuDNN/CUTLASS/torch, no printf. Inputs and parameters are read-only. Outputs start "
    "as NaN: write every element. The outputs must match the fp32 PyTorch reference within "
    "atol = rtol = 1e-4 on fresh random inputs and be bitwise identical over two runs (no "
    "floating-point atomics); TF32, fp16 and fast math lose precision and usually fail. The "
    "reward is the speedup over PyTorch.\n";

constexpr std::string_view kBodyFormat =
    "# Answer format: the kernel body\n"
    "Your code becomes the body of one kernel, `kbrl_forward`, placed after a prelude of "
    "constexpr shapes (`<t>_numel`, `<t>_dim`, `<t>_size0`, ... for every tensor t) and the macro "
    "KBRL_GRID_STRIDE_LOOP(i, n) (a grid-stride loop over a 64-bit i: correct under any grid). "
    "Its arguments are the tensors (inputs, parameters, outputs) then the scalars. It is launched "
    "once with block = 256 and grid = min(cdiv(<first output>_numel, 256), 2^31 - 1), no dynamic "
    "shared memory. Reply with the statements of the body, optionally preceded by helper "
    "__device__ functions, structs or constants, in exactly one ```cuda block; do not repeat the "
    "prelude or the signature, and write no other __global__ kernel. To change the launch or add "
    "compile options, put a line `// kbrl: scaffold [block=<e>] [grid=<e>] [smem=<bytes>]` (1-D), "
    "after any `// kbrl: option <opt> ...` lines, between your helpers and the body; <e> is an "
    "integer expression of the shapes such as cdiv(numel(y), 1024), size(x, 0) or min(a, b). "
    "Allowed options: ";

constexpr std::string_view kFileFormat =
    "# Answer format: a candidate file\n"
    "Write one complete .cu file: your __global__ kernels (extern \"C\" keeps their names) and "
    "helpers, plus `// kbrl:` lines giving the launch plan:\n"
    "// kbrl: launch <kernel> grid=<e>[,<e>[,<e>]] block=<e>[,<e>[,<e>]] [smem=<e>] args=<arg>,...\n"
    "// kbrl: scratch <name> bytes=<e>\n"
    "// kbrl: option <compile option> ...\n"
    "Launches run in file order on the harness's stream. <arg> is in:<t>, param:<t>, out:<t> (a "
    "tensor's pointer: float*, long long* for int64, bool*), scratch:<name> (a device buffer of "
    "undefined contents), scalar:<name> (the task's scalar as float), f32:<number>, i32:<e> or "
    "i64:<e>. <e> is an integer expression: + - * / %, cdiv(a, b), min(a, b), max(a, b), "
    "numel(t), size(t, d). Reply with the whole file in exactly one ```cuda block. Allowed "
    "options: ";

/// The answer an example shows: a body-style file without its header comment (and without a bare
/// `// kbrl: scaffold` line, which only restates the default launch); a complete file as it is.
std::string example_answer(const std::string& source, TextStyle style) {
  if (style == TextStyle::file) return source;
  std::string out;
  bool header = true;
  size_t begin = 0;
  while (begin < source.size()) {
    size_t end = source.find('\n', begin);
    if (end == std::string::npos) end = source.size();
    const std::string_view line(source.data() + begin, end - begin);
    begin = end + 1;
    const bool comment = line.rfind("//", 0) == 0;
    if (header && comment && line.rfind("// kbrl:", 0) != 0) continue;
    header = false;
    if (line == "// kbrl: scaffold") continue;
    out.append(line).append("\n");
  }
  return out;
}

bool is_scaffold_file(const std::string& source) {
  return source.find("\n// kbrl: scaffold") != std::string::npos ||
         source.rfind("// kbrl: scaffold", 0) == 0;
}

/// Families whose examples teach something about each other's kernels.
bool related(Family a, Family b) {
  auto pair = [&](Family x, Family y) { return (a == x && b == y) || (a == y && b == x); };
  return pair(Family::gemm, Family::conv) || pair(Family::gemm, Family::attention) ||
         pair(Family::softmax, Family::attention) || pair(Family::conv, Family::pooling) ||
         pair(Family::pooling, Family::reduction) || pair(Family::reduction, Family::arg_reduction) ||
         pair(Family::reduction, Family::norm) || pair(Family::reduction, Family::loss) ||
         pair(Family::reduction, Family::softmax) || pair(Family::reduction, Family::scan) ||
         pair(Family::softmax, Family::norm);
}

struct Example {
  TaskSpec task;
  std::string answer;
};

/// `shots` known-good kernels of other tasks in the prompt's style: the task's family first, then
/// related families, then the rest, each in catalog order.
std::vector<Example> choose_examples(const TaskSpec& task, TextStyle style, int shots) {
  struct Ranked {
    int rank;
    size_t order;
    const CatalogKernel* kernel;
    std::string source;
  };
  std::vector<Ranked> pool;
  const auto& catalog = known_good_kernels();
  for (size_t i = 0; i < catalog.size() && shots > 0; ++i) {
    const CatalogKernel& k = catalog[i];
    if (k.task_id == task.id) continue;
    std::string source = kernel_source(k);
    if (is_scaffold_file(source) != (style == TextStyle::body)) continue;
    const Family family = task_spec(k.task_id, Scale::small).family;
    const int rank = family == task.family ? 0 : related(family, task.family) ? 1 : 2;
    pool.push_back({rank, i, &k, std::move(source)});
  }
  std::stable_sort(pool.begin(), pool.end(),
                   [](const Ranked& a, const Ranked& b) { return a.rank < b.rank; });
  std::vector<Example> out;
  for (const auto& r : pool) {
    if (static_cast<int>(out.size()) == shots) break;
    out.push_back({task_spec(r.kernel->task_id, task.scale), example_answer(r.source, style)});
  }
  KBRL_ASSERT(static_cast<int>(out.size()) == shots,
              "{} {}-style known-good kernels of tasks other than {}; {} asked", out.size(),
              to_string(style), task.id, shots);
  return out;
}

}  // namespace

std::optional<std::string> known_good_answer(const TaskSpec& task, TextStyle style) {
  for (const CatalogKernel& k : known_good_kernels()) {
    if (k.task_id != task.id) continue;
    const std::string source = kernel_source(k);
    if (is_scaffold_file(source) != (style == TextStyle::body)) continue;
    return fenced("cuda", example_answer(source, style));
  }
  return std::nullopt;
}

namespace {

std::string examples_section(const std::vector<Example>& examples, TextStyle style) {
  if (examples.empty()) return {};
  std::string out = "# Worked examples (other tasks)\n";
  for (size_t i = 0; i < examples.size(); ++i) {
    const TaskSpec& t = examples[i].task;
    out += fmt::format("## Example {}: task {} ({})\n{}\n{}\n", i + 1, t.id, t.name,
                       task_semantics(t.id), shapes_line(t));
    if (style == TextStyle::body) out += scaffold_signature(t) + "\n";
    out += "Answer:\n";
    out += fenced("cuda", examples[i].answer);
  }
  return out;
}

/// At most `max_lines` lines and `max_bytes` bytes of `log`, cut at a line (or, for one overlong
/// line, a UTF-8 character) boundary, with a note of what was cut.
std::string log_excerpt(std::string_view log, size_t max_lines, size_t max_bytes) {
  std::string out;
  size_t begin = 0, lines = 0;
  while (begin < log.size() && lines < max_lines) {
    size_t end = log.find('\n', begin);
    end = end == std::string_view::npos ? log.size() : end + 1;
    std::string_view line = log.substr(begin, end - begin);
    if (out.size() + line.size() > max_bytes) {
      if (!out.empty()) break;
      size_t cut = max_bytes;
      while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
      line = line.substr(0, cut);
      end = begin + cut;
    }
    out += line;
    ++lines;
    begin = end;
  }
  if (begin < log.size()) {
    if (!out.empty() && out.back() != '\n') out += '\n';
    out += fmt::format("[... {} more bytes of the log cut]\n", log.size() - begin);
  }
  return out;
}

std::string feedback_section(const PromptFeedback& f) {
  std::string out = "# Execution feedback of a previous attempt\n";
  out += fmt::format("outcome: {}\n", f.outcome.empty() ? "unknown" : f.outcome);
  if (!f.detail.empty())
    out += fmt::format("detail: {}", log_excerpt(f.detail, 8, kPromptDetailBytes));
  if (!out.empty() && out.back() != '\n') out += '\n';
  if (f.speedup) out += fmt::format("speedup over PyTorch: {:.3f}x\n", *f.speedup);
  if (f.runtime_ms) out += fmt::format("kernel median: {:.4f} ms\n", *f.runtime_ms);
  if (f.reference_ms) out += fmt::format("PyTorch median: {:.4f} ms\n", *f.reference_ms);
  if (!f.compile_log.empty()) {
    out += "compile log (excerpt):\n";
    out += fenced("text", log_excerpt(f.compile_log, kPromptLogLines, kPromptLogBytes));
  }
  return out;
}

std::string task_section(const TaskSpec& task, TextStyle style) {
  std::string out = fmt::format("# Your task: {} ({}, id {}, {} shapes)\n{}\n", task.name,
                                to_string(task.family), task.id, to_string(task.scale),
                                task_semantics(task.id));
  out += "Tensors (contiguous, row-major):\n" + tensor_lines(task);
  if (style == TextStyle::body) {
    const int64_t n = task.outputs.front().numel();
    out += fmt::format("Your body goes into this kernel (default launch: block 256, grid {}):\n",
                       std::min<int64_t>((n + 255) / 256, kScaffoldMaxGrid));
    out += fenced("cuda", scaffold_prelude(task) + "// <your helpers>\n" + scaffold_signature(task) +
                              " {\n  // <your body>\n}\n");
  }
  return out;
}

}  // namespace

std::string_view to_string(SystemPrompt s) { return enum_name(s); }
SystemPrompt parse_system_prompt(std::string_view s) { return parse_enum<SystemPrompt>(s); }

std::string Prompt::text() const { return system.empty() ? user : system + "\n\n" + user; }

Prompt build_prompt(const TaskSpec& task, const PromptOptions& options) {
  KBRL_CHECK_INPUT(options.shots >= 0 && options.shots <= kMaxPromptShots,
                   "prompt shots must be 0..{}, got {}", kMaxPromptShots, options.shots);
  KBRL_CHECK_INPUT(!task.outputs.empty(), "task {} has no outputs", task.id);
  Prompt p;
  p.version = fmt::format("{}/{}/shots={}/system={}", kPromptTemplateVersion,
                          to_string(options.style), options.shots, to_string(options.system));
  if (options.feedback) p.version += "/feedback";
  if (options.demonstration) p.version += "/demonstration";
  if (options.resolve) p.version += "/teacher";
  if (options.system == SystemPrompt::reasoning) p.system = std::string(kSystem);

  const bool body = options.style == TextStyle::body;
  std::string& u = p.user;
  u += kContract;
  u += "\n";
  u += body ? kBodyFormat : kFileFormat;
  u += kAllowedOptions;
  u += ".\n\n";
  const std::string examples =
      examples_section(choose_examples(task, options.style, options.shots), options.style);
  if (!examples.empty()) u += examples + "\n";
  u += task_section(task, options.style);
  if (options.feedback) {
    u += "\n";
    u += feedback_section(*options.feedback);
  }
  if (options.demonstration) {
    u += "\n# A correct solution from the same batch\n";
    u += fenced("cuda", *options.demonstration);
  }
  if (options.resolve) u += "\nCorrectly solve the original question.\n";
  u += fmt::format("\nWrite the {} for task {} ({}) in one ```cuda block.\n",
                   body ? "body of kbrl_forward" : "candidate file", task.id, task.name);
  return p;
}

}  // namespace kbrl
