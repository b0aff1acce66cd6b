// The time step: timed candidate runs, each on inputs drawn fresh for it (no earlier run saw them),
// each paired with a timed reference run on the same inputs, and each run's outputs compared with
// the reference of its own inputs at places drawn from the secret.
#include <algorithm>
#include <cmath>

#include <kbrl/splitmix64.h>

#include "accuracy.h"
#include "session_impl.h"

namespace kbrl::gpu {

namespace {

/// How many places of an output of n elements a timed run is compared at: every one up to 4,096
/// (each once), then n / 16, at most 2^20 (drawn with replacement). A run wrong at a fraction f of
/// its outputs passes one sample with probability (1 - f)^m: 2^20 places catch f = 1e-5 with
/// probability 1 - 3e-5.
int64_t compared_places(int64_t n) {
  return std::min<int64_t>(std::max<int64_t>(std::min<int64_t>(n, 4096), n / 16), int64_t{1} << 20);
}

/// Whether the sample also verifies that the candidate left its inputs as they were (the parameters
/// are verified after every run): a quarter of the samples, drawn from the secret. A candidate that
/// rewrites its inputs so that the reference after it agrees with a cheap answer is caught with
/// probability 1 - (7/8)^(runs it cheats in), and must cheat in more than half of them to move the
/// median.
bool verifies_inputs(uint64_t secret, int task_id, int64_t sample) {
  return trial_seed(secret, task_id, 7'000'000 + static_cast<int>(sample)) % 4 == 0;
}

/// The keys of one sample's gathers: where (never 0) and the reference's mask (never 0).
struct SampleKeys {
  uint64_t positions, mask;
};

}  // namespace

// Warm-ups (a number drawn from the secret) on the last trial's inputs, then samples. Before each
// sample the inputs are drawn afresh (KernelBench's distribution, a seed from the secret and the
// session's job count): a result remembered from any earlier run, this candidate's or another's, is
// of no use. Each sample times the candidate after an L2 flush, then the reference on the same
// inputs: no run before the candidate's has seen them, so neither the reference's answer nor what it
// computed on the way (a norm's sum, a softmax's row maxima, attention's scores, left in freed memory)
// exists for the candidate to read. Right after the reference, the harness gathers its outputs at
// places drawn from a per-sample key, masked with a keyed noise; then the same places of the
// candidate's outputs are gathered, the reference's values unmasked, and the two compared with the
// check's tolerances. The reference's outputs are freed without a poison (a write of every output,
// about 2 ms a sample at the ReLU's 1.6e9 elements on an H100): they answer inputs that no later
// run sees, since every sample draws its own and another seed gives every task other inputs with
// another answer (test_input_sets).
Timing time_candidate(GpuSession::Impl& s, JobState& st) {
  const GpuJob& job = st.job;
  const TaskSpec& spec = st.spec;
  Timing result;
  auto fail = [&](CandidateFault fault) {
    result.fault = std::move(fault);
    return result;
  };
  std::optional<CandidateFault> fault;
  auto candidate_once = [&] {
    if (!fault) fault = enqueue(job, st.loaded, st.bindings, s.cu_stream());
  };
  Tensors reference_out;
  auto reference_once = [&] { reference_out = st.model(st.inputs, st.scalars); };
  // The reference needs no warm-up of its own: the check ran it on every trial.
  for (int i = 0; i < job.timing.warmups; ++i) candidate_once();
  if (!fault) fault = synchronize(s.cu_stream());
  if (fault) return fail(*fault);
  s.mark("warmups");

  // Every reference below computes with the parameters: they must stay the check's (st.param_fp). A
  // rewrite in a warm-up or a timed run would persist into every later reference (a before/after
  // fingerprint of one run does not see it), so they are fingerprinted after the warm-ups and after
  // every timed candidate run.
  const auto n_params = static_cast<int64_t>(st.params.size());
  KBRL_ASSERT(static_cast<int64_t>(st.param_fp.size()) == n_params, "the check fingerprinted {} parameters, not {}",
              st.param_fp.size(), n_params);
  if (auto changed = parameter_fault(st, fingerprints(s, st.params, st.param_key).data(), "a warm-up run"))
    return fail(*changed);
  s.mark("fingerprints");

  const auto n_out = static_cast<int64_t>(st.outputs.size());
  const auto n_in = static_cast<int64_t>(st.inputs.size());
  const int64_t capacity = std::max<int64_t>(job.timing.stop.max_samples, 1);
  const auto on_device = torch::TensorOptions().device(s.device);
  // Each sample's verdict (the comparison's sums and maxima over blocks, the fingerprints) is copied to
  // pinned host memory right after it, before the next candidate run: no later run can rewrite it.
  auto partials = torch::empty({n_out, CompareKernel::kBlocks, kCompareStats}, on_device.dtype(torch::kFloat64));
  auto watched_fp = torch::zeros({2, std::max<int64_t>(n_in, 1)}, on_device.dtype(torch::kInt64));
  const auto pinned = torch::TensorOptions().pinned_memory(true);
  auto verdicts = torch::empty({capacity, n_out, 2, kCompareStats}, pinned.dtype(torch::kFloat64));
  auto watched = torch::zeros({capacity, 2, std::max<int64_t>(n_in, 1)}, pinned.dtype(torch::kInt64));
  auto param_slots = torch::zeros({std::max<int64_t>(n_params, 1)}, on_device.dtype(torch::kInt64));
  auto params_after = torch::zeros({capacity, std::max<int64_t>(n_params, 1)}, pinned.dtype(torch::kInt64));
  std::vector<InputSet> sets;                  // per sample
  std::vector<std::vector<CheckSettings>> tolerances;  // per sample and output
  // Per output: the places compared, and the reference's and the candidate's values there.
  std::vector<int64_t> places(static_cast<size_t>(n_out));
  Tensors reference_values, candidate_values;
  for (int64_t o = 0; o < n_out; ++o) {
    const auto& out = st.outputs[o].tensor;
    places[o] = compared_places(out.numel());
    reference_values.push_back(torch::empty({places[o]}, out.options()));
    candidate_values.push_back(torch::empty({places[o]}, out.options()));
  }
  auto gather = [&](const torch::Tensor& from, int64_t o, uint64_t position_key, uint64_t mask_key, torch::Tensor& to) {
    // A small output is compared at every place, each once (drawn places would repeat some, miss others).
    if (places[o] == from.numel()) position_key = 0;
    s.compare->gather(reinterpret_cast<CUdeviceptr>(from.data_ptr()), from.numel(),
                      static_cast<int>(from.element_size()),
                      position_key, mask_key, places[o], reinterpret_cast<CUdeviceptr>(to.data_ptr()), s.cu_stream());
  };

  uint64_t nonce = s.jobs_run;  // this job's own inputs, even for a candidate evaluated before
  const uint64_t sample_secret = job.check.secret ^ splitmix64(nonce);  // (splitmix64 advances its argument)
  AdaptiveStop stop(job.timing.stop);
  int64_t sample = 0;
  bool stopped = false;
  while (!stopped && sample < capacity) {
    const int draw = static_cast<int>(sample);
    const InputSet set = timed_input_set(job.check, sample_secret, spec.id, draw);
    sets.push_back(set);
    tolerances.emplace_back(static_cast<size_t>(n_out), job.check);
    st.inputs.clear();  // freed first (stream-ordered): one set of inputs in memory, not two
    st.inputs = make_inputs(spec, trial_seed(sample_secret, spec.id, 2'000'000 + draw), s.device, set);
    st.bindings.inputs = &st.inputs;
    s.mark("inputs");
    const SampleKeys keys{trial_seed(sample_secret, spec.id, 8'000'000 + draw) | 1,
                          trial_seed(sample_secret, spec.id, 9'000'000 + draw) | 1};
    const bool watch_inputs = verifies_inputs(job.check.secret, spec.id, sample);
    auto watch = [&](int64_t when) {  // the inputs' keyed fingerprints, before or after
      enqueue_fingerprints(s, st.inputs, st.input_key, watched_fp[when]);
      watched[sample][when].copy_(watched_fp[when], /*non_blocking=*/true);
      s.mark("fingerprints");
    };
    auto reference_step = [&](bool timed) {  // run, gather masked, free
      if (timed) result.reference_ms.push_back(s.timed_sample(reference_once));
      else reference_once();
      s.mark("reference");
      for (int64_t o = 0; o < n_out; ++o) {
        const torch::Tensor r = reference_out[o].contiguous();  // attention's output is a transposed view
        tolerances.back()[o] = settings_for(job.check, r, set);
        gather(r, o, keys.positions, keys.mask, reference_values[o]);
      }
      reference_out.clear();
      s.mark("compare");
    };
    if (watch_inputs) watch(0);
    // No poison before a timed run: what the outputs hold is the previous run's answer to other
    // inputs, wrong wherever the candidate leaves it, and guard bands written in any timed run stay
    // written until the end (they used to be re-poisoned, which cost a write of every output).
    const double ms = s.timed_sample(candidate_once);
    s.mark("candidate");
    if (fault) return fail(*fault);
    enqueue_fingerprints(s, st.params, st.param_key, param_slots);
    params_after[sample].copy_(param_slots, /*non_blocking=*/true);
    s.mark("fingerprints");
    if (watch_inputs) watch(1);
    reference_step(job.timing.time_reference);
    for (int64_t o = 0; o < n_out; ++o) {
      gather(st.outputs[o].tensor, o, keys.positions, 0, candidate_values[o]);
      gather(reference_values[o], o, 0, keys.mask, reference_values[o]);  // unmasks in place
      enqueue_compare(candidate_values[o], reference_values[o], tolerances.back()[o], *s.compare, s.cu_stream(),
                      partials[o]);
      verdicts[sample][o][0].copy_(partials[o].sum(0), /*non_blocking=*/true);
      verdicts[sample][o][1].copy_(std::get<0>(partials[o].max(0)), /*non_blocking=*/true);
    }
    s.mark("compare");
    result.candidate_ms.push_back(ms);
    ++sample;
    stopped = stop.add(ms);
  }
  if (auto late = synchronize(s.cu_stream())) return fail(*late);

  const auto& fp = watched;  // complete: the stream is synchronized
  for (int64_t j = 0; j < sample; ++j)
    for (int64_t i = 0; i < n_in; ++i)
      if (fp[j][0][i].item<int64_t>() != fp[j][1][i].item<int64_t>())
        return fail({Outcome::input_mutated,
                     fmt::format("timed run {} of {} changed input '{}'", j + 1, sample, spec.inputs[i].name)});
  for (int64_t j = 0; j < sample; ++j)
    if (auto changed =
            parameter_fault(st, params_after[j].data_ptr<int64_t>(), fmt::format("timed run {} of {}", j + 1, sample)))
      return fail(*changed);
  const auto host = verdicts.contiguous();  // [capacity, n_out, 2 (sums, maxima), stats]
  const double* v = host.data_ptr<double>();
  const bool judge_accuracy = accuracy_judged(job.check.atol, job.check.rtol);
  for (int64_t j = 0; j < sample; ++j)
    for (int64_t o = 0; o < n_out; ++o) {
      const double* totals = v + ((j * n_out + o) * 2) * kCompareStats;
      const double* maxima = totals + kCompareStats;
      const bool floating = st.outputs[o].tensor.is_floating_point();
      const std::string where =
          fmt::format("timed run {} of {} (on {} inputs drawn for it), output '{}' at {} places drawn from the secret",
                      j + 1,
                      sample, to_string(sets[j]), spec.outputs[o].name, places[o]);
      const TrialCheck c = judge_compare(totals, maxima, places[o], floating, tolerances[j][o]);
      if (!c.passed)
        return fail({Outcome::wrong_answer,
                     fmt::format("{}: {} (every timed run is compared with the reference of its own inputs)", where,
                                 c.failure)});
      // The accuracy limit of the check, on KernelBench's draw: d is the relative distance from the
      // float32 answer at the places, e the float32 answer's own error measured in the check.
      if (!floating || sets[j] != InputSet::kernelbench || static_cast<size_t>(o) >= st.accuracy.size() ||
          !judge_accuracy || !std::isfinite(st.accuracy[o].reference_error) || !(totals[kRefSq] > 0))
        continue;
      const double d = std::sqrt(totals[kDiffSq] / totals[kRefSq]), e = st.accuracy[o].reference_error;
      if (auto failure = accuracy_failure(spec.family, std::max(d - e, 0.0), e))
        return fail({Outcome::wrong_answer, fmt::format("{}: {}", where, *failure)});
    }
  for (size_t i = 0; i < st.outputs.size(); ++i)
    if (!st.outputs[i].guards_intact())
      return fail({Outcome::guard_violation,
                   fmt::format("a timed run wrote outside output '{}'", spec.outputs[i].name)});
  result.timed_runs_checked = sample;
  return result;
}

}  // namespace kbrl::gpu
