// The time step: timed candidate runs on the last trial's inputs, each paired with a reference run,
// and each run's outputs verified against the checked run's.
#include <algorithm>

#include "session_impl.h"

namespace kbrl::gpu {

// Warm-ups (a number drawn from the secret), then samples, each after an L2 flush with the outputs
// poisoned before it. Every timed run's output is fingerprinted right after it (outside the timed
// region) and must be the checked output's bytes, so no timed run goes unchecked. Each sample is
// paired with a reference run on the same inputs, before or after it in an order drawn from the
// secret; the reference's output is poisoned as soon as it is timed.
Timing time_candidate(GpuSession::Impl& s, JobState& st, const std::vector<int64_t>& checked_fp) {
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
  auto poison_outputs = [&] {
    for (auto& o : st.outputs) o.poison();
  };
  Tensors reference_out;
  auto reference_once = [&] { reference_out = st.model(st.inputs, st.scalars); };
  auto drop_reference_out = [&] {
    for (auto& t : reference_out) poison_tensor(t);
    reference_out.clear();
  };
  for (int i = 0; i < job.timing.warmups; ++i) {
    poison_outputs();
    candidate_once();
    if (job.timing.time_reference) {
      reference_once();
      drop_reference_out();
    }
  }
  if (!fault) fault = synchronize(s.cu_stream());
  if (fault) return fail(*fault);
  const auto n_out = static_cast<int64_t>(st.outputs.size());
  const int64_t capacity = std::max<int64_t>(job.timing.stop.max_samples, 1);
  auto timed_fp = torch::zeros({capacity * n_out}, torch::TensorOptions().dtype(torch::kInt64).device(s.device));
  AdaptiveStop stop(job.timing.stop);
  int64_t sample = 0;
  bool stopped = false;
  while (!stopped && sample < capacity) {
    const bool reference_first = (trial_seed(job.check.secret, spec.id, 1'000'000 + static_cast<int>(sample)) & 1) != 0;
    auto time_reference = [&] {
      result.reference_ms.push_back(s.timed_sample(reference_once));
      drop_reference_out();
    };
    if (job.timing.time_reference && reference_first) time_reference();
    poison_outputs();
    const double ms = s.timed_sample(candidate_once);
    if (fault) return fail(*fault);
    for (int64_t o = 0; o < n_out; ++o)
      fingerprint_into(st.raw_outputs[o], st.output_key + static_cast<uint64_t>(o), timed_fp, sample * n_out + o,
                       *s.compare, s.cu_stream());
    result.candidate_ms.push_back(ms);
    if (job.timing.time_reference && !reference_first) time_reference();
    ++sample;
    stopped = stop.add(ms);
  }
  if (auto late = synchronize(s.cu_stream())) return fail(*late);
  const auto host_fp = timed_fp.cpu();
  for (int64_t j = 0; j < sample; ++j)
    for (int64_t o = 0; o < n_out; ++o)
      if (host_fp[j * n_out + o].item<int64_t>() != checked_fp[o])
        return fail({Outcome::wrong_answer,
                     fmt::format("timed run {} of {}: output '{}' differs from the checked output of the same "
                                 "inputs (every timed run is verified)",
                                 j + 1, sample, spec.outputs[o].name)});
  for (size_t i = 0; i < st.outputs.size(); ++i)
    if (!st.outputs[i].guards_intact())
      return fail({Outcome::guard_violation,
                   fmt::format("a timed run wrote outside output '{}'", spec.outputs[i].name)});
  result.timed_runs_checked = sample;
  return result;
}

}  // namespace kbrl::gpu
