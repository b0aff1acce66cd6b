// Sampling throughput of the language model in the process (Google Benchmark; figures printed,
// never asserted): generated tokens/s of a batch of completions of one task prompt (KV cache, the
// prompt computed once), next to llama-server's sampling rate on the same machine in the same run
// (the same prompt tokens, the completions one request after another, as its one slot serves them).
//   CPU: SmolLM2-135M-Instruct (KBRL_LLM_MODEL or .ci/setup-llm's file) in float32; llama-server from
//        KBRL_LLM_URL (or the fixture's URL file) serving the same GGUF.
//   GPU (when libtorch sees one): a randomly initialized Llama-shaped model (12 layers, hidden 768,
//        bfloat16) with the same batch shapes; and the decoder at the sizes RL samples at
//        (BM_DecodeGpu): SmolLM2-135M's and Qwen2.5-1.5B's shapes in bfloat16, n completions of
//        1,024 new tokens after one shared 1,100-token prompt, with CUDA graphs (arg 1) or eager
//        steps (arg 0): the figures to set beside llama.cpp's CUDA build (`.ci/llamacpp-cuda`).
// Counters: tokens/s = generated completion tokens per second of wall time. The training cases of
// the same executable are in bench_lm_training.cpp.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>

#include <nlohmann/json.hpp>
#include <kbrl/http_client.h>
#include <kbrl/splitmix64.h>
#include <policies/lm/language_model.h>
#include <torch/cuda.h>

#include "bench_lm_models.h"
#include "llm_testing.h"

namespace kbrl::lm {
namespace {

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

void BM_SampleCpu(benchmark::State& state) { sample_bench(state, cpu_policy().get(), static_cast<int>(state.range(0))); }
void BM_SampleGpu(benchmark::State& state) { sample_bench(state, gpu_policy().get(), static_cast<int>(state.range(0))); }

// Decoding alone: a 16-token prompt, kMaxTokens new tokens per completion, through LanguageModel.
// Args: n completions; the weights the steps read, float32 (0) or 8-bit copies (1: cpu_weights=q8).
void BM_DecodeCpu(benchmark::State& state) {
  LmPolicy* p = cpu_policy(state.range(1) == 1).get();
  if (!p) {
    state.SkipWithError("no model (.ci/setup-llm's SmolLM2)");
    return;
  }
  const std::vector<int> prompt = p->model().tokenizer().encode("Write a CUDA kernel that adds two arrays.");
  GenerateOptions g;
  g.max_tokens = 2;
  p->model().generate(prompt, static_cast<int>(state.range(0)), g);  // untimed: the sampler's weights made
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

// The decoder alone on a GPU at RL's sizes: model shape (0 = SmolLM2-135M, 1 = Qwen2.5-1.5B; random
// weights, bfloat16), n completions, CUDA graphs on (1) or off (0), matvec_rows (-1: the default; 0:
// matrix products at every n; 8: matvec kernels up to 8 rows), attention_splits (-1 or 0: chosen per
// batch; 1-64: that many blocks per sequence's keys); a 1,100-token prompt, 1,024 new
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
                           (graphs ? "" : ",graphs=off") +
                           (state.range(3) >= 0 ? ",matvec_rows=" + std::to_string(state.range(3)) : "") +
                           (state.range(4) > 0 ? ",attention_splits=" + std::to_string(state.range(4)) : "");
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
  state.counters["attention_splits"] = static_cast<double>(m->decoder_counters().attention_splits);
  // KBRL_PROFILE_DIR: SmolLM2's shapes with graphs and the default settings, n = 1 and 64: a generation of 256 new tokens
  // (its shape's buffers and graph made first), then another profiled (decode_n<N>.json: the
  // kernels of 256 steps; attention reads fewer own keys than in the timed 1,024).
  const char* profile_dir = std::getenv("KBRL_PROFILE_DIR");
  const bool defaults = state.range(3) < 0 && state.range(4) <= 0;
  if (profile_dir && *profile_dir && state.range(0) == 0 && graphs && defaults && (n == 1 || n == 64)) {
    g.max_tokens = 256;
    m->generate(prompt, n, g);
    ++g.seed;
    profile_if_asked("decode_n" + std::to_string(n), [&] { m->generate(prompt, n, g); });
  }
}

BENCHMARK(BM_SampleCpu)->Arg(1)->Arg(kCompletions)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_DecodeCpu)
    ->ArgNames({"n", "q8"})
    ->Args({1, 0})
    ->Args({kCompletions, 0})
    ->Args({1, 1})
    ->Args({kCompletions, 1})
    ->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_LlamaServerSample)->Args({kCompletions, 1})->Args({kCompletions, 0})->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_SampleGpu)->Arg(1)->Arg(kCompletions)->Arg(64)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();
BENCHMARK(BM_DecodeGpu)
    ->ArgNames({"shape", "n", "graphs", "matvec_rows", "attention_splits"})
    ->Args({0, 1, 1, -1, -1})
    ->Args({0, 8, 1, -1, -1})
    ->Args({0, 64, 1, -1, -1})
    ->Args({0, 1, 0, -1, -1})
    ->Args({0, 64, 0, -1, -1})
    ->Args({1, 1, 1, -1, -1})
    ->Args({1, 64, 1, -1, -1})
    ->Args({0, 1, 1, 0, -1})  // where matvec pays: each n with matrix products and with matvec kernels
    ->Args({0, 2, 1, 0, -1})
    ->Args({0, 2, 1, 8, -1})
    ->Args({0, 4, 1, 0, -1})
    ->Args({0, 4, 1, 8, -1})
    ->Args({0, 6, 1, 0, -1})
    ->Args({0, 6, 1, 8, -1})
    ->Args({0, 8, 1, 0, -1})
    ->Args({0, 8, 1, 8, -1})
    ->Args({0, 64, 1, -1, 1})  // attention's blocks per sequence at n = 64, against the chosen count
    ->Args({0, 64, 1, -1, 2})
    ->Args({0, 64, 1, -1, 3})
    ->Args({0, 64, 1, -1, 4})
    ->Args({0, 64, 1, -1, 6})
    ->Args({0, 64, 1, -1, 8})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2)
    ->UseRealTime();

}  // namespace
}  // namespace kbrl::lm
