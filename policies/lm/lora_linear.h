#pragma once
// Internal to kbrl::lm (includes libtorch): a projection that can carry a LoRA adapter,
// W x + b + (alpha / r) B A x, with A Kaiming-uniform and B zero at the start (LmPolicy's
// reset_adapter), both kept in float32 whatever W's type. BatchDecoder samples with the adapter
// merged into W instead (batch_decoder.cpp's merged()).
#include <torch/torch.h>

#include <vector>

namespace kbrl::lm {

struct LoraLinear {
  torch::Tensor weight;  // [out, in], compute dtype, no grad
  torch::Tensor bias;    // [out] or undefined
  torch::Tensor a;       // [r, in] float32, trains; undefined without an adapter
  torch::Tensor b;       // [out, r] float32, trains
  double scale = 0.0;    // alpha / r
  bool adapter_on = true;  // false: the reference (base) model, e.g. for the KL term
  // true (LlamaNet::set_fused): with half-precision activations the adapter's products run in their
  // type (A and B cast from float32 each pass; their gradients arrive in float32), as mixed precision
  // trains, the second added into the output in place; false: x is cast to float32 and the products
  // run there (a float32 copy of every input).
  bool fused = true;

  torch::Tensor operator()(const torch::Tensor& x) const {
    const bool adapted = a.defined() && adapter_on;
    if (adapted && fused && x.scalar_type() != torch::kFloat32) {
      // As rows: W x (+ b), then B (scale A x) added in place by the product (cuBLAS's beta = 1): no
      // pass of its own over the output. The scale on B, not on the output.
      std::vector<int64_t> shape = x.sizes().vec();
      shape.back() = weight.size(0);
      const torch::Tensor rows = x.reshape({-1, x.size(-1)});
      torch::Tensor y = bias.defined() ? torch::addmm(bias, rows, weight.t()) : torch::mm(rows, weight.t());
      y.addmm_(torch::mm(rows, a.to(x.scalar_type()).t()), (b * scale).to(x.scalar_type()).t());
      return y.view(shape);
    }
    torch::Tensor y = torch::matmul(x, weight.t());
    if (bias.defined()) y = y + bias;
    if (adapted) {
      const torch::Tensor xf = x.to(torch::kFloat32);
      y = y + (torch::matmul(torch::matmul(xf, a.t()), b.t()) * scale).to(y.scalar_type());
    }
    return y;
  }
};

}  // namespace kbrl::lm
