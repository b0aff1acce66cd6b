// The check step: the trials (trial_plan), each comparing the candidate's outputs with the
// reference's on fresh inputs, and verifying that inputs and parameters are untouched and that two
// runs agree; in one trial the second run is on inputs changed at a few positions (a remembered
// result does not pass it); on the first trial of KernelBench's draw, the accuracy against float64
// (accuracy.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>


#include <c10/cuda/CUDACachingAllocator.h>

#include "accuracy.h"
#include "session_impl.h"

namespace kbrl::gpu {
namespace {

constexpr double kRelL2Factor = 10.0;  // ||out - ref|| / ||ref|| must stay under 10 x rtol

}  // namespace

void enqueue_fingerprints(GpuSession::Impl& s, const std::vector<torch::Tensor>& tensors, uint64_t key,
                          const torch::Tensor& slots) {
  slots.zero_();
  for (size_t i = 0; i < tensors.size(); ++i)
    fingerprint_into(tensors[i], key + i, slots, static_cast<int64_t>(i), *s.compare, s.cu_stream());
}

std::vector<int64_t> fingerprints(GpuSession::Impl& s, const std::vector<torch::Tensor>& tensors, uint64_t key) {
  auto slots = torch::empty({static_cast<int64_t>(tensors.size())},
                            torch::TensorOptions().dtype(torch::kInt64).device(s.device));
  enqueue_fingerprints(s, tensors, key, slots);
  const auto host = slots.cpu();
  std::vector<int64_t> out(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) out[i] = host[static_cast<int64_t>(i)].item<int64_t>();
  return out;
}

namespace {

/// Runs the plan once over freshly poisoned outputs; returns a fault or nothing.
std::optional<CandidateFault> run_once(GpuSession::Impl& s, JobState& st) {
  for (auto& o : st.outputs) o.poison();
  if (auto fault = enqueue(st.job, st.loaded, st.bindings, s.cu_stream())) return fault;
  if (auto fault = synchronize(s.cu_stream())) return fault;
  for (size_t i = 0; i < st.outputs.size(); ++i)
    if (!st.outputs[i].guards_intact())
      return CandidateFault{Outcome::guard_violation,
                            fmt::format("the candidate wrote outside output '{}' (into its guard band)",
                                        st.spec.outputs[i].name)};
  return std::nullopt;
}

/// A fault when the last run left an input different from `input_fp` or a parameter different from
/// the check's (JobState::param_fp); `where` names the run.
std::optional<CandidateFault> touched(GpuSession::Impl& s, JobState& st, const std::vector<int64_t>& input_fp,
                                      const std::string& where) {
  const std::vector<int64_t> input_after = fingerprints(s, st.inputs, st.input_key);
  for (size_t i = 0; i < st.inputs.size(); ++i)
    if (input_after[i] != input_fp[i])
      return CandidateFault{Outcome::input_mutated,
                            fmt::format("{}: input '{}' changed", where, st.spec.inputs[i].name)};
  return parameter_fault(st, fingerprints(s, st.params, st.param_key).data(), where);
}

/// ||a - b|| for two flat tensors (b float64), in chunks so that no float64 copy of `a` is made whole.
/// Each chunk's float64 copy of `a` (an answer) becomes the difference in place: no copy of the
/// answer is left in freed memory for the candidate that runs on these inputs next.
double distance(const torch::Tensor& a, const torch::Tensor& b) {
  constexpr int64_t kChunk = int64_t{1} << 26;
  auto sum = torch::zeros({}, b.options());
  for (int64_t at = 0; at < a.numel(); at += kChunk) {
    const int64_t n = std::min(kChunk, a.numel() - at);
    sum += a.narrow(0, at, n).to(torch::kFloat64).sub_(b.narrow(0, at, n)).square_().sum();
  }
  return std::sqrt(sum.item<double>());
}

/// The float64 facts of `inputs` for each output (AccuracyBase), from the float32 reference's
/// `expected`; NaN where the task's reference does not compute in float64 or does not fit. The
/// float64 answer is poisoned before it is freed.
std::vector<AccuracyBase> measure_accuracy_base(GpuSession::Impl& s, const TaskSpec& spec, const Tensors& inputs,
                                                const std::vector<double>& scalars, const Tensors& expected) {
  std::vector<AccuracyBase> base(expected.size());
  Tensors exact, copies;
  try {
    Tensors in64;
    for (const auto& x : inputs) in64.push_back(x.is_floating_point() ? x.to(torch::kFloat64) : x);
    exact = s.reference64(spec)(in64, scalars);
    for (size_t i = 0; i < exact.size() && i < expected.size(); ++i) {
      if (!expected[i].is_floating_point() || exact[i].scalar_type() != torch::kFloat64) continue;
      // Flat copies where an answer is a view in another order (attention's transposed output) are
      // answers too: poisoned with the rest below.
      torch::Tensor e = exact[i].contiguous().view(-1), f = expected[i].reshape(-1);
      if (e.data_ptr() != exact[i].data_ptr()) copies.push_back(e);
      if (f.data_ptr() != expected[i].data_ptr()) copies.push_back(f);
      const double norm = e.norm().item<double>();
      if (!std::isfinite(norm) || norm == 0) continue;
      base[i] = {norm, distance(f, e) / norm};
    }
  } catch (const c10::Error&) {  // an operator without a float64 kernel, or a task whose float64 run does not fit
    base.assign(expected.size(), AccuracyBase{});
  }
  for (auto& t : exact) poison_tensor(t);  // no answer outlives its use
  for (auto& t : copies) poison_tensor(t);
  return base;
}

}  // namespace

void prepare_accuracy(GpuSession::Impl& s, const GpuJob& job, const TaskSpec& spec) {
  const std::vector<TrialPlan> plan = trial_plan(job.check, spec.id);
  const auto at = accuracy_trial(plan, changed_input_trial(job.check, spec.id, plan.size()));
  if (!at) return;
  const auto key = std::make_tuple(spec.id, spec.scale, at->key);
  if (s.accuracy_bases.count(key)) return;
  const TrialPlan& p = plan[at->trial];
  ReferenceModel& model = s.reference(spec);
  const std::vector<double> scalars = scalars_of(spec);
  std::vector<AccuracyBase> base;
  Tensors expected;
  try {
    Tensors inputs = make_inputs(spec, p.seed, s.device, p.set);
    if (at->changed) change_few_values(spec, inputs, p.set, changed_input_seed(job.check, spec.id, at->trial));
    expected = model(inputs, scalars);
    base = measure_accuracy_base(s, spec, inputs, scalars, expected);
  } catch (const c10::OutOfMemoryError&) {
    base.clear();  // not even the float32 reference fits: not measured
  }
  for (auto& t : expected) poison_tensor(t);  // the answer to a trial's inputs does not outlive its use
  // Float64 copies of a large task's inputs take tens of GiB: give them back to the device (another
  // worker process may need it), not to this process's cache.
  c10::cuda::CUDACachingAllocator::emptyCache();
  // Computed before the candidate's buffers exist, so a candidate cannot make it fail by asking for
  // memory; what does not fit here does not fit for any candidate, and stays "not measured".
  s.accuracy_bases.emplace(key, std::move(base));
}

void enqueue_compare(const torch::Tensor& out, const torch::Tensor& ref, const CheckSettings& s,
                     const CompareKernel& kernel, CUstream stream, const torch::Tensor& partials) {
  if (!out.is_floating_point()) {  // exact comparison: mismatches and the largest difference, in row 0
    partials.zero_();
    partials[0][kOutside].copy_(out.ne(ref).sum());
    partials[0][kMaxAbs].copy_((out.to(torch::kFloat64) - ref.to(torch::kFloat64)).abs().max());
    return;
  }
  KBRL_ASSERT(out.scalar_type() == torch::kFloat32, "floating outputs are float32, not {}",
              c10::toString(out.scalar_type()));
  const auto o = out.contiguous(), r = ref.contiguous();
  kernel.launch(reinterpret_cast<CUdeviceptr>(o.data_ptr()), reinterpret_cast<CUdeviceptr>(r.data_ptr()),
                o.numel(), s.atol, s.rtol, reinterpret_cast<CUdeviceptr>(partials.data_ptr()), stream);
}

TrialCheck judge_compare(const double* totals, const double* maxima, int64_t n, bool floating,
                         const CheckSettings& s) {
  TrialCheck check;
  const auto non_finite = static_cast<int64_t>(totals[kNonFinite]);
  const auto bad = static_cast<int64_t>(totals[kOutside]);
  check.max_abs_error = maxima[kMaxAbs];
  check.max_rel_error = maxima[kMaxRel];
  if (!floating) {
    check.passed = bad == 0;
    if (!check.passed) check.failure = fmt::format("{} of {} elements differ", bad, n);
    return check;
  }
  if (non_finite > 0) {
    check.max_abs_error = check.max_rel_error = INFINITY;
    check.failure = fmt::format("{} of {} output elements are NaN or Inf (unwritten outputs stay NaN)",
                                non_finite, n);
    return check;
  }
  if (bad > 0) {
    check.failure = fmt::format("{} of {} elements outside atol={:g} rtol={:g} (max abs error {:.3g})",
                                bad, n, s.atol, s.rtol, check.max_abs_error);
    return check;
  }
  // allclose alone passes an all-zero output wherever |ref| is far below atol (softmax over 393216
  // columns: every value is ~2.5e-6). The relative L2 error of the whole output closes that hole.
  const double diff_sq = totals[kDiffSq], ref_sq = totals[kRefSq];
  const double rel_l2 = ref_sq > 0 ? std::sqrt(diff_sq / ref_sq) : 0.0;
  if (rel_l2 > kRelL2Factor * s.rtol) {
    check.failure = fmt::format("relative L2 error {:.3g} exceeds {:g} (= {} x rtol) although allclose passed",
                                rel_l2, kRelL2Factor * s.rtol, kRelL2Factor);
    return check;
  }
  check.passed = true;
  return check;
}

CheckSettings settings_for(const CheckSettings& base, const torch::Tensor& expected, InputSet set) {
  CheckSettings settings = base;
  // Inputs beyond [0,1) make outputs of any magnitude: the absolute tolerance scales with the
  // output's RMS (a sum of signed terms can be near zero where its terms are large).
  if (set != InputSet::kernelbench && expected.is_floating_point() && expected.numel() > 0) {
    const double rms = expected.norm().item<double>() / std::sqrt(static_cast<double>(expected.numel()));
    if (std::isfinite(rms) && rms > 1.0) settings.atol *= rms;
  }
  return settings;
}

namespace {

/// Compares every output of the last run with the reference's `expected` (one trial's TrialCheck).
TrialCheck compare_outputs(GpuSession::Impl& s, const JobState& st, const Tensors& expected, InputSet set,
                           std::vector<double>* diff_norms = nullptr) {
  TrialCheck check;
  check.passed = true;
  auto partials = torch::empty({CompareKernel::kBlocks, kCompareStats},
                               torch::TensorOptions().dtype(torch::kFloat64).device(s.device));
  for (size_t i = 0; i < st.outputs.size() && check.passed; ++i) {
    const auto& out = st.outputs[i].tensor;
    TrialCheck c;
    if (out.scalar_type() != expected[i].scalar_type() || out.sizes() != expected[i].sizes()) {
      c.failure = "output shape or dtype differs from the reference";
    } else {
      const CheckSettings settings = settings_for(st.job.check, expected[i], set);
      enqueue_compare(out, expected[i], settings, *s.compare, s.cu_stream(), partials);
      const auto totals = partials.sum(0).cpu().contiguous();
      const auto maxima = std::get<0>(partials.max(0)).cpu().contiguous();
      c = judge_compare(totals.data_ptr<double>(), maxima.data_ptr<double>(), out.numel(), out.is_floating_point(),
                        settings);
      if (diff_norms) {
        diff_norms->resize(st.outputs.size(), std::numeric_limits<double>::quiet_NaN());
        if (out.is_floating_point()) (*diff_norms)[i] = std::sqrt(totals.data_ptr<double>()[kDiffSq]);
      }
    }
    check.max_abs_error = std::max(check.max_abs_error, c.max_abs_error);
    check.max_rel_error = std::max(check.max_rel_error, c.max_rel_error);
    if (!c.passed) {
      check.passed = false;
      check.failure = fmt::format("output '{}': {}", st.spec.outputs[i].name, c.failure);
    }
  }
  return check;
}

/// The reference on the current inputs, compared with the candidate's last outputs; the reference's
/// outputs are poisoned right after (the answer does not outlive its comparison). With `accuracy`
/// (the float64 facts of these inputs, from prepare_accuracy), the accuracy against float64 too: the
/// candidate's relative distance d from the float32 answer is known from the comparison, the float32
/// answer's own error e from `accuracy`, so the candidate's error is within [d - e, d + e] (the
/// triangle inequality). The record gets d + e; the candidate fails when even d - e is beyond
/// accuracy.h's limit.
TrialCheck check_against_reference(GpuSession::Impl& s, JobState& st, InputSet set,
                                   const std::vector<AccuracyBase>* accuracy) {
  Tensors expected = st.model(st.inputs, st.scalars);
  s.mark("reference");
  std::vector<double> diffs;
  TrialCheck check = compare_outputs(s, st, expected, set, &diffs);
  s.mark("compare");
  if (check.passed && accuracy) {
    const auto& base = *accuracy;
    st.accuracy = base;  // the timed runs are held to the same limit (time.cpp)
    double worst = -1;
    for (size_t i = 0; i < base.size() && i < diffs.size(); ++i) {
      if (!std::isfinite(base[i].exact_norm) || !std::isfinite(diffs[i])) continue;
      const double d = diffs[i] / base[i].exact_norm, e = base[i].reference_error;
      const double ratio = std::max(d - e, 0.0) / (accuracy_factor(st.spec.family) * std::max(e, kAccuracyFloor));
      if (ratio <= worst) continue;
      worst = ratio;
      check.f64_error = d + e;
      check.f64_reference_error = e;
      const bool strict = accuracy_judged(st.job.check.atol, st.job.check.rtol);
      if (auto failure = accuracy_failure(st.spec.family, std::max(d - e, 0.0), e); failure && strict) {
        check.passed = false;
        check.failure = fmt::format("output '{}': {}", st.spec.outputs[i].name, *failure);
      }
    }
  }
  for (auto& t : expected) poison_tensor(t);
  s.mark("compare");
  return check;
}

}  // namespace

void fingerprint_into(const torch::Tensor& t, uint64_t key, const torch::Tensor& slots, int64_t index,
                      const CompareKernel& kernel, CUstream stream) {
  const bool whole = t.is_contiguous();
  const auto data = reinterpret_cast<CUdeviceptr>(whole ? t.data_ptr() : t.storage().data());
  const int64_t bytes = whole ? t.numel() * static_cast<int64_t>(t.element_size())
                              : static_cast<int64_t>(t.storage().nbytes());
  const auto slot = reinterpret_cast<CUdeviceptr>(slots.data_ptr()) + static_cast<CUdeviceptr>(index) * 8;
  kernel.fingerprint(data, bytes, key, slot, stream);
}

void poison_tensor(torch::Tensor& t) {
  if (t.is_floating_point()) t.fill_(std::numeric_limits<float>::quiet_NaN());
  else if (t.scalar_type() == torch::kBool) t.fill_(false);
  else t.fill_(-1);
}

std::optional<CandidateFault> parameter_fault(const JobState& st, const int64_t* now, const std::string& where) {
  for (size_t i = 0; i < st.params.size(); ++i)
    if (now[i] != st.param_fp.at(i))  // its parameters are no longer the seeded ones
      return CandidateFault{Outcome::input_mutated,
                            fmt::format("{}: parameter '{}' changed", where, st.spec.parameters[i].name),
                            /*sticky=*/false, /*drop_reference=*/true};
  return std::nullopt;
}

bool parameters_changed(GpuSession::Impl& s, JobState& st) noexcept {
  if (st.param_fp.empty()) return false;  // the candidate never ran
  try {
    return parameter_fault(st, fingerprints(s, st.params, st.param_key).data(), "").has_value();
  } catch (...) {
    return true;  // unknown: the references are rebuilt
  }
}

CheckResult check_candidate(GpuSession::Impl& s, JobState& st) {
  const GpuJob& job = st.job;
  const TaskSpec& spec = st.spec;
  CheckResult result;
  auto fail = [&](CandidateFault fault) {
    result.fault = std::move(fault);
    return result;
  };
  st.param_fp = fingerprints(s, st.params, st.param_key);  // every later reference computes with these
  s.mark("fingerprints");
  const std::vector<TrialPlan> plan = trial_plan(job.check, spec.id);
  const size_t changed_trial = changed_input_trial(job.check, spec.id, plan.size());
  // The float64 facts of the accuracy trial, computed before the candidate's buffers existed.
  const std::optional<AccuracyTrial> accuracy_at = accuracy_trial(plan, changed_trial);
  const std::vector<AccuracyBase>* accuracy = nullptr;
  if (accuracy_at) {
    const auto it = s.accuracy_bases.find(std::make_tuple(spec.id, spec.scale, accuracy_at->key));
    if (it != s.accuracy_bases.end()) accuracy = &it->second;
  }

  if (plan.empty()) {  // timing only (benchmarks): one input set, no checks
    st.inputs = make_inputs(spec, trial_seed(job.check.secret, spec.id, 0), s.device);
    st.bindings.inputs = &st.inputs;
    if (auto fault = run_once(s, st)) return fail(*fault);
  }
  for (size_t k = 0; k < plan.size(); ++k) {
    const TrialPlan& p = plan[k];
    const std::string where = p.set == InputSet::kernelbench
                                  ? fmt::format("trial {}", k)
                                  : fmt::format("trial {} ({} inputs: {})", k, to_string(p.set),
                                                describe_inputs(spec, p.set));
    st.inputs.clear();  // freed first (stream-ordered): one set of inputs in memory, not two
    st.inputs = make_inputs(spec, p.seed, s.device, p.set);
    st.bindings.inputs = &st.inputs;
    s.mark("inputs");
    std::vector<int64_t> input_fp = fingerprints(s, st.inputs, st.input_key);
    s.mark("fingerprints");

    if (auto fault = run_once(s, st)) return fail(*fault);
    s.mark("candidate");
    // On one trial drawn from the secret, the second run takes the same inputs with a few values
    // changed where the candidate cannot predict: a result remembered from the first run (keyed on a
    // few input values, or on anything short of every value) is wrong there. That trial's two runs
    // are not compared with each other; the other trials' are.
    int64_t changed = 0;
    if (k == changed_trial) {
      if (auto fault = touched(s, st, input_fp, where)) return fail(*fault);  // the first run's
      changed = change_few_values(spec, st.inputs, p.set, changed_input_seed(job.check, spec.id, k));
      s.mark("changed_inputs");
      if (changed > 0) input_fp = fingerprints(s, st.inputs, st.input_key);
      s.mark("fingerprints");
    }
    const std::string run_where =
        changed > 0 ? fmt::format("{}, run again with {} input values changed at positions drawn from the run's secret",
                                  where, changed)
                    : where;
    std::vector<int64_t> first_fp, second_fp;
    if (changed == 0) first_fp = fingerprints(s, st.raw_outputs, st.output_key);
    s.mark("fingerprints");
    if (auto fault = run_once(s, st)) return fail(*fault);
    s.mark("candidate");
    if (changed == 0) second_fp = fingerprints(s, st.raw_outputs, st.output_key);
    // The reference runs after the candidate: its inputs and parameters must be the ones it was given.
    if (auto fault = touched(s, st, input_fp, run_where)) return fail(*fault);
    s.mark("fingerprints");

    // The reference runs only now, after the candidate's runs: while the candidate ran, no reference
    // output for these inputs existed anywhere in device memory.
    const bool measures_accuracy = accuracy_at && accuracy_at->trial == k;
    TrialCheck check = check_against_reference(s, st, p.set, measures_accuracy ? accuracy : nullptr);
    check.trial = static_cast<int>(k);
    check.seed_id = changed > 0 ? p.seed_id + "-changed" : p.seed_id;
    result.trials.push_back(check);
    if (!check.passed)
      return fail({Outcome::wrong_answer,
                   changed > 0 ? fmt::format("{}: {} (a result remembered from the run before?)", run_where, check.failure)
                               : fmt::format("{}: {}", where, check.failure)});
    if (changed > 0) continue;
    for (size_t i = 0; i < st.outputs.size(); ++i)
      if (first_fp[i] != second_fp[i])
        return fail({Outcome::nondeterministic,
                     fmt::format("{}: two runs on the same inputs gave different bytes in output '{}'", where,
                                 spec.outputs[i].name)});
  }
  return result;
}

}  // namespace kbrl::gpu
