#include "task_registry.h"

#include <algorithm>
#include <map>

#include <kbrl/error.h>

#include "task_def.h"

namespace kbrl {
namespace detail {
namespace {

const std::map<int, TaskDef>& registry() {
  static const std::map<int, TaskDef> table = [] {
    TaskDefs defs;
    add_gemm_tasks(defs);
    add_elementwise_tasks(defs);
    add_norm_tasks(defs);
    add_reduction_tasks(defs);
    add_pooling_tasks(defs);
    add_conv_tasks(defs);
    add_scan_tasks(defs);
    add_loss_tasks(defs);
    std::map<int, TaskDef> by_id;
    for (auto& def : defs) {
      const int id = def.id;
      KBRL_ASSERT(def.stress_laws, "task {} declares no stress input set", id);
      KBRL_ASSERT(!def.make_inputs || def.kernelbench_laws,
                  "task {} draws its own KernelBench inputs without declaring their laws", id);
      KBRL_ASSERT(by_id.emplace(id, std::move(def)).second, "task {} defined twice", id);
    }
    return by_id;
  }();
  return table;
}

}  // namespace

const TaskDef& task_def(int id) {
  const auto& table = registry();
  auto it = table.find(id);
  if (it == table.end()) {
    throw InputError(fmt::format("unknown task id {}: level-1 task ids are {}..{}", id,
                                 table.begin()->first, table.rbegin()->first));
  }
  return it->second;
}

ReferenceModel stateless(std::function<torch::Tensor(const Tensors&)> fn) {
  ReferenceModel model;
  model.module = std::make_shared<torch::nn::Module>();
  model.forward = [fn = std::move(fn)](const Tensors& in, const std::vector<double>&) {
    return Tensors{fn(in)};
  };
  return model;
}

}  // namespace detail

const std::vector<int>& task_ids() {
  static const std::vector<int> ids = [] {
    std::vector<int> out;
    for (const auto& [id, def] : detail::registry()) out.push_back(id);
    return out;
  }();
  return ids;
}

bool has_task(int id) { return detail::registry().count(id) != 0; }

TaskSpec task_spec(int id, Scale scale) {
  const auto& def = detail::task_def(id);
  TaskSpec spec = def.spec(scale);
  spec.id = def.id;
  spec.name = def.name;
  spec.family = def.family;
  spec.scale = scale;
  double bytes = 0.0;
  for (const auto* group : {&spec.inputs, &spec.parameters, &spec.outputs})
    for (const auto& t : *group) bytes += static_cast<double>(t.bytes());
  spec.min_bytes = bytes;
  return spec;
}

Tensors ReferenceModel::parameters() const {
  Tensors out;
  for (const auto& item : module->named_parameters(/*recurse=*/true)) out.push_back(item.value());
  return out;
}

void ReferenceModel::to(torch::Device device) { module->to(device); }

ReferenceModel make_reference(const TaskSpec& spec, uint64_t seed) {
  torch::manual_seed(seed);
  ReferenceModel model = detail::task_def(spec.id).make_model(spec);
  model.module->train();
  return model;
}

torch::ScalarType to_torch(DType dtype) {
  switch (dtype) {
    case DType::f32: return torch::kFloat32;
    case DType::i64: return torch::kInt64;
    case DType::b8: return torch::kBool;
  }
  throw InternalError("unknown dtype");
}

}  // namespace kbrl
