// The endpoint policy against a real llama-server (llama.cpp) serving SmolLM2-135M-Instruct: seeds,
// log-probs, re-scoring, greedy decoding and llama.cpp's answers to odd requests. The server's URL
// comes from KBRL_LLM_URL, else from the file the CTest fixture llama_server_start writes
// (ctest/llm/llama_server.sh). Without a server every test reports skipped, unless
// KBRL_REQUIRE_LLM=1, which turns that into a failure.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>
#include <policies/endpoint_policy.h>
#include <reference/task_registry.h>

#include "llm_testing.h"

namespace kbrl {
namespace {

using nlohmann::json;

using testing::llm_required;
using testing::llm_url;

TaskSpec relu() { return task_spec(19, Scale::small); }
constexpr int kMaxTokens = 32;

class EndpointLlm : public ::testing::Test {
 protected:
  void SetUp() override {
    url_ = llm_url();
    if (!url_.empty()) return;
    if (llm_required())
      FAIL() << "KBRL_REQUIRE_LLM=1 but no llama-server: set KBRL_LLM_URL, or run .ci/setup-llm and "
                "`ctest -L llm` (the fixture llama_server_start starts the server)";
    GTEST_SKIP() << "no llama-server (KBRL_LLM_URL unset and the llama_server fixture wrote no URL; "
                    ".ci/setup-llm installs one)";
  }

  // Short answers and a prompt without worked examples or system part (about 1000 tokens) keep a
  // request within seconds on 2 cores.
  EndpointOptions options() const {
    EndpointOptions o;
    o.url = url_;
    o.max_tokens = kMaxTokens;
    o.prompt.shots = 0;
    o.prompt.system = SystemPrompt::none;
    o.http.timeout_seconds = 300;
    o.http.max_concurrent = 1;  // the server has one slot (-np 1)
    return o;
  }

  // llama.cpp's split of `text` into tokens (POST /tokenize).
  std::vector<int> tokenize(const std::string& text) {
    HttpClient http;
    const auto r = http.post_json(url_ + "/tokenize", json{{"content", text}, {"add_special", false},
                                                           {"parse_special", false}}.dump());
    EXPECT_EQ(r.status, 200);
    return json::parse(r.body).at("tokens").get<std::vector<int>>();
  }

  std::string url_;
};

void expect_valid(const Sample& s, int max_tokens) {
  EXPECT_FALSE(s.logprobs.empty());
  EXPECT_LE(s.token_count(), max_tokens);
  EXPECT_EQ(s.tokens.size(), s.logprobs.size());  // llama.cpp reports each token's id
  for (double lp : s.logprobs) {
    EXPECT_TRUE(std::isfinite(lp)) << lp;
    EXPECT_LE(lp, 0.0);
  }
  EXPECT_TRUE(s.finish_reason == "stop" || s.finish_reason == "length") << s.finish_reason;
  if (s.finish_reason == "length") {
    EXPECT_EQ(s.token_count(), max_tokens);
  }
  EXPECT_FALSE(s.prompt_version.empty());
}

// Two samples at temperature 1 with seed 1, drawn once and shared by the tests below (each
// request evaluates the whole prompt again: seconds on 2 cores).
const std::vector<Sample>& seed1_samples(EndpointPolicy& policy) {
  static const std::vector<Sample> samples = [&] {
    const auto start = std::chrono::steady_clock::now();
    auto s = policy.sample(relu(), 2, 1.0, 1);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    int64_t tokens = 0;
    for (const auto& x : s) tokens += x.token_count();
    std::cout << "[ timing ] 2 samples, " << tokens << " tokens in " << seconds << " s (prompts included)\n";
    return s;
  }();
  return samples;
}

TEST_F(EndpointLlm, SamplingIsReproducibleBySeed) {
  EndpointPolicy policy(options());
  EXPECT_EQ(policy.server_kind(), ServerKind::llamacpp);
  const auto& a = seed1_samples(policy);
  ASSERT_EQ(a.size(), 2u);
  for (const auto& s : a) expect_valid(s, kMaxTokens);
  // Sample i has its own seed: the two differ.
  EXPECT_NE(a[0].text, a[1].text);
  // The same call seed again (and fewer samples: sample 0 does not depend on n) gives the same
  // text and the same log-probs, bit for bit (no prompt cache, one slot).
  const auto b = policy.sample(relu(), 1, 1.0, 1);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].text, a[0].text);
  EXPECT_EQ(b[0].tokens, a[0].tokens);
  EXPECT_EQ(b[0].logprobs, a[0].logprobs);
  EXPECT_EQ(b[0].finish_reason, a[0].finish_reason);
}

TEST_F(EndpointLlm, RescoringReproducesSamplingLogprobs) {
  EndpointPolicy policy(options());
  const auto& samples = seed1_samples(policy);
  const auto scores = policy.score_text(relu(), {samples[0].text, samples[1].text});
  ASSERT_EQ(scores.size(), samples.size());
  size_t compared = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    // Scoring forces /tokenize's split of the text; the model may have sampled another split of
    // the same text. The log-probs agree up to the first token where the splits differ.
    const std::vector<int> canonical = tokenize(s.text);
    size_t same = 0;
    while (same < canonical.size() && same < s.tokens.size() && canonical[same] == s.tokens[same]) ++same;
    const bool whole = same == canonical.size() &&
                       s.tokens.size() == canonical.size() + (s.finish_reason == "stop" ? 1 : 0);
    if (whole) {
      // Forced decoding ends with the end token: one log-prob more when sampling hit max_tokens.
      EXPECT_EQ(scores[i].size(), s.logprobs.size() + (s.finish_reason == "length" ? 1 : 0));
      same = s.logprobs.size();
    }
    ASSERT_LE(same, scores[i].size());
    double max_diff = 0;
    for (size_t k = 0; k < same; ++k) {
      EXPECT_NEAR(scores[i][k], s.logprobs[k], 1e-3) << "sample " << i << " token " << k;
      max_diff = std::max(max_diff, std::abs(scores[i][k] - s.logprobs[k]));
    }
    compared += same;
    std::cout << "[ rescore ] sample " << i << ": " << same << " of " << s.logprobs.size()
              << " tokens compared (" << (whole ? "canonical split" : "the sampled split differs after that")
              << "), max |diff| " << max_diff << "\n";
  }
  EXPECT_GE(compared, 10u) << "too few tokens had the canonical split to compare";
}

TEST_F(EndpointLlm, GreedyIsDeterministic) {
  EndpointPolicy policy(options());
  const auto a = policy.sample(relu(), 2, 0.0, 1);
  const auto b = policy.sample(relu(), 1, 0.0, 99);  // the seed does not matter
  ASSERT_EQ(a.size(), 2u);
  expect_valid(a[0], kMaxTokens);
  EXPECT_EQ(a[0].text, a[1].text);
  EXPECT_EQ(a[0].text, b[0].text);
  EXPECT_EQ(a[0].logprobs, b[0].logprobs);
  // Greedy log-probs are the model's own (temperature 1), not 0: the top token's probability.
  EXPECT_LT(a[0].logprob(), 0.0);
}

TEST_F(EndpointLlm, LlamaCppAnswersToOddRequests) {
  // llama-server serves one model and ignores the request's model name: no unknown-model error.
  auto o = options();
  o.model = "no-such-model";
  o.max_tokens = 4;
  EndpointPolicy any_name(o);
  const auto s = any_name.sample(relu(), 1, 1.0, 3);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].token_count(), 4);
  // A prompt longer than the context (-c 4096): llama.cpp answers 400 with its message before
  // evaluating anything; the policy turns that into an InputError quoting it.
  auto big = options();
  big.max_tokens = 4;
  std::string demonstration;
  for (int i = 0; i < 2000; ++i) demonstration += "out[i] = in[i] > 0.0f ? in[i] : 0.0f;  // line " + std::to_string(i) + "\n";
  big.prompt.demonstration = demonstration;
  EndpointPolicy too_long(big);
  try {
    too_long.sample(relu(), 1, 1.0, 1);
    ADD_FAILURE() << "a prompt over the context size was accepted";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("HTTP 400"), std::string::npos) << m;
    EXPECT_NE(m.find("exceeds the available context size"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace kbrl
