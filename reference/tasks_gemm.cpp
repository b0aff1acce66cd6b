// Level-1 gemm tasks (matmul in its shapes, layouts and batchings) and task 97, scaled dot-product
// attention. FLOPs: 2·M·N·K per product (batched: times the batch); attention 4·B·H·S·S·D for
// QKᵀ and PV plus 5 per score for the softmax.
// Stress inputs: uniform[-10, 10) for every product (signed terms that cancel), structure kept for
// the symmetric and triangular tasks; uniform[-2, 2) for attention, so the logits QKᵀ/sqrt(D)
// have a standard deviation near 4/3 (sums in another order than torch's still agree).
#include <cmath>

#include <torch/version.h>

#include "task_def.h"

namespace kbrl::detail {
namespace {

/// C[M,N] = op(A) op(B) with a reduction over K.
struct Dims {
  int64_t m, n, k;
};

Dims pick(Scale s, Dims kernelbench, Dims small) {
  return s == Scale::kernelbench ? kernelbench : small;
}

torch::TensorOptions on(torch::Device device) { return torch::TensorOptions().device(device); }

/// A 2-D product task C = fn(A, B). A is stored [M,K] ([K,M] when trans_a), B [K,N] ([N,K] when
/// trans_b), as KernelBench stores them.
TaskDef matmul(int id, std::string name, Dims kernelbench, Dims small, bool trans_a, bool trans_b,
               std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)> fn) {
  TaskDef def;
  def.id = id;
  def.name = std::move(name);
  def.family = Family::gemm;
  def.spec = [=](Scale s) {
    const Dims d = pick(s, kernelbench, small);
    TaskSpec spec;
    using Shape = std::vector<int64_t>;
    spec.inputs = {f32("A", trans_a ? Shape{d.k, d.m} : Shape{d.m, d.k}),
                   f32("B", trans_b ? Shape{d.n, d.k} : Shape{d.k, d.n})};
    spec.outputs = {f32("C", {d.m, d.n})};
    spec.flops = 2.0 * static_cast<double>(d.m * d.n) * static_cast<double>(d.k);
    return spec;
  };
  def.make_model = [fn](const TaskSpec&) {
    return stateless([fn](const Tensors& in) { return fn(in[0], in[1]); });
  };
  def.stress_laws = every_input(uniform(-10, 10));
  return def;
}

/// C = A @ B on plain row-major A:[M,K], B:[K,N].
TaskDef plain_matmul(int id, std::string name, Dims kernelbench, Dims small) {
  return matmul(id, std::move(name), kernelbench, small, false, false,
                [](const torch::Tensor& a, const torch::Tensor& b) { return torch::matmul(a, b); });
}

/// Inputs drawn as KernelBench draws tasks 13-15's: each rand(N,N), then `post` applied to it
/// (symmetrize, triu, tril).
std::function<Tensors(const TaskSpec&, torch::Device)> square_inputs(
    torch::Tensor (*post)(const torch::Tensor&)) {
  return [post](const TaskSpec& spec, torch::Device device) {
    Tensors out;
    for (const auto& in : spec.inputs) out.push_back(post(torch::rand(in.shape, on(device))));
    return out;
  };
}

TaskDef symmetric() {
  TaskDef def =
      plain_matmul(13, "13_Matmul_for_symmetric_matrices", {4096, 4096, 4096}, {128, 128, 128});
  def.make_inputs = square_inputs([](const torch::Tensor& x) { return (x + x.t()) / 2; });
  def.kernelbench_laws = every_input(symmetric_uniform(0, 1));
  def.stress_laws = every_input(symmetric_uniform(-10, 10));
  return def;
}

TaskDef triangular(int id, std::string name, bool upper) {
  TaskDef def = matmul(id, std::move(name), {4096, 4096, 4096}, {128, 128, 128}, false, false,
                       [upper](const torch::Tensor& a, const torch::Tensor& b) {
                         auto c = torch::matmul(a, b);
                         return upper ? torch::triu(c) : torch::tril(c);
                       });
  def.make_inputs = upper ? square_inputs([](const torch::Tensor& x) { return torch::triu(x); })
                          : square_inputs([](const torch::Tensor& x) { return torch::tril(x); });
  def.kernelbench_laws = every_input(triangular_uniform(0, 1, upper));
  def.stress_laws = every_input(triangular_uniform(-10, 10, upper));
  // The inputs are triangular, so the product needs only the k between i and j: sum over i <= j
  // of (j - i + 1) multiply-adds, N(N+1)(N+2)/6, i.e. N(N+1)(N+2)/3 FLOPs (the speed-of-light
  // floor must not flag a kernel that skips the zeros).
  const auto full = def.spec;
  def.spec = [full](Scale s) {
    TaskSpec spec = full(s);
    const double n = static_cast<double>(spec.outputs[0].shape[0]);
    spec.flops = n * (n + 1) * (n + 2) / 3.0;
    return spec;
  };
  return def;
}

TaskDef batched() {
  TaskDef def;
  def.id = 3;
  def.name = "3_Batched_matrix_multiplication";
  def.family = Family::gemm;
  def.spec = [](Scale s) {
    const bool kb = s == Scale::kernelbench;
    const int64_t batch = kb ? 128 : 4;
    const Dims d = pick(s, {512, 2048, 1024}, {32, 128, 64});
    TaskSpec spec;
    spec.inputs = {f32("A", {batch, d.m, d.k}), f32("B", {batch, d.k, d.n})};
    spec.outputs = {f32("C", {batch, d.m, d.n})};
    spec.flops = 2.0 * static_cast<double>(batch * d.m) * static_cast<double>(d.n * d.k);
    return spec;
  };
  def.make_model = [](const TaskSpec&) {
    return stateless([](const Tensors& in) { return torch::bmm(in[0], in[1]); });
  };
  def.stress_laws = every_input(uniform(-10, 10));
  return def;
}

/// Task 10: (N,M,K) @ (K,L) -> (N,M,L) by torch.matmul's broadcasting.
TaskDef tensor3d_matmul() {
  TaskDef def;
  def.id = 10;
  def.name = "10_3D_tensor_matrix_multiplication";
  def.family = Family::gemm;
  def.spec = [](Scale s) {
    const bool kb = s == Scale::kernelbench;
    const int64_t n = kb ? 16 : 2, m = kb ? 1024 : 64, k = kb ? 2048 : 128, l = kb ? 768 : 96;
    TaskSpec spec;
    spec.inputs = {f32("A", {n, m, k}), f32("B", {k, l})};
    spec.outputs = {f32("C", {n, m, l})};
    spec.flops = 2.0 * static_cast<double>(n * m) * static_cast<double>(k * l);
    return spec;
  };
  def.make_model = [](const TaskSpec&) {
    return stateless([](const Tensors& in) { return torch::matmul(in[0], in[1]); });
  };
  def.stress_laws = every_input(uniform(-10, 10));
  return def;
}

/// Task 11: einsum("bijl,lk->bijk").
TaskDef tensor4d_matmul() {
  TaskDef def;
  def.id = 11;
  def.name = "11_4D_tensor_matrix_multiplication";
  def.family = Family::gemm;
  def.spec = [](Scale s) {
    const bool kb = s == Scale::kernelbench;
    const int64_t b = kb ? 8 : 2, i = kb ? 256 : 8, j = kb ? 512 : 16, l = kb ? 256 : 32,
                  k = kb ? 768 : 96;
    TaskSpec spec;
    spec.inputs = {f32("A", {b, i, j, l}), f32("B", {l, k})};
    spec.outputs = {f32("C", {b, i, j, k})};
    spec.flops = 2.0 * static_cast<double>(b * i * j) * static_cast<double>(l * k);
    return spec;
  };
  def.make_model = [](const TaskSpec&) {
    return stateless(
        [](const Tensors& in) { return torch::einsum("bijl,lk->bijk", {in[0], in[1]}); });
  };
  def.stress_laws = every_input(uniform(-10, 10));
  return def;
}

/// softmax(Q Kᵀ / sqrt(D)) V: no mask, no dropout, not causal.
torch::Tensor attention_reference(const torch::Tensor& q, const torch::Tensor& k,
                                           const torch::Tensor& v) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v);
#else
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  return torch::matmul(torch::softmax(torch::matmul(q, k.transpose(-2, -1)) * scale, -1), v);
#endif
}

TaskDef attention() {
  TaskDef def;
  def.id = 97;
  def.name = "97_ScaledDotProductAttention";
  def.family = Family::attention;
  def.spec = [](Scale s) {
    const bool kb = s == Scale::kernelbench;
    const int64_t b = kb ? 32 : 2, h = kb ? 32 : 4, seq = kb ? 512 : 32, d = kb ? 1024 : 64;
    const std::vector<int64_t> shape{b, h, seq, d};
    TaskSpec spec;
    spec.inputs = {f32("Q", shape), f32("K", shape), f32("V", shape)};
    spec.outputs = {f32("out", shape)};
    const double scores = static_cast<double>(b * h) * static_cast<double>(seq * seq);
    spec.flops = 4.0 * scores * static_cast<double>(d) + 5.0 * scores;
    return spec;
  };
  def.make_model = [](const TaskSpec&) {
    return stateless(
        [](const Tensors& in) { return attention_reference(in[0], in[1], in[2]); });
  };
  def.stress_laws = every_input(uniform(-2, 2));
  return def;
}

}  // namespace

void add_gemm_tasks(TaskDefs& defs) {
  struct Plain {
    int id;
    const char* name;
    Dims kernelbench, small;
  };
  const Plain plain[] = {
      {1, "1_Square_matrix_multiplication_", {4096, 4096, 4096}, {128, 128, 128}},
      {2, "2_Standard_matrix_multiplication_", {2048, 4096, 8192}, {64, 128, 256}},
      {4, "4_Matrix_vector_multiplication_", {2048, 1, 1048576}, {64, 1, 16384}},
      {6, "6_Matmul_with_large_K_dimension_", {256, 256, 524288}, {32, 32, 8192}},
      {7, "7_Matmul_with_small_K_dimension_", {32768, 32768, 64}, {1024, 1024, 64}},
      {8, "8_Matmul_with_irregular_shapes_", {8205, 5921, 2949}, {205, 171, 149}},
      {9, "9_Tall_skinny_matrix_multiplication_", {32768, 32768, 32}, {1024, 1024, 32}},
  };
  for (const auto& t : plain) defs.push_back(plain_matmul(t.id, t.name, t.kernelbench, t.small));
  defs.push_back(batched());
  defs.push_back(tensor3d_matmul());
  defs.push_back(tensor4d_matmul());
  defs.push_back(symmetric());
  defs.push_back(triangular(14, "14_Matmul_for_upper_triangular_matrices", /*upper=*/true));
  defs.push_back(triangular(15, "15_Matmul_for_lower_triangular_matrices", /*upper=*/false));
  // Tasks 16-18: M=2048, N=4096, K=8192 with A, B or both stored transposed.
  using T = const torch::Tensor&;
  const Dims kb{2048, 4096, 8192}, small{64, 128, 256};
  defs.push_back(matmul(16, "16_Matmul_with_transposed_A", kb, small, true, false,
                        [](T a, T b) { return torch::matmul(a.t(), b); }));
  defs.push_back(matmul(17, "17_Matmul_with_transposed_B", kb, small, false, true,
                        [](T a, T b) { return torch::matmul(a, b.t()); }));
  defs.push_back(matmul(18, "18_Matmul_with_transposed_both", kb, small, true, true,
                        [](T a, T b) { return torch::matmul(a.t(), b.t()); }));
  defs.push_back(attention());
}

}  // namespace kbrl::detail
