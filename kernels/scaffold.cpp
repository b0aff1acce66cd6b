#include "scaffold.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <kbrl/error.h>

namespace kbrl {
namespace {

std::string_view element_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return "float";
    case DType::i64: return "long long";
    case DType::b8: return "bool";
  }
  return "float";
}

std::string line_directive(int line, const std::string& file) {
  if (line <= 0 || file.empty()) return {};
  return fmt::format("#line {} \"{}\"\n", line, file);
}

}  // namespace

std::string scaffold_identifier(std::string_view name) {
  std::string id;
  for (const char c : name)
    id += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0]))) id = "_" + id;
  return id;
}

std::string scaffold_prelude(const TaskSpec& task) {
  std::string out = fmt::format("// kbrl scaffold: task {} ({}), scale {}\n", task.id, task.name,
                                to_string(task.scale));
  const std::pair<const char*, const std::vector<TensorSpec>*> groups[] = {
      {"input", &task.inputs}, {"parameter", &task.parameters}, {"output", &task.outputs}};
  for (const auto& [what, tensors] : groups) {
    for (const auto& t : *tensors) {
      const std::string id = scaffold_identifier(t.name);
      out += fmt::format("// {} {}: {} {}\n", what, t.name, to_string(t.dtype), format_shape(t.shape));
      out += fmt::format("constexpr long long {}_numel = {}LL;\n", id, t.numel());
      out += fmt::format("constexpr int {}_dim = {};\n", id, t.shape.size());
      for (size_t d = 0; d < t.shape.size(); ++d)
        out += fmt::format("constexpr long long {}_size{} = {}LL;\n", id, d, t.shape[d]);
    }
  }
  out +=
      "#define KBRL_GRID_STRIDE_LOOP(i, n)                                                  \\\n"
      "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (long long)(n); \\\n"
      "       i += (long long)gridDim.x * blockDim.x)\n";
  return out;
}

std::string scaffold_signature(const TaskSpec& task) {
  std::vector<std::string> params;
  std::set<std::string> seen;
  auto add = [&](std::string type, const std::string& name) {
    const std::string id = scaffold_identifier(name);
    KBRL_CHECK_INPUT(seen.insert(id).second,
                     "task {}: two arguments are both named '{}' in the scaffold's signature",
                     task.id, id);
    params.push_back(type + id);
  };
  for (const auto& t : task.inputs)
    add(fmt::format("const {}* __restrict__ ", element_type(t.dtype)), t.name);
  for (const auto& t : task.parameters)
    add(fmt::format("const {}* __restrict__ ", element_type(t.dtype)), t.name);
  for (const auto& t : task.outputs)
    add(fmt::format("{}* __restrict__ ", element_type(t.dtype)), t.name);
  for (const auto& s : task.scalars) add("float ", s.name);
  return fmt::format("extern \"C\" __global__ void {}({})", kScaffoldKernel,
                     fmt::join(params, ", "));
}

Candidate scaffold(const TaskSpec& task, std::string_view body, const ScaffoldOptions& options) {
  KBRL_CHECK_INPUT(!task.outputs.empty(), "task {} has no outputs to scaffold", task.id);
  KBRL_CHECK_INPUT(options.block >= 1 && options.block <= 1024,
                   "scaffold block must be 1..1024 threads, got {}", options.block);
  uint32_t grid = 0;
  if (options.grid) {
    grid = *options.grid;
  } else {
    const int64_t n = task.outputs.front().numel();
    const int64_t blocks = (n + options.block - 1) / options.block;
    grid = static_cast<uint32_t>(std::clamp<int64_t>(blocks, 1, kScaffoldMaxGrid));
  }
  KBRL_CHECK_INPUT(grid >= 1 && grid <= kScaffoldMaxGrid, "scaffold grid must be 1..{}, got {}",
                   kScaffoldMaxGrid, grid);

  Candidate candidate;
  candidate.task_id = task.id;
  candidate.options = options.options;
  std::string& src = candidate.source;
  src = scaffold_prelude(task);
  if (!options.helpers.empty()) {
    src += line_directive(options.helpers_first_line, options.file_name);
    src += options.helpers;
    if (src.back() != '\n') src += '\n';
  }
  src += scaffold_signature(task);
  src += " {\n";
  src += line_directive(options.body_first_line, options.file_name);
  src += body;
  if (src.back() != '\n') src += '\n';
  src += "}\n";

  Launch launch;
  launch.kernel = std::string(kScaffoldKernel);
  launch.grid = {grid, 1, 1};
  launch.block = {options.block, 1, 1};
  launch.shared_bytes = options.shared_bytes;
  for (size_t i = 0; i < task.inputs.size(); ++i)
    launch.args.push_back({ArgKind::input, static_cast<int>(i)});
  for (size_t i = 0; i < task.parameters.size(); ++i)
    launch.args.push_back({ArgKind::parameter, static_cast<int>(i)});
  for (size_t i = 0; i < task.outputs.size(); ++i)
    launch.args.push_back({ArgKind::output, static_cast<int>(i)});
  for (size_t i = 0; i < task.scalars.size(); ++i)
    launch.args.push_back({ArgKind::task_scalar, static_cast<int>(i)});
  candidate.launches.push_back(std::move(launch));
  return candidate;
}

}  // namespace kbrl
