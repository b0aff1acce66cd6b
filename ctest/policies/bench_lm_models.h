#pragma once
// What bench_lm's sampling and training cases share (bench_lm_sampling.cpp, bench_lm_training.cpp):
// the models they run, ReLU's task, a group of random completions at RL's sizes, the GPU's peak memory.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <policies/lm/lm_policy.h>
#include <reference/task_registry.h>

namespace kbrl::lm {

inline constexpr int kCompletions = 8;  // a group of the CPU cases
inline constexpr int kMaxTokens = 128;  // new tokens a completion in the CPU cases

/// Task 19 (ReLU) at KernelBench's scale: the prompt of every case.
TaskSpec relu();

/// SmolLM2-135M-Instruct (KBRL_LLM_MODEL or .ci/setup-llm's file) in float32 on the CPU, loaded once;
/// null without the file. q8: sampling with 8-bit copies of the weights (cpu_weights=q8).
std::unique_ptr<LmPolicy>& cpu_policy(bool q8 = false);

/// A random Llama-shaped model (12 layers, hidden 768) in bfloat16 on the GPU, made once; null without
/// a GPU.
std::unique_ptr<LmPolicy>& gpu_policy();

/// 64 random completions of 1,024 byte tokens, advantages +1 and -1 in turn: the reports' group at
/// RL's sizes. With `tasks` > 1, spread over that many tasks' prompts (the first task ids, 64 / tasks
/// each: an SFT batch drawn over many tasks) instead of ReLU's alone.
std::vector<TrainItem> group_of_random_completions(uint64_t seed, int tasks = 1);

/// The most GPU memory tensors held on device 0 since the last call (the caching allocator's peak of
/// allocated bytes, all pools), in GiB; 0 in a build against a CPU libtorch.
double gpu_peak_gib();

/// When KBRL_PROFILE_DIR is set (and libtorch is 2.x): runs `work` under libtorch's Kineto profiler
/// (CPU and CUDA activity, kernels inside CUDA graph replays included), waits for the GPU and writes
/// the trace to KBRL_PROFILE_DIR/NAME.json (chrome://tracing; .ci/gpu sums its kernels). Otherwise
/// does nothing (`work` does not run). Returns whether it profiled.
bool profile_if_asked(const std::string& name, const std::function<void()>& work);

}  // namespace kbrl::lm
