// The mixed input sets (reference_model.h: outliers, mixture), for every task at small scale: in the
// task's declared domain, deterministic per seed, a finite reference output, inputs with a restricted
// domain left as KernelBench draws them, and the mix itself: outliers change few positions of
// KernelBench's draw, mixture takes about half of its blocks from the stress draw. And the check's
// changed-input run (change_few_values): few values, only plain inputs, the domain kept.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <string>

#include <reference/reference_model.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

bool plain(const InputDomain& d) {
  return d.kind == InputDomain::Kind::interval && d.structure == InputDomain::Structure::dense;
}

std::vector<double> scalars(const TaskSpec& spec) {
  std::vector<double> v;
  for (const auto& s : spec.scalars) v.push_back(s.value);
  return v;
}

TEST(InputMixes, EveryTaskDrawsBothMixesInItsDomainDeterministically) {
  int64_t outlier_changed = 0, outlier_total = 0, mixture_changed = 0, mixture_total = 0;
  int inputs_without_outliers = 0;
  for (int id : task_ids()) {
    SCOPED_TRACE("task " + std::to_string(id));
    const TaskSpec spec = task_spec(id, Scale::small);
    const auto kb_domains = input_domains(spec, InputSet::kernelbench);
    const auto stress_domains = input_domains(spec, InputSet::stress);
    const Tensors kernelbench = make_inputs(spec, 5, torch::kCPU, InputSet::kernelbench);
    for (InputSet set : {InputSet::outliers, InputSet::mixture}) {
      SCOPED_TRACE(std::string(to_string(set)));
      const auto domains = input_domains(spec, set);
      const Tensors x = make_inputs(spec, 5, torch::kCPU, set);
      ASSERT_EQ(x.size(), spec.inputs.size());
      const Tensors again = make_inputs(spec, 5, torch::kCPU, set);
      const std::string text = describe_inputs(spec, set);
      for (size_t i = 0; i < x.size(); ++i) {
        SCOPED_TRACE("input " + spec.inputs[i].name);
        EXPECT_TRUE(torch::equal(x[i], again[i])) << "not deterministic";
        EXPECT_EQ(x[i].sizes().vec(), spec.inputs[i].shape);
        EXPECT_NE(text.find(spec.inputs[i].name + " "), std::string::npos) << text;
        const bool mixable = spec.inputs[i].dtype == DType::f32 && plain(kb_domains[i]) && plain(stress_domains[i]);
        if (!mixable) {
          EXPECT_TRUE(torch::equal(x[i], kernelbench[i])) << "a restricted input was mixed";
          continue;
        }
        EXPECT_TRUE(torch::isfinite(x[i]).all().item<bool>());
        EXPECT_GE(x[i].min().item<double>(), domains[i].lo);
        EXPECT_LE(x[i].max().item<double>(), domains[i].hi);
        const int64_t changed = x[i].ne(kernelbench[i]).sum().item<int64_t>();
        if (set == InputSet::outliers) {
          EXPECT_LE(changed, std::max<int64_t>(1, x[i].numel() / 64)) << "more outliers than 1 in 64";
          if (changed == 0) ++inputs_without_outliers;
          outlier_changed += changed;
          outlier_total += x[i].numel();
        } else {
          mixture_changed += changed;
          mixture_total += x[i].numel();
        }
      }
      const auto y = make_reference(spec)(x, scalars(spec));
      for (const auto& out : y) {
        if (out.is_floating_point()) {
          EXPECT_TRUE(torch::isfinite(out).all().item<bool>()) << "non-finite reference";
        }
      }
    }
  }
  EXPECT_GT(outlier_changed, 0);
  EXPECT_LT(outlier_changed * 32, outlier_total);
  EXPECT_LE(inputs_without_outliers, 5) << "outliers that land on equal values are rare";
  EXPECT_GT(mixture_changed * 4, mixture_total) << "mixture takes about half its blocks from the stress draw";
  EXPECT_LT(mixture_changed * 4, mixture_total * 3);
}

TEST(ChangeFewValues, EveryTaskKeepsItsDomainAndOnlyPlainInputsChange) {
  int64_t total = 0;
  for (int id : task_ids()) {
    SCOPED_TRACE("task " + std::to_string(id));
    const TaskSpec spec = task_spec(id, Scale::small);
    for (InputSet set : {InputSet::kernelbench, InputSet::stress, InputSet::mixture}) {
      SCOPED_TRACE(std::string(to_string(set)));
      const Tensors before = make_inputs(spec, 7, torch::kCPU, set);
      Tensors x, again;
      for (const auto& t : before) {
        x.push_back(t.clone());
        again.push_back(t.clone());
      }
      const int64_t changed = change_few_values(spec, x, set, 99);
      EXPECT_EQ(change_few_values(spec, again, set, 99), changed);
      const auto domains = input_domains(spec, set);
      int64_t expected = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        SCOPED_TRACE("input " + spec.inputs[i].name);
        EXPECT_TRUE(torch::equal(x[i], again[i])) << "not deterministic";
        const bool changeable = x[i].scalar_type() == torch::kFloat32 && plain(domains[i]);
        if (!changeable) {
          EXPECT_TRUE(torch::equal(x[i], before[i])) << "an input with a restricted domain changed";
          continue;
        }
        const int64_t n = x[i].numel();
        expected += std::min(n, std::clamp<int64_t>(n >> 12, 64, int64_t{1} << 20));
        EXPECT_LE(x[i].ne(before[i]).sum().item<int64_t>(), std::min(n, std::clamp<int64_t>(n >> 12, 64, int64_t{1} << 20)));
        EXPECT_GE(x[i].min().item<double>(), domains[i].lo);
        EXPECT_LE(x[i].max().item<double>(), domains[i].hi);
      }
      EXPECT_EQ(changed, expected);
      total += changed;
    }
  }
  EXPECT_GT(total, 0);
  // The seed moves the positions; the values moved are ones the input held.
  const TaskSpec relu = task_spec(19, Scale::small);
  const Tensors base = make_inputs(relu, 3, torch::kCPU, InputSet::kernelbench);
  Tensors a = {base[0].clone()}, b = {base[0].clone()};
  change_few_values(relu, a, InputSet::kernelbench, 1);
  change_few_values(relu, b, InputSet::kernelbench, 2);
  EXPECT_FALSE(torch::equal(a[0].ne(base[0]), b[0].ne(base[0])));
  const auto moved = a[0].masked_select(a[0].ne(base[0]));
  ASSERT_GT(moved.numel(), 0);
  EXPECT_TRUE(torch::isin(moved, base[0].reshape(-1)).all().item<bool>()) << "a value the input did not hold";
}

TEST(InputMixes, TheSeedMovesTheMix) {
  const TaskSpec relu = task_spec(19, Scale::small);
  for (InputSet set : {InputSet::outliers, InputSet::mixture}) {
    const auto a = make_inputs(relu, 1, torch::kCPU, set)[0];
    const auto b = make_inputs(relu, 2, torch::kCPU, set)[0];
    const auto kb_a = make_inputs(relu, 1, torch::kCPU, InputSet::kernelbench)[0];
    const auto kb_b = make_inputs(relu, 2, torch::kCPU, InputSet::kernelbench)[0];
    EXPECT_FALSE(torch::equal(a.ne(kb_a), b.ne(kb_b))) << to_string(set) << ": the same positions for two seeds";
  }
}

}  // namespace
}  // namespace kbrl
