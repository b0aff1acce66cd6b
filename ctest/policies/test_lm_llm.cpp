// The language model in the process against llama.cpp, the external oracle (`llm` label): SmolLM2-135M-
// Instruct read from the GGUF file llama-server serves. kbrl dequantizes the weights to float32 and
// computes in float32; llama.cpp multiplies quantized weights with activations quantized to 8 bits
// (q8_1 blocks of 32), which moves its log-probs by a few hundredths of a nat. So there are two
// oracles: llama-server on the float32 copy of the same file (`kbrl model f32`, float32 KV cache),
// where per-token log-probs over >= 1,000 tokens agree to mean |diff| <= 0.02 nats and max <= 0.2
// (measured over 2,001: 0.0001 and 0.0003; 1,000 halve the float32 server's 100 s on 2 cores) and
// greedy decoding gives the same first 32 tokens on 10 prompts;
// and llama-server on the quantized file as users run it, where the figures are printed and held to
// mean <= 0.1, max <= 1 (measured: 0.06 and 0.5). Then the trainable policy on the real model: a fresh LoRA
// adapter changes nothing, and one GRPO step changes the adapter and raises the log-prob of the
// positively scored sample; and the writer adapter committed under results/ (trained on an H100 with
// libtorch 2.x) loads here and lowers the NLL of a held-out task's answer. Without the server or the model file every test reports skipped
// (failed under KBRL_REQUIRE_LLM=1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>
#include <kbrl/http_client.h>
#include <kbrl/sha256.h>
#include <policies/corpus.h>
#include <policies/lm/language_model.h>
#include <policies/lm/model_file.h>

#include "llm_testing.h"
#include "lm_policy_testing.h"

namespace kbrl::lm {
namespace {

using nlohmann::json;

// Ten conversations of the kind the policy sees (CUDA, C++, prose), rendered by the model's chat
// template.
std::vector<std::string> user_messages() {
  return {"Write a CUDA kernel that adds two float arrays of length n.",
          "Explain what __syncthreads() does in one paragraph.",
          "Write a C++ function that returns the sum of a std::vector<int>.",
          "What is shared memory in CUDA, and when should a kernel use it?",
          "Write a CUDA kernel for ReLU: out[i] = max(in[i], 0.0f).",
          "List three ways to make a matrix multiplication kernel faster.",
          "Translate to French: the kernel is correct but slow.",
          "Write a Python function that reverses a string.",
          "Why do GPUs need many threads to hide memory latency?",
          "Give a short example of a CUDA grid-stride loop."};
}

class LmLlm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = testing::llm_model_path();
    if (!path.empty()) model_ = new LanguageModel(read_model_file(path), ModelOptions{});
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  void SetUp() override { KBRL_REQUIRE_LLM_PIECE(model_ != nullptr, "the SmolLM2 model file"); }
  // The server on the quantized file (the llama_server fixture) or on its float32 copy
  // (llama_server_f32; KBRL_LLM_F32_URL overrides its URL file).
  void use_server(bool f32) {
    if (!f32) {
      url_ = testing::llm_url();
    } else if (const char* env = std::getenv("KBRL_LLM_F32_URL"); env && *env) {
      url_ = env;
    } else {
#ifdef KBRL_LLM_F32_URL_FILE
      std::ifstream in(KBRL_LLM_F32_URL_FILE);
      std::getline(in, url_);
#endif
    }
  }
  bool have_server() const { return !url_.empty(); }

  struct Parity {
    double mean = 0, max = 0;
    size_t tokens = 0;
    int completions = 0;
  };
  // Log-probs of llama-server's sampled completions (temperature 1, seeded) scored by our model.
  Parity logprob_parity(size_t min_tokens) {
    std::vector<double> diffs;
    int round = 0;
    const auto messages = user_messages();
    while (diffs.size() < min_tokens && round < 40) {
      const std::vector<int> p = prompt(messages[round % messages.size()]);
      const json r = complete(p, 256, 1.0, 1000 + round);
      ++round;
      const std::vector<int> tokens = r.at("tokens").get<std::vector<int>>();
      if (tokens.empty()) continue;
      const std::vector<double> ours = model_->score(p, {tokens}, 1.0)[0];
      // llama.cpp leaves out a token that ends inside a UTF-8 character: match its entries by id.
      size_t at = 0;
      for (const json& e : r.at("completion_probabilities")) {
        const int id = e.at("id").get<int>();
        while (at < tokens.size() && tokens[at] != id) ++at;
        if (at == tokens.size()) {
          ADD_FAILURE() << "token " << id << " of the probabilities is not in the completion";
          break;
        }
        diffs.push_back(std::abs(ours[at] - e.at("logprob").get<double>()));
        ++at;
      }
    }
    Parity out;
    out.tokens = diffs.size();
    out.completions = round;
    for (double d : diffs) out.mean += d / static_cast<double>(diffs.size());
    if (!diffs.empty()) out.max = *std::max_element(diffs.begin(), diffs.end());
    return out;
  }

  // Greedy decoding, 32 tokens, on the 10 prompts: how many agree exactly, and the mean length of
  // the common prefix.
  std::pair<int, double> greedy_parity() {
    int same = 0;
    double prefix = 0;
    for (const std::string& m : user_messages()) {
      const std::vector<int> p = prompt(m);
      const std::vector<int> theirs = complete(p, 32, 0.0, 1).at("tokens").get<std::vector<int>>();
      GenerateOptions g;
      g.max_tokens = 32;
      g.temperature = 0.0;
      std::vector<int> ours = model_->generate(p, 1, g)[0].tokens;
      // llama.cpp does not return the end-of-generation token among "tokens".
      if (!ours.empty() && model_->tokenizer().is_end(ours.back()) && theirs.size() < ours.size()) ours.pop_back();
      size_t k = 0;
      while (k < ours.size() && k < theirs.size() && ours[k] == theirs[k]) ++k;
      prefix += static_cast<double>(k) / 10.0;
      same += ours == theirs;
      if (ours != theirs)
        std::printf("  differs after %zu tokens: %s\n    ours:   %s\n    theirs: %s\n", k, m.c_str(),
                    model_->tokenizer().decode(ours).c_str(), model_->tokenizer().decode(theirs).c_str());
    }
    return {same, prefix};
  }

  std::vector<int> prompt(const std::string& user) {
    const std::string text = model_->chat().render({{"user", user}});
    return model_->tokenizer().encode(text, model_->chat().bos_text.empty(), true);
  }

  // llama-server's /completion from the given prompt tokens: the sampled tokens and, per token it
  // reports one for, the log-prob under the raw logits (post_sampling_probs false).
  json complete(const std::vector<int>& prompt_ids, int n_predict, double temperature, int seed) {
    json body = {{"prompt", prompt_ids},     {"n_predict", n_predict}, {"temperature", temperature},
                 {"top_k", 0},               {"top_p", 1.0},           {"min_p", 0.0},
                 {"seed", seed},             {"n_probs", 1},           {"post_sampling_probs", false},
                 {"cache_prompt", false},    {"return_tokens", true}};
    const HttpResponse r = http_.post_json(url_ + "/completion", body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body);
  }

  static LanguageModel* model_;
  std::string url_;
  HttpClient http_;
};

LanguageModel* LmLlm::model_ = nullptr;

TEST_F(LmLlm, AgreesWithLlamaCppInFloat32) {
  use_server(true);
  KBRL_REQUIRE_LLM_PIECE(have_server(), "the float32 llama-server (fixture llama_server_f32_start)");
  const Parity p = logprob_parity(1000);
  std::printf("[ parity ] float32 llama.cpp: %zu tokens of %d completions, mean |diff| %.5f nats, max %.5f\n",
              p.tokens, p.completions, p.mean, p.max);
  EXPECT_GE(p.tokens, 1000u);
  EXPECT_LE(p.mean, 0.02);
  EXPECT_LE(p.max, 0.2);
  EXPECT_LE(p.mean, 1e-3) << "the same weights in the same precision: only summation order differs";
  const auto [same, prefix] = greedy_parity();
  std::printf("[ parity ] float32 llama.cpp, greedy: %d of 10 prompts give its first 32 tokens\n", same);
  EXPECT_EQ(same, 10);
}

TEST_F(LmLlm, StaysNearQuantizedLlamaCpp) {
  use_server(false);
  KBRL_REQUIRE_LLM_PIECE(have_server(), "the llama-server (fixture llama_server_start)");
  const Parity p = logprob_parity(600);
  std::printf("[ parity ] q4_1 llama.cpp (8-bit activations): %zu tokens of %d completions, mean |diff| %.4f nats, "
              "max %.4f\n",
              p.tokens, p.completions, p.mean, p.max);
  EXPECT_LE(p.mean, 0.1);
  EXPECT_LE(p.max, 1.0);
  const auto [same, prefix] = greedy_parity();
  std::printf("[ parity ] q4_1 llama.cpp, greedy: %d of 10 prompts give its first 32 tokens, common prefix %.1f "
              "tokens on average\n",
              same, prefix);
  EXPECT_GE(prefix, 16.0);
}

TEST_F(LmLlm, LoraIsANoOpAtInitAndAGrpoStepRaisesThePositiveSample) {
  LmOptions o = parse_lm_spec("lm:" + testing::llm_model_path() + ",shots=0,system=none,max_tokens=16");
  LmPolicy p(std::move(o));
  const TaskSpec task = task_spec(19, Scale::small);
  const auto samples = p.sample(task, 2, 1.0, 3);
  std::vector<std::vector<int>> tokens = {samples[0].tokens, samples[1].tokens};
  const auto before = p.logprob(task, tokens, 1.0);
  p.add_adapter({16, 32.0}, 1);
  const auto fresh = p.logprob(task, tokens, 1.0);
  for (size_t i = 0; i < tokens.size(); ++i)
    for (size_t j = 0; j < tokens[i].size(); ++j) EXPECT_NEAR(fresh[i][j], before[i][j], 1e-5);
  p.set_optimizer({.learning_rate = 1e-3});
  const std::string state = p.adapter_state();
  const UpdateStats st = p.update(testing::items_with(task, samples, {1.0, -1.0}), UpdateConfig{});
  EXPECT_GT(st.grad_norm, 0.0);
  EXPECT_NE(p.adapter_state(), state);
  const auto after = p.logprob(task, tokens, 1.0);
  std::printf("one GRPO step (lr 1e-3, rank 16): positive sample %.3f -> %.3f, negative %.3f -> %.3f (sum log-prob)\n",
              testing::sum_of(before[0]), testing::sum_of(after[0]), testing::sum_of(before[1]),
              testing::sum_of(after[1]));
  EXPECT_GT(testing::sum_of(after[0]), testing::sum_of(before[0]));
  EXPECT_LT(testing::sum_of(after[1]), testing::sum_of(before[1]));
}

// The adapter of results/h100-80gb-hbm3/lm-writer-smollm2/run4 (SFT on the generators' corpus of 20 train
// tasks, held-out NLL per token 1.43 -> 0.13 over the 144 answers of 9 eval tasks, on an H100 in
// bfloat16): its bytes are the ones its .sha256 names, it loads on this build's libtorch, and on the
// expert answer of an eval-split task it never saw (20, LeakyReLU) it lowers the NLL per token far
// below the base model's, as on the GPU.
TEST_F(LmLlm, CommittedWriterAdapterLoadsAndLowersAHeldOutAnswersNll) {
  const std::filesystem::path adapter = KBRL_WRITER_ADAPTER;
  std::ifstream bytes(adapter, std::ios::binary), digest(adapter.string() + ".sha256");
  ASSERT_TRUE(bytes && digest) << adapter << " or its .sha256 is missing";
  std::string want;
  digest >> want;
  EXPECT_EQ(sha256_hex(std::string(std::istreambuf_iterator<char>(bytes), {})), want) << adapter;

  const TaskSpec task = task_spec(20, Scale::kernelbench);
  ASSERT_EQ(split_of(task.id), "eval");
  const std::string answer = generator_answer(task, corpus_configurations(task, 1, 1).front());
  const std::string spec = "lm:" + testing::llm_model_path() + ",style=file,shots=0";
  auto nll_per_token = [&](const std::string& s) {
    LmPolicy p(parse_lm_spec(s));
    const std::vector<double> lp = p.logprob(task, {p.text_tokens(answer)}, 1.0).front();
    return -std::accumulate(lp.begin(), lp.end(), 0.0) / static_cast<double>(lp.size());
  };
  const double base = nll_per_token(spec), tuned = nll_per_token(spec + ",adapter=" + adapter.string());
  std::printf("[ figures ] task 20's expert answer: NLL per token %.3f (SmolLM2) -> %.3f (with the writer adapter)\n",
              base, tuned);
  EXPECT_GT(base, 0.8);
  EXPECT_LT(tuned, 0.4);
}

}  // namespace
}  // namespace kbrl::lm
