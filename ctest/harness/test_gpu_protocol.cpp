// The parent <-> GPU worker messages: base64 (RFC 4648 test vectors) and JSON round trips.
#include <gtest/gtest.h>

#include <set>

#include <kbrl/base64.h>
#include <kbrl/error.h>

#include <harness/gpu/compare_kernel.h>
#include <harness/worker/gpu_protocol.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

TEST(Base64, Rfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode(plain), encoded);
    EXPECT_EQ(base64_decode(encoded), plain);
  }
}

TEST(Base64, BinaryRoundTripAndMalformedInput) {
  std::string bytes;
  for (int i = 0; i < 1000; ++i) bytes += static_cast<char>((i * 37) & 0xFF);
  EXPECT_EQ(base64_decode(base64_encode(bytes)), bytes);
  EXPECT_THROW(base64_decode("abc"), InputError);
  EXPECT_THROW(base64_decode("ab!d"), InputError);
  EXPECT_THROW(base64_decode("a=bc"), InputError);
}

TEST(GpuProtocol, JobRoundTrip) {
  GpuJob job;
  job.task_id = 19;
  job.scale = Scale::small;
  job.candidate.task_id = 19;
  job.candidate.source = "extern \"C\" __global__ void k(const float* x, float* y) {}";
  job.candidate.launches = {{"k", {4, 1, 1}, {256, 1, 1}, 0,
                             {{ArgKind::input, 0}, {ArgKind::output, 0}, {ArgKind::i64, 0, 0.0, 1234}}}};
  job.cubin = std::string("\0\x01\xff binary", 10);
  job.check = {3, true, 1e-2, 1e-2, 0xFEEDFACECAFEBEEFULL};
  job.timing.stop = stop_config(TimingMode::full);
  job.timing.warmups = 2;
  job.timing.time_reference = false;
  const GpuJob back = nlohmann::json(job).get<GpuJob>();
  EXPECT_EQ(back.task_id, 19);
  EXPECT_EQ(back.scale, Scale::small);
  EXPECT_EQ(back.candidate, job.candidate);
  EXPECT_EQ(back.cubin, job.cubin);
  EXPECT_EQ(back.check.trials, 3);
  EXPECT_TRUE(back.check.robust_inputs);
  EXPECT_EQ(back.check.secret, job.check.secret);
  EXPECT_DOUBLE_EQ(back.check.atol, 1e-2);
  EXPECT_EQ(back.timing.stop, job.timing.stop);
  EXPECT_EQ(back.timing.warmups, 2);
  EXPECT_FALSE(back.timing.time_reference);
}

TEST(GpuProtocol, ResultRoundTripKeepsNonFiniteErrors) {
  GpuJobResult r;
  r.outcome = Outcome::wrong_answer;
  r.detail = "trial 0: 3 of 10 output elements are NaN";
  r.trials = {{0, "trial-0", false, INFINITY, INFINITY, "NaN", std::nullopt, std::nullopt}};
  r.candidate_ms = {1.5, 1.25};
  r.reference_ms = {1.0, 1.0};
  r.timed_runs_checked = 2;
  r.restart_worker = true;
  r.stage_ms = {{"load", 1.5}, {"check", 20.25}, {"accuracy", 3.0}};
  r.trials[0].f64_error = 2e-7;
  const GpuJobResult back = nlohmann::json(r).get<GpuJobResult>();
  EXPECT_EQ(back.stage_ms, r.stage_ms);
  EXPECT_EQ(back.trials[0].f64_error, 2e-7);
  EXPECT_FALSE(back.trials[0].f64_reference_error.has_value());
  EXPECT_EQ(back.outcome, Outcome::wrong_answer);
  EXPECT_EQ(back.detail, r.detail);
  ASSERT_EQ(back.trials.size(), 1u);
  EXPECT_TRUE(std::isinf(back.trials[0].max_abs_error));
  EXPECT_EQ(back.candidate_ms, r.candidate_ms);
  EXPECT_EQ(back.reference_ms, r.reference_ms);
  EXPECT_EQ(back.timed_runs_checked, 2);
  EXPECT_TRUE(back.restart_worker);
}

TEST(GpuProtocol, WarmupsAreDrawnFromTheSecretAndTheCandidate) {
  std::set<int> seen;
  for (uint64_t secret = 0; secret < 200; ++secret) {
    const int w = warmups_for(secret, "key");
    EXPECT_GE(w, 2);
    EXPECT_LE(w, 6);
    seen.insert(w);
  }
  EXPECT_EQ(seen.size(), 5u);  // every count in 2..6 occurs
  EXPECT_EQ(warmups_for(9, "a"), warmups_for(9, "a"));
  int differ = 0;
  for (int i = 0; i < 50; ++i) differ += warmups_for(9, "a" + std::to_string(i)) != warmups_for(9, "b");
  EXPECT_GT(differ, 0);
}

TEST(GpuProtocol, TrialSeedsDifferByTrialTaskAndSecret) {
  EXPECT_NE(trial_seed(1, 19, 0), trial_seed(1, 19, 1));
  EXPECT_NE(trial_seed(1, 19, 0), trial_seed(1, 20, 0));
  EXPECT_NE(trial_seed(1, 19, 0), trial_seed(2, 19, 0));
  EXPECT_EQ(trial_seed(7, 1, 3), trial_seed(7, 1, 3));
}

TEST(GpuProtocol, UnknownOpIsRejectedWithoutASession) {
  EXPECT_THROW(parse_scale("medium"), InputError);
}

}  // namespace
}  // namespace kbrl

namespace kbrl {
namespace {

TEST(CompareKernel, CompilesWithNvrtcWithoutAGpu) {
  // The comparison kernel the GPU session loads at start: it must compile for Hopper anywhere.
  const std::string cubin = compile_compare_kernel("sm_90a");
  EXPECT_GT(cubin.size(), 1000u);
  EXPECT_EQ(cubin.substr(0, 4), "\x7f" "ELF");
  EXPECT_THROW(compile_compare_kernel("sm_1"), Error);
}

}  // namespace
}  // namespace kbrl
