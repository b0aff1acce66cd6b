// The fused operations of LlamaNet's passes (fused_ops.h).
#include "fused_ops.h"

#include <algorithm>
#include <atomic>
#include <cstdio>

#include <torch/version.h>

#include "llama_net.h"
#include "update_memory.h"

#if KBRL_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>

#include "decoder_kernels.h"
#include "layer_kernels.h"
#endif

namespace kbrl::lm {
namespace {

#if KBRL_TORCH_CUDA
// A tensor's GPU made the current one for a launch (a model on cuda:1 launches there), and its
// current stream.
class OnDevice {
 public:
  explicit OnDevice(const torch::Tensor& t) : guard_(t.device()) {}
  void* stream() const { return at::cuda::getCurrentCUDAStream().stream(); }

 private:
  c10::cuda::CUDAGuard guard_;
};

bool kernel_type(const torch::Tensor& x) {
  return x.is_cuda() && (x.scalar_type() == torch::kBFloat16 || x.scalar_type() == torch::kFloat32);
}

// RMSNorm with the kernels: saves x (the norm weight does not train); the backward pass computes
// the row's scale again from it.
class RmsNormKernel : public torch::autograd::Function<RmsNormKernel> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w,
                               double eps) {
    const torch::Tensor xc = x.contiguous();
    const OnDevice on(xc);
    torch::Tensor y = torch::empty_like(xc);
    const int64_t hidden = xc.size(-1);
    kernels::add_rmsnorm(const_cast<void*>(xc.data_ptr()), nullptr, w.data_ptr<float>(), y.data_ptr(),
                         xc.numel() / hidden, hidden, static_cast<float>(eps), xc.scalar_type() == torch::kBFloat16,
                         on.stream());
    ctx->save_for_backward({xc, w});
    ctx->saved_data["eps"] = eps;
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const OnDevice on(x);
    const torch::Tensor g = grads[0].to(x.scalar_type()).contiguous();
    torch::Tensor gx = torch::empty_like(x);
    const int64_t hidden = x.size(-1);
    kernels::rms_norm_backward(x.data_ptr(), g.data_ptr(), saved[1].data_ptr<float>(), gx.data_ptr(),
                               x.numel() / hidden, hidden, static_cast<float>(ctx->saved_data["eps"].toDouble()),
                               x.scalar_type() == torch::kBFloat16, on.stream());
    return {gx, torch::Tensor(), torch::Tensor()};
  }
};

// The rotary embedding with the kernel; its gradient is the rotation back.
class RopeKernel : public torch::autograd::Function<RopeKernel> {
 public:
  static torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, bool inverse) {
    const torch::Tensor xc = x.contiguous();
    const OnDevice on(xc);
    torch::Tensor y = torch::empty_like(xc);
    kernels::rotary(xc.data_ptr(), cos.data_ptr<float>(), sin.data_ptr<float>(), y.data_ptr(), xc.size(0) * xc.size(1),
                    xc.size(2), xc.size(3), xc.size(1), inverse, xc.scalar_type() == torch::kBFloat16, on.stream());
    return y;
  }
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& cos,
                               const torch::Tensor& sin) {
    ctx->save_for_backward({cos, sin});
    return rotate(x, cos, sin, false);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    return {rotate(grads[0], saved[0], saved[1], true), torch::Tensor(), torch::Tensor()};
  }
};

// silu(gate) * up with the kernels: saves gate and up, the backward pass computes silu again.
class SwigluKernel : public torch::autograd::Function<SwigluKernel> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& gate,
                               const torch::Tensor& up) {
    const torch::Tensor g = gate.contiguous(), u = up.contiguous();
    const OnDevice on(g);
    torch::Tensor out = torch::empty_like(g);
    kernels::swiglu(g.data_ptr(), u.data_ptr(), out.data_ptr(), g.numel(), g.scalar_type() == torch::kBFloat16,
                    on.stream());
    ctx->save_for_backward({g, u});
    return out;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const OnDevice on(saved[0]);
    const torch::Tensor go = grads[0].to(saved[0].scalar_type()).contiguous();
    torch::Tensor grad_gate = torch::empty_like(saved[0]), grad_up = torch::empty_like(saved[1]);
    kernels::swiglu_backward(saved[0].data_ptr(), saved[1].data_ptr(), go.data_ptr(), grad_gate.data_ptr(),
                             grad_up.data_ptr(), go.numel(), go.scalar_type() == torch::kBFloat16, on.stream());
    return {grad_gate, grad_up};
  }
};
#endif

#if TORCH_VERSION_MAJOR >= 2
torch::Tensor flash(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, bool causal) {
  return std::get<0>(at::_scaled_dot_product_flash_attention(q, k, v, 0.0, causal, false));
}

// Each key/value head copied to its query heads, [B, KV, S, D] -> [B, H, S, D].
torch::Tensor per_head(const torch::Tensor& t, int64_t heads) {
  const int64_t B = t.size(0), KV = t.size(1), S = t.size(2), D = t.size(3);
  return KV == heads ? t : t.unsqueeze(2).expand({B, KV, heads / KV, S, D}).reshape({B, heads, S, D});
}
#endif

}  // namespace

torch::Tensor fused_rms_norm(const torch::Tensor& x, const torch::Tensor& w, double eps) {
#if KBRL_TORCH_CUDA
  if (kernel_type(x) && w.is_cuda() && w.scalar_type() == torch::kFloat32 && w.is_contiguous() && !w.requires_grad() &&
      w.numel() == x.size(-1))
    return RmsNormKernel::apply(x, w, eps);
#endif
  return rms_norm(x, w, eps);
}

torch::Tensor fused_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
#if KBRL_TORCH_CUDA
  if (kernel_type(x) && x.dim() == 4 && x.size(3) % 2 == 0 && cos.scalar_type() == torch::kFloat32 &&
      cos.is_contiguous() && sin.is_contiguous() && cos.size(0) == x.size(1))
    return RopeKernel::apply(x, cos, sin);
#endif
  return apply_rope(x, cos.unsqueeze(1), sin.unsqueeze(1)).contiguous();
}

torch::Tensor fused_swiglu(const torch::Tensor& gate, const torch::Tensor& up) {
#if KBRL_TORCH_CUDA
  if (kernel_type(gate) && up.scalar_type() == gate.scalar_type() && up.sizes() == gate.sizes())
    return SwigluKernel::apply(gate, up);
#endif
  return torch::silu(gate) * up;
}

// update_memory.h's, defined here: the one kbrl::lm file of the update that includes CUDA's headers.
int64_t device_bytes_available(const torch::Device& device) {
#if KBRL_TORCH_CUDA
  if (!device.is_cuda()) return 0;
  const c10::cuda::CUDAGuard guard(device);
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(guard.current_device().index());
  const int64_t cached = stats.reserved_bytes[0].current - stats.allocated_bytes[0].current;  // [0]: every pool
  return static_cast<int64_t>(free) + std::max<int64_t>(cached, 0);
#else
  (void)device;
  return 0;
#endif
}

bool token_score_kernels(const torch::Tensor& logits) {
#if KBRL_TORCH_CUDA
  return kernel_type(logits) && logits.dim() == 2 && logits.is_contiguous();
#else
  (void)logits;
  return false;
#endif
}

KernelTokenScores kernel_token_scores(const torch::Tensor& logits, const torch::Tensor& targets, double temperature,
                                      bool with_entropy) {
  KernelTokenScores r;
#if KBRL_TORCH_CUDA
  const OnDevice on(logits);
  const auto f32 = logits.options().dtype(torch::kFloat32);
  const int64_t rows = logits.size(0);
  r.logprob = torch::empty({rows}, f32);
  if (with_entropy) r.entropy = torch::empty({rows}, f32);
  r.stats = torch::empty({rows, 2}, f32);
  const torch::Tensor t = targets.to(torch::kInt64).contiguous();
  kernels::token_scores(logits.data_ptr(), t.data_ptr<int64_t>(), r.logprob.data_ptr<float>(),
                        with_entropy ? r.entropy.data_ptr<float>() : nullptr, r.stats.data_ptr<float>(), rows,
                        logits.size(1), static_cast<float>(temperature), logits.scalar_type() == torch::kBFloat16,
                        on.stream());
#else
  (void)logits, (void)targets, (void)temperature, (void)with_entropy;
#endif
  return r;
}

void kernel_token_scores_backward(torch::Tensor& logits, const torch::Tensor& targets, const torch::Tensor& stats,
                                  const torch::Tensor& grad_logprob, const torch::Tensor& grad_entropy,
                                  double temperature) {
#if KBRL_TORCH_CUDA
  const OnDevice on(logits);
  const torch::Tensor t = targets.to(torch::kInt64).contiguous();
  const torch::Tensor gl = grad_logprob.defined() ? grad_logprob.to(torch::kFloat32).contiguous() : torch::Tensor();
  const torch::Tensor ge = grad_entropy.defined() && grad_entropy.numel() == logits.size(0)
                               ? grad_entropy.to(torch::kFloat32).contiguous()
                               : torch::Tensor();
  kernels::token_scores_backward(logits.data_ptr(), t.data_ptr<int64_t>(), stats.data_ptr<float>(),
                                 gl.defined() ? gl.data_ptr<float>() : nullptr,
                                 ge.defined() ? ge.data_ptr<float>() : nullptr, logits.size(0), logits.size(1),
                                 static_cast<float>(temperature), logits.scalar_type() == torch::kBFloat16,
                                 on.stream());
#else
  (void)logits, (void)targets, (void)stats, (void)grad_logprob, (void)grad_entropy, (void)temperature;
#endif
}

bool flash_takes_grouped_heads() {
#if TORCH_VERSION_MAJOR >= 2
  if (!torch::cuda::is_available()) return false;
  static const bool takes = [] {
    try {
      torch::AutoGradMode grad(true);
      const auto f32 = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
      // Fixed values (no draw from the global generator): 4 query heads over 2 key/value heads, 8
      // queries after 8 earlier keys (the lower-right causal mask of a shared prompt).
      auto values = [&](int64_t heads, int64_t length, double f) {
        return torch::sin(torch::arange(heads * length * 64, f32) * f).view({1, heads, length, 64}).to(torch::kBFloat16);
      };
      const torch::Tensor q0 = values(4, 8, 0.37), k0 = values(2, 16, 0.11), v0 = values(2, 16, 0.53);
      const torch::Tensor g = values(4, 8, 0.29);
      std::vector<torch::Tensor> grouped = {q0.clone().requires_grad_(), k0.clone().requires_grad_(),
                                            v0.clone().requires_grad_()};
      std::vector<torch::Tensor> copied = {q0.clone().requires_grad_(), k0.clone().requires_grad_(),
                                           v0.clone().requires_grad_()};
      const torch::Tensor a = flash(grouped[0], grouped[1], grouped[2], true);
      const torch::Tensor b = flash(copied[0], per_head(copied[1], 4), per_head(copied[2], 4), true);
      a.backward(g);
      b.backward(g);
      bool same = torch::allclose(a.to(torch::kFloat32), b.to(torch::kFloat32), 1e-2, 1e-2);
      for (size_t i = 0; i < 3; ++i)
        same = same && grouped[i].grad().defined() &&
               torch::allclose(grouped[i].grad().to(torch::kFloat32), copied[i].grad().to(torch::kFloat32), 1e-2, 1e-2);
      return same;
    } catch (const c10::Error&) {
      return false;
    }
  }();
  return takes;
#else
  return false;
#endif
}

torch::Tensor fused_attention(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& values) {
#if TORCH_VERSION_MAJOR >= 2
  const int64_t H = q.size(1), T = q.size(2), D = q.size(3), KV = keys.size(1), S = keys.size(2);
  // A shared prompt of S - T keys before the T own ones: query t sees keys 0 .. S - T + t, the causal
  // mask aligned to the lower right. Flash attention's own causal mask is aligned so (what
  // torch.nn.attention.bias.causal_lower_right dispatches to); elsewhere the mask as a tensor.
  static std::atomic<bool> flash_failed{false};
  const bool half = q.scalar_type() == torch::kBFloat16 || q.scalar_type() == torch::kHalf;
  if (q.is_cuda() && half && D % 8 == 0 && D <= 256 && !flash_failed.load()) {
    // Grouped heads as they are where flash takes them; else flash with copies for the shared
    // prompt's lower-right mask, and the dispatcher's choice (cuDNN or flash) for the rest.
    const bool grouped = KV != H && flash_takes_grouped_heads();
    if (grouped || (T != S && T != 1)) try {
        return grouped ? flash(q, keys, values, T > 1) : flash(q, per_head(keys, H), per_head(values, H), T > 1);
      } catch (const c10::Error& e) {
        flash_failed = true;
        std::fprintf(stderr, "kbrl: flash attention unavailable (%s); attention with a mask instead\n",
                     e.what_without_backtrace());
      }
  }
  if (T == S || T == 1)  // causal from the first key (no shared prompt), or one query that sees every key
    return at::scaled_dot_product_attention(q, per_head(keys, H), per_head(values, H), {}, 0.0, T > 1);
  const torch::Tensor mask =
      torch::ones({T, S}, torch::TensorOptions().device(q.device()).dtype(torch::kBool)).tril(S - T);
  return at::scaled_dot_product_attention(q, per_head(keys, H), per_head(values, H), mask);
#else
  (void)q, (void)keys, (void)values;
  throw std::logic_error("fused_attention needs libtorch 2 or later");
#endif
}

}  // namespace kbrl::lm
