// The GRPO report's judge (experiments/judge.h): the rules judge's checks, reading a judge's
// answer, the endpoint judge's request and errors against a fake server, and the judged
// environment's reward r + lambda * J. A real model judges in test_judge_llm (label llm).
#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <experiments/judge.h>
#include <experiments/report_schemas.h>
#include <kbrl/error.h>
#include <policies/baseline_policies.h>
#include <reference/task_registry.h>

#include <ctest/csv_testing.h>
#include <ctest/policies/fake_http_server.h>

namespace kbrl {
namespace {

namespace fs = std::filesystem;
using testing::FakeHttpServer;

const char* kTuned = R"(// a tuned ReLU
extern "C" __global__ void relu(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
  __shared__ float4 tile[256];
  long long stride = (long long)gridDim.x * blockDim.x;
  #pragma unroll 4
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 v = x[i];
    tile[threadIdx.x] = v;
    y[i] = make_float4(fmaxf(v.x, 0.f), fmaxf(v.y, 0.f), fmaxf(v.z, 0.f), fmaxf(v.w, 0.f));
  }
}
)";

const char* kNaive = R"(extern "C" __global__ void relu(const float* x, float* y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;  // float4 and __shared__ in a comment do not count
}
)";

const char* kBroken = R"(#include <vector>
__device__ void relu(const float* x, float* y) {
  std::vector<float> v(4);
  y[0] = "}}" [0];
)";

TEST(RulesJudge, ScoresWhatTheSourceShows) {
  const JudgeScores tuned = rules_judge_scores(kTuned);
  EXPECT_TRUE(tuned.ok);
  EXPECT_EQ(tuned.compilability, 1.0);
  EXPECT_EQ(tuned.correctness, 1.0);
  EXPECT_EQ(tuned.speed, 1.0);
  EXPECT_EQ(tuned.mean(), 1.0);
  const JudgeScores naive = rules_judge_scores(kNaive);
  EXPECT_EQ(naive.compilability, 1.0);
  EXPECT_EQ(naive.correctness, 1.0);
  EXPECT_EQ(naive.speed, 0.0) << "comments must not count";
  // Unbalanced braces (a string's braces do not count), no __global__, std:: code: none of three.
  const JudgeScores broken = rules_judge_scores(kBroken);
  EXPECT_EQ(broken.compilability, 0.0);
  EXPECT_LT(broken.correctness, 1.0);
  const JudgeScores none = rules_judge_scores("");
  EXPECT_FALSE(none.ok);
  EXPECT_EQ(none.mean(), 0.0);
}

TEST(JudgeAnswer, ReadsTheThreeScoresClamped) {
  const JudgeScores a = parse_judge_answer(R"({"correctness": 0.5, "compilability": 1, "speed": 0.25, "reasoning": "ok"})");
  EXPECT_TRUE(a.ok);
  EXPECT_EQ(a.correctness, 0.5);
  EXPECT_EQ(a.compilability, 1.0);
  EXPECT_EQ(a.speed, 0.25);
  const JudgeScores wrapped = parse_judge_answer("Here is my answer:\n{\"correctness\": 1.7, \"compilability\": -1, "
                                                 "\"speed\": 0.5}\nThanks.");
  EXPECT_TRUE(wrapped.ok);
  EXPECT_EQ(wrapped.correctness, 1.0);
  EXPECT_EQ(wrapped.compilability, 0.0);
  for (const char* bad : {"no json here", R"({"correctness": 1, "speed": 1})",
                          R"({"correctness": "high", "compilability": 1, "speed": 1})", "[1, 2, 3]"}) {
    const JudgeScores s = parse_judge_answer(bad);
    EXPECT_FALSE(s.ok) << bad;
    EXPECT_EQ(s.mean(), 0.0) << bad;
    EXPECT_FALSE(s.error.empty()) << bad;
  }
}

TEST(MakeJudge, KnowsItsFormsAndNamesThem) {
  EXPECT_EQ(make_judge("rules")->name(), "rules");
  EXPECT_EQ(make_judge("endpoint:http://127.0.0.1:9,model=critic")->name(), "endpoint:critic");
  for (const char* bad : {"", "gpt", "endpoint:ftp://host", "rules:strict"}) {
    try {
      make_judge(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("judge"), std::string::npos) << e.what();
    }
  }
}

nlohmann::json chat_answer(const std::string& content) {
  return {{"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", content}}},
                        {"finish_reason", "stop"}}}}};
}

TEST(EndpointJudge, AsksForTheSchemaAtTemperatureZeroAndReadsTheAnswer) {
  FakeHttpServer server([](const FakeHttpServer::Request&) {
    return FakeHttpServer::Reply(
        200, chat_answer(R"({"correctness": 0.75, "compilability": 1.0, "speed": 0.5, "reasoning": "fine"})").dump());
  });
  auto judge = make_judge("endpoint:" + server.url() + "/v1,model=critic,retries=0");
  const TaskSpec task = task_spec(19, Scale::small);
  const auto scores = judge->score(task, {kNaive, ""});
  ASSERT_EQ(scores.size(), 2u);
  EXPECT_TRUE(scores[0].ok);
  EXPECT_DOUBLE_EQ(scores[0].mean(), 0.75);
  EXPECT_FALSE(scores[1].ok) << "no candidate: nothing asked";
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/v1/chat/completions");
  const auto body = nlohmann::json::parse(requests[0].body);
  EXPECT_EQ(body.at("model"), "critic");
  EXPECT_EQ(body.at("temperature"), 0);
  EXPECT_EQ(body.at("response_format").at("type"), "json_schema");
  const std::string prompt = body.at("messages").at(0).at("content");
  EXPECT_NE(prompt.find("blockIdx.x * blockDim.x"), std::string::npos) << "the source is in the question";
  EXPECT_NE(prompt.find("19_ReLU"), std::string::npos) << "and the task";
}

// A byte-level model may end inside a character: the judge is asked about the source with U+FFFD
// there, instead of the request failing to serialize.
TEST(EndpointJudge, ASourceThatIsNotUtf8IsAskedAbout) {
  FakeHttpServer server([](const FakeHttpServer::Request&) {
    return FakeHttpServer::Reply(
        200, chat_answer(R"({"correctness": 0.5, "compilability": 0.5, "speed": 0.5, "reasoning": "cut"})").dump());
  });
  const std::string cut = std::string(kNaive) + "// \xe2\x86 \x97";
  const auto scores = make_judge("endpoint:" + server.url() + ",retries=0")->score(task_spec(19, Scale::small), {cut});
  ASSERT_EQ(scores.size(), 1u);
  EXPECT_TRUE(scores[0].ok);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const std::string prompt = nlohmann::json::parse(requests[0].body).at("messages").at(0).at("content");
  EXPECT_NE(prompt.find("// \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd"), std::string::npos) << prompt.substr(prompt.size() - 200);
}

TEST(EndpointJudge, AnUnusableAnswerScoresZeroAndADeadServerIsAnError) {
  FakeHttpServer garbage([](const FakeHttpServer::Request&) {
    return FakeHttpServer::Reply(200, chat_answer("I think it is good.").dump());
  });
  const TaskSpec task = task_spec(19, Scale::small);
  const auto scores = make_judge("endpoint:" + garbage.url() + ",retries=0")->score(task, {kNaive});
  EXPECT_FALSE(scores.at(0).ok);
  EXPECT_EQ(scores.at(0).mean(), 0.0);
  FakeHttpServer failing([](const FakeHttpServer::Request&) { return FakeHttpServer::Reply(400, R"({"error": {"message": "no such model"}})"); });
  EXPECT_THROW(make_judge("endpoint:" + failing.url() + ",retries=0")->score(task, {kNaive}), InputError);
  std::string dead;
  {
    FakeHttpServer gone([](const FakeHttpServer::Request&) { return FakeHttpServer::Reply(200, "{}"); });
    dead = gone.url();
  }
  EXPECT_THROW(make_judge("endpoint:" + dead + ",retries=0,timeout=5")->score(task, {kNaive}), Error);
}

// A group of candidates is judged concurrently, up to the spec's concurrency, in order.
TEST(EndpointJudge, AsksForSeveralCandidatesAtOnce) {
  std::atomic<int> in_flight{0}, most{0};
  FakeHttpServer server([&](const FakeHttpServer::Request& r) {
    const int now = ++in_flight;
    for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    --in_flight;
    // The score names the candidate (speed 1 for variant B), so the order can be checked.
    const std::string prompt = nlohmann::json::parse(r.body).at("messages").at(0).at("content");
    const double speed = prompt.find("VARIANT_B") != std::string::npos ? 1.0 : 0.0;
    return FakeHttpServer::Reply(
        200, chat_answer(nlohmann::json{{"correctness", 0.5}, {"compilability", 0.5}, {"speed", speed}}.dump()).dump());
  });
  const std::string a = std::string(kNaive) + "// VARIANT_A\n", b = std::string(kNaive) + "// VARIANT_B\n";
  const auto scores =
      make_judge("endpoint:" + server.url() + ",concurrency=4,retries=0")->score(task_spec(19, Scale::small), {a, b, a, b});
  ASSERT_EQ(scores.size(), 4u);
  EXPECT_EQ(scores[0].speed, 0.0);
  EXPECT_EQ(scores[1].speed, 1.0);
  EXPECT_EQ(scores[2].speed, 0.0);
  EXPECT_EQ(scores[3].speed, 1.0);
  EXPECT_GT(most.load(), 1) << "the four requests went one at a time";
  EXPECT_LE(most.load(), 4);
}

TEST(JudgedEnvironment, AddsWeightTimesTheMeanScoreToEachReward) {
  const fs::path dir = fs::temp_directory_path() / ("kbrl-test-judge-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  SyntheticEnvironment inner(7);
  const TaskSpec task = task_spec(19, Scale::small);
  UniformPolicy policy;
  const std::vector<Sample> samples = policy.sample(task, 6, 1.0, 3);
  const std::vector<Rollout> plain = inner.evaluate(task, samples, "uniform");
  {
    CsvTable csv(dir / "judge_scores.csv", schemas::judge_scores());
    JudgedEnvironment judged(inner, make_judge("rules"), 0.5, &csv);
    const std::vector<Rollout> with = judged.evaluate(task, samples, "uniform");
    ASSERT_EQ(with.size(), plain.size());
    for (size_t i = 0; i < with.size(); ++i) {
      EXPECT_GT(with[i].reward, plain[i].reward) << "a generated kernel earns some of the judge's score";
      EXPECT_LE(with[i].reward, plain[i].reward + 0.5 + 1e-12);
    }
    EXPECT_EQ(judged.failures(), 0);
    EXPECT_THROW(JudgedEnvironment(inner, make_judge("rules"), -1.0), InputError);
  }
  const auto rows = testing::read_csv(dir / "judge_scores.csv").rows;
  ASSERT_EQ(rows.size(), samples.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_NEAR(std::stod(rows[i].at("reward")),
                std::stod(rows[i].at("kernel_reward")) + 0.5 * std::stod(rows[i].at("judge_mean")), 1e-5);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kbrl
