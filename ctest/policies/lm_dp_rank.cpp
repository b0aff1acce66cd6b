// kbrl_lm_dp_rank: one rank of a data-parallel GRPO update (policies/lm/data_parallel.h), started by
// data_parallel_testing.h's run_ranks once per rank (on a GPU each sees one GPU: CUDA_VISIBLE_DEVICES).
//   kbrl_lm_dp_rank spec=lm:... rank=R size=N store=FILE out=DIR [k=64] [tokens=1024] [steps=2]
//                   [seed=11] [lr=1e-5] [rank_lora=16] [clip=1] [varied=0] [kl=0] [aggregation=sequence_mean]
//                   [as_ranks=1]
// Every rank builds the same model, LoRA adapter (rank_lora, alpha 2 x rank_lora) and batch: k random
// completions of `tokens` tokens after ReLU's prompt, advantages +1 and -1 in turn; with varied=1 the
// lengths differ (16 + 7i mod tokens), every third completion answers task 20 instead, and every other
// one carries sampling log-probs (-5.5 a token, so GRPO's ratios are not all 1). clip: the gradient
// norm's clip (0 = none, so a gradient summed wrongly shows at its scale). The gradients of steps 1
// and 2 (summed over the group, clipped) go to DIR/gradient_step<S>_rank<R>.f32 (raw float32):
// step 2's depends on step 1's optimizer step. Step 1 is the warm-up; the others are the timed ones.
// as_ranks=N (with size=1): the batch reordered into the shares N ranks would take (rank 0's, then
// rank 1's, ...), so one process forms the same micro-batches as N ranks do: its gradient differs
// from theirs only by the order of the float32 sums.
// DIR/rank<R>.json: the backend, each step's seconds, loss, entropy, KL, gradient norm and tokens and,
// on a GPU, the memory: in use on the GPU after the steps (cudaMemGetInfo: total - free, with the
// CUDA context and NCCL's buffers) and the caching allocator's peaks (allocated and reserved), GiB.
// The rank dies with its parent (a killed test or benchmark leaves no rank waiting in a collective).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <sys/prctl.h>
#include <csignal>

#include <nlohmann/json.hpp>
#include <torch/torch.h>
#if KBRL_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#endif

#include <kbrl/splitmix64.h>
#include <policies/lm/data_parallel.h>
#include <policies/lm/lm_policy.h>
#include <reference/task_registry.h>

namespace {

using namespace kbrl;
using namespace kbrl::lm;

std::map<std::string, std::string> parse_args(int argc, char** argv) {
  std::map<std::string, std::string> out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const size_t eq = a.find('=');
    KBRL_CHECK_INPUT(eq != std::string::npos, "argument '{}' is not key=value", a);
    out[a.substr(0, eq)] = a.substr(eq + 1);
  }
  for (const char* key : {"spec", "rank", "size", "store", "out"})
    KBRL_CHECK_INPUT(out.count(key), "missing {}=... (spec, rank, size, store, out)", key);
  return out;
}

std::string get(const std::map<std::string, std::string>& args, const std::string& key, const std::string& fallback) {
  const auto it = args.find(key);
  return it == args.end() ? fallback : it->second;
}

void sync(bool cuda) {
#if KBRL_TORCH_CUDA
  if (cuda) torch::cuda::synchronize();
#endif
  (void)cuda;
}

int run(int argc, char** argv) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const auto args = parse_args(argc, argv);
  const int rank = std::stoi(args.at("rank")), size = std::stoi(args.at("size"));
  const int k = std::stoi(get(args, "k", "64")), tokens = std::stoi(get(args, "tokens", "1024"));
  const int steps = std::stoi(get(args, "steps", "2")), lora_rank = std::stoi(get(args, "rank_lora", "16"));
  const std::filesystem::path out = args.at("out");
  LmPolicy policy(parse_lm_spec(args.at("spec")));
  const bool cuda = policy.options().model_options.device.rfind("cuda", 0) == 0;
  policy.add_adapter({lora_rank, 2.0 * lora_rank}, 1);
  OptimizerConfig optimizer;
  optimizer.learning_rate = std::stod(get(args, "lr", "1e-5"));
  optimizer.max_grad_norm = std::stod(get(args, "clip", "1"));
  policy.set_optimizer(optimizer);
  UpdateConfig config;
  config.kl_coef = std::stod(get(args, "kl", "0"));
  const std::string aggregation = get(args, "aggregation", "sequence_mean");
  KBRL_CHECK_INPUT(aggregation == "sequence_mean" || aggregation == "token_mean", "aggregation: sequence_mean or token_mean");
  config.aggregation = aggregation == "token_mean" ? Aggregation::token_mean : Aggregation::sequence_mean;
  const bool varied = get(args, "varied", "0") == "1";
  const int as_ranks = std::stoi(get(args, "as_ranks", "1"));
  KBRL_CHECK_INPUT(as_ranks >= 1 && (as_ranks == 1 || size == 1), "as_ranks=N reorders one process's batch (size=1)");
  DataParallelOptions joining;
  joining.store = args.at("store");
  joining.rank = rank;
  joining.size = size;
  std::shared_ptr<DataParallelGroup> group = DataParallelGroup::join(joining, cuda);
  policy.set_data_parallel(group);

  std::vector<TrainItem> items(static_cast<size_t>(k));
  uint64_t rng = std::stoull(get(args, "seed", "11"));
  for (size_t i = 0; i < items.size(); ++i) {
    items[i].task = task_spec(varied && i % 3 == 2 ? 20 : 19, Scale::kernelbench);
    const int length = varied ? 16 + static_cast<int>(7 * i) % tokens : tokens;
    for (int t = 0; t < length; ++t) items[i].tokens.push_back(static_cast<int>(splitmix64(rng) % 256));
    items[i].advantages.assign(items[i].tokens.size(), i % 2 ? 1.0 : -1.0);
    if (varied && i % 2 == 0) items[i].old_logprobs.assign(items[i].tokens.size(), -5.5);
  }
  if (as_ranks > 1) {
    std::vector<TrainItem> shares;
    for (int r = 0; r < as_ranks; ++r)
      for (size_t i = static_cast<size_t>(r); i < items.size(); i += static_cast<size_t>(as_ranks)) shares.push_back(items[i]);
    items = std::move(shares);
  }
  nlohmann::json report = {{"rank", rank}, {"size", size}, {"backend", group->backend()}, {"k", k},
                           {"tokens_per_completion", tokens}};
  for (int s = 1; s <= steps; ++s) {
    std::vector<at::Tensor> barrier = {torch::zeros({1}, cuda ? torch::Device("cuda") : torch::Device("cpu"))};
    group->sum(barrier);  // every rank starts the step together
    sync(cuda);
    const auto t0 = std::chrono::steady_clock::now();
    const UpdateStats st = policy.update(items, config);
    sync(cuda);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    report["steps"].push_back({{"seconds", seconds}, {"loss", st.loss}, {"grad_norm", st.grad_norm}, {"tokens", st.tokens},
                               {"entropy", st.entropy}, {"kl", std::isnan(st.kl) ? nlohmann::json() : nlohmann::json(st.kl)}, {"clip_fraction", st.clip_fraction}});
    if (s <= 2) {
      const std::vector<float> g = policy.last_gradient();
      std::ofstream f(out / ("gradient_step" + std::to_string(s) + "_rank" + std::to_string(rank) + ".f32"), std::ios::binary);
      f.write(reinterpret_cast<const char*>(g.data()), static_cast<std::streamsize>(g.size() * sizeof(float)));
    }
  }
#if KBRL_TORCH_CUDA
  if (cuda) {
    size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    report["device_GiB"] = static_cast<double>(total - free) / (1u << 30);
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);  // [0]: every pool
    report["peak_allocated_GiB"] = static_cast<double>(stats.allocated_bytes[0].peak) / (1u << 30);
    report["peak_reserved_GiB"] = static_cast<double>(stats.reserved_bytes[0].peak) / (1u << 30);
  }
#endif
  std::ofstream(out / ("rank" + std::to_string(rank) + ".json")) << report.dump(1) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kbrl_lm_dp_rank: %s\n", e.what());
    return 1;
  }
}
