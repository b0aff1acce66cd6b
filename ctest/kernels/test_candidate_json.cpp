// JSON round trip of a Candidate (kernels/candidate.h), as the rollout log stores it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <kbrl/error.h>
#include <kernels/candidate.h>

namespace kbrl {
namespace {

Candidate sample_candidate() {
  Candidate c;
  c.task_id = 95;
  c.source = "extern \"C\" __global__ void k(const float* x) {}\n// \"quotes\" and \\ backslashes\n";
  Launch first;
  first.kernel = "k";
  first.grid = {123456, 2, 3};
  first.block = {32, 8, 1};
  first.shared_bytes = 4096;
  first.args = {{ArgKind::input, 0},       {ArgKind::parameter, 1}, {ArgKind::output, 0},
                {ArgKind::scratch, 0},     {ArgKind::task_scalar, 0}};
  KernelArg f32{ArgKind::f32};
  f32.value = 0.1;  // not exact in binary: must still round-trip bit for bit
  KernelArg i32{ArgKind::i32};
  i32.ivalue = -7;
  KernelArg i64{ArgKind::i64};
  i64.ivalue = int64_t{1} << 40;
  first.args.insert(first.args.end(), {f32, i32, i64});
  Launch second;
  second.kernel = "_Z6secondPf";
  second.args = {{ArgKind::output, 0}};
  c.launches = {first, second};
  c.scratch = {{"partial", 1 << 20}};
  c.options = {"--use_fast_math", "-maxrregcount=64"};
  return c;
}

TEST(CandidateJson, RoundTrip) {
  const Candidate c = sample_candidate();
  const nlohmann::json j = c;
  EXPECT_EQ(j.get<Candidate>(), c);
  // Through text too, as the JSONL log does.
  EXPECT_EQ(candidate_from_json(nlohmann::json::parse(j.dump())), c);
  EXPECT_EQ(Candidate{}, candidate_from_json(nlohmann::json(Candidate{})));
}

TEST(CandidateJson, Shape) {
  const nlohmann::json j = sample_candidate();
  EXPECT_EQ(j["task_id"], 95);
  EXPECT_EQ(j["launches"][0]["grid"], nlohmann::json::parse("[123456, 2, 3]"));
  EXPECT_EQ(j["launches"][0]["args"][1], nlohmann::json::parse(R"({"kind": "parameter", "index": 1})"));
  EXPECT_EQ(j["launches"][0]["args"][4]["kind"], "task_scalar");
  EXPECT_EQ(j["launches"][0]["args"][5], nlohmann::json::parse(R"({"kind": "f32", "value": 0.1})"));
  EXPECT_EQ(j["launches"][0]["args"][7]["value"], int64_t{1} << 40);
  EXPECT_EQ(j["scratch"][0]["name"], "partial");
}

TEST(CandidateJson, OptionalFieldsDefault) {
  const auto j = nlohmann::json::parse(
      R"({"task_id": 1, "source": "s", "launches": [{"kernel": "k", "grid": [1,1,1],
          "block": [1,1,1], "args": []}]})");
  const Candidate c = candidate_from_json(j);
  EXPECT_EQ(c.launches.at(0).shared_bytes, 0u);
  EXPECT_TRUE(c.scratch.empty());
  EXPECT_TRUE(c.options.empty());
}

TEST(CandidateJson, MalformedIsInputError) {
  for (const char* text : {
           R"({"source": "s", "launches": []})",                          // no task_id
           R"({"task_id": "one", "source": "s", "launches": []})",        // wrong type
           R"({"task_id": 1, "source": "s", "launches": [{"kernel": "k", "grid": [1,1],
               "block": [1,1,1], "args": []}]})",                          // grid of 2
           R"({"task_id": 1, "source": "s", "launches": [{"kernel": "k", "grid": [1,1,1],
               "block": [1,1,1], "args": [{"kind": "pointer", "index": 0}]}]})",  // unknown kind
       }) {
    EXPECT_THROW(candidate_from_json(nlohmann::json::parse(text)), InputError) << text;
  }
  EXPECT_EQ(parse_arg_kind("scratch"), ArgKind::scratch);
  EXPECT_EQ(to_string(ArgKind::i64), "i64");
}

}  // namespace
}  // namespace kbrl
