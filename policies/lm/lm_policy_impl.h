#pragma once
// Internal to kbrl::lm (includes libtorch): LmPolicy's state, shared by lm_policy.cpp (sampling,
// prompts, adapters, checkpoints) and lm_policy_update.cpp (the loss and the optimizer step).
#include <torch/torch.h>

#include <map>
#include <optional>

#include "llama_net.h"
#include "lm_policy.h"

namespace kbrl::lm {

struct LmPolicy::Impl {
  explicit Impl(LanguageModel m) : model(std::move(m)) {}
  LanguageModel model;
  std::optional<LoraConfig> lora;  // set while an adapter is present
  OptimizerConfig optimizer_config;
  std::unique_ptr<torch::optim::Adam> optimizer;
  std::map<std::string, std::vector<int>> prompt_ids;  // by prompt text
  std::shared_ptr<DataParallelGroup> group;            // set_data_parallel; null = one process

  /// The adapter's A and B tensors (they train), in layer and projection order.
  std::vector<torch::Tensor> trainable();
  void rebuild_optimizer();
};

}  // namespace kbrl::lm
