// BatchDecoder (batch_decoder.h): the static-shape decoding step, its CUDA graphs and the host loop.
#include "batch_decoder.h"

#include "decoder_kernels.h"
#include "decoder_weights.h"

#include <cmath>
#include <limits>

#include <kbrl/error.h>
#include <kbrl/splitmix64.h>

#if KBRL_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#endif

namespace kbrl::lm {
namespace {

constexpr int64_t kWindow = 128;      // own positions a captured step reads (one graph per window)
constexpr int64_t kPromptRound = 64;  // a graph serves every prompt up to its capacity (rounded up to this)
constexpr int64_t kCheckEvery = 32;   // steps between the host's looks at the tokens, on a GPU
constexpr size_t kStatesKept = 3;     // batch shapes whose buffers and graphs are kept

}  // namespace

struct BatchDecoder::State {
  int64_t n = 0, prompt_capacity = 0, max_tokens = 0;
  bool greedy = false;
  double temperature = 1.0, top_p = 1.0;
  bool graphs_on = false;
  std::vector<torch::Tensor> prompt_k, prompt_v;  // per layer [kv_heads, prompt_capacity, head_dim]
  std::vector<torch::Tensor> own_k, own_v;        // per layer [kv_heads, n, max_tokens, head_dim]
  torch::Tensor logits;                           // [n, vocab] float32: the next token's
  torch::Tensor uniforms;                         // [max_tokens, n] float32
  torch::Tensor tokens, logprobs;                 // [n, max_tokens] int64 / float32
  torch::Tensor step, prompt_length;              // [1] int64
  // The fused step's activations: the residual stream, its norm, q, attention, MLP and products.
  torch::Tensor x, h, qkv, q, attn, proj, gate_up, act;
  torch::Tensor chosen;  // [n] int64: the tokens just sampled (the fused step's sampler writes them)
  int64_t attention_splits = 1;
  torch::Tensor attention_workspace;  // float32, for attention_splits > 1
  torch::Tensor attention_arrived;    // int32 [n * KV]: the blocks of a sequence done (zero between steps)
  bool matvec = false;                // a small batch: projections as decoder_kernels' matvec
  int max_blocks = 0;                 // matvec's grid cap (a few blocks per SM)
#if KBRL_TORCH_CUDA
  std::vector<std::unique_ptr<at::cuda::CUDAGraph>> graphs;  // graph w: steps [w kWindow, (w + 1) kWindow)
#endif

  bool serves(int64_t n_, int64_t capacity, int64_t max_tokens_, const GenerateOptions& o) const {
    const bool g = o.temperature == 0;
    return n == n_ && prompt_capacity == capacity && max_tokens == max_tokens_ && greedy == g &&
           (g || (temperature == o.temperature && top_p == o.top_p));
  }
};

BatchDecoder::BatchDecoder(LlamaNet& net, const ModelOptions& options)
    : net_(net),
      cuda_graphs_(options.cuda_graphs && net.device().is_cuda()),
      matvec_rows_(options.matvec_rows),
      attention_splits_(options.attention_splits),
      weights_(std::make_unique<DecoderWeights>()) {
  if (options.cpu_q8_weights) weights_->use_q8(net);
#if KBRL_TORCH_CUDA
  const LlamaConfig& c = net.config();
  fused_ = net.device().is_cuda() && (net.dtype() == torch::kBFloat16 || net.dtype() == torch::kFloat32) &&
           kernels::fused_step_supported(c.head_dim, c.heads / c.kv_heads);
#endif
}

BatchDecoder::~BatchDecoder() = default;

BatchDecoder::State& BatchDecoder::state_for(int n, int64_t prompt_length, int max_tokens,
                                             const GenerateOptions& o) {
  const int64_t capacity = cuda_graphs_ || fused_
                               ? (prompt_length + kPromptRound - 1) / kPromptRound * kPromptRound
                               : prompt_length;
  for (auto it = states_.begin(); it != states_.end(); ++it)
    if ((*it)->serves(n, capacity, max_tokens, o)) {
      states_.splice(states_.begin(), states_, it);
      return *states_.front();
    }
  if (states_.size() >= kStatesKept) states_.pop_back();
  const LlamaConfig& c = net_.config();
  auto s = std::make_unique<State>();
  s->n = n;
  s->prompt_capacity = capacity;
  s->max_tokens = max_tokens;
  s->greedy = o.temperature == 0;
  s->temperature = s->greedy ? 1.0 : o.temperature;
  s->top_p = s->greedy ? 1.0 : o.top_p;
  const auto dt = torch::TensorOptions().device(net_.device()).dtype(net_.dtype());
  const auto f32 = dt.dtype(torch::kFloat32), i64 = dt.dtype(torch::kInt64);
  for (int64_t l = 0; l < c.layers; ++l) {
    s->prompt_k.push_back(torch::zeros({c.kv_heads, capacity, c.head_dim}, dt));
    s->prompt_v.push_back(torch::zeros({c.kv_heads, capacity, c.head_dim}, dt));
    s->own_k.push_back(torch::zeros({c.kv_heads, n, max_tokens, c.head_dim}, dt));
    s->own_v.push_back(torch::zeros({c.kv_heads, n, max_tokens, c.head_dim}, dt));
  }
  s->logits = torch::zeros({n, c.vocab_size}, f32);
  s->uniforms = torch::zeros({max_tokens, n}, f32);
  s->tokens = torch::zeros({n, max_tokens}, i64);
  s->logprobs = torch::zeros({n, max_tokens}, f32);
  s->step = torch::zeros({1}, i64);
  s->prompt_length = torch::full({1}, prompt_length, i64);
  if (fused_) {
    const int64_t H = c.heads, KV = c.kv_heads, D = c.head_dim;
    s->x = torch::zeros({n, c.hidden}, dt);
    s->h = torch::zeros({n, c.hidden}, dt);
    s->qkv = torch::zeros({n, (H + 2 * KV) * D}, dt);
    s->q = torch::zeros({KV, n, H / KV, D}, dt);
    s->attn = torch::zeros({n, H * D}, dt);
    s->proj = torch::zeros({n, c.hidden}, dt);
    s->gate_up = torch::zeros({n, 2 * c.intermediate}, dt);
    s->act = torch::zeros({n, c.intermediate}, dt);
    s->chosen = torch::zeros({n}, i64);
#if KBRL_TORCH_CUDA
    // Chosen for the keys a step reads on average over the completions' tokens.
    s->attention_splits = attention_splits_ > 0
                              ? std::min<int64_t>(attention_splits_, kernels::kMaxAttentionSplits)
                              : kernels::attention_splits(n, KV, H / KV, D, net_.dtype() == torch::kBFloat16,
                                                          capacity + max_tokens / 2);
    counters_.attention_splits = s->attention_splits;
    s->attention_workspace = torch::zeros(
        {std::max<int64_t>(1, kernels::attention_workspace_floats(n, KV, H / KV, D, s->attention_splits))}, f32);
    s->attention_arrived = torch::zeros({n * KV}, dt.dtype(torch::kInt32));
    s->matvec = n <= matvec_rows_ && kernels::matvec_supported(n, c.hidden) &&
                kernels::matvec_supported(n, H * D) && kernels::matvec_supported(n, c.intermediate);
    s->max_blocks = 4 * at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
#endif
  }
  states_.push_front(std::move(s));
  if (cuda_graphs_) capture(*states_.front());
  return *states_.front();
}

torch::Tensor BatchDecoder::sample(State& s) {
  const int64_t n = s.n, V = net_.config().vocab_size;
  const torch::Tensor logp = torch::log_softmax(s.logits / s.temperature, -1);
  torch::Tensor chosen;  // [n, 1]
  if (s.greedy) {
    chosen = s.logits.argmax(-1, true);
  } else {
    const torch::Tensor uniform = s.uniforms.index_select(0, s.step).view({n, 1});
    torch::Tensor probs = logp.exp(), order;
    if (s.top_p < 1) {  // keep the smallest set of most likely tokens whose mass reaches top_p
      auto [sorted, idx] = probs.sort(-1, true);
      const torch::Tensor before = sorted.cumsum(-1) - sorted;
      probs = sorted.masked_fill(before >= s.top_p, 0.0);
      order = idx;
    }
    const torch::Tensor cdf = probs.cumsum(-1);
    const torch::Tensor target = uniform * cdf.narrow(1, V - 1, 1);
    const torch::Tensor pos = (cdf <= target).sum(-1, true).clamp_max(V - 1);
    chosen = order.defined() ? order.gather(1, pos) : pos;
  }
  s.tokens.index_copy_(1, s.step, chosen);
  s.logprobs.index_copy_(1, s.step, logp.gather(1, chosen));
  return chosen;
}

void BatchDecoder::step(State& s, int64_t window, bool exact) {
#if KBRL_TORCH_CUDA
  if (fused_) return step_fused(s);
#endif
  const LlamaConfig& c = net_.config();
  const DecoderWeights& w = *weights_;
  const int64_t n = s.n, H = c.heads, KV = c.kv_heads, D = c.head_dim, G = H / KV, P = s.prompt_capacity;
  const int64_t I = c.intermediate;
  const torch::ScalarType dtype = net_.dtype();
  const torch::Tensor chosen = sample(s);

  // The chosen tokens through the model at position prompt_length + step.
  const torch::Tensor position = s.prompt_length + s.step;
  const torch::Tensor cos = net_.rope_cos().index_select(0, position), sin = net_.rope_sin().index_select(0, position);
  const auto i64 = torch::TensorOptions().device(net_.device()).dtype(torch::kInt64);
  // Masked: prompt positions past the prompt (capacity rounding), own positions past this step; an
  // exact window (eager steps: the positions written so far, the prompt's own length) needs none.
  const torch::Tensor mask =
      exact ? torch::Tensor()
            : torch::cat({torch::arange(P, i64) >= s.prompt_length, torch::arange(window, i64) > s.step});
  const double root_d = std::sqrt(static_cast<double>(D));
  // x @ weight^T. With 8-bit weights, the product of the Q8_0 copies (q8_weights.h). One row on a
  // CPU as a matrix-vector product: the BLAS reads the weight once, where its matrix product with one
  // row first copies all of the weight into its panels.
  const auto project = [&](const torch::Tensor& rows, const torch::Tensor& weight, const Q8Matrix& q8) {
    if (w.q8) return q8_product(rows, q8, q8_rows_);
    if (n == 1 && rows.device().is_cpu()) return torch::mv(weight, rows.view({-1})).view({1, -1});
    return torch::matmul(rows, weight.t());
  };
  static const DecoderWeights::Q8Layer kNoQ8;
  const auto Q8 = [&](size_t l) -> const DecoderWeights::Q8Layer& { return w.q8 ? w.q8_layers[l] : kNoQ8; };
  torch::Tensor x = w.embedding.index_select(0, chosen.view({n}));  // [n, hidden]
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const DecoderWeights::Layer& L = w.layers[l];
    torch::Tensor qkv = project(rms_norm(x, L.attn_norm, c.rms_eps), L.qkv, Q8(l).qkv);
    if (L.qkv_bias.defined()) qkv = qkv + L.qkv_bias;
    const torch::Tensor q = apply_rope(qkv.narrow(1, 0, H * D).view({n, H, D}), cos, sin);
    const torch::Tensor k = apply_rope(qkv.narrow(1, H * D, KV * D).view({n, KV, D}), cos, sin);
    const torch::Tensor v = qkv.narrow(1, (H + KV) * D, KV * D).view({n, KV, D});
    s.own_k[l].index_copy_(2, s.step, k.transpose(0, 1).unsqueeze(2));
    s.own_v[l].index_copy_(2, s.step, v.transpose(0, 1).unsqueeze(2));
    // Grouped-query attention over the shared prompt (one matrix product for the whole batch) and
    // each completion's own positions, under one softmax.
    const torch::Tensor qg = q.view({n, KV, G, D}).transpose(0, 1);  // [KV, n, G, D]
    const torch::Tensor own_keys = s.own_k[l].narrow(2, 0, window), own_values = s.own_v[l].narrow(2, 0, window);
    const torch::Tensor on_prompt =
        torch::matmul(qg.reshape({KV, n * G, D}), s.prompt_k[l].transpose(1, 2)).view({KV, n, G, P});
    const torch::Tensor on_own = torch::matmul(qg, own_keys.transpose(2, 3));  // [KV, n, G, window]
    torch::Tensor scores = torch::cat({on_prompt, on_own}, -1).to(torch::kFloat32) / root_d;
    if (mask.defined()) scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
    const torch::Tensor p = torch::softmax(scores, -1).to(dtype);
    const torch::Tensor out =
        torch::matmul(p.narrow(-1, 0, P).reshape({KV, n * G, P}), s.prompt_v[l]).view({KV, n, G, D}) +
        torch::matmul(p.narrow(-1, P, window), own_values);
    x = x + project(out.transpose(0, 1).reshape({n, H * D}), L.o, Q8(l).o);
    const torch::Tensor gu = project(rms_norm(x, L.ffn_norm, c.rms_eps), L.gate_up, Q8(l).gate_up);
    x = x + project(torch::silu(gu.narrow(1, 0, I)) * gu.narrow(1, I, I), L.down, Q8(l).down);
  }
  s.logits.copy_(project(rms_norm(x, w.final_norm, c.rms_eps), w.output, w.q8_output));
  s.step.add_(1);
}

#if KBRL_TORCH_CUDA
// The same step in 9 kernels a layer: 4 matrix products and 5 of decoder_kernels.h (the residual
// add fused with the next norm; bias, rotary embedding and the cache write in one; attention over
// the prompt and the own positions in one, reading the step from the device, so one graph serves
// every step), and the sampler as one kernel (top-p below 1: torch operations). A small batch
// (at most matvec_rows rows, itself at most kernels::kMatvecRows) takes 5 a layer: its projections are matvec kernels with the
// norm before them and the residual add or SwiGLU after, and the output's product writes the logits.
void BatchDecoder::step_fused(State& s) {
  const LlamaConfig& c = net_.config();
  const DecoderWeights& w = *weights_;
  const int64_t n = s.n, H = c.heads, KV = c.kv_heads, D = c.head_dim, I = c.intermediate;
  const bool bf16 = net_.dtype() == torch::kBFloat16;
  const float eps = static_cast<float>(c.rms_eps);
  void* stream = at::cuda::getCurrentCUDAStream().stream();
  const int64_t* prompt_length = s.prompt_length.data_ptr<int64_t>();
  const int64_t* step = s.step.data_ptr<int64_t>();
  if (s.top_p < 1) {  // nucleus sampling sorts the vocabulary: torch operations
    s.chosen.copy_(sample(s).view({n}));
  } else {
    kernels::sample_tokens(s.logits.data_ptr<float>(), n, c.vocab_size, static_cast<float>(s.temperature), s.greedy,
                           s.uniforms.data_ptr<float>(), step, s.max_tokens, s.chosen.data_ptr<int64_t>(),
                           s.tokens.data_ptr<int64_t>(), s.logprobs.data_ptr<float>(), stream);
  }
  torch::index_select_out(s.x, w.embedding, 0, s.chosen);
  using kernels::MatvecOut;
  const auto matvec = [&](MatvecOut mode, const torch::Tensor& in, const torch::Tensor& norm, const torch::Tensor& weight,
                          void* out, int64_t out_features) {
    kernels::matvec(mode, in.data_ptr(), norm.defined() ? norm.data_ptr<float>() : nullptr, eps, weight.data_ptr(), out,
                    n, in.size(1), out_features, s.max_blocks, bf16, stream);
  };
  if (!s.matvec)
    kernels::add_rmsnorm(s.x.data_ptr(), nullptr, w.layers[0].attn_norm.data_ptr<float>(), s.h.data_ptr(), n,
                         c.hidden, eps, bf16, stream);
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const DecoderWeights::Layer& L = w.layers[l];
    if (s.matvec)
      matvec(MatvecOut::store, s.x, L.attn_norm, L.qkv, s.qkv.data_ptr(), L.qkv.size(0));
    else
      torch::mm_out(s.qkv, s.h, L.qkv.t());
    kernels::rope_qkv(s.qkv.data_ptr(), L.qkv_bias.defined() ? L.qkv_bias.data_ptr() : nullptr,
                      net_.rope_cos().data_ptr<float>(), net_.rope_sin().data_ptr<float>(), prompt_length, step,
                      s.q.data_ptr(), s.own_k[l].data_ptr(), s.own_v[l].data_ptr(), n, H, KV, D, s.max_tokens, bf16,
                      stream);
    kernels::attention(s.q.data_ptr(), s.prompt_k[l].data_ptr(), s.prompt_v[l].data_ptr(), s.own_k[l].data_ptr(),
                       s.own_v[l].data_ptr(), prompt_length, step, s.attn.data_ptr(),
                       s.attention_workspace.data_ptr<float>(), s.attention_arrived.data_ptr<int>(),
                       s.attention_splits, n, KV, H / KV, D, s.prompt_capacity, s.max_tokens, bf16, stream);
    if (s.matvec) {
      matvec(MatvecOut::add_to, s.attn, {}, L.o, s.x.data_ptr(), c.hidden);
      matvec(MatvecOut::silu, s.x, L.ffn_norm, L.gate_up, s.act.data_ptr(), I);
      matvec(MatvecOut::add_to, s.act, {}, L.down, s.x.data_ptr(), c.hidden);
      continue;
    }
    torch::mm_out(s.proj, s.attn, L.o.t());
    kernels::add_rmsnorm(s.x.data_ptr(), s.proj.data_ptr(), L.ffn_norm.data_ptr<float>(), s.h.data_ptr(), n, c.hidden,
                         eps, bf16, stream);
    torch::mm_out(s.gate_up, s.h, L.gate_up.t());
    kernels::silu_mul(s.gate_up.data_ptr(), s.act.data_ptr(), n, I, bf16, stream);
    torch::mm_out(s.proj, s.act, L.down.t());
    const torch::Tensor& next_norm = l + 1 < w.layers.size() ? w.layers[l + 1].attn_norm : w.final_norm;
    kernels::add_rmsnorm(s.x.data_ptr(), s.proj.data_ptr(), next_norm.data_ptr<float>(), s.h.data_ptr(), n, c.hidden,
                         eps, bf16, stream);
  }
  if (s.matvec)
    matvec(MatvecOut::store_float, s.x, w.final_norm, w.output, s.logits.data_ptr(), c.vocab_size);
  else
    s.logits.copy_(torch::matmul(s.h, w.output.t()));
  s.step.add_(1);
}
#endif

void BatchDecoder::capture(State& s) {
#if KBRL_TORCH_CUDA
  const int64_t windows = fused_ ? 1 : (s.max_tokens + kWindow - 1) / kWindow;
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, net_.device().index());
  torch::cuda::synchronize();
  {
    c10::cuda::CUDAStreamGuard guard(side);
    step(s, std::min(kWindow, s.max_tokens), false);  // once outside a graph: the libraries' lazy set-up
    side.synchronize();
    const auto pool = at::cuda::graph_pool_handle();
    for (int64_t i = 0; i < windows; ++i) {
      auto graph = std::make_unique<at::cuda::CUDAGraph>();
      graph->capture_begin(pool);
      step(s, std::min(s.max_tokens, (i + 1) * kWindow), false);
      graph->capture_end();
      s.graphs.push_back(std::move(graph));
      ++counters_.graphs_captured;
    }
  }
  torch::cuda::synchronize();
  s.graphs_on = true;
#else
  (void)s;
#endif
}

std::vector<Generation> BatchDecoder::generate(const std::vector<int>& prompt, int n, const GenerateOptions& o,
                                               const Tokenizer& tokenizer) {
  torch::NoGradGuard no_grad;
  if (weights_->refresh(net_)) ++counters_.weight_refreshes;
  const int64_t P = static_cast<int64_t>(prompt.size()), M = o.max_tokens;
  State& s = state_for(n, P, o.max_tokens, o);

  // The prompt once (batch 1): its keys and values become the shared pre-fill.
  {
    LlamaNet::Prefix kept;
    const torch::Tensor h = net_.forward(token_ids(prompt, net_.device()), 0, nullptr, &kept);
    for (size_t l = 0; l < s.prompt_k.size(); ++l) {
      s.prompt_k[l].narrow(1, 0, P).copy_(kept.k[l][0]);
      s.prompt_v[l].narrow(1, 0, P).copy_(kept.v[l][0]);
      if (s.prompt_capacity > P) {
        s.prompt_k[l].narrow(1, P, s.prompt_capacity - P).zero_();
        s.prompt_v[l].narrow(1, P, s.prompt_capacity - P).zero_();
      }
    }
    s.logits.copy_(net_.logits(h.narrow(1, P - 1, 1)).view({1, -1}).expand({n, s.logits.size(1)}));
  }
  s.step.zero_();
  s.prompt_length.fill_(P);
  if (!s.greedy) {  // completion i draws from the stream derive_seed(seed, {i}), one uniform per step
    std::vector<float> u(static_cast<size_t>(M * n));
    for (int i = 0; i < n; ++i) {
      uint64_t stream = derive_seed(o.seed, {i});
      for (int64_t t = 0; t < M; ++t) u[static_cast<size_t>(t * n + i)] = static_cast<float>(splitmix64_uniform01(stream));
    }
    s.uniforms.copy_(torch::from_blob(u.data(), {M, n}, torch::kFloat32));
  }

  std::vector<int64_t> end_at(static_cast<size_t>(n), -1);  // index of each completion's end token
  int64_t executed = 0, looked = 0, ended = 0;
  const int64_t chunk = net_.device().is_cuda() ? kCheckEvery : 1;
  while (executed < M && ended < n) {
    const int64_t stop = std::min(M, executed + chunk);
    for (; executed < stop; ++executed) {
#if KBRL_TORCH_CUDA
      if (s.graphs_on) {
        s.graphs[fused_ ? 0 : static_cast<size_t>(executed / kWindow)]->replay();
        ++counters_.graph_replays;
        continue;
      }
#endif
      step(s, executed + 1, s.prompt_capacity == P);
      ++counters_.eager_steps;
    }
    const torch::Tensor fresh = s.tokens.narrow(1, looked, executed - looked).to(torch::kCPU).contiguous();
    const int64_t* t = fresh.data_ptr<int64_t>();
    for (int i = 0; i < n; ++i)
      for (int64_t j = 0; j < executed - looked && end_at[i] < 0; ++j)
        if (tokenizer.is_end(static_cast<int>(t[i * (executed - looked) + j]))) {
          end_at[i] = looked + j;
          ++ended;
        }
    looked = executed;
  }

  const torch::Tensor tokens = s.tokens.narrow(1, 0, executed).to(torch::kCPU).contiguous();
  const torch::Tensor logprobs = s.logprobs.narrow(1, 0, executed).to(torch::kCPU, torch::kFloat64).contiguous();
  std::vector<Generation> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int64_t length = end_at[i] >= 0 ? end_at[i] + 1 : executed;
    const int64_t* tk = tokens.data_ptr<int64_t>() + i * executed;
    const double* lp = logprobs.data_ptr<double>() + i * executed;
    out[i].tokens.assign(tk, tk + length);
    out[i].logprobs.assign(lp, lp + length);
    out[i].finish_reason = end_at[i] >= 0 ? "stop" : "length";
  }
  return out;
}

}  // namespace kbrl::lm
