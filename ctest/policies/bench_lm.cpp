// Throughput of the language model in the process (Google Benchmark; figures printed, never
// asserted): sampling tokens/s (a batch of completions of one task prompt, KV cache, the prompt
// computed once) and training tokens/s (one GRPO step with LoRA rank 16 on those completions), next
// to llama-server's sampling rate on the same machine in the same run (the same prompt tokens,
// the completions one request after another, as its one slot serves them).
//   CPU: SmolLM2-135M-Instruct (KBRL_LLM_MODEL or .ci/setup-llm's file) in float32; llama-server from
//        KBRL_LLM_URL (or the fixture's URL file) serving the same GGUF.
//   GPU (when libtorch sees one): a randomly initialized Llama-shaped model (12 layers, hidden 768,
//        bfloat16) with the same batch shapes; and the decoder at the sizes RL samples at
//        (BM_DecodeGpu): SmolLM2-135M's and Qwen2.5-1.5B's shapes in bfloat16, n completions of
//        1,024 new tokens after one shared 1,100-token prompt, with CUDA graphs (arg 1) or eager
//        steps (arg 0): the figures to set beside llama.cpp's CUDA build (`.ci/llamacpp-cuda`).
// Counters: tokens/s = generated (or trained) completion tokens per second of wall time.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>
#include <kbrl/http_client.h>
#include <policies/lm/language_model.h>
#include <policies/lm/llama_net.h>
#include <policies/lm/lm_policy.h>
#include <reference/task_registry.h>
#include <torch/cuda.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/autograd/profiler_kineto.h>
#endif
#if __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
#endif
#if KBRL_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif
#include <kbrl/splitmix64.h>

#include "data_parallel_testing.h"
#include "llm_testing.h"
#include "lm_policy_testing.h"

namespace kbrl::lm {
namespace {

// The most GPU memory tensors held on device 0 since the last call (the caching allocator's peak of
// allocated bytes, all pools), in GiB; 0 in a build against a CPU libtorch.
double gpu_peak_gib() {
#if KBRL_TORCH_CUDA
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  c10::cuda::CUDACachingAllocator::resetPeakStats(0);
  return static_cast<double>(stats.allocated_bytes[0].peak) / (1u << 30);  // [0]: every pool
#else
  return 0;
#endif
}

constexpr int kCompletions = 8;
constexpr int kMaxTokens = 128;

TaskSpec relu() { return task_spec(19, Scale::kernelbench); }

std::unique_ptr<LmPolicy>& cpu_policy() {
  static std::unique_ptr<LmPolicy> p;
  if (!p && !testing::llm_model_path().empty()) {
    LmOptions o = parse_lm_spec("lm:" + testing::llm_model_path() + ",shots=0,system=none");
    o.max_tokens = kMaxTokens;
    p = std::make_unique<LmPolicy>(std::move(o));
  }
  return p;
}

std::unique_ptr<LmPolicy>& gpu_policy() {
  static std::unique_ptr<LmPolicy> p;
  if (!p && torch::cuda::is_available()) {
    LmOptions o = parse_lm_spec("lm:random:12x768:1,shots=0,system=none,device=cuda,dtype=bfloat16");
    o.max_tokens = kMaxTokens;
    p = std::make_unique<LmPolicy>(std::move(o));
  }
  return p;
}

// One group of K = 64 completions of 1,024 byte tokens of the task prompt, advantages +1 and -1 in
// turn: the reports' group at RL's sizes, for the update benchmarks.
/// 64 random completions of 1,024 tokens; with `tasks` > 1, spread over that many tasks' prompts
/// (the first task ids, 64 / tasks each: an SFT batch drawn over many tasks) instead of ReLU's alone.
std::vector<TrainItem> group_of_random_completions(uint64_t seed, int tasks = 1) {
  std::vector<TrainItem> items(64);
  uint64_t rng = seed;
  const std::vector<int> ids = task_ids();
  for (size_t i = 0; i < items.size(); ++i) {
    items[i].task = tasks <= 1 ? relu() : task_spec(ids.at(i % static_cast<size_t>(tasks)), Scale::kernelbench);
    for (int t = 0; t < 1024; ++t) items[i].tokens.push_back(static_cast<int>(splitmix64(rng) % 256));
    items[i].advantages.assign(items[i].tokens.size(), i % 2 ? 1.0 : -1.0);
  }
  return items;
}

void sample_bench(benchmark::State& state, LmPolicy* p, int n) {
  if (!p) {
    state.SkipWithError("no model (CPU: .ci/setup-llm's SmolLM2; GPU: none visible)");
    return;
  }
  p->sample(relu(), 1, 1.0, 0);  // warm-up (and the prompt's tokens cached)
  int64_t tokens = 0;
  uint64_t seed = 1;
  for (auto _ : state) {
    const auto samples = p->sample(relu(), n, 1.0, seed++);
    for (const Sample& s : samples) tokens += s.token_count();
  }
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["prompt_tokens"] = static_cast<double>(p->prompt_tokens(relu(), p->options().prompt).size());
}

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

void BM_SampleCpu(benchmark::State& state) { sample_bench(state, cpu_policy().get(), static_cast<int>(state.range(0))); }
// Arg: the fused operations (1, the default) or the plain ones (0).
void BM_TrainStepCpu(benchmark::State& state) { train_bench(state, cpu_policy().get(), state.range(0) == 1); }
void BM_SampleGpu(benchmark::State& state) { sample_bench(state, gpu_policy().get(), static_cast<int>(state.range(0))); }
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

// The decoder alone on a GPU at RL's sizes: model shape (0 = SmolLM2-135M, 1 = Qwen2.5-1.5B; random
// weights, bfloat16), n completions, CUDA graphs on (1) or off (0); a 1,100-token prompt, 1,024 new
// tokens each. The first generate() of a shape (graph capture) is timed apart: `setup_s`.
// `tokens/s` counts the tokens generated (a completion that draws an end token stops early, rarely
// with random weights); `steps/s` the decoding steps of the batch.
void BM_DecodeGpu(benchmark::State& state) {
  if (!torch::cuda::is_available()) {
    state.SkipWithError("no GPU visible");
    return;
  }
  const char* shapes[] = {"smollm2-135m", "qwen2.5-1.5b"};
  const int n = static_cast<int>(state.range(1));
  const bool graphs = state.range(2) != 0;
  static std::map<std::string, std::unique_ptr<LmPolicy>> policies;
  const std::string spec = "lm:random:" + std::string(shapes[state.range(0)]) + ":1,device=cuda,dtype=bfloat16" +
                           (graphs ? "" : ",graphs=off");
  std::unique_ptr<LmPolicy>& p = policies[spec];
  if (!p) {
    for (auto& [k, other] : policies) other.reset();  // one model on the GPU at a time
    p = std::make_unique<LmPolicy>(parse_lm_spec(spec));
  }
  LanguageModel* m = &p->model();
  std::vector<int> prompt;
  uint64_t rng = 5;
  for (int i = 0; i < 1100; ++i) prompt.push_back(static_cast<int>(splitmix64(rng) % 256));
  GenerateOptions g;
  g.max_tokens = 1024;
  g.temperature = 1.0;
  const auto t0 = std::chrono::steady_clock::now();
  m->generate(prompt, n, g);  // the shape's first call: buffers and graphs
  torch::cuda::synchronize();
  const double setup = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int64_t tokens = 0, steps = 0;
  for (auto _ : state) {
    ++g.seed;
    int64_t longest = 0;
    for (const Generation& gen : m->generate(prompt, n, g)) {
      tokens += static_cast<int64_t>(gen.tokens.size());
      longest = std::max<int64_t>(longest, static_cast<int64_t>(gen.tokens.size()));
    }
    steps += longest;
  }
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["steps/s"] = benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
  state.counters["setup_s"] = setup;
  state.counters["graphs"] = static_cast<double>(m->decoder_counters().graphs_captured);
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
  // KBRL_PROFILE_DIR: one more update of the fused GRPO cases of 32 completions profiled (libtorch's
  // Kineto profiler, CPU and CUDA activity), its trace written there as
  // update_sft0_fused1_mb32_ckpt<on|off>.json (chrome://tracing).
  const char* dir = std::getenv("KBRL_PROFILE_DIR");
#if TORCH_VERSION_MAJOR >= 2
  if (dir && *dir && fused && !sft && state.range(2) == 32) {
    namespace prof = torch::profiler::impl;
    const std::set<prof::ActivityType> activities{prof::ActivityType::CPU, prof::ActivityType::CUDA};
    const prof::ProfilerConfig profile(prof::ProfilerState::KINETO);
    torch::autograd::profiler::prepareProfiler(profile, activities);
    torch::autograd::profiler::enableProfiler(profile, activities);
    p->update(items, config);
    torch::cuda::synchronize();
    torch::autograd::profiler::disableProfiler()->save(std::string(dir) + "/update_sft" + std::to_string(sft) +
                                                       "_fused" + std::to_string(fused) + "_mb" +
                                                       std::to_string(state.range(2)) + "_ckpt" +
                                                       checkpoint + ".json");
  }
#else
  (void)dir;
#endif
}

// Decoding alone: a 16-token prompt, kMaxTokens new tokens per completion, through LanguageModel.
void BM_DecodeCpu(benchmark::State& state) {
  LmPolicy* p = cpu_policy().get();
  if (!p) {
    state.SkipWithError("no model (.ci/setup-llm's SmolLM2)");
    return;
  }
  const std::vector<int> prompt = p->model().tokenizer().encode("Write a CUDA kernel that adds two arrays.");
  GenerateOptions g;
  g.max_tokens = kMaxTokens;
  int64_t tokens = 0;
  for (auto _ : state) {
    for (const Generation& gen : p->model().generate(prompt, static_cast<int>(state.range(0)), g))
      tokens += static_cast<int64_t>(gen.tokens.size());
    ++g.seed;
  }
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}

// llama-server on the same prompt tokens: one request per completion (its one slot serves them one
// after another), pure temperature sampling. Arg 1: the task prompt (prompt processing included,
// as ours); arg 0: the 16-token prompt of BM_DecodeCpu. `server_decode_tokens/s` is the server's
// own figure for its decoding (timings.predicted_per_second, averaged).
void BM_LlamaServerSample(benchmark::State& state) {
  const std::string url = testing::llm_url();
  LmPolicy* p = cpu_policy().get();
  if (url.empty() || !p) {
    state.SkipWithError("no llama-server or no model (.ci/setup-llm; the llama_server fixture gives the URL)");
    return;
  }
  const std::vector<int> prompt = state.range(1) ? p->prompt_tokens(relu(), p->options().prompt)
                                                 : p->model().tokenizer().encode("Write a CUDA kernel that adds two arrays.");
  HttpClient http;
  int64_t tokens = 0, seed = 1, requests = 0;
  double server_rate = 0;
  for (auto _ : state) {
    for (int i = 0; i < static_cast<int>(state.range(0)); ++i) {
      const nlohmann::json body = {{"prompt", prompt}, {"n_predict", kMaxTokens}, {"temperature", 1.0},
                                   {"top_k", 0},       {"min_p", 0.0},           {"seed", seed++},
                                   {"cache_prompt", false}};
      const HttpResponse r = http.post_json(url + "/completion", body.dump());
      if (r.status != 200) {
        state.SkipWithError(("llama-server answered " + std::to_string(r.status)).c_str());
        return;
      }
      const nlohmann::json j = nlohmann::json::parse(r.body);
      tokens += j.at("tokens_predicted").get<int64_t>();
      server_rate += j.at("timings").at("predicted_per_second").get<double>();
      ++requests;
    }
  }
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["server_decode_tokens/s"] = requests ? server_rate / static_cast<double>(requests) : 0.0;
}

BENCHMARK(BM_SampleCpu)->Arg(1)->Arg(kCompletions)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_DecodeCpu)->Arg(1)->Arg(kCompletions)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_LlamaServerSample)->Args({kCompletions, 1})->Args({kCompletions, 0})->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_TrainStepCpu)->ArgName("fused")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();
BENCHMARK(BM_SampleGpu)->Arg(1)->Arg(kCompletions)->Arg(64)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();
BENCHMARK(BM_TrainStepGpu)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_DecodeGpu)
    ->ArgNames({"shape", "n", "graphs"})
    ->Args({0, 1, 1})
    ->Args({0, 8, 1})
    ->Args({0, 64, 1})
    ->Args({0, 1, 0})
    ->Args({0, 64, 0})
    ->Args({1, 1, 1})
    ->Args({1, 64, 1})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2)
    ->UseRealTime();
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
