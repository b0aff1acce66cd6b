// The input sets (reference_model.h; the mixes: test_input_mixes.cpp). kernelbench: torch::rand
// under the seed, bit for bit.
// stress, for every task at small scale: finite, deterministic per seed, beyond [0,1) unless every
// float input is a declared restricted domain, every input inside its declared domain, and a finite
// reference output. Plus the properties the stress sets exist for (one-sign slices for the
// extremum tasks, a cumulative product that stays in fp32's range at KernelBench's length).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cfloat>
#include <set>
#include <string>

#include <kbrl/error.h>

#include <reference/reference_model.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

using Kind = InputDomain::Kind;
using Structure = InputDomain::Structure;

std::vector<double> scalars_of(const TaskSpec& spec) {
  std::vector<double> v;
  for (const auto& s : spec.scalars) v.push_back(s.value);
  return v;
}

double min_of(const torch::Tensor& t) { return t.min().item<double>(); }
double max_of(const torch::Tensor& t) { return t.max().item<double>(); }

/// Expects every declared property of one drawn input.
void expect_in_domain(const torch::Tensor& t, const InputDomain& d) {
  switch (d.kind) {
    case Kind::interval:
      ASSERT_EQ(t.scalar_type(), torch::kFloat32);
      EXPECT_GE(min_of(t), d.lo);
      EXPECT_LE(max_of(t), d.hi);
      break;
    case Kind::class_index:
      ASSERT_EQ(t.scalar_type(), torch::kInt64);
      EXPECT_GE(min_of(t), 0);
      EXPECT_LT(max_of(t), d.hi);
      break;
    case Kind::probability_rows: {
      ASSERT_EQ(t.scalar_type(), torch::kFloat32);
      EXPECT_GT(min_of(t), 0) << "a probability is 0: its log is -inf";
      EXPECT_LE(max_of(t), 1);
      const double worst = (t.to(torch::kFloat64).sum(-1) - 1).abs().max().item<double>();
      EXPECT_LE(worst, 1e-5) << "a row does not sum to 1";
      break;
    }
    case Kind::sign:
      ASSERT_EQ(t.scalar_type(), torch::kFloat32);
      EXPECT_TRUE(((t == 1) | (t == -1)).all().item<bool>()) << "a value is not +-1";
      EXPECT_TRUE((t == 1).any().item<bool>() && (t == -1).any().item<bool>());
      break;
    case Kind::mask:
      ASSERT_EQ(t.scalar_type(), torch::kBool);
      EXPECT_TRUE(t.any().item<bool>() && (~t).any().item<bool>());
      break;
  }
  switch (d.structure) {
    case Structure::dense: break;
    case Structure::symmetric: EXPECT_TRUE(torch::equal(t, t.t())) << "not symmetric"; break;
    case Structure::upper_triangular: EXPECT_TRUE(torch::equal(t, t.triu())) << "not upper"; break;
    case Structure::lower_triangular: EXPECT_TRUE(torch::equal(t, t.tril())) << "not lower"; break;
  }
}

bool all_equal(const Tensors& a, const Tensors& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!torch::equal(a[i], b[i])) return false;
  return true;
}

TEST(InputSets, NamesRoundTripAndAnUnknownOneIsAnInputError) {
  for (auto set : {InputSet::kernelbench, InputSet::stress, InputSet::outliers, InputSet::mixture})
    EXPECT_EQ(parse_input_set(to_string(set)), set);
  EXPECT_EQ(to_string(InputSet::stress), "stress");
  try {
    parse_input_set("wide");
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'wide'"), std::string::npos) << message;
    EXPECT_NE(message.find("kernelbench"), std::string::npos) << message;
    EXPECT_NE(message.find("stress"), std::string::npos) << message;
  }
}

// The kernelbench set is what it always was: one torch::rand per input, in order, under
// torch::manual_seed(seed) (the default set, and the set named explicitly).
TEST(InputSets, KernelBenchSetIsTorchRandUnderTheSeed) {
  for (int id : {1, 19, 63}) {
    SCOPED_TRACE("task " + std::to_string(id));
    const TaskSpec spec = task_spec(id, Scale::small);
    torch::manual_seed(1234);
    Tensors expected;
    for (const auto& in : spec.inputs) expected.push_back(torch::rand(in.shape));
    EXPECT_TRUE(all_equal(make_inputs(spec, 1234, torch::kCPU), expected));
    EXPECT_TRUE(all_equal(make_inputs(spec, 1234, torch::kCPU, InputSet::kernelbench), expected));
    EXPECT_FALSE(all_equal(make_inputs(spec, 1234, torch::kCPU, InputSet::stress), expected));
  }
  // A task with its own draw: rand for the logits, then randint for the classes.
  const TaskSpec ce = task_spec(95, Scale::small);
  torch::manual_seed(77);
  auto logits = torch::rand(ce.inputs[0].shape);
  auto classes = torch::randint(0, ce.inputs[0].shape[1], ce.inputs[1].shape, torch::kInt64);
  EXPECT_TRUE(all_equal(make_inputs(ce, 77, torch::kCPU, InputSet::kernelbench), {logits, classes}));
}

// Every task's stress set at small scale, with the reference run on it.
TEST(InputSets, EveryStressSetIsFiniteDeterministicInItsDomainAndBeyondUnitInterval) {
  std::set<int> restricted_only;
  for (int id : task_ids()) {
    SCOPED_TRACE("task " + std::to_string(id));
    const TaskSpec spec = task_spec(id, Scale::small);
    const auto domains = input_domains(spec, InputSet::stress);
    ASSERT_EQ(domains.size(), spec.inputs.size());
    const Tensors inputs = make_inputs(spec, 3, torch::kCPU, InputSet::stress);
    ASSERT_EQ(inputs.size(), spec.inputs.size());

    bool open_float = false, beyond = false;
    for (size_t i = 0; i < inputs.size(); ++i) {
      SCOPED_TRACE("input " + spec.inputs[i].name);
      const auto& x = inputs[i];
      EXPECT_EQ(x.sizes().vec(), spec.inputs[i].shape);
      EXPECT_EQ(x.scalar_type(), to_torch(spec.inputs[i].dtype));
      expect_in_domain(x, domains[i]);
      if (!x.is_floating_point()) continue;
      EXPECT_TRUE(torch::isfinite(x).all().item<bool>());
      open_float = open_float || !domains[i].restricted();
      beyond = beyond || min_of(x) < 0 || max_of(x) >= 2;
    }
    if (open_float) {
      EXPECT_TRUE(beyond) << "every float input stays inside [0,2)";
    } else {
      restricted_only.insert(id);
    }

    auto outputs = make_reference(spec)(inputs, scalars_of(spec));
    ASSERT_EQ(outputs.size(), spec.outputs.size());
    for (const auto& y : outputs) {
      if (!y.is_floating_point()) continue;
      EXPECT_TRUE(torch::isfinite(y).all().item<bool>()) << "non-finite reference output";
      EXPECT_TRUE((y != 0).any().item<bool>()) << "the reference output is all zeros";
    }

    EXPECT_TRUE(all_equal(make_inputs(spec, 3, torch::kCPU, InputSet::stress), inputs))
        << "not deterministic";
    EXPECT_FALSE(all_equal(make_inputs(spec, 4, torch::kCPU, InputSet::stress), inputs))
        << "seeds 3 and 4 draw the same inputs";

    const std::string stress = describe_inputs(spec, InputSet::stress);
    const std::string kernelbench = describe_inputs(spec, InputSet::kernelbench);
    EXPECT_NE(stress, kernelbench);
    for (const auto& in : spec.inputs) {
      EXPECT_NE(stress.find(in.name + " "), std::string::npos) << stress;
      EXPECT_NE(kernelbench.find(in.name + " "), std::string::npos) << kernelbench;
    }
  }
  // Only the KL divergence keeps every float input in a narrow domain (probabilities).
  EXPECT_EQ(restricted_only, std::set<int>{98});
}

// The timed samples rely on this: each draws its inputs under a seed of its own, and the reference's
// answer to one sample's inputs is left in freed memory unpoisoned (gpu/time.cpp), so no two seeds may
// give a task the same inputs or the same answer in any set.
TEST(InputSets, AnotherSeedDrawsOtherInputsWithAnotherAnswerInEverySet) {
  for (int id : task_ids()) {
    const TaskSpec spec = task_spec(id, Scale::small);
    const auto reference = make_reference(spec);
    for (InputSet set : {InputSet::kernelbench, InputSet::stress, InputSet::outliers, InputSet::mixture}) {
      SCOPED_TRACE("task " + std::to_string(id) + ", " + std::string(to_string(set)));
      const Tensors a = make_inputs(spec, 11, torch::kCPU, set), b = make_inputs(spec, 12, torch::kCPU, set);
      EXPECT_FALSE(all_equal(a, b)) << "seeds 11 and 12 draw the same inputs";
      EXPECT_FALSE(all_equal(reference(a, scalars_of(spec)), reference(b, scalars_of(spec))))
          << "seeds 11 and 12 give the same reference answer";
    }
  }
}

// The kernelbench set's declarations hold too (they are what wrong_answer details quote).
TEST(InputSets, KernelBenchDeclarationsHold) {
  for (int id : task_ids()) {
    SCOPED_TRACE("task " + std::to_string(id));
    const TaskSpec spec = task_spec(id, Scale::small);
    const auto domains = input_domains(spec, InputSet::kernelbench);
    const Tensors inputs = make_inputs(spec, 5, torch::kCPU);
    ASSERT_EQ(domains.size(), inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      SCOPED_TRACE("input " + spec.inputs[i].name);
      expect_in_domain(inputs[i], domains[i]);
    }
  }
}

TEST(InputSets, DescriptionsSayWhatIsDrawn) {
  auto stress = [](int id) { return describe_inputs(task_spec(id, Scale::small), InputSet::stress); };
  auto kernelbench = [](int id) {
    return describe_inputs(task_spec(id, Scale::kernelbench), InputSet::kernelbench);
  };
  EXPECT_EQ(stress(19), "x ~ uniform[-100, 100)");
  EXPECT_EQ(stress(23), "x ~ uniform[-100, 100)");
  EXPECT_EQ(stress(1), "A ~ uniform[-10, 10); B ~ uniform[-10, 10)");
  EXPECT_EQ(stress(97), "Q ~ uniform[-2, 2); K ~ uniform[-2, 2); V ~ uniform[-2, 2)");
  EXPECT_EQ(stress(95), "predictions ~ uniform[-10, 10); targets ~ uniform integers in [0, 1000)");
  EXPECT_EQ(stress(100), "predictions ~ uniform[-10, 10); targets = -1 or +1 equally likely");
  EXPECT_EQ(stress(13), "A = (u + u^T)/2, u ~ uniform[-10, 10); B = (u + u^T)/2, u ~ uniform[-10, 10)");
  EXPECT_EQ(stress(49),
            "x ~ uniform[-10, 10) + 15*o, o uniform over {-1, 0, 1}, one o per (b, k): the "
            "x[b, :, k] reduced together");
  EXPECT_EQ(stress(90), "x = s*exp(u), s = -1 or +1 equally likely, u ~ uniform[-0.245, 0.245)");
  EXPECT_EQ(describe_inputs(task_spec(90, Scale::kernelbench), InputSet::stress),
            "x = s*exp(u), s = -1 or +1 equally likely, u ~ uniform[-0.00957, 0.00957)");
  EXPECT_EQ(kernelbench(19), "x ~ uniform[0, 1)");
  EXPECT_EQ(kernelbench(95), "predictions ~ uniform[0, 1); targets ~ uniform integers in [0, 4096)");
  EXPECT_EQ(kernelbench(94),
            "predictions = s*u, s ~ uniform[0, 1) once per draw, u ~ uniform[0, 1); targets ~ "
            "uniform[0, 1)");
}

// The restricted domains are declared where the operator needs them, in both sets.
TEST(InputSets, RestrictedDomainsAreDeclared) {
  for (auto set : {InputSet::kernelbench, InputSet::stress}) {
    SCOPED_TRACE(std::string(to_string(set)));
    auto domains = [set](int id) { return input_domains(task_spec(id, Scale::small), set); };
    EXPECT_EQ(domains(95)[1].kind, Kind::class_index);
    EXPECT_EQ(domains(95)[1].hi, 1000);
    EXPECT_EQ(domains(98)[0].kind, Kind::probability_rows);
    EXPECT_EQ(domains(98)[1].kind, Kind::probability_rows);
    EXPECT_EQ(domains(100)[1].kind, Kind::sign);
    EXPECT_EQ(domains(93)[1].kind, Kind::mask);
    for (int i : {0, 1}) {
      EXPECT_EQ(domains(13)[i].structure, Structure::symmetric);
      EXPECT_EQ(domains(14)[i].structure, Structure::upper_triangular);
      EXPECT_EQ(domains(15)[i].structure, Structure::lower_triangular);
    }
  }
}

// The stress range of each family (reference/README.md's table) and its exceptions.
TEST(InputSets, StressRangesFollowTheFamilyTable) {
  const std::set<int> extremum = {41, 42, 43, 49, 51, 52, 53};
  for (int id : task_ids()) {
    SCOPED_TRACE("task " + std::to_string(id));
    const TaskSpec spec = task_spec(id, Scale::kernelbench);
    const auto domain = input_domains(spec, InputSet::stress).at(0);
    if (id == 90 || id == 98) continue;  // cumprod and KL: CumprodStays..., RestrictedDomains...
    double bound = 10;
    if (spec.family == Family::elementwise || spec.family == Family::softmax) bound = 100;
    if (id == 12) bound = 10;  // diagonal scaling: a product
    if (spec.family == Family::attention) bound = 2;
    if (extremum.count(id)) bound = 25;  // uniform[-10, 10) shifted by -15, 0 or +15
    EXPECT_EQ(domain.kind, Kind::interval);
    EXPECT_EQ(domain.lo, -bound);
    EXPECT_EQ(domain.hi, bound);
  }
}

// Max-type reductions and max pooling: some reduced slices are all negative, some all positive.
TEST(InputSets, ExtremumTasksGetSlicesOfOneSign) {
  const TaskSpec max_reduction = task_spec(49, Scale::small);  // reduces dim 1 of [B,R,K]
  auto x = make_inputs(max_reduction, 3, torch::kCPU, InputSet::stress)[0];
  EXPECT_TRUE((x.amax(1) < 0).any().item<bool>());
  EXPECT_TRUE((x.amin(1) > 0).any().item<bool>());
  EXPECT_TRUE((x.amax(1) > 0).any().item<bool>());
  for (int id : {41, 42, 43}) {  // per (n, c) channel
    SCOPED_TRACE("task " + std::to_string(id));
    const TaskSpec spec = task_spec(id, Scale::small);
    auto channels = make_inputs(spec, 3, torch::kCPU, InputSet::stress)[0].flatten(2);
    EXPECT_TRUE((channels.amax(2) < 0).any().item<bool>());
    EXPECT_TRUE((channels.amin(2) > 0).any().item<bool>());
    auto y = make_reference(spec)({make_inputs(spec, 3, torch::kCPU, InputSet::stress)[0]}, {})[0];
    EXPECT_TRUE((y.flatten(2).amax(2) < 0).any().item<bool>()) << "no all-negative output channel";
  }
}

// Task 90 at KernelBench's row length (32768; fewer rows): signed products that wander (log|y| at
// a row's end has spread 1) but stay in a narrow band, so the output's RMS (which scales the stress
// check's absolute tolerance) stays near 2 and nothing overflows or underflows.
TEST(InputSets, CumprodStaysInFp32RangeAtKernelBenchLength) {
  TaskSpec spec = task_spec(90, Scale::kernelbench);
  ASSERT_EQ(spec.inputs[0].shape[1], 32768);
  spec.inputs[0].shape[0] = 256;
  spec.outputs[0].shape[0] = 256;
  const auto x = make_inputs(spec, 8, torch::kCPU, InputSet::stress)[0];
  EXPECT_LE(x.abs().max().item<double>(), std::exp(0.00957) * (1 + 1e-6));
  EXPECT_GE(x.abs().min().item<double>(), std::exp(-0.00957) * (1 - 1e-6));
  const auto y = make_reference(spec)({x}, {})[0];
  EXPECT_TRUE(torch::isfinite(y).all().item<bool>());
  EXPECT_TRUE((y < 0).any().item<bool>() && (y > 0).any().item<bool>());
  const auto log_magnitude = y.abs().log();
  EXPECT_LT(log_magnitude.abs().max().item<double>(), 8.0) << "a product left the band e^-8..e^8";
  const double rms = y.square().mean().sqrt().item<double>();
  EXPECT_LT(rms, 4.0);
  // The products do wander: the spread of log|y| at the rows' ends is about 1.
  const double spread = log_magnitude.select(1, 32767).std().item<double>();
  EXPECT_GT(spread, 0.8);
  EXPECT_LT(spread, 1.25);
}

}  // namespace
}  // namespace kbrl
