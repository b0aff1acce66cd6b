// The batch decoder (policies/lm/batch_decoder.h) against the plainest reference there is: the whole
// sequence run through the model again for every new token (no cache, no shared prompt, no fused
// weights), each completion on its own, drawing from the same seeded stream by the same rule.
// Greedy tokens must be the same; log-probs agree to float32 rounding. On a GPU (skipped without
// one) the CUDA-graph decoder is held to the same reference in float32, and in bfloat16 to the
// model's own scoring within bfloat16's tolerance.
#include <gtest/gtest.h>

#include <cmath>

#include <kbrl/error.h>
#include <kbrl/splitmix64.h>
#include <policies/lm/decoder_kernels.h>
#include <policies/lm/language_model.h>
#include <policies/lm/llama_net.h>

namespace kbrl::lm {
namespace {

// Two layers, hidden 128, two query heads sharing one key/value head (grouped-query attention).
LlamaConfig small_config() {
  LlamaConfig c;
  c.layers = 2;
  c.hidden = 128;
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 64;
  c.intermediate = 384;
  c.vocab_size = 259;
  c.tied_embeddings = false;
  c.context_length = 2048;
  return c;
}

// Random weights of `config` (seeded) with the byte tokenizer.
LanguageModel model_of(const LlamaConfig& config, uint64_t seed, const std::string& device = "cpu",
                       const std::string& dtype = "float32", bool graphs = true) {
  ModelOptions o;
  o.device = device;
  o.dtype = dtype;
  o.cuda_graphs = graphs;
  ChatTemplate chat;
  chat.family = ChatFamily::chatml;
  return LanguageModel(config, byte_tokenizer_data(), chat, seed, o);
}

LanguageModel small_model(const std::string& device = "cpu", const std::string& dtype = "float32",
                          bool graphs = true) {
  return model_of(small_config(), 5, device, dtype, graphs);
}

std::vector<int> prompt_of(int length) {
  std::vector<int> p;
  uint64_t s = 3;
  for (int i = 0; i < length; ++i) p.push_back(static_cast<int>(splitmix64(s) % 200) + 32);
  return p;
}

// Sampling at `temperature` (0: greedy) for `max_tokens` tokens from the streams of `seed`.
GenerateOptions options(double temperature, int max_tokens, uint64_t seed = 0) {
  GenerateOptions o;
  o.temperature = temperature;
  o.max_tokens = max_tokens;
  o.seed = seed;
  return o;
}

// Completion i of `n`, one token at a time, each from a full forward pass over prompt + tokens so far.
Generation reference_one(LanguageModel& m, const std::vector<int>& prompt, int i, const GenerateOptions& o) {
  torch::NoGradGuard no_grad;
  LlamaNet& net = m.net();
  Generation g;
  uint64_t stream = derive_seed(o.seed, {i});
  std::vector<int64_t> seq(prompt.begin(), prompt.end());
  const double t = o.temperature > 0 ? o.temperature : 1.0;
  for (int step = 0; step < o.max_tokens; ++step) {
    const torch::Tensor ids = torch::tensor(seq, torch::kInt64).to(net.device()).unsqueeze(0);
    const torch::Tensor h = net.forward(ids, 0);
    const torch::Tensor logits = net.logits(h.narrow(1, h.size(1) - 1, 1)).view({1, -1}).to(torch::kCPU);
    const torch::Tensor logp = torch::log_softmax(logits / t, -1);
    int64_t chosen = 0;
    const double u = splitmix64_uniform01(stream);
    if (o.temperature == 0) {
      chosen = logits.argmax(-1).item<int64_t>();
    } else {
      torch::Tensor probs = logp.exp(), order;
      if (o.top_p < 1) {
        auto [sorted, idx] = probs.sort(-1, true);
        probs = sorted.masked_fill(sorted.cumsum(-1) - sorted >= o.top_p, 0.0);
        order = idx;
      }
      const torch::Tensor cdf = probs.cumsum(-1);
      const double target = u * cdf[0][cdf.size(1) - 1].item<double>();
      chosen = std::min<int64_t>((cdf <= target).sum().item<int64_t>(), cdf.size(1) - 1);
      if (order.defined()) chosen = order[0][chosen].item<int64_t>();
    }
    g.tokens.push_back(static_cast<int>(chosen));
    g.logprobs.push_back(logp[0][chosen].item<double>());
    if (m.tokenizer().is_end(static_cast<int>(chosen))) {
      g.finish_reason = "stop";
      return g;
    }
    seq.push_back(chosen);
  }
  g.finish_reason = "length";
  return g;
}

void expect_like_reference(LanguageModel& m, const std::vector<int>& prompt, int n, const GenerateOptions& o,
                           double tolerance) {
  const std::vector<Generation> got = m.generate(prompt, n, o);
  ASSERT_EQ(got.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const Generation want = reference_one(m, prompt, i, o);
    EXPECT_EQ(got[i].tokens, want.tokens) << "completion " << i;
    EXPECT_EQ(got[i].finish_reason, want.finish_reason) << "completion " << i;
    ASSERT_EQ(got[i].logprobs.size(), got[i].tokens.size());
    for (size_t j = 0; j < std::min(got[i].logprobs.size(), want.logprobs.size()); ++j)
      EXPECT_NEAR(got[i].logprobs[j], want.logprobs[j], tolerance) << "completion " << i << " token " << j;
  }
}

// The fused step's attention blocks per sequence (decoder_kernels.h) for an H200 with SmolLM2's
// shapes: 2 blocks an SM of 132 resident, 3 key/value heads, 1,152 prompt slots + 512 own keys on
// average, 128 keys per loop iteration. At n = 64 the sweep of results/h200/lm-decode/ agrees (1
// and 2 within 0.3%, 3 and more slower).
TEST(BatchDecoder, AttentionSplitsFillWholeWaves) {
  const auto splits = [](int64_t n, int64_t keys = 1664) { return kernels::fewest_wave_splits(n * 3, 264, keys, 128); };
  EXPECT_EQ(splits(1), 64);    // every block fits at once: as many shares as allowed
  EXPECT_EQ(splits(8), 11);    // 264 blocks: one full wave
  EXPECT_EQ(splits(32), 2);    // 192 blocks; 3 shares would need a second wave
  EXPECT_EQ(splits(64), 1);    // 192 blocks; 2 shares would be 1.45 waves
  EXPECT_EQ(splits(128), 2);   // 768 blocks in 2.9 waves beat 384 in 1.45
  EXPECT_EQ(splits(1, 512), 32);  // at least 16 keys a share
  EXPECT_EQ(splits(1, 100), 1);   // one iteration in all: no share pays for its merge
  EXPECT_EQ(kernels::fewest_wave_splits(8, 0, 4096, 128), 1);  // no occupancy figure: one block at a time
}

TEST(BatchDecoder, GreedyIsTheStepByStepArgmax) {
  LanguageModel m = small_model();
  GenerateOptions o = options(0, 40);
  expect_like_reference(m, prompt_of(37), 3, o, 1e-4);
}

TEST(BatchDecoder, SamplesFollowTheirSeededStreams) {
  LanguageModel m = small_model();
  GenerateOptions o = options(0.8, 30, 12);
  expect_like_reference(m, prompt_of(21), 4, o, 1e-4);
  o.top_p = 0.9;
  o.seed = 13;
  expect_like_reference(m, prompt_of(21), 2, o, 1e-4);
}

// Completions that draw an end token stop there (finish "stop", the end token last) while the others
// run to max_tokens (finish "length"), in one batch.
TEST(BatchDecoder, CompletionsStopAtTheirEndToken) {
  LanguageModel m = small_model();
  GenerateOptions o = options(1.5, 80, 21);
  const auto got = m.generate(prompt_of(12), 8, o);
  int stopped = 0, ran_out = 0;
  for (const Generation& g : got) {
    if (g.finish_reason == "stop") {
      ++stopped;
      EXPECT_TRUE(m.tokenizer().is_end(g.tokens.back()));
      EXPECT_LT(g.tokens.size(), 80u);
    } else {
      ++ran_out;
      EXPECT_EQ(g.tokens.size(), 80u);
    }
    for (size_t j = 0; j + 1 < g.tokens.size(); ++j) EXPECT_FALSE(m.tokenizer().is_end(g.tokens[j]));
  }
  EXPECT_GT(stopped, 0) << "the seed should give some completion an end token";
  EXPECT_GT(ran_out, 0) << "the seed should leave some completion without one";
  expect_like_reference(m, prompt_of(12), 8, o, 1e-4);
}

TEST(BatchDecoder, ReusedBuffersServeAnotherPromptAndBatch) {
  LanguageModel m = small_model();
  GenerateOptions o = options(1.0, 16, 4);
  const auto first = m.generate(prompt_of(30), 2, o);
  expect_like_reference(m, prompt_of(9), 3, o, 1e-4);  // a shorter prompt, a larger batch
  const auto again = m.generate(prompt_of(30), 2, o);  // the first shape, its buffers reused
  EXPECT_EQ(again[0].tokens, first[0].tokens);
  EXPECT_EQ(again[1].tokens, first[1].tokens);
}

// The sampler's copy of the weights follows every change: an adapter's training step (in place),
// the adapter switched off, merged weights.
TEST(BatchDecoder, FollowsAdapterUpdates) {
  LanguageModel m = small_model();
  GenerateOptions o = options(0, 24);
  const std::vector<int> prompt = prompt_of(25);
  const auto base = m.generate(prompt, 1, o);
  const int64_t refreshes = m.decoder_counters().weight_refreshes;
  {
    torch::NoGradGuard no_grad;
    torch::manual_seed(9);
    for (TransformerBlock& layer : m.net().layers())
      for (auto& [name, proj] : layer.projections()) {
        proj->a = torch::randn({4, proj->weight.size(1)}) * 0.3;
        proj->b = torch::zeros({proj->weight.size(0), 4});
        proj->scale = 2.0;
      }
  }
  // B = 0: the adapter changes nothing yet (the copy is refreshed all the same).
  EXPECT_EQ(m.generate(prompt, 1, o)[0].tokens, base[0].tokens);
  EXPECT_EQ(m.decoder_counters().weight_refreshes, refreshes + 1);
  {
    torch::NoGradGuard no_grad;  // an optimizer's step: B changed in place
    for (TransformerBlock& layer : m.net().layers())
      for (auto& [name, proj] : layer.projections()) proj->b.normal_(0.0, 0.5);
  }
  // 1e-3: the decoder's merged copy W + s B A rounds otherwise than the reference's x W + s (x A) B
  // with this large adapter (1.02e-4 apart once in CI under load, within 1e-4 on an idle machine);
  // a decoder that missed the update differs in its tokens (below) and by far more.
  expect_like_reference(m, prompt, 1, o, 1e-3);
  EXPECT_NE(m.generate(prompt, 1, o)[0].tokens, base[0].tokens);
  m.net().set_adapters_on(false);
  EXPECT_EQ(m.generate(prompt, 1, o)[0].tokens, base[0].tokens);
  const int64_t before = m.decoder_counters().weight_refreshes;
  m.generate(prompt, 1, o);
  EXPECT_EQ(m.decoder_counters().weight_refreshes, before) << "nothing changed: no refresh";
}

// The model's float32 log-probs of `tokens` after `prompt` (one forward pass, teacher forced).
std::vector<double> scored(LanguageModel& m, const std::vector<int>& prompt, const std::vector<int>& tokens) {
  torch::NoGradGuard no_grad;
  std::vector<int64_t> seq(prompt.begin(), prompt.end());
  seq.insert(seq.end(), tokens.begin(), tokens.end());
  const torch::Tensor h = m.net().forward(torch::tensor(seq, torch::kInt64).unsqueeze(0), 0);
  const torch::Tensor logp = torch::log_softmax(m.net().logits(h)[0], -1);
  std::vector<double> out;
  for (size_t j = 0; j < tokens.size(); ++j) out.push_back(logp[prompt.size() - 1 + j][tokens[j]].item<double>());
  return out;
}

// cpu_weights=q8: every projection and the output read Q8_0 copies (q8_weights.h). The log-probs
// the decoder reports stay within 0.1 of float32's for the same tokens (0.02-0.08 here: this random
// model's logits are of unit scale) and differ from them (the 8-bit copies are read). After an
// adapter changes, they follow it: the adapter moves float32's log-probs of those tokens by far more
// than 0.1, so copies left from before it would fail.
TEST(BatchDecoder, EightBitWeightsStayNearFloat32) {
  ModelOptions o;
  o.cpu_q8_weights = true;
  ChatTemplate chat;
  chat.family = ChatFamily::chatml;
  LanguageModel m(small_config(), byte_tokenizer_data(), chat, 5, o);
  const std::vector<int> prompt = prompt_of(25);
  const auto worst = [](const std::vector<double>& a, const std::vector<double>& b) {
    double w = 0;
    for (size_t j = 0; j < a.size(); ++j) w = std::max(w, std::abs(a[j] - b[j]));
    return w;
  };
  for (const Generation& g : m.generate(prompt, 3, options(1.0, 20, 11))) {
    const double off = worst(g.logprobs, scored(m, prompt, g.tokens));
    EXPECT_LT(off, 0.1);
    EXPECT_GT(off, 1e-3) << "the 8-bit copies were not read (float32's decoder is within 1e-4 of its scoring)";
  }
  {
    torch::NoGradGuard no_grad;
    torch::manual_seed(9);
    for (TransformerBlock& layer : m.net().layers())
      for (auto& [name, proj] : layer.projections()) {
        proj->a = torch::randn({4, proj->weight.size(1)}) * 0.3;
        proj->b = torch::randn({proj->weight.size(0), 4}) * 0.05;
        proj->scale = 2.0;
      }
  }
  for (const Generation& g : m.generate(prompt, 3, options(1.0, 20, 11))) {
    const std::vector<double> adapted = scored(m, prompt, g.tokens);
    m.net().set_adapters_on(false);
    const std::vector<double> base = scored(m, prompt, g.tokens);
    m.net().set_adapters_on(true);
    EXPECT_LT(worst(g.logprobs, adapted), 0.1);
    EXPECT_GT(worst(base, adapted), 0.5) << "the adapter must move the log-probs for this check to mean anything";
  }
}

TEST(BatchDecoder, EightBitWeightsNeedWholeBlocks) {
  LlamaConfig c = small_config();
  c.intermediate = 200;  // not a multiple of 32
  ModelOptions o;
  o.cpu_q8_weights = true;
  ChatTemplate chat;
  chat.family = ChatFamily::chatml;
  EXPECT_THROW(LanguageModel(c, byte_tokenizer_data(), chat, 5, o), InputError);
}

bool have_gpu() { return torch::cuda::is_available(); }

// 300 new tokens after a prompt whose capacity is rounded up; small batches (projections as the
// matvec kernels) and one of 12 (matrix products).
TEST(BatchDecoderGpu, GraphsMatchTheReferenceInFloat32) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU visible to libtorch";
  LanguageModel m = small_model("cuda", "float32");
  GenerateOptions o = options(0, 300);
  expect_like_reference(m, prompt_of(70), 2, o, 1e-3);
  o.temperature = 0.9;
  o.seed = 3;
  expect_like_reference(m, prompt_of(70), 3, o, 1e-3);
  expect_like_reference(m, prompt_of(70), 12, options(0.9, 80, 4), 1e-3);
  EXPECT_GT(m.decoder_counters().graphs_captured, 0);
  EXPECT_GT(m.decoder_counters().graph_replays, 0);
  EXPECT_EQ(m.decoder_counters().eager_steps, 0);
}

// SmolLM2's vocabulary size (49,152): the device sampler's threads each read a chunk of 48 logits,
// so its scan over chunks and the walk inside one are what decide the token; greedy, sampled at two
// temperatures, and top-p (torch operations inside the fused step) against the reference. The
// output weights are scaled up so that each step's distribution has a few likely tokens: over a flat
// one, two exact samplers that sum in different orders (float32) part on a sizable share of draws.
TEST(BatchDecoderGpu, DeviceSamplerMatchesTheReferenceOverALargeVocabulary) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU visible to libtorch";
  LlamaConfig c = small_config();
  c.vocab_size = 49152;
  LanguageModel m = model_of(c, 7, "cuda");
  {
    torch::NoGradGuard no_grad;
    torch::Tensor w = m.net().output_weight();
    w.mul_(8.0);
  }
  const std::vector<int> prompt = prompt_of(33);
  expect_like_reference(m, prompt, 3, options(0, 40), 1e-3);
  expect_like_reference(m, prompt, 4, options(1.0, 60, 21), 1e-3);
  expect_like_reference(m, prompt, 4, options(0.6, 60, 22), 1e-3);
  GenerateOptions o = options(0.8, 40, 23);
  o.top_p = 0.9;
  expect_like_reference(m, prompt, 2, o, 1e-3);
  EXPECT_EQ(m.decoder_counters().eager_steps, 0);
}

// Qwen's layout: head size 128, six query heads to a key/value head, q/k/v biases.
TEST(BatchDecoderGpu, WideHeadsWithBiasesMatchTheReference) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU visible to libtorch";
  LlamaConfig c = small_config();
  c.hidden = 256;
  c.heads = 6;
  c.kv_heads = 1;
  c.head_dim = 128;
  c.attention_bias = true;
  LanguageModel m = model_of(c, 6, "cuda");
  {
    torch::NoGradGuard no_grad;
    for (TransformerBlock& layer : m.net().layers())
      for (LoraLinear* p : {&layer.attention.q, &layer.attention.k, &layer.attention.v}) p->bias.normal_(0.0, 0.5);
  }
  GenerateOptions o = options(0, 150);
  expect_like_reference(m, prompt_of(45), 3, o, 1e-3);
}

// A batch of 4 (projections as the matvec kernels, matvec_rows' default) and one of 16 (matrix products).
TEST(BatchDecoderGpu, GraphsAndEagerStepsAgreeInBfloat16) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU visible to libtorch";
  LanguageModel graphs = small_model("cuda", "bfloat16", true), eager = small_model("cuda", "bfloat16", false);
  GenerateOptions o = options(1.0, 200, 8);
  const std::vector<int> prompt = prompt_of(90);
  for (int n : {4, 16}) {
    const auto a = graphs.generate(prompt, n, o);
    const auto b = eager.generate(prompt, n, o);
    // Each completion's log-probs against the model's own scoring of the tokens it chose (a
    // different order of bfloat16 roundings): close on average, and not one token far off.
    for (const auto* gens : {&a, &b}) {
      std::vector<std::vector<int>> tokens;
      for (const Generation& g : *gens) tokens.push_back(g.tokens);
      const auto scored = graphs.score(prompt, tokens, 1.0);
      double total = 0, worst = 0;
      int64_t count = 0;
      for (size_t i = 0; i < gens->size(); ++i)
        for (size_t j = 0; j < tokens[i].size(); ++j) {
          const double d = std::fabs(scored[i][j] - (*gens)[i].logprobs[j]);
          total += d;
          worst = std::max(worst, d);
          ++count;
        }
      EXPECT_LT(total / static_cast<double>(count), 0.02) << "n = " << n;
      EXPECT_LT(worst, 0.25) << "n = " << n;
    }
  }
  EXPECT_EQ(eager.decoder_counters().graphs_captured, 0);
}

}  // namespace
}  // namespace kbrl::lm
