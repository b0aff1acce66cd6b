// The evaluation record's JSON schema: pinned by a golden text, and round trips.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <kbrl/error.h>
#include <nlohmann/json.hpp>

#include <harness/record/eval_record.h>
#include <harness/record/json_text.h>
#include "harness_testing.h"

namespace kbrl {
namespace {

using Json = nlohmann::json;

// The schema. A change here is a change of the rollout log's format: bump
// kEvalRecordSchemaVersion and keep reading the old one.
constexpr const char* kGolden = R"({
  "action": {
    "code": "",
    "kind": "knobs",
    "prompt_version": "",
    "token_count": 0
  },
  "candidate": {
    "launches": [
      {
        "args": [
          {
            "index": 0,
            "kind": "input"
          },
          {
            "index": 0,
            "kind": "output"
          },
          {
            "kind": "i64",
            "value": 16384
          }
        ],
        "block": [
          256,
          1,
          1
        ],
        "grid": [
          64,
          1,
          1
        ],
        "kernel": "relu",
        "shared_bytes": 0
      }
    ],
    "options": [
      "--use_fast_math"
    ],
    "scratch": [],
    "source": "extern \"C\" __global__ void relu(const float* x, float* y, long n) {}\n",
    "task_id": 19
  },
  "compile": {
    "cache_hit": false,
    "log": "warning: unused variable",
    "ok": true,
    "precision_findings": [
      "fast-math: __expf"
    ],
    "seconds": 0.25
  },
  "device": "NVIDIA H100 80GB HBM3",
  "flags": [
    "reduced_precision"
  ],
  "gpu_stage_ms": {
    "accuracy": 3.5,
    "check": 20.25,
    "load": 0.5,
    "time": 12.0
  },
  "inputs": "robust",
  "kbrl_version": "0.1.0",
  "key": "0123456789abcdef0123456789abcdef",
  "outcome": "ok",
  "outcome_detail": "",
  "policy": "heuristic",
  "raw_action": "block=256 vector=4",
  "reference": {
    "iqr_ms": 0.0,
    "max_ms": 1.0,
    "mean_ms": 1.0,
    "median_ms": 1.0,
    "min_ms": 1.0,
    "n": 5,
    "q1_ms": 1.0,
    "q3_ms": 1.0,
    "std_ms": 0.0
  },
  "reward": 2.0,
  "runtime": {
    "iqr_ms": 0.04,
    "max_ms": 0.56,
    "mean_ms": 0.52,
    "median_ms": 0.5,
    "min_ms": 0.5,
    "n": 5,
    "q1_ms": 0.5,
    "q3_ms": 0.54,
    "std_ms": 0.025
  },
  "scale": "small",
  "schema_version": 3,
  "speedup": 2.0,
  "speedup_ci": {
    "high": 2.25,
    "low": 1.75
  },
  "task_id": 19,
  "task_name": "19_ReLU",
  "timestamp": "2026-03-05T12:34:56.789Z",
  "trials": [
    {
      "f64_error": 1.25e-07,
      "f64_reference_error": 5e-08,
      "failure": "",
      "max_abs_error": 0.0,
      "max_rel_error": 0.0,
      "passed": true,
      "seed_id": "trial-0",
      "trial": 0
    },
    {
      "failure": "",
      "max_abs_error": 1.5e-07,
      "max_rel_error": 2.5e-07,
      "passed": true,
      "seed_id": "stress-1",
      "trial": 1
    }
  ]
})";

TEST(EvalRecord, SchemaIsPinnedByAGoldenText) {
  const Json j = testing::sample_record();
  EXPECT_EQ(j.dump(2), kGolden);
}

TEST(EvalRecord, RoundTripsThroughJsonText) {
  const EvalRecord record = testing::sample_record();
  const EvalRecord back = record_from_json(Json::parse(Json(record).dump()));
  EXPECT_EQ(back, record);
  EXPECT_EQ(record_from_json(Json::parse(kGolden)), record);
}

// A candidate file that is not UTF-8 (a 0xFF byte in a comment) and a compile log quoting it: the
// record's JSON is valid UTF-8 (dump() used to throw, `kbrl eval --json` exited 3) and reads back
// to the exact bytes through the <field>_base64 members; a valid record has none of them.
TEST(EvalRecord, BytesThatAreNotUtf8AreWrittenValidAndReadBackExactly) {
  EvalRecord record = testing::sample_record();
  record.raw_action = "// \xff\xfe caf\xc3\xa9 \xed\xa0\x80 \xc0\xaf\n";
  record.candidate.source = record.raw_action + "extern \"C\" __global__ void k() {}\n";
  record.compile.log = "candidate.cu(1): warning: \xff";
  record.compile.precision_findings = {"fine", "bad \xf5"};
  record.trials[1].failure = "\x80";
  Json j = record;
  const std::string text = j.dump();  // would throw on a string that is not UTF-8
  EXPECT_TRUE(is_valid_utf8(text));
  EXPECT_EQ(j["raw_action"], "// \xef\xbf\xbd\xef\xbf\xbd caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
                             "\xef\xbf\xbd\xef\xbf\xbd\n");
  EXPECT_TRUE(j.contains("raw_action_base64"));
  EXPECT_TRUE(j["candidate"].contains("source_base64"));
  EXPECT_TRUE(j["compile"].contains("log_base64"));
  EXPECT_EQ(j["compile"]["precision_findings_base64"][0], nullptr);
  EXPECT_EQ(record_from_json(Json::parse(text)), record);
  EXPECT_FALSE(Json(testing::sample_record()).dump().find("_base64") != std::string::npos);
}

TEST(JsonText, Utf8ValidityFollowsTheStandard) {
  for (const char* good : {"", "ascii", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"})
    EXPECT_TRUE(is_valid_utf8(good)) << good;
  for (const char* bad : {"\xff", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc3", "\xe2\x82"})
    EXPECT_FALSE(is_valid_utf8(bad)) << bad;
  EXPECT_EQ(valid_utf8("a\xff" "b\xc3"), "a\xef\xbf\xbd" "b\xef\xbf\xbd");
  Json doc = {{"\xff", "x"}, {"list", {"\xfe", 1, {{"deep", "\xfd"}}}}};
  keep_exact_bytes(doc);
  EXPECT_NO_THROW(doc.dump());
  restore_exact_bytes(doc);
  EXPECT_EQ(doc["list"][0], "\xfe");
  EXPECT_EQ(doc["list"][2]["deep"], "\xfd");
  EXPECT_EQ(dump_lossy(Json("\xff")), "\"\xef\xbf\xbd\"");
}

TEST(EvalRecord, TextActionsRoundTripAndVersionOneRecordsStillRead) {
  EvalRecord record = testing::sample_record();
  record.raw_action = "Here it is:\n```cuda\ny[i] = x[i];\n```";
  record.action = {ActionKind::text, "y[i] = x[i];", 37, "kbrl-prompt-1/body/shots=1/system=reasoning"};
  record.outcome = Outcome::format_error;
  EXPECT_EQ(record_from_json(Json::parse(Json(record).dump())), record);
  // A record written before actions were kept (schema 1) reads as a knob action.
  Json v1 = Json::parse(kGolden);
  v1.erase("action");
  v1.erase("speedup_ci");
  v1.erase("inputs");
  v1["schema_version"] = 1;
  const EvalRecord old = record_from_json(v1);
  EXPECT_EQ(old.action, ActionInfo{});
  EvalRecord expected_old = testing::sample_record();
  expected_old.speedup_ci.reset();
  expected_old.inputs = "kernelbench";
  EXPECT_EQ(old, expected_old);
  Json v2_without_action = Json::parse(kGolden);
  v2_without_action.erase("action");
  EXPECT_THROW(record_from_json(v2_without_action), InputError);
}

TEST(EvalRecord, VersionTwoRecordsReadWithoutIntervalAndWithKernelBenchInputs) {
  Json v2 = Json::parse(kGolden);
  v2.erase("speedup_ci");
  v2.erase("inputs");
  v2["schema_version"] = 2;
  const EvalRecord old = record_from_json(v2);
  EXPECT_FALSE(old.speedup_ci.has_value());
  EXPECT_EQ(old.inputs, "kernelbench");
  Json v3_without_inputs = Json::parse(kGolden);
  v3_without_inputs.erase("inputs");
  EXPECT_THROW(record_from_json(v3_without_inputs), InputError);
  Json bad_inputs = Json::parse(kGolden);
  bad_inputs["inputs"] = "uniform";
  EXPECT_THROW(record_from_json(bad_inputs), InputError);
}

TEST(EvalRecord, SignificantFastNeedsTheIntervalAbovePAndACorrectRecord) {
  EvalRecord r = testing::sample_record();  // ok, speedup 2, interval [1.75, 2.25]
  EXPECT_TRUE(is_fast(r));
  EXPECT_TRUE(is_significantly_fast(r));
  EXPECT_FALSE(is_significantly_fast(r, 1.8));
  EXPECT_TRUE(is_fast(r, 1.8));
  r.speedup_ci = SpeedupInterval{0.95, 2.25};
  EXPECT_TRUE(is_fast(r));
  EXPECT_FALSE(is_significantly_fast(r));
  r.speedup_ci.reset();
  EXPECT_FALSE(is_significantly_fast(r));
  r = testing::sample_record();
  r.outcome = Outcome::wrong_answer;
  EXPECT_FALSE(is_fast(r));
  EXPECT_FALSE(is_significantly_fast(r));
}

TEST(EvalRecord, AbsentPolicyAndTimingsAreNull) {
  EvalRecord record = testing::sample_record();
  record.policy.reset();
  record.runtime.reset();
  record.reference.reset();
  record.outcome = Outcome::compile_error;
  record.outcome_detail = "error: expected ';'";
  const Json j = record;
  EXPECT_TRUE(j.at("policy").is_null());
  EXPECT_TRUE(j.at("runtime").is_null());
  EXPECT_TRUE(j.at("reference").is_null());
  EXPECT_EQ(j.at("outcome"), "compile_error");
  EXPECT_EQ(record_from_json(j), record);
}

TEST(EvalRecord, NonFiniteNumbersAreWrittenAsStrings) {
  EvalRecord record = testing::sample_record();
  record.trials[1] = {1, "trial-1", false, std::numeric_limits<double>::quiet_NaN(),
                      std::numeric_limits<double>::infinity(), "output holds NaN", std::nullopt, std::nullopt};
  record.speedup = -std::numeric_limits<double>::infinity();
  const Json j = record;
  EXPECT_EQ(j.at("trials")[1].at("max_abs_error"), "nan");
  EXPECT_EQ(j.at("trials")[1].at("max_rel_error"), "inf");
  EXPECT_EQ(j.at("speedup"), "-inf");
  const EvalRecord back = record_from_json(Json::parse(j.dump()));
  EXPECT_TRUE(std::isnan(back.trials[1].max_abs_error));
  EXPECT_EQ(back.trials[1].max_rel_error, std::numeric_limits<double>::infinity());
  EXPECT_EQ(back.speedup, -std::numeric_limits<double>::infinity());
}

TEST(EvalRecord, MalformedDocumentsAreInputErrors) {
  Json j = testing::sample_record();
  Json missing = j;
  missing.erase("reward");
  EXPECT_THROW(record_from_json(missing), InputError);
  Json wrong_type = j;
  wrong_type["task_id"] = "nineteen";
  EXPECT_THROW(record_from_json(wrong_type), InputError);
  Json bad_outcome = j;
  bad_outcome["outcome"] = "fine";
  EXPECT_THROW(record_from_json(bad_outcome), InputError);
  Json newer = j;
  newer["schema_version"] = kEvalRecordSchemaVersion + 1;
  EXPECT_THROW(record_from_json(newer), InputError);
  Json bad_number = j;
  bad_number["reward"] = "lots";
  EXPECT_THROW(record_from_json(bad_number), InputError);
}

TEST(EvalRecord, TimestampIsIso8601Utc) {
  const auto when = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'772'714'096'789));
  EXPECT_EQ(utc_timestamp(when), "2026-03-05T12:34:56.789Z");
  using std::chrono::milliseconds;
  EXPECT_EQ(utc_timestamp(std::chrono::system_clock::time_point(milliseconds(1'709'251'199'999))),
            "2024-02-29T23:59:59.999Z");  // a leap day
  EXPECT_EQ(utc_timestamp(std::chrono::system_clock::time_point(milliseconds(-1))), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(utc_timestamp(std::chrono::system_clock::time_point(milliseconds(0))), "1970-01-01T00:00:00.000Z");
  EXPECT_FALSE(kbrl_version().empty());
  EXPECT_NE(kbrl_version(), "unknown");
}

}  // namespace
}  // namespace kbrl
