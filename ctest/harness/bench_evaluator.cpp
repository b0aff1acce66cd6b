// Latency of each evaluator stage and end-to-end seconds per candidate (label bench). GPU cases
// report an error ("no GPU") where there is none; compile cases run anywhere.
//   compile cold (NVRTC in a child process) and cached; on the GPU, in-process: a job's fixed cost
//   (module load, buffers, one input set and reference), one check trial, one timing sample; and end
//   to end through the worker process for task 19 (ReLU) and task 1 (matmul), fast and full mode,
//   with the reference timing already cached (the first evaluation of a task pays for it).
#include <benchmark/benchmark.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>

#include <harness/compile/compile.h>
#include <harness/compile/compile_cache.h>
#include <harness/evaluator.h>
#include <harness/gpu/gpu_session.h>
#include <kernels/candidate_file.h>
#include <kernels/kernel_catalog.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

const char* kernel_for(int task) { return task == 1 ? "gemm" : "relu"; }

Candidate known_good(int task) {
  const CatalogKernel* k = find_catalog_kernel(kernel_for(task));
  return parse_candidate_file(kernel_source(*k), task_spec(task, Scale::kernelbench), k->file);
}

void BM_CompileCold(benchmark::State& state) {
  Candidate c = known_good(static_cast<int>(state.range(0)));
  const std::string source = c.source;
  static std::atomic<int> unique{0};
  for (auto _ : state) {
    c.source = source + "\n// " + std::to_string(unique++) + "\n";  // defeat every cache
    const CompileResult r = compile(c);
    if (!r.ok()) state.SkipWithError(r.error().c_str());
  }
}
BENCHMARK(BM_CompileCold)->Arg(19)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CompileCached(benchmark::State& state) {
  const Candidate c = known_good(static_cast<int>(state.range(0)));
  CompileCache cache(std::filesystem::temp_directory_path() / "kbrl-bench-compile-cache");
  compile(c, {}, &cache);
  for (auto _ : state) {
    const CompileResult r = compile(c, {}, &cache);
    if (!r.cache_hit) state.SkipWithError("expected a cache hit");
  }
}
BENCHMARK(BM_CompileCached)->Arg(19)->Arg(1)->Unit(benchmark::kMillisecond);

/// The in-process session of the GPU stage benchmarks, created once.
GpuSession* session(benchmark::State& state) {
  static std::unique_ptr<GpuSession> instance;
  static std::string reason;
  if (!instance && reason.empty()) {
    if (!gpu_available(&reason)) {
      reason = "no GPU: " + reason;
    } else {
      instance = std::make_unique<GpuSession>(0);
    }
  }
  if (!instance) state.SkipWithError(reason.c_str());
  return instance.get();
}

GpuJob job_for(int task, GpuSession& s, int trials, int samples) {
  GpuJob job;
  job.task_id = task;
  job.candidate = known_good(task);
  CompileOptions options;
  options.arch = s.device().arch;
  job.cubin = compile(job.candidate, options).module().cubin;
  job.check.trials = trials;
  job.check.secret = 42;
  job.timing.stop = AdaptiveStopConfig{0.0, samples, samples, 0, std::chrono::seconds(600)};
  job.timing.warmups = samples > 0 ? 1 : 0;
  job.timing.time_reference = false;
  return job;
}

// Module load, outputs and scratch, one input set and its reference, no check and no timing.
void BM_JobFixedCost(benchmark::State& state) {
  GpuSession* s = session(state);
  if (!s) return;
  const GpuJob job = job_for(static_cast<int>(state.range(0)), *s, 0, 0);
  for (auto _ : state) benchmark::DoNotOptimize(s->run(job));
}
BENCHMARK(BM_JobFixedCost)->Arg(19)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// One check trial: fresh inputs, reference, two poisoned runs, guard bands, input snapshot, compare.
void BM_OneCheckTrial(benchmark::State& state) {
  GpuSession* s = session(state);
  if (!s) return;
  const GpuJob job = job_for(static_cast<int>(state.range(0)), *s, 1, 0);
  for (auto _ : state) benchmark::DoNotOptimize(s->run(job));
}
BENCHMARK(BM_OneCheckTrial)->Arg(19)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// One timing sample (poison, L2 flush, the launches, events): the job's samples' mean, in ms.
void BM_TimingSample(benchmark::State& state) {
  GpuSession* s = session(state);
  if (!s) return;
  const GpuJob job = job_for(static_cast<int>(state.range(0)), *s, 0, 20);
  double ms = 0;
  int64_t samples = 0;
  for (auto _ : state) {
    const GpuJobResult r = s->run(job);
    for (double v : r.candidate_ms) ms += v;
    samples += static_cast<int64_t>(r.candidate_ms.size());
  }
  state.counters["kernel_ms_per_sample"] = samples ? ms / static_cast<double>(samples) : 0.0;
}
BENCHMARK(BM_TimingSample)->Arg(19)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// End to end through the worker process: compile (cached) -> check (5 trials) -> time -> reward.
void BM_EndToEnd(benchmark::State& state) {
  if (!gpu_available()) {
    state.SkipWithError("no GPU");
    return;
  }
  const int task = static_cast<int>(state.range(0));
  const TimingMode mode = state.range(1) == 0 ? TimingMode::fast : TimingMode::full;
  const Candidate c = known_good(task);
  // One evaluator (and worker) per mode, kept warm across the benchmark's tasks.
  static std::map<int, std::unique_ptr<Evaluator>> by_mode;
  auto& e = by_mode[static_cast<int>(mode)];
  if (!e) {
    EvalSettings settings;
    settings.mode = mode;
    settings.worker_program = KBRL_CLI;
    settings.cache_dir = std::filesystem::temp_directory_path() / "kbrl-bench-compile-cache";
    e = std::make_unique<Evaluator>(settings);
  }
  e->evaluate(c);  // start the worker, measure peaks, time the reference once
  for (auto _ : state) {
    const EvalRecord r = e->evaluate(c);
    if (r.outcome != Outcome::ok) state.SkipWithError(r.outcome_detail.c_str());
    state.counters["speedup"] = r.speedup;
  }
}
BENCHMARK(BM_EndToEnd)
    ->ArgsProduct({{19, 1}, {0, 1}})
    ->ArgNames({"task", "full"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(5);

}  // namespace
}  // namespace kbrl

BENCHMARK_MAIN();
