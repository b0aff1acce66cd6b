// The endpoint judge with a real model (label llm): SmolLM2-135M-Instruct on the local llama-server
// (the llama_server fixture), asked about a ReLU kernel, answers the report's three scores through
// the JSON schema (llama.cpp constrains decoding to it), deterministically at temperature 0.
// Without the server the test reports skipped (failed under KBRL_REQUIRE_LLM=1, as in CI).
#include <gtest/gtest.h>

#include <experiments/judge.h>
#include <reference/task_registry.h>

#include <ctest/policies/llm_testing.h>

namespace kbrl {
namespace {

const char* kRelu = R"(extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
)";

TEST(JudgeLlm, ASmallModelAnswersTheThreeScoresThroughTheSchema) {
  const std::string url = testing::llm_url();
  KBRL_REQUIRE_LLM_PIECE(!url.empty(), "the llama-server (KBRL_LLM_URL or the llama_server fixture)");
  auto judge = make_judge("endpoint:" + url + ",max_tokens=160,timeout=300,retries=1");
  const TaskSpec task = task_spec(19, Scale::small);
  const auto first = judge->score(task, {kRelu});
  ASSERT_EQ(first.size(), 1u);
  ASSERT_TRUE(first[0].ok) << first[0].error;
  for (double s : {first[0].correctness, first[0].compilability, first[0].speed}) {
    EXPECT_GE(s, 0.0);
    EXPECT_LE(s, 1.0);
  }
  const auto again = judge->score(task, {kRelu});
  EXPECT_EQ(again[0].correctness, first[0].correctness) << "temperature 0: the same answer";
  EXPECT_EQ(again[0].speed, first[0].speed);
  std::printf("SmolLM2's judgement of a ReLU kernel: correctness %.3f compilability %.3f speed %.3f\n",
              first[0].correctness, first[0].compilability, first[0].speed);
}

}  // namespace
}  // namespace kbrl
