// LmPolicy and LanguageModel on a small randomly initialized Llama-shaped model (no model file, no
// server): the KV-cache sampler against full-sequence scoring, seeds, top-p, LoRA (a fresh adapter
// changes nothing; merge keeps the function; checkpoints round-trip), one GRPO step moves the
// log-probs the way the advantages say, the teacher reads feedback, and the spec's errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include <kbrl/error.h>
#include <policies/lm/update_memory.h>
#include <unistd.h>

#include "lm_policy_testing.h"

namespace kbrl::lm {
namespace {

using testing::items_with;
using testing::sum_of;

// Two layers, hidden 128 (2 heads, head dim 64), byte-level vocabulary; a short prompt (no system
// part, no worked examples) keeps every test within a second or two on one core.
LmOptions tiny(int max_tokens = 24) {
  LmOptions o = parse_lm_spec("lm:random:2x128:7,shots=0,system=none");
  o.max_tokens = max_tokens;
  return o;
}

TaskSpec relu() { return task_spec(19, Scale::small); }

void expect_near_rows(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size()) << "row " << i;
    for (size_t j = 0; j < a[i].size(); ++j) EXPECT_NEAR(a[i][j], b[i][j], tol) << "row " << i << " token " << j;
  }
}

std::vector<std::vector<int>> tokens_of(const std::vector<Sample>& s) {
  std::vector<std::vector<int>> out;
  for (const Sample& x : s) out.push_back(x.tokens);
  return out;
}

std::vector<std::vector<double>> logprobs_of(const std::vector<Sample>& s) {
  std::vector<std::vector<double>> out;
  for (const Sample& x : s) out.push_back(x.logprobs);
  return out;
}

TEST(LmPolicy, CachedSamplingAgreesWithFullSequenceScoring) {
  LmPolicy p(tiny());
  const auto samples = p.sample(relu(), 3, 0.8, 11);
  ASSERT_EQ(samples.size(), 3u);
  for (const Sample& s : samples) {
    EXPECT_EQ(s.kind, ActionKind::text);
    EXPECT_EQ(s.tokens.size(), s.logprobs.size());
    EXPECT_FALSE(s.tokens.empty());
    EXPECT_TRUE(s.finish_reason == "stop" || s.finish_reason == "length");
    EXPECT_EQ(s.prompt_version.rfind("kbrl-prompt-", 0), 0u);
  }
  // The sampler's log-probs come from the KV cache, one token at a time; scoring recomputes the
  // whole sequence at once: they agree to float32 rounding.
  expect_near_rows(p.logprob(relu(), tokens_of(samples), 0.8), logprobs_of(samples), 2e-4);
}

TEST(LmPolicy, SeedsReproduceAndSampleIDoesNotDependOnN) {
  LmPolicy p(tiny());
  const auto a = p.sample(relu(), 2, 1.0, 5);
  const auto b = p.sample(relu(), 4, 1.0, 5);
  const auto c = p.sample(relu(), 2, 1.0, 6);
  EXPECT_EQ(a[0].tokens, b[0].tokens);
  EXPECT_EQ(a[1].tokens, b[1].tokens);
  EXPECT_NE(a[0].tokens, c[0].tokens);
  EXPECT_NE(a[0].tokens, a[1].tokens);
}

TEST(LmPolicy, TinyTopPIsGreedy) {
  LmOptions o = tiny();
  LmPolicy greedy(o);
  o.top_p = 1e-9;
  LmPolicy nucleus(o);
  const auto g = greedy.sample(relu(), 1, 0.0, 1);
  const auto n = nucleus.sample(relu(), 2, 1.0, 3);
  EXPECT_EQ(n[0].tokens, g[0].tokens);
  EXPECT_EQ(n[1].tokens, g[0].tokens);
  // Greedy samples report the model's own (temperature 1) log-probs.
  expect_near_rows(greedy.logprob(relu(), tokens_of(g), 1.0), logprobs_of(g), 2e-4);
}

TEST(LmPolicy, AFreshAdapterChangesNothingAndMergeKeepsTheFunction) {
  LmPolicy p(tiny());
  const auto samples = p.sample(relu(), 2, 1.0, 3);
  const auto before = p.logprob(relu(), tokens_of(samples), 1.0);
  p.add_adapter({8, 16.0}, 1);
  EXPECT_TRUE(p.has_adapter());
  EXPECT_GT(p.parameter_count(true), 0);
  expect_near_rows(p.logprob(relu(), tokens_of(samples), 1.0), before, 1e-6);
  p.set_optimizer({.learning_rate = 1e-2});
  p.update(items_with(relu(), samples, {1.0, -1.0}), UpdateConfig{});
  const auto trained = p.logprob(relu(), tokens_of(samples), 1.0);
  p.merge_adapter();
  EXPECT_FALSE(p.has_adapter());
  EXPECT_EQ(p.parameter_count(true), 0);
  expect_near_rows(p.logprob(relu(), tokens_of(samples), 1.0), trained, 1e-3);
}

TEST(LmPolicy, OneGrpoStepRaisesThePositiveSampleAndLowersTheNegative) {
  LmPolicy p(tiny());
  p.add_adapter({8, 16.0}, 2);
  p.set_optimizer({.learning_rate = 1e-2});
  const auto samples = p.sample(relu(), 2, 1.0, 9);
  const std::string before_state = p.adapter_state();
  const auto before = p.logprob(relu(), tokens_of(samples), 1.0);
  const UpdateStats st = p.update(items_with(relu(), samples, {1.0, -1.0}), UpdateConfig{});
  EXPECT_GT(st.grad_norm, 0.0);
  EXPECT_GT(st.entropy, 0.0);
  EXPECT_EQ(st.tokens, static_cast<int64_t>(samples[0].tokens.size() + samples[1].tokens.size()));
  EXPECT_NE(p.adapter_state(), before_state);
  const auto after = p.logprob(relu(), tokens_of(samples), 1.0);
  EXPECT_GT(sum_of(after[0]), sum_of(before[0]));
  EXPECT_LT(sum_of(after[1]), sum_of(before[1]));
}

// The entropy bonus (surprisal report 6.7's entropy-regularized TTT): with no advantage to follow,
// a step on it alone raises the entropy of the same samples.
TEST(LmPolicy, AnEntropyBonusRaisesTheEntropy) {
  LmPolicy p(tiny());
  p.add_adapter({8, 16.0}, 2);
  p.set_optimizer({.learning_rate = 1e-2});
  const auto samples = p.sample(relu(), 2, 1.0, 9);
  const auto items = items_with(relu(), samples, {0.0, 0.0});
  UpdateConfig bonus;
  bonus.entropy_coef = 1.0;
  const double before = p.measure(items, 1.0).entropy;
  for (int i = 0; i < 3; ++i) p.update(items, bonus);
  EXPECT_GT(p.measure(items, 1.0).entropy, before + 1e-3);
}

// checkpoint=auto's estimate of what a micro-batch keeps without checkpointing, at SmolLM2-135M's
// shapes in bfloat16 (64 x 1,024 tokens after the 3,105-token ReLU prompt, bench_lm's update), against
// what an H100 measured: the update's peak without checkpointing less its peak with it, 17.5 GiB for
// 32 completions and 33.6 for 64 (results/h100-80gb-hbm3/lm-train/, run 4). Within 10%; and on a CPU
// `auto` checkpoints nothing.
TEST(LmPolicy, AutoCheckpointingEstimatesTheMeasuredActivations) {
  const LlamaConfig c = *llama_preset("smollm2-135m");
  const double gib = 1024.0 * 1024.0 * 1024.0;
  EXPECT_NEAR(static_cast<double>(activation_bytes(c, 32, 1024, 3105, 2)) / gib, 17.5, 1.75);
  EXPECT_NEAR(static_cast<double>(activation_bytes(c, 64, 1024, 3105, 2)) / gib, 33.6, 3.36);
  EXPECT_EQ(device_bytes_available(torch::Device("cpu")), 0);
  LmOptions o = tiny();
  o.checkpoint = "auto";
  o.micro_batch = 2;
  LmPolicy p(o);
  p.add_adapter({4, 8.0}, 3);
  p.set_optimizer({.learning_rate = 1e-2});
  const auto items = items_with(relu(), p.sample(relu(), 3, 1.0, 5), {1.0, -0.5, -0.5});
  EXPECT_GT(p.update(items, UpdateConfig{}).grad_norm, 0.0);
  EXPECT_FALSE(p.activation_checkpointing());
  EXPECT_THROW(parse_lm_spec("lm:random:2x64,checkpoint=sometimes"), InputError);
}

// Activation checkpointing recomputes each layer in the backward pass: the same gradients (so the same
// grad norm and the same adapter after each step) as keeping every activation, over steps where A,
// B and the prompt's shared keys/values all carry gradient, with and without the KL term.
TEST(LmPolicy, ActivationCheckpointingGivesTheSameUpdates) {
  LmOptions plain = tiny(), checkpointed = tiny();
  plain.checkpoint = "off";
  checkpointed.checkpoint = "on";
  checkpointed.micro_batch = plain.micro_batch = 2;  // two micro-batches: gradients accumulate
  LmPolicy a(plain), b(checkpointed);
  EXPECT_FALSE(a.activation_checkpointing());
  EXPECT_TRUE(b.activation_checkpointing());
  for (LmPolicy* p : {&a, &b}) {
    p->add_adapter({4, 8.0}, 3);
    p->set_optimizer({.learning_rate = 1e-2});
  }
  const auto samples = a.sample(relu(), 3, 1.0, 5);
  const auto items = items_with(relu(), samples, {1.0, -0.5, -0.5});
  for (double kl : {0.0, 0.1}) {
    UpdateConfig config;
    config.kl_coef = kl;
    const UpdateStats sa = a.update(items, config), sb = b.update(items, config);
    EXPECT_GT(sa.grad_norm, 0.0);
    EXPECT_NEAR(sa.grad_norm, sb.grad_norm, 1e-5 * sa.grad_norm) << "kl " << kl;
    EXPECT_NEAR(sa.loss, sb.loss, 1e-6) << "kl " << kl;
    expect_near_rows(a.logprob(relu(), tokens_of(samples)), b.logprob(relu(), tokens_of(samples)), 1e-5);
  }
}

// The update's fused operations (scaled_dot_product_attention with libtorch 2, the output's log-probs
// over real tokens only, a few rows at a time, logits recomputed in the backward pass) against the
// plain tensor operations: the same loss, gradient and log-probs up to float32 rounding, with the
// entropy term and the KL term's second pass, over micro-batches of completions of other lengths.
TEST(LmPolicy, FusedOperationsGiveTheSameUpdates) {
  LmOptions o = tiny(), f = tiny();
  o.micro_batch = f.micro_batch = 2;
  o.model_options.fused = false;
  f.model_options.score_chunk_rows = 5;
  LmPolicy plain(o), fused(f);
  for (LmPolicy* p : {&plain, &fused}) {
    p->add_adapter({4, 8.0}, 3);
    p->set_optimizer({.learning_rate = 1e-2});
  }
  auto samples = plain.sample(relu(), 3, 1.0, 5);
  samples[1].tokens.resize(samples[1].tokens.size() / 2);  // lengths differ: padding in a micro-batch
  samples[1].logprobs.resize(samples[1].tokens.size());
  const auto items = items_with(relu(), samples, {1.0, -0.5, -0.5});
  for (double kl : {0.0, 0.1}) {
    UpdateConfig config;
    config.kl_coef = kl;
    config.entropy_coef = 0.01;
    const UpdateStats a = plain.update(items, config), b = fused.update(items, config);
    EXPECT_GT(a.grad_norm, 0.0);
    EXPECT_NEAR(a.grad_norm, b.grad_norm, 1e-4 * a.grad_norm) << "kl " << kl;
    EXPECT_NEAR(a.loss, b.loss, 1e-5) << "kl " << kl;
    EXPECT_NEAR(a.entropy, b.entropy, 1e-5) << "kl " << kl;
    expect_near_rows(plain.logprob(relu(), tokens_of(samples)), fused.logprob(relu(), tokens_of(samples)), 1e-4);
  }
}

TEST(LmPolicy, SftRaisesTheLikelihoodOfItsData) {
  LmPolicy p(tiny());
  p.add_adapter({8, 16.0}, 4);
  p.set_optimizer({.learning_rate = 1e-2});
  const auto samples = p.sample(relu(), 2, 1.0, 10);
  UpdateConfig sft;
  sft.objective = Objective::likelihood;
  const double before = sum_of(p.logprob(relu(), tokens_of(samples), 1.0)[0]);
  for (int i = 0; i < 3; ++i) p.update(items_with(relu(), samples, {1.0, 1.0}), sft);
  EXPECT_GT(sum_of(p.logprob(relu(), tokens_of(samples), 1.0)[0]), before + 1.0);
}

/// One step of a fresh adapter (rank 4) on two of the policy's samples, one rewarded and one not: the
/// adapter the checkpoint tests save and load, with the samples and their log-probs under it.
std::pair<std::vector<Sample>, std::vector<std::vector<double>>> train_an_adapter(LmPolicy& p) {
  p.add_adapter({4, 8.0}, 3);
  p.set_optimizer({.learning_rate = 1e-2});
  const auto samples = p.sample(relu(), 2, 1.0, 1);
  p.update(items_with(relu(), samples, {1.0, -1.0}), UpdateConfig{});
  return {samples, p.logprob(relu(), tokens_of(samples), 1.0)};
}

TEST(LmPolicy, AdapterCheckpointsRoundTrip) {
  LmPolicy p(tiny());
  const auto [samples, trained] = train_an_adapter(p);
  const std::string state = p.adapter_state();
  const auto file = std::filesystem::temp_directory_path() / ("kbrl-lm-adapter-" + std::to_string(::getpid()) + ".pt");
  p.save_adapter(file);
  p.reset_adapter(5);
  EXPECT_GT(std::abs(sum_of(p.logprob(relu(), tokens_of(samples), 1.0)[0]) - sum_of(trained[0])), 1e-4);
  p.restore_adapter(state);
  expect_near_rows(p.logprob(relu(), tokens_of(samples), 1.0), trained, 1e-6);
  LmPolicy q(tiny());
  q.load_adapter(file);
  expect_near_rows(q.logprob(relu(), tokens_of(samples), 1.0), trained, 1e-6);
  std::filesystem::remove(file);
  LmOptions other = tiny();
  other.model = "random:2x192:7";
  LmPolicy r(other);
  const std::string message = [&] {
    try {
      r.restore_adapter(state);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  EXPECT_NE(message.find("another model shape"), std::string::npos) << message;
}

/// The message of the InputError `f` throws ("no error" when it throws none).
template <class F>
std::string input_error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// An adapter keeps a sample of the base model's embedding: it loads on the model it was trained on
// (also through the spec's adapter= key), and a model of the same shapes with other weights (another
// seed) refuses it.
TEST(LmPolicy, AnAdapterLoadsOnlyOnItsBaseModel) {
  LmPolicy p(tiny());
  const auto [samples, trained] = train_an_adapter(p);
  const auto file =
      std::filesystem::temp_directory_path() / ("kbrl-lm-base-adapter-" + std::to_string(::getpid()) + ".pt");
  p.save_adapter(file);

  LmPolicy same(tiny());  // random:2x128:7
  EXPECT_EQ(input_error_of([&] { same.load_adapter(file); }), "no error");
  expect_near_rows(same.logprob(relu(), tokens_of(samples), 1.0), trained, 1e-6);
  // The spec's adapter= key loads it when the policy is made.
  LmPolicy from_spec(parse_lm_spec("lm:random:2x128:7,shots=0,system=none,adapter=" + file.string()));
  EXPECT_TRUE(from_spec.has_adapter());
  expect_near_rows(from_spec.logprob(relu(), tokens_of(samples), 1.0), trained, 1e-6);

  LmOptions other = tiny();
  other.model = "random:2x128:8";  // the same shapes, other weights
  LmPolicy q(other);
  const std::string message = input_error_of([&] { q.load_adapter(file); });
  EXPECT_NE(message.find("was made for another base model"), std::string::npos) << message;
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
  EXPECT_FALSE(q.has_adapter());
  const std::string state = p.adapter_state();  // the in-memory form keeps the sample too
  const std::string restored = input_error_of([&] { q.restore_adapter(state); });
  EXPECT_NE(restored.find("another base model"), std::string::npos) << restored;
  const std::string at_construction = input_error_of(
      [&] { LmPolicy r(parse_lm_spec("lm:random:2x128:8,shots=0,system=none,adapter=" + file.string())); });
  EXPECT_NE(at_construction.find("another base model"), std::string::npos) << at_construction;
  std::filesystem::remove(file);
  const std::string missing = input_error_of(
      [&] { LmPolicy r(parse_lm_spec("lm:random:2x128:7,shots=0,system=none,adapter=" + file.string())); });
  EXPECT_NE(missing.find("does not exist"), std::string::npos) << missing;
}

TEST(LmPolicy, TheTeacherReadsFeedbackAndDemonstration) {
  LmPolicy p(tiny());
  const auto samples = p.sample(relu(), 2, 1.0, 2);
  // The prompt-only teacher (an empty context) is not the student: its prompt asks to correctly
  // solve the original question (report 003's unconditional teacher).
  const auto plain = p.teacher_logprob(relu(), tokens_of(samples), TeacherContext{}, 1.0);
  EXPECT_GT(std::abs(sum_of(plain[0]) - sum_of(p.logprob(relu(), tokens_of(samples), 1.0)[0])), 1e-4);
  TeacherContext fb;
  fb.feedback = TeacherContext::Feedback{true, false, 0.0};
  fb.demonstration = samples[1].tokens;
  const auto with = p.teacher_logprob(relu(), tokens_of(samples), fb, 1.0);
  EXPECT_GT(std::abs(sum_of(with[0]) - sum_of(plain[0])), 1e-4);
}

TEST(LmPolicy, SpecErrorsNameTheProblem) {
  auto error = [](const std::string& spec) {
    try {
      parse_lm_spec(spec);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("lm:").find("names no model"), std::string::npos);
  EXPECT_NE(error("lm:m.gguf,temperature=1").find("unknown key 'temperature'"), std::string::npos);
  EXPECT_NE(error("lm:m.gguf,targets=q+x").find("'x' is not one of"), std::string::npos);
  EXPECT_NE(error("lm:m.gguf,dtype=fp8").find("dtype=fp8"), std::string::npos);
  EXPECT_NE(error("lm:m.gguf,max_tokens=0").find("max_tokens"), std::string::npos);
  EXPECT_NE(error("lm:m.gguf,graphs=maybe").find("graphs=maybe (expected on or off)"), std::string::npos);
  EXPECT_NE(error("lm:m.gguf,adapter=").find("adapter= names no file"), std::string::npos);
  EXPECT_NE(error("lm:m.gguf,matvec_rows=9").find("matvec_rows"), std::string::npos);
  EXPECT_EQ(parse_lm_spec("lm:m.gguf,matvec_rows=0").model_options.matvec_rows, 0);
  EXPECT_EQ(parse_lm_spec("lm:m.gguf").model_options.matvec_rows, 4);
  EXPECT_NE(error("lm:m.gguf,attention_splits=65").find("attention_splits"), std::string::npos);
  EXPECT_EQ(parse_lm_spec("lm:m.gguf,attention_splits=3").model_options.attention_splits, 3);
  EXPECT_EQ(parse_lm_spec("lm:m.gguf").model_options.attention_splits, 0);
  EXPECT_NE(error("lm:m.gguf,cpu_weights=q4").find("cpu_weights=q4 (expected float32 or q8)"), std::string::npos);
  EXPECT_NE(error("lm:m.gguf,cpu_weights=q8,device=cuda").find("cpu_weights=q8 is for device=cpu"), std::string::npos);
  EXPECT_TRUE(parse_lm_spec("lm:m.gguf,cpu_weights=q8").model_options.cpu_q8_weights);
  EXPECT_FALSE(parse_lm_spec("lm:m.gguf").model_options.cpu_q8_weights);
  const LmOptions o = parse_lm_spec("lm:m.gguf,targets=q+v,max_tokens=64,device=cuda:1,dtype=bfloat16,graphs=off");
  EXPECT_EQ(o.lora_targets, (std::vector<std::string>{"q", "v"}));
  EXPECT_EQ(o.max_tokens, 64);
  EXPECT_EQ(o.model_options.device, "cuda:1");
  EXPECT_FALSE(o.model_options.cuda_graphs);
  EXPECT_TRUE(parse_lm_spec("lm:m.gguf").model_options.cuda_graphs);
  EXPECT_EQ(parse_lm_spec("lm:m.gguf,adapter=/x.pt").adapter, "/x.pt");
  EXPECT_EQ(parse_lm_spec("lm:m.gguf,style=file,adapter=/runs/sft/adapter.pt,shots=0").adapter,
            "/runs/sft/adapter.pt");
  EXPECT_EQ(parse_lm_spec("lm:m.gguf").adapter, "");
  // A random model of a named architecture's shapes; an unknown name lists the presets.
  try {
    LmPolicy unknown(parse_lm_spec("lm:random:llama-70b"));
    FAIL() << "no error for an unknown preset";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("smollm2-135m, qwen2.5-0.5b, qwen2.5-1.5b"), std::string::npos) << e.what();
  }
  try {
    LmPolicy missing(parse_lm_spec("lm:/nonexistent/model.gguf"));
    FAIL() << "no error for a missing model";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kbrl::lm
