#include "generator.h"

#include <algorithm>

#include <kbrl/error.h>

#include <kernels/generators/attention.h>
#include <kernels/generators/conv.h>
#include <kernels/generators/conv_transposed.h>
#include <kernels/generators/elementwise.h>
#include <kernels/generators/gemm.h>
#include <kernels/generators/loss.h>
#include <kernels/generators/norm.h>
#include <kernels/generators/pooling.h>
#include <kernels/generators/reduction.h>
#include <kernels/generators/scan.h>
#include <kernels/generators/softmax.h>

namespace kbrl {
namespace {

std::string dim3_text(const Dim3& d) {
  if (d.z != 1) return fmt::format("{},{},{}", d.x, d.y, d.z);
  if (d.y != 1) return fmt::format("{},{}", d.x, d.y);
  return fmt::format("{}", d.x);
}

std::string arg_text(const KernelArg& arg, const TaskSpec& task, const Candidate& candidate) {
  switch (arg.kind) {
    case ArgKind::input: return "in:" + task.inputs.at(static_cast<size_t>(arg.index)).name;
    case ArgKind::parameter:
      return "param:" + task.parameters.at(static_cast<size_t>(arg.index)).name;
    case ArgKind::output: return "out:" + task.outputs.at(static_cast<size_t>(arg.index)).name;
    case ArgKind::scratch:
      return "scratch:" + candidate.scratch.at(static_cast<size_t>(arg.index)).name;
    case ArgKind::task_scalar:
      return "scalar:" + task.scalars.at(static_cast<size_t>(arg.index)).name;
    case ArgKind::f32: return fmt::format("f32:{}", arg.value);
    case ArgKind::i32: return fmt::format("i32:{}", arg.ivalue);
    case ArgKind::i64: return fmt::format("i64:{}", arg.ivalue);
  }
  throw InternalError("unknown ArgKind");
}

}  // namespace

const std::vector<const Generator*>& generators() {
  // One line per family; each generator's covers() must not overlap another's.
  static const std::vector<const Generator*> all = {
      &attention_generator(),
      &conv_generator(),
      &conv_transposed_generator(),
      &elementwise_generator(),
      &gemm_generator(),
      &loss_generator(),
      &norm_generator(),
      &pooling_generator(),
      &reduction_generator(),
      &scan_generator(),
      &softmax_generator(),
  };
  return all;
}

const Generator& generator_for(int task_id) {
  for (const Generator* g : generators())
    if (g->covers(task_id)) return *g;
  const std::vector<int> covered = covered_tasks();
  throw InputError(fmt::format("no kernel generator covers task {} yet (covered: {})", task_id,
                               fmt::join(covered, ", ")));
}

std::vector<int> covered_tasks() {
  std::vector<int> ids;
  for (int id = 1; id <= 100; ++id)
    for (const Generator* g : generators())
      if (g->covers(id)) {
        ids.push_back(id);
        break;
      }
  return ids;
}

std::string candidate_file_text(const Candidate& candidate, const TaskSpec& task,
                                 const std::vector<std::string>& header) {
  std::string out;
  for (const auto& line : header) out += "// " + line + "\n";
  for (const auto& s : candidate.scratch)
    out += fmt::format("// kbrl: scratch {} bytes={}\n", s.name, s.bytes);
  for (const auto& l : candidate.launches) {
    std::vector<std::string> args;
    for (const auto& a : l.args) args.push_back(arg_text(a, task, candidate));
    out += fmt::format("// kbrl: launch {} grid={} block={}", l.kernel, dim3_text(l.grid),
                       dim3_text(l.block));
    if (l.shared_bytes != 0) out += fmt::format(" smem={}", l.shared_bytes);
    out += fmt::format(" args={}\n", fmt::join(args, ","));
  }
  if (!candidate.options.empty())
    out += fmt::format("// kbrl: option {}\n", fmt::join(candidate.options, " "));
  out += "\n" + candidate.source;
  return out;
}

}  // namespace kbrl
