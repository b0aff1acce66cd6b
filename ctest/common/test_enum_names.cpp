// The one enum-to-string mechanism (kbrl/enum_names.h): every table of every enum round-trips
// through its public to_string / parse functions, lists exactly the enum's values, and a bad name
// or a bad value gives the documented error.
#include <string>

#include <gtest/gtest.h>

#include <experiments/algorithms.h>
#include <experiments/hypothesis_tests.h>
#include <experiments/selection.h>
#include <experiments/training_loops.h>
#include <harness/compile/precision_audit.h>
#include <harness/evaluator.h>
#include <harness/reward.h>
#include <harness/stats.h>
#include <harness/worker/worker.h>
#include <kbrl/enum_names.h>
#include <kbrl/outcome.h>
#include <kernels/action.h>
#include <kernels/candidate.h>
#include <policies/endpoint_policy.h>
#include <policies/policy.h>
#include <kernels/prompt.h>
#include <reference/task.h>

namespace kbrl {
namespace {

// Every value of E: to_string (where E has one) gives the table's name, `parse` gives the value
// back, and the table ends at `last` (so an enumerator appended without a name fails here; one
// inserted elsewhere does not compile).
template <typename E, typename Parse>
void expect_round_trip(E last, Parse parse) {
  EXPECT_EQ(enum_count<E>(), static_cast<size_t>(last) + 1) << EnumNames<E>::what;
  for (E value : enum_values<E>()) {
    const std::string_view name = enum_name(value);
    if constexpr (requires { to_string(value); }) {
      EXPECT_EQ(to_string(value), name);
    }
    EXPECT_EQ(parse(name), value) << name;
    EXPECT_EQ(find_enum<E>(name), value) << name;
  }
}

template <typename E>
void expect_round_trip(E last) {
  expect_round_trip(last, [](std::string_view name) { return parse_enum<E>(name); });
}

template <typename E>
std::string parse_error(std::string_view text) {
  try {
    parse_enum<E>(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(EnumNames, EveryTableRoundTrips) {
  expect_round_trip(Outcome::harness_error, parse_outcome);
  expect_round_trip(DType::b8);
  expect_round_trip(Scale::small, parse_scale);
  expect_round_trip(Family::attention, parse_family);
  expect_round_trip(InputSet::mixture, parse_input_set);
  expect_round_trip(ArgKind::i64, parse_arg_kind);
  expect_round_trip(ActionKind::text, parse_action_kind);
  expect_round_trip(TextStyle::file, parse_text_style);
  expect_round_trip(InputChecks::kernelbench, parse_input_checks);
  expect_round_trip(CallStatus::handler_error);
  expect_round_trip(RewardKind::threshold, parse_reward_kind);
  expect_round_trip(PrecisionPolicy::reject, parse_precision_policy);
  expect_round_trip(PrecisionCategory::fp8, parse_precision_category);
  expect_round_trip(TimingMode::adaptive, parse_timing_mode);
  expect_round_trip(StopReason::time_budget);
  expect_round_trip(EndpointApi::completions);
  expect_round_trip(ServerKind::llamacpp);
  expect_round_trip(Aggregation::constant, parse_aggregation);
  expect_round_trip(SystemPrompt::none, parse_system_prompt);
  expect_round_trip(stats::PValueMethod::normal_approximation);
  expect_round_trip(SelectionStrategy::surprisal_top3);
  expect_round_trip(SdpoTeacher::prompt_only, parse_sdpo_teacher);
  expect_round_trip(TttUpdate::sdpo);
}

// Names that files, CSVs and command lines already use must not drift.
TEST(EnumNames, NamesInUse) {
  EXPECT_EQ(to_string(DType::f32), "float32");
  EXPECT_EQ(to_string(ServerKind::auto_detect), "auto");
  EXPECT_EQ(to_string(SelectionStrategy::oracle), "best_correct_oracle");
  EXPECT_EQ(to_string(Outcome::compile_error), "compile_error");
  EXPECT_EQ(enum_names_list<TimingMode>(), "fast, full, adaptive");
  EXPECT_EQ(enum_values<Scale>(), (std::array{Scale::kernelbench, Scale::small}));
}

TEST(EnumNames, BadNameIsInputErrorNamingTheLegalValues) {
  EXPECT_EQ(parse_error<Scale>("huge"), "unknown scale 'huge' (expected kernelbench, small)");
  EXPECT_EQ(parse_error<TimingMode>("Fast"),
            "unknown timing mode 'Fast' (expected fast, full, adaptive)");  // case-sensitive
  EXPECT_EQ(parse_error<Outcome>(""), "unknown outcome '' (expected ok, format_error, unsupported_format, "
                                      "compile_error, load_error, launch_error, runtime_error, "
                                      "timeout, wrong_shape, wrong_answer, nondeterministic, "
                                      "input_mutated, guard_violation, impossible, not_run, harness_error)");
  // A table's note follows the list.
  EXPECT_EQ(parse_error<InputChecks>("all"),
            "unknown input checks 'all' (expected robust, kernelbench): robust checks "
            "KernelBench's inputs, stress inputs and mixes of the two, kernelbench KernelBench's inputs only");
  // The public wrappers throw the same error.
  try {
    parse_family("matmul");
    FAIL() << "parse_family accepted 'matmul'";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown operator family 'matmul' (expected gemm, elementwise, softmax, norm, "
              "reduction, arg_reduction, pooling, scan, loss, conv, attention)");
  }
  EXPECT_THROW(parse_sdpo_teacher("oracle"), InputError);
  EXPECT_EQ(find_enum<SystemPrompt>("reasoning "), std::nullopt);
}

// The endpoint spec words its own error (it names the key) from the same table.
TEST(EnumNames, EndpointSpecNamesTheKeyAndTheLegalValues) {
  try {
    parse_endpoint_spec("endpoint:http://h:1,server=tgi");
    FAIL() << "server=tgi accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "policy spec: server=tgi is not one of auto, openai, vllm, sglang, llamacpp");
  }
  EXPECT_EQ(parse_endpoint_spec("endpoint:http://h:1,api=completions,server=auto").api,
            EndpointApi::completions);
}

TEST(EnumNames, ValueOutsideTheTableIsInternalError) {
  EXPECT_THROW(enum_name(static_cast<Scale>(2)), InternalError);
  EXPECT_THROW(to_string(static_cast<Outcome>(-1)), InternalError);
  try {
    enum_name(static_cast<RewardKind>(7));
    FAIL() << "RewardKind 7 has a name";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("reward kind value 7 has no name"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kbrl
