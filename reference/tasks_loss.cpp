// Level-1 loss tasks: each returns a 0-d scalar (mean reduction, KL batchmean).
// FLOPs per element of the first input: MSE 3, Huber 5, cross-entropy 4, KL 5, triplet 6, hinge 4.
// Stress inputs: real values uniform[-10, 10) (both Huber branches, both signs of the hinge
// product); the restricted domains keep their domain: class indices, +-1 targets, and for the KL
// divergence probabilities far from uniform (softmax of uniform[-10, 10) logits: never 0, so the
// log stays finite).
#include "task_def.h"

namespace kbrl::detail {
namespace {

namespace F = torch::nn::functional;

using Inputs = std::function<std::vector<TensorSpec>(Scale)>;
using Draw = std::function<Tensors(const TaskSpec&, torch::Device)>;

/// A loss task: inputs(scale) in forward's order, loss = fn(inputs), drawn by `draw` (KernelBench's
/// draw, stated by `kernelbench_laws`) or by `stress_laws`.
TaskDef loss(int id, std::string name, double ops, Inputs inputs,
             std::function<torch::Tensor(const Tensors&)> fn, Draw draw,
             InputLaws kernelbench_laws, InputLaws stress_laws) {
  TaskDef def;
  def.id = id;
  def.name = std::move(name);
  def.family = Family::loss;
  def.spec = [ops, inputs](Scale s) {
    TaskSpec spec;
    spec.inputs = inputs(s);
    spec.outputs = {f32("loss", {})};
    spec.flops = ops * static_cast<double>(spec.inputs[0].numel());
    return spec;
  };
  def.make_model = [fn](const TaskSpec&) { return stateless(fn); };
  def.make_inputs = std::move(draw);
  def.kernelbench_laws = std::move(kernelbench_laws);
  def.stress_laws = std::move(stress_laws);
  return def;
}

torch::TensorOptions on(torch::Device device) { return torch::TensorOptions().device(device); }

/// predictions and targets of the same shape [rows, cols].
Inputs pair(std::vector<int64_t> kernelbench, std::vector<int64_t> small) {
  return [=](Scale s) {
    const auto& shape = s == Scale::kernelbench ? kernelbench : small;
    return std::vector<TensorSpec>{f32("predictions", shape), f32("targets", shape)};
  };
}

/// KernelBench's "x = rand * scale" with one scale = rand(()) per draw.
InputLaw scaled_uniform() {
  return declared("= s*u, s ~ uniform[0, 1) once per draw, u ~ uniform[0, 1)", InputDomain{});
}

/// Tasks 94 and 96: scale = rand(()) first, then predictions = rand * scale, targets = rand.
Tensors scaled_predictions(const TaskSpec& spec, torch::Device device) {
  auto scale = torch::rand({}, on(device));
  auto predictions = torch::rand(spec.inputs[0].shape, on(device)) * scale;
  auto targets = torch::rand(spec.inputs[1].shape, on(device));
  return {predictions, targets};
}

TaskDef cross_entropy() {
  auto inputs = [](Scale s) {
    const int64_t batch = s == Scale::kernelbench ? 32768 : 128;
    const int64_t classes = s == Scale::kernelbench ? 4096 : 1000;
    return std::vector<TensorSpec>{f32("predictions", {batch, classes}),
                                   {"targets", {batch}, DType::i64}};
  };
  // predictions = rand, targets = randint(0, classes, (batch,)): int64 class indices.
  auto draw = [](const TaskSpec& spec, torch::Device device) {
    const int64_t classes = spec.inputs[0].shape[1];
    auto predictions = torch::rand(spec.inputs[0].shape, on(device));
    auto targets =
        torch::randint(0, classes, spec.inputs[1].shape, on(device).dtype(torch::kInt64));
    return Tensors{predictions, targets};
  };
  // Logits of both signs; the targets stay class indices.
  auto laws = [](double lo, double hi) -> InputLaws {
    return [lo, hi](const TaskSpec& spec) {
      return std::vector<InputLaw>{uniform(lo, hi), class_indices(spec.inputs[0].shape[1])};
    };
  };
  return loss(
      95, "95_CrossEntropyLoss", 4, inputs,
      [](const Tensors& in) { return F::cross_entropy(in[0], in[1]); }, draw, laws(0, 1),
      laws(-10, 10));
}

TaskDef kl_div() {
  // scale = rand(()), predictions = softmax(rand * scale), targets = softmax(rand), rows of dim -1.
  auto draw = [](const TaskSpec& spec, torch::Device device) {
    auto scale = torch::rand({}, on(device));
    auto predictions = (torch::rand(spec.inputs[0].shape, on(device)) * scale).softmax(-1);
    auto targets = torch::rand(spec.inputs[1].shape, on(device)).softmax(-1);
    return Tensors{predictions, targets};
  };
  return loss(
      98, "98_KLDivLoss", 5, pair({16384, 16384}, {128, 1000}),
      [](const Tensors& in) {
        return F::kl_div(torch::log(in[0]), in[1],
                         F::KLDivFuncOptions().reduction(torch::kBatchMean));
      },
      draw,
      per_input({declared("= softmax over the last dim of s*u, s ~ uniform[0, 1) once per draw, "
                          "u ~ uniform[0, 1)",
                          {InputDomain::Kind::probability_rows, 0.0, 1.0}),
                 softmax_rows(0, 1)}),
      // Rows far from uniform (probability ratios up to e^20 within a row) and never 0.
      every_input(softmax_rows(-10, 10)));
}

TaskDef triplet_margin() {
  auto inputs = [](Scale s) {
    const auto shape = s == Scale::kernelbench ? std::vector<int64_t>{32768, 8192}
                                               : std::vector<int64_t>{128, 512};
    return std::vector<TensorSpec>{f32("anchor", shape), f32("positive", shape),
                                   f32("negative", shape)};
  };
  // scale = rand(()), anchor = rand * scale, positive = rand, negative = rand.
  auto draw = [](const TaskSpec& spec, torch::Device device) {
    auto scale = torch::rand({}, on(device));
    auto anchor = torch::rand(spec.inputs[0].shape, on(device)) * scale;
    auto positive = torch::rand(spec.inputs[1].shape, on(device));
    auto negative = torch::rand(spec.inputs[2].shape, on(device));
    return Tensors{anchor, positive, negative};
  };
  // The forward is the module: KernelBench's nn.TripletMarginLoss(margin=1.0), i.e. p=2, eps=1e-6,
  // swap=false, mean reduction.
  TaskDef def = loss(99, "99_TripletMarginLoss", 6, inputs, /*fn=*/nullptr, draw,
                     per_input({scaled_uniform(), uniform(0, 1), uniform(0, 1)}),
                     every_input(uniform(-10, 10)));
  def.make_model = [](const TaskSpec&) {
    using torch::nn::TripletMarginLoss;
    return with_module<TripletMarginLoss>(
        TripletMarginLoss(torch::nn::TripletMarginLossOptions().margin(1.0)),
        [](TripletMarginLoss& fn, const Tensors& in) { return fn(in[0], in[1], in[2]); });
  };
  return def;
}

TaskDef hinge() {
  // predictions [batch,batch] and targets [batch]: targets broadcast along the LAST dimension
  // (KernelBench's quirk), so column j is multiplied by targets[j].
  auto inputs = [](Scale s) {
    const int64_t batch = s == Scale::kernelbench ? 32768 : 256;
    return std::vector<TensorSpec>{f32("predictions", {batch, batch}), f32("targets", {batch})};
  };
  // predictions = rand, targets = randint(0, 2, (batch,)).float() * 2 - 1 (values +-1).
  auto draw = [](const TaskSpec& spec, torch::Device device) {
    auto predictions = torch::rand(spec.inputs[0].shape, on(device));
    auto bits = torch::randint(0, 2, spec.inputs[1].shape, on(device).dtype(torch::kInt64));
    return Tensors{predictions, bits.to(torch::kFloat32) * 2 - 1};
  };
  return loss(
      100, "100_HingeLoss", 4, inputs,
      [](const Tensors& in) { return torch::mean(torch::clamp_min(1 - in[0] * in[1], 0)); }, draw,
      per_input({uniform(0, 1), signs()}), per_input({uniform(-10, 10), signs()}));
}

}  // namespace

void add_loss_tasks(TaskDefs& defs) {
  defs.push_back(loss(
      94, "94_MSELoss", 3, pair({32768, 32768}, {128, 1000}),
      [](const Tensors& in) { return torch::mean((in[0] - in[1]).pow(2)); }, scaled_predictions,
      per_input({scaled_uniform(), uniform(0, 1)}), every_input(uniform(-10, 10))));
  defs.push_back(cross_entropy());
  defs.push_back(loss(
      96, "96_HuberLoss", 5, pair({32768, 32768}, {128, 1000}),
      [](const Tensors& in) { return F::smooth_l1_loss(in[0], in[1]); }, scaled_predictions,
      per_input({scaled_uniform(), uniform(0, 1)}), every_input(uniform(-10, 10))));
  defs.push_back(kl_div());
  defs.push_back(triplet_margin());
  defs.push_back(hinge());
}

}  // namespace kbrl::detail
