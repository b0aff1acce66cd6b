// LanguageModel (language_model.h): loading, sampling with a KV cache, scoring.
#include <algorithm>

#include <kbrl/error.h>

#include "batch_decoder.h"
#include "fused_ops.h"
#include "language_model.h"
#include "llama_net.h"
#include "sequence_scores.h"

namespace kbrl::lm {
namespace {

torch::Device parse_device(const std::string& device) {
  KBRL_CHECK_INPUT(device == "cpu" || device.rfind("cuda", 0) == 0, "unknown device '{}': expected cpu or cuda[:N]",
                   device);
  if (device != "cpu")
    KBRL_CHECK_INPUT(torch::cuda::is_available(), "device {} asked for, but libtorch sees no CUDA device", device);
  return torch::Device(device);
}

torch::ScalarType parse_dtype(const std::string& dtype) {
  if (dtype == "float32") return torch::kFloat32;
  if (dtype == "bfloat16") return torch::kBFloat16;
  throw InputError(fmt::format("unknown dtype '{}': expected float32 or bfloat16", dtype));
}

// log p(target) and the entropy of softmax(z) per row, z = logits / temperature in float32.
struct RowScores {
  torch::Tensor logprob, entropy;
};
RowScores scores_of_logits(const torch::Tensor& logits, const torch::Tensor& targets, double temperature,
                           bool with_entropy) {
  const torch::Tensor z = logits.to(torch::kFloat32) / temperature;
  const torch::Tensor lse = z.logsumexp(-1);
  RowScores r;
  r.logprob = z.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - lse;
  if (with_entropy) r.entropy = lse - (torch::exp(z - lse.unsqueeze(-1)) * z).sum(-1);
  return r;
}

// The same scores of hidden states (logits = hidden W^T), by the kernels where they take the logits
// (fused_ops.h; `stats` then gets what their gradient needs), else by torch operations.
RowScores row_scores(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& targets,
                     double temperature, bool with_entropy, torch::Tensor* stats = nullptr) {
  const torch::Tensor logits = torch::matmul(hidden, weight.t());
  if (!(torch::GradMode::is_enabled() && logits.requires_grad()) && token_score_kernels(logits)) {
    KernelTokenScores k = kernel_token_scores(logits, targets, temperature, with_entropy);
    if (stats) *stats = k.stats;
    return {k.logprob, k.entropy};
  }
  return scores_of_logits(logits, targets, temperature, with_entropy);
}

// row_scores of a chunk of rows that keeps only its hidden states for the backward pass and
// computes the logits again there (as activation checkpointing does for a layer): no [rows, vocab]
// tensor outlives its chunk. The output weight is frozen (no gradient). Outputs: log-probs, then the
// entropies (an empty stand-in without them). With the kernels the backward pass writes the logits'
// gradient over the recomputed logits; else it back-propagates through the torch operations again.
class ChunkScores : public torch::autograd::Function<ChunkScores> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& hidden,
                                                const torch::Tensor& weight, const torch::Tensor& targets,
                                                double temperature, bool with_entropy) {
    torch::Tensor stats;
    RowScores r = row_scores(hidden, weight, targets, temperature, with_entropy, &stats);
    ctx->save_for_backward(stats.defined() ? torch::autograd::variable_list{hidden, weight, targets, stats}
                                           : torch::autograd::variable_list{hidden, weight, targets});
    ctx->saved_data["temperature"] = temperature;
    ctx->saved_data["entropy"] = with_entropy;
    if (!with_entropy) {
      r.entropy = torch::empty({0}, r.logprob.options());
      ctx->mark_non_differentiable({r.entropy});
    }
    return {r.logprob, r.entropy};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const bool with_entropy = ctx->saved_data["entropy"].toBool();
    const double temperature = ctx->saved_data["temperature"].toDouble();
    torch::Tensor grad;
    if (saved.size() == 4) {  // the kernels
      torch::NoGradGuard no_grad;
      torch::Tensor logits = torch::matmul(saved[0], saved[1].t());
      kernel_token_scores_backward(logits, saved[2], saved[3], grads[0],
                                   with_entropy && grads.size() > 1 ? grads[1] : torch::Tensor(), temperature);
      grad = torch::matmul(logits, saved[1]);
    } else {
      const torch::Tensor h = saved[0].detach().requires_grad_(true);
      torch::AutoGradMode enable(true);
      const RowScores r = row_scores(h, saved[1], saved[2], temperature, with_entropy);
      torch::autograd::variable_list outputs, output_grads;
      if (grads[0].defined()) {
        outputs.push_back(r.logprob);
        output_grads.push_back(grads[0]);
      }
      if (with_entropy && grads.size() > 1 && grads[1].defined()) {
        outputs.push_back(r.entropy);
        output_grads.push_back(grads[1]);
      }
      grad = outputs.empty() ? torch::zeros_like(h) : torch::autograd::grad(outputs, {h}, output_grads)[0];
    }
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

SequenceScores score_sequences(LlamaNet& net, const std::vector<int>& prompt,
                               const std::vector<std::vector<int>>& completions, double temperature,
                               bool with_entropy, const std::vector<size_t>& unscored) {
  KBRL_CHECK_INPUT(!prompt.empty(), "a prompt needs at least one token");
  KBRL_ASSERT(unscored.empty() || unscored.size() == completions.size(), "{} unscored counts for {} rows",
              unscored.size(), completions.size());
  KBRL_CHECK_INPUT(temperature > 0, "scoring needs a temperature > 0 (got {})", temperature);
  const int64_t n = static_cast<int64_t>(completions.size());
  int64_t C = 0;
  for (const auto& c : completions) C = std::max<int64_t>(C, static_cast<int64_t>(c.size()));
  SequenceScores out;
  const auto f32 = torch::TensorOptions().device(net.device()).dtype(torch::kFloat32);
  if (n == 0 || C == 0) {
    out.logprobs = torch::zeros({n, C}, f32);
    out.mask = torch::zeros({n, C}, f32);
    if (with_entropy) out.entropy = torch::zeros({n, C}, f32);
    return out;
  }
  const int64_t vocab = net.config().vocab_size;
  std::vector<int64_t> flat(static_cast<size_t>(n * C), 0);
  std::vector<float> mask(static_cast<size_t>(n * C), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (size_t j = 0; j < completions[i].size(); ++j) {
      const int t = completions[i][j];
      KBRL_CHECK_INPUT(t >= 0 && t < vocab, "token id {} is outside the vocabulary (0..{})", t, vocab - 1);
      flat[i * C + j] = t;
      mask[i * C + j] = unscored.empty() || j >= unscored[static_cast<size_t>(i)] ? 1.0f : 0.0f;
    }
  const torch::Tensor targets = torch::tensor(flat, torch::kInt64).view({n, C}).to(net.device());
  out.mask = torch::from_blob(mask.data(), {n, C}, torch::kFloat32).to(net.device()).clone();
  LlamaNet::Prefix prefix;
  const torch::Tensor hp = net.forward(token_ids(prompt, net.device()), 0, nullptr, &prefix);
  const int64_t P = static_cast<int64_t>(prompt.size());
  // Completion token j is predicted from the hidden state before it: the prompt's last for j = 0.
  torch::Tensor before = hp.narrow(1, P - 1, 1).expand({n, 1, hp.size(2)});
  if (C > 1) {
    const torch::Tensor hc = net.forward(targets.narrow(1, 0, C - 1), P, &prefix);
    before = torch::cat({before, hc}, 1);
  }
  if (!net.fused() || net.output_weight().requires_grad()) {
    const torch::Tensor logp = torch::log_softmax(net.logits(before) / temperature, -1);
    out.logprobs = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1) * out.mask;
    if (with_entropy) out.entropy = -(logp.exp() * logp).sum(-1) * out.mask;
    return out;
  }
  // Fused: the output's rows of scored tokens only (no logits for padding or a row's context), a
  // chunk at a time.
  std::vector<int64_t> real;
  for (size_t i = 0; i < mask.size(); ++i)
    if (mask[i] != 0.0f) real.push_back(static_cast<int64_t>(i));
  if (real.empty()) {  // every row context only
    out.logprobs = torch::zeros({n, C}, f32);
    if (with_entropy) out.entropy = torch::zeros({n, C}, f32);
    return out;
  }
  const torch::Tensor rows = torch::tensor(real, torch::kInt64).to(net.device());
  const torch::Tensor hidden = before.reshape({n * C, before.size(2)}).index_select(0, rows);
  const torch::Tensor wanted = targets.reshape({n * C}).index_select(0, rows);
  const bool grad = torch::GradMode::is_enabled() && hidden.requires_grad();
  std::vector<torch::Tensor> logprobs, entropies;
  const int64_t R = hidden.size(0), chunk = net.score_chunk_rows();
  for (int64_t start = 0; start < R; start += chunk) {
    const int64_t len = std::min(chunk, R - start);
    const torch::Tensor h = hidden.narrow(0, start, len), t = wanted.narrow(0, start, len);
    if (grad) {
      const auto o = ChunkScores::apply(h, net.output_weight(), t, temperature, with_entropy);
      logprobs.push_back(o[0]);
      if (with_entropy) entropies.push_back(o[1]);
    } else {
      const RowScores r = row_scores(h, net.output_weight(), t, temperature, with_entropy);
      logprobs.push_back(r.logprob);
      if (with_entropy) entropies.push_back(r.entropy);
    }
  }
  auto spread = [&](const std::vector<torch::Tensor>& parts) {  // back to [n, C], 0 on padding
    return torch::zeros({n * C}, f32).index_copy(0, rows, torch::cat(parts)).view({n, C});
  };
  out.logprobs = spread(logprobs);
  if (with_entropy) out.entropy = spread(entropies);
  return out;
}

std::vector<std::vector<double>> rows_of(const torch::Tensor& values, const std::vector<std::vector<int>>& completions) {
  const torch::Tensor cpu = values.detach().to(torch::kCPU, torch::kFloat64).contiguous();
  std::vector<std::vector<double>> out;
  const int64_t C = cpu.dim() == 2 ? cpu.size(1) : 0;
  const double* p = cpu.data_ptr<double>();
  for (size_t i = 0; i < completions.size(); ++i)
    out.emplace_back(p + i * C, p + i * C + completions[i].size());
  return out;
}

LanguageModel::LanguageModel(const ModelFile& file, const ModelOptions& options)
    : net_(std::make_unique<LlamaNet>(file, parse_device(options.device), parse_dtype(options.dtype))),
      tokenizer_(file.tokenizer),
      chat_(file.chat),
      name_(file.name),
      source_(file.source),
      decoder_(std::make_unique<BatchDecoder>(*net_, options)) {
  KBRL_CHECK_INPUT(tokenizer_.vocab_size() <= file.config.vocab_size, "{}: the tokenizer has {} tokens, the model {}",
                   file.source, tokenizer_.vocab_size(), file.config.vocab_size);
  net_->set_fused(options.fused);
  net_->set_score_chunk_rows(options.score_chunk_rows);
}

LanguageModel::LanguageModel(const LlamaConfig& config, TokenizerData tokenizer, ChatTemplate chat, uint64_t seed,
                             const ModelOptions& options)
    : net_(std::make_unique<LlamaNet>(config, seed, parse_device(options.device), parse_dtype(options.dtype))),
      tokenizer_(std::move(tokenizer)),
      chat_(std::move(chat)),
      name_(fmt::format("random-llama-{}x{}", config.layers, config.hidden)),
      source_(fmt::format("random weights (seed {})", seed)),
      decoder_(std::make_unique<BatchDecoder>(*net_, options)) {
  KBRL_CHECK_INPUT(tokenizer_.vocab_size() <= config.vocab_size, "the tokenizer has {} tokens, the model {}",
                   tokenizer_.vocab_size(), config.vocab_size);
  net_->set_fused(options.fused);
  net_->set_score_chunk_rows(options.score_chunk_rows);
}

LanguageModel::~LanguageModel() = default;
LanguageModel::LanguageModel(LanguageModel&&) noexcept = default;

const LlamaConfig& LanguageModel::config() const { return net_->config(); }
LlamaNet& LanguageModel::net() { return *net_; }

DecoderCounters LanguageModel::decoder_counters() const { return decoder_->counters(); }

std::vector<Generation> LanguageModel::generate(const std::vector<int>& prompt, int n, const GenerateOptions& o) {
  KBRL_CHECK_INPUT(n >= 1, "generate needs n >= 1 (got {})", n);
  KBRL_CHECK_INPUT(o.max_tokens >= 1, "max_tokens must be >= 1 (got {})", o.max_tokens);
  KBRL_CHECK_INPUT(o.temperature >= 0 && o.top_p > 0 && o.top_p <= 1,
                   "temperature must be >= 0 and top_p in (0, 1] (got {} and {})", o.temperature, o.top_p);
  KBRL_CHECK_INPUT(!prompt.empty(), "a prompt needs at least one token");
  const int64_t P = static_cast<int64_t>(prompt.size());
  KBRL_CHECK_INPUT(P + o.max_tokens <= net_->config().context_length,
                   "the prompt ({} tokens) plus max_tokens ({}) exceed the model's context of {} tokens", P,
                   o.max_tokens, net_->config().context_length);
  return decoder_->generate(prompt, n, o, tokenizer_);
}

std::vector<std::vector<double>> LanguageModel::score(const std::vector<int>& prompt,
                                                      const std::vector<std::vector<int>>& completions,
                                                      double temperature) {
  torch::NoGradGuard no_grad;
  return rows_of(score_sequences(*net_, prompt, completions, temperature, false).logprobs, completions);
}

TokenizerData byte_tokenizer_data() {
  TokenizerData d;
  // GPT-2's byte-to-unicode map: printable Latin-1 bytes stand for themselves, the others are
  // shifted to U+0100 onwards, in byte order.
  auto utf8 = [](uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
  };
  uint32_t shifted = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    d.tokens.push_back(utf8(printable ? b : 256 + shifted++));
    d.token_types.push_back(1);
  }
  for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    d.tokens.push_back(special);
    d.token_types.push_back(3);
  }
  d.pre = "gpt2";
  d.eos = 256;
  d.bos = 257;
  d.eot = 258;
  return d;
}

}  // namespace kbrl::lm
