// Level-1 elementwise tasks (activations, scalar multiply, diagonal scaling) and the softmax family.
// FLOPs: each arithmetic operation and each transcendental function counts 1 per element.
// Stress inputs: uniform[-100, 100) for the activations, softmax, log-softmax and the scalar
// multiply (saturated tails, exp overflow without the max subtraction, negative halves); the
// diagonal scaling is a product and takes the gemm range, uniform[-10, 10).
#include "task_def.h"

namespace kbrl::detail {
namespace {

// KernelBench's activation tasks all run on x:[4096,393216].
std::vector<int64_t> activation_shape(Scale s) {
  return s == Scale::kernelbench ? std::vector<int64_t>{4096, 393216} : std::vector<int64_t>{64, 1000};
}

// Task 88 runs on x:[8192,8192].
std::vector<int64_t> new_gelu_shape(Scale s) {
  return s == Scale::kernelbench ? std::vector<int64_t>{8192, 8192} : std::vector<int64_t>{64, 256};
}

/// An activation task y = fn(x), `ops` FLOPs per element.
TaskDef activation(int id, std::string name, double ops,
                   std::function<torch::Tensor(const torch::Tensor&)> fn,
                   Family family = Family::elementwise,
                   std::vector<int64_t> (*shape)(Scale) = activation_shape) {
  TaskDef def;
  def.id = id;
  def.name = std::move(name);
  def.family = family;
  def.spec = [ops, shape](Scale s) {
    TaskSpec spec;
    spec.inputs = {f32("x", shape(s))};
    spec.outputs = {f32("y", shape(s))};
    spec.flops = ops * static_cast<double>(spec.inputs[0].numel());
    return spec;
  };
  def.make_model = [fn](const TaskSpec&) {
    return stateless([fn](const Tensors& in) { return fn(in[0]); });
  };
  def.stress_laws = every_input(uniform(-100, 100));
  return def;
}

TaskDef scalar_multiply() {
  TaskDef def;
  def.id = 5;
  def.name = "5_Matrix_scalar_multiplication";
  def.family = Family::elementwise;
  def.spec = [](Scale s) {
    const std::vector<int64_t> shape =
        s == Scale::kernelbench ? std::vector<int64_t>{65536, 16384} : std::vector<int64_t>{96, 160};
    TaskSpec spec;
    spec.inputs = {f32("A", shape)};
    spec.scalars = {{"s", 3.14}};
    spec.outputs = {f32("C", shape)};
    spec.flops = static_cast<double>(spec.inputs[0].numel());
    return spec;
  };
  def.make_model = [](const TaskSpec&) {
    ReferenceModel model;
    model.module = std::make_shared<torch::nn::Module>();
    model.forward = [](const Tensors& in, const std::vector<double>& scalars) {
      return Tensors{in[0] * scalars.at(0)};
    };
    return model;
  };
  def.stress_laws = every_input(uniform(-100, 100));
  return def;
}

TaskDef diagonal_scaling() {
  TaskDef def;
  def.id = 12;
  def.name = "12_Matmul_with_diagonal_matrices_";
  def.family = Family::elementwise;
  def.spec = [](Scale s) {
    const int64_t n = s == Scale::kernelbench ? 4096 : 96;
    TaskSpec spec;
    spec.inputs = {f32("A", {n}), f32("B", {n, n})};
    spec.outputs = {f32("C", {n, n})};
    spec.flops = static_cast<double>(n * n);
    return spec;
  };
  def.make_model = [](const TaskSpec&) {
    // KernelBench (since 2026-01-19): A.unsqueeze(1) * B, i.e. diag(A) @ B as row scaling.
    return stateless([](const Tensors& in) { return in[0].unsqueeze(1) * in[1]; });
  };
  def.stress_laws = every_input(uniform(-10, 10));
  return def;
}

}  // namespace

void add_elementwise_tasks(TaskDefs& defs) {
  namespace F = torch::nn::functional;
  defs.push_back(scalar_multiply());
  defs.push_back(diagonal_scaling());
  defs.push_back(activation(19, "19_ReLU", 1, [](const torch::Tensor& x) { return torch::relu(x); }));
  defs.push_back(activation(20, "20_LeakyReLU", 2, [](const torch::Tensor& x) {
    return F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.01));
  }));
  defs.push_back(activation(21, "21_Sigmoid", 3, [](const torch::Tensor& x) { return torch::sigmoid(x); }));
  defs.push_back(activation(22, "22_Tanh", 1, [](const torch::Tensor& x) { return torch::tanh(x); }));
  defs.push_back(activation(23, "23_Softmax", 5,
                            [](const torch::Tensor& x) { return torch::softmax(x, 1); },
                            Family::softmax));
  defs.push_back(activation(24, "24_LogSoftmax", 5,
                            [](const torch::Tensor& x) { return torch::log_softmax(x, 1); },
                            Family::softmax));
  defs.push_back(activation(25, "25_Swish", 4,
                            [](const torch::Tensor& x) { return x * torch::sigmoid(x); }));
  defs.push_back(activation(26, "26_GELU_", 5, [](const torch::Tensor& x) { return F::gelu(x); }));
  defs.push_back(activation(27, "27_SELU_", 5, [](const torch::Tensor& x) { return torch::selu(x); }));
  defs.push_back(activation(28, "28_HardSigmoid", 3,
                            [](const torch::Tensor& x) { return torch::hardsigmoid(x); }));
  defs.push_back(activation(29, "29_Softplus", 3, [](const torch::Tensor& x) { return F::softplus(x); }));
  defs.push_back(activation(30, "30_Softsign", 3,
                            [](const torch::Tensor& x) { return x / (1 + torch::abs(x)); }));
  defs.push_back(activation(31, "31_ELU", 3, [](const torch::Tensor& x) {
    return F::elu(x, F::ELUFuncOptions().alpha(1.0));
  }));
  defs.push_back(activation(32, "32_HardTanh", 2, [](const torch::Tensor& x) {
    return F::hardtanh(x, F::HardtanhFuncOptions().min_val(-1.0).max_val(1.0));
  }));
  defs.push_back(activation(
      88, "88_MinGPTNewGelu", 9,
      [](const torch::Tensor& x) {
        // MinGPT's NewGELU, written as KernelBench writes it.
        return 0.5 * x *
               (1.0 + torch::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * torch::pow(x, 3.0))));
      },
      Family::elementwise, new_gelu_shape));
}

}  // namespace kbrl::detail
