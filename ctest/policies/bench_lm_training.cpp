// Training throughput of the language model in the process (Google Benchmark; figures printed, never
// asserted): trained completion tokens/s of one GRPO or SFT update with LoRA rank 16.
//   CPU: SmolLM2-135M-Instruct in float32, one GRPO step on a group of its own samples (fused and
//        plain operations).
//   GPU: the update at RL's sizes (BM_UpdateGpu: SmolLM2-135M's shapes, K = 64 completions of 1,024
//        tokens), Qwen2.5-1.5B's shapes on one GPU (memory) and data-parallel over the host's GPUs.
// The sampling cases of the same executable, and what the two share, are in bench_lm_sampling.cpp
// and bench_lm_models.h.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <policies/lm/llama_net.h>
#include <torch/cuda.h>
#if __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
#endif

#include "bench_lm_models.h"
#include "data_parallel_testing.h"
#include "lm_policy_testing.h"

namespace kbrl::lm {
namespace {

void train_bench(benchmark::State& state, LmPolicy* p, bool fused = true) {
  if (!p) {
    state.SkipWithError("no model (CPU: .ci/setup-llm's SmolLM2; GPU: none visible)");
    return;
  }
  p->model().net().set_fused(fused);
  p->add_adapter({16, 32.0}, 1);
  p->set_optimizer({.learning_rate = 1e-5});
  const auto samples = p->sample(relu(), kCompletions, 1.0, 7);
  std::vector<double> adv;
  for (int i = 0; i < kCompletions; ++i) adv.push_back(i % 2 ? 1.0 : -1.0);
  const auto items = testing::items_with(relu(), samples, adv);
  int64_t tokens = 0;
  for (auto _ : state) tokens += p->update(items, UpdateConfig{}).tokens;
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  p->remove_adapter();
  p->model().net().set_fused(true);
}

// Arg: the fused operations (1, the default) or the plain ones (0).
void BM_TrainStepCpu(benchmark::State& state) { train_bench(state, cpu_policy().get(), state.range(0) == 1); }
void BM_TrainStepGpu(benchmark::State& state) { train_bench(state, gpu_policy().get()); }

// Memory of a 1.5B model's GRPO step at the reports' sizes: Qwen2.5-1.5B's shapes (random weights,
// bfloat16, the byte tokenizer padded to its 151,936-token vocabulary, so the task prompt is ~4x
// longer in tokens than Qwen's own), LoRA rank 16 on every projection, one group of K = 64
// completions of 1,024 tokens, micro-batches of 8. Arg: activation checkpointing on (1) or off (0).
// `device_GiB` is the GPU memory in use after the step (total - free: the caching allocator keeps
// what the step's peak needed); an out-of-memory step is reported as `oom` = 1.
void BM_TrainStepGpu1p5B(benchmark::State& state) {
#if __has_include(<cuda_runtime_api.h>)
  if (!torch::cuda::is_available()) {
    state.SkipWithError("no GPU visible");
    return;
  }
  const bool checkpoint = state.range(0) != 0;
  LmOptions o = parse_lm_spec(std::string("lm:random:qwen2.5-1.5b:1,shots=0,system=none,device=cuda,dtype=bfloat16,") +
                              "micro_batch=8,checkpoint=" + (checkpoint ? "on" : "off"));
  auto p = std::make_unique<LmPolicy>(std::move(o));
  p->add_adapter({16, 32.0}, 1);
  p->set_optimizer({.learning_rate = 1e-5});
  const std::vector<TrainItem> items = group_of_random_completions(11);
  int64_t tokens = 0;
  bool oom = false;
  for (auto _ : state) {
    try {
      tokens += p->update(items, UpdateConfig{}).tokens;
    } catch (const std::exception& e) {
      oom = std::string(e.what()).find("out of memory") != std::string::npos;
      if (!oom) throw;
    }
  }
  torch::cuda::synchronize();
  size_t free = 0, total = 0;
  cudaMemGetInfo(&free, &total);
  state.counters["device_GiB"] = static_cast<double>(total - free) / (1u << 30);
  state.counters["device_total_GiB"] = static_cast<double>(total) / (1u << 30);
  state.counters["oom"] = oom ? 1.0 : 0.0;
  state.counters["prompt_tokens"] = static_cast<double>(p->prompt_tokens(relu(), p->options().prompt).size());
  state.counters["parameters_M"] = static_cast<double>(p->parameter_count(false)) / 1e6;
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
#else
  state.SkipWithError("built without the CUDA runtime headers");
#endif
}

// One GRPO update of Qwen2.5-1.5B's shapes (random weights, bfloat16, LoRA rank 16 in float32,
// micro-batches of 8, activation checkpointing) on K = 64 completions of 1,024 tokens after ReLU's
// prompt, data-parallel over `gpus` GPUs: one kbrl_lm_dp_rank process per GPU (NCCL), each running
// its 64 / gpus completions and the gradient summed before the optimizer step. Three steps, the
// first a warm-up. Counters: tokens/s (the batch's completion tokens over the mean of the slowest
// rank's timed steps), step_s; per GPU (the most over the ranks) device_GiB (in use: total - free,
// with the CUDA context and NCCL's buffers), peak_allocated_GiB and peak_reserved_GiB (the caching
// allocator's): a rank's passes have the same size on any number of GPUs (micro-batches of 8), so
// memory per GPU does not fall with more GPUs, only each rank's number of passes; grad_rel_diff1 and
// grad_rel_diff2: the summed gradient of steps 1 and 2 against the 1-GPU case's (relative L2; step
// 2's follows step 1's optimizer step; gradients clipped at norm 1 as the experiments do). Those mix
// two effects: the ranks' micro-batches hold other rows than one GPU's (rank r takes every N-th
// completion), and bfloat16 passes over other rows round otherwise; and the sums' order. So each
// case of N > 1 GPUs also runs one process (untimed) over the same micro-batches as its N ranks
// (kbrl_lm_dp_rank as_ranks=N): same_batches_diff1/2 is the data-parallel gradient against that one
// (the order of float32 sums alone), regroup_diff1/2 that one against the 1-GPU case's (the
// regrouping alone); the 1-GPU case runs a second process over the same batch (untimed):
// repeat_diff1/2, the gradient of one GPU against itself (bfloat16 passes on a GPU are not
// bit-reproducible: 1.2% and 2.6% on an H200). within_tolerance = 1 when same_batches_diff1 and 2
// are at most twice repeat_diff1 and 2: the data-parallel gradient differs from one GPU's no more
// than one GPU's differs from itself (a rank's gradient lost or counted twice differs by 30-100%).
// ranks_agree: every rank holds the same sum.
void BM_TrainStepDataParallel(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  if (!torch::cuda::is_available() || static_cast<int>(torch::cuda::device_count()) < gpus) {
    state.SkipWithError(("needs " + std::to_string(gpus) + " GPUs").c_str());
    return;
  }
  static std::vector<float> one_gpu[2];
  static double repeat[2] = {0, 0};  // one GPU against itself, steps 1 and 2
  const std::vector<std::string> args = {
      "spec=lm:random:qwen2.5-1.5b:1,shots=0,system=none,device=cuda,dtype=bfloat16,micro_batch=8,checkpoint=on",
      "k=64", "tokens=1024", "steps=3", "rank_lora=16", "lr=1e-5"};
  const auto dir = std::filesystem::temp_directory_path() / ("kbrl-bench-dp-" + std::to_string(gpus));
  kbrl::testing::RankResults run;
  for (auto _ : state) run = kbrl::testing::run_ranks(KBRL_LM_DP_RANK, args, gpus, dir, true, std::chrono::seconds(300));
  if (!run.error.empty()) {
    state.SkipWithError(run.error.substr(0, 2000).c_str());
    return;
  }
  double slowest = 0, memory = 0, allocated = 0, reserved = 0;
  bool agree = true;
  for (int r = 0; r < gpus; ++r) {
    const auto& steps = run.reports[r]["steps"];
    double sum = 0;
    for (size_t s = 1; s < steps.size(); ++s) sum += steps[s]["seconds"].get<double>();
    slowest = std::max(slowest, sum / static_cast<double>(steps.size() - 1));
    memory = std::max(memory, run.reports[r].value("device_GiB", 0.0));
    allocated = std::max(allocated, run.reports[r].value("peak_allocated_GiB", 0.0));
    reserved = std::max(reserved, run.reports[r].value("peak_reserved_GiB", 0.0));
    agree = agree && run.gradients[r] == run.gradients[0] && run.gradients2[r] == run.gradients2[0];
  }
  if (gpus == 1) {
    one_gpu[0] = run.gradients[0];
    one_gpu[1] = run.gradients2[0];
    const auto again = kbrl::testing::run_ranks(KBRL_LM_DP_RANK, args, 1, dir, true, std::chrono::seconds(300));
    if (!again.error.empty()) {
      state.SkipWithError(("one GPU again: " + again.error.substr(0, 1900)).c_str());
      return;
    }
    repeat[0] = kbrl::testing::relative_difference(again.gradients[0], one_gpu[0]);
    repeat[1] = kbrl::testing::relative_difference(again.gradients2[0], one_gpu[1]);
    state.counters["repeat_diff1"] = repeat[0];
    state.counters["repeat_diff2"] = repeat[1];
  }
  state.counters["step_s"] = slowest;
  state.counters["tokens/s"] = run.reports[0]["steps"][1]["tokens"].get<double>() / slowest;
  state.counters["device_GiB"] = memory;
  state.counters["peak_allocated_GiB"] = allocated;
  state.counters["peak_reserved_GiB"] = reserved;
  state.counters["ranks_agree"] = agree ? 1 : 0;
  if (!one_gpu[0].empty()) {
    state.counters["grad_rel_diff1"] = kbrl::testing::relative_difference(run.gradients[0], one_gpu[0]);
    state.counters["grad_rel_diff2"] = kbrl::testing::relative_difference(run.gradients2[0], one_gpu[1]);
  }
  if (gpus > 1) {
    std::vector<std::string> same = args;
    same.push_back("as_ranks=" + std::to_string(gpus));
    const auto one = kbrl::testing::run_ranks(KBRL_LM_DP_RANK, same, 1, dir, true, std::chrono::seconds(300));
    if (!one.error.empty()) {
      state.SkipWithError(("one process over the ranks' micro-batches: " + one.error.substr(0, 1900)).c_str());
      return;
    }
    const double d1 = kbrl::testing::relative_difference(run.gradients[0], one.gradients[0]);
    const double d2 = kbrl::testing::relative_difference(run.gradients2[0], one.gradients2[0]);
    state.counters["same_batches_diff1"] = d1;
    state.counters["same_batches_diff2"] = d2;
    if (!one_gpu[0].empty()) {
      state.counters["regroup_diff1"] = kbrl::testing::relative_difference(one.gradients[0], one_gpu[0]);
      state.counters["regroup_diff2"] = kbrl::testing::relative_difference(one.gradients2[0], one_gpu[1]);
    }
    if (repeat[0] > 0 || repeat[1] > 0)
      state.counters["within_tolerance"] = d1 <= 2 * repeat[0] && d2 <= 2 * repeat[1] ? 1 : 0;
  }
  std::filesystem::remove_all(dir);
}

// One update at RL's sizes on a GPU: SmolLM2-135M's shapes (random weights, bfloat16, LoRA rank 16 on
// every projection, activation checkpointing as the GPU default), one group of K = 64 completions
// of 1,024 tokens of the task prompt. Args: sft (0 = GRPO's clipped ratio, 1 = SFT's likelihood), fused
// (0 = the plain tensor operations, 1 = the fused ones), micro_batch, checkpoint (activation
// checkpointing 0 = off, 1 = on, 2 = auto: only where the activations would not fit). `tokens/s` =
// trained completion tokens per second; `peak_GiB` the most GPU memory the caching allocator held
// for tensors.
void BM_UpdateGpu(benchmark::State& state) {
  if (!torch::cuda::is_available()) {
    state.SkipWithError("no GPU visible");
    return;
  }
  const bool sft = state.range(0) == 1, fused = state.range(1) == 1;
  const char* checkpoint = state.range(3) == 0 ? "off" : state.range(3) == 1 ? "on" : "auto";
  const int tasks = static_cast<int>(state.range(4));  // 1: ReLU's prompt alone; more: SFT's mix of prompts
  auto p = std::make_unique<LmPolicy>(
      parse_lm_spec(std::string("lm:random:smollm2-135m:1,shots=0,system=none,device=cuda,dtype=bfloat16,fused=") +
                    (fused ? "on" : "off") + ",micro_batch=" + std::to_string(state.range(2)) +
                    ",checkpoint=" + checkpoint + ",pool=" + (state.range(5) == 1 ? "on" : "off")));
  p->add_adapter({16, 32.0}, 1);
  p->set_optimizer({.learning_rate = 1e-5});
  const std::vector<TrainItem> items = group_of_random_completions(13, tasks);
  UpdateConfig config;
  if (sft) config.objective = Objective::likelihood;
  gpu_peak_gib();  // from here on (the model's weights in memory already: CUDA is set up)
  int64_t tokens = 0;
  try {
    p->update(items, config);  // warm-up
    for (auto _ : state) tokens += p->update(items, config).tokens;
  } catch (const std::exception& e) {  // out of memory, say: this case's error, the next cases still run
    const std::string what = e.what();
    state.SkipWithError(what.substr(0, what.find('\n')).c_str());
    return;
  }
  torch::cuda::synchronize();
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["prompt_tokens"] = static_cast<double>(p->prompt_tokens(relu(), p->options().prompt).size());
  state.counters["peak_GiB"] = gpu_peak_gib();
  // KBRL_PROFILE_DIR: one more update of the fused GRPO cases of micro-batch 32 and of the fused SFT
  // cases of micro-batch 64 over one prompt profiled, its trace written there as
  // update_sft<0|1>_fused1_mb<32|64>_ckpt<on|off|auto>.json.
  if (fused && (sft ? state.range(2) == 64 && tasks == 1 : state.range(2) == 32))
    profile_if_asked("update_sft" + std::to_string(sft) + "_fused" + std::to_string(fused) + "_mb" +
                         std::to_string(state.range(2)) + "_ckpt" + checkpoint,
                     [&] { p->update(items, config); });
}

BENCHMARK(BM_TrainStepCpu)->ArgName("fused")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();
BENCHMARK(BM_TrainStepGpu)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
// tasks: 64 completions of one prompt (a GRPO group) or 2 each of 32 prompts (an SFT batch over
// many tasks), with passes per prompt (pool 0) or pooled behind the prompts' common prefix (pool 1).
BENCHMARK(BM_UpdateGpu)
    ->ArgNames({"sft", "fused", "micro_batch", "checkpoint", "tasks", "pool"})
    ->Args({0, 0, 8, 1, 1, 1})
    ->Args({0, 1, 8, 1, 1, 1})
    ->Args({0, 1, 32, 1, 1, 1})
    ->Args({0, 1, 64, 1, 1, 1})
    ->Args({0, 1, 32, 0, 1, 1})
    ->Args({0, 1, 64, 0, 1, 1})
    ->Args({0, 1, 64, 2, 1, 1})
    ->Args({1, 0, 8, 1, 1, 1})
    ->Args({1, 1, 32, 1, 1, 1})
    ->Args({1, 1, 32, 0, 1, 1})
    ->Args({1, 1, 64, 2, 1, 1})
    ->Args({1, 1, 32, 1, 32, 0})
    ->Args({1, 1, 32, 1, 32, 1})
    ->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();
BENCHMARK(BM_TrainStepDataParallel)->ArgName("gpus")->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_TrainStepGpu1p5B)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();


}  // namespace
}  // namespace kbrl::lm
BENCHMARK_MAIN();
