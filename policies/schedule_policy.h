#pragma once
// The schedule policy (docs/design.md, Policies): a small libtorch network that encodes a task's
// features (policies/task_features.h) and decodes its generator's knob tokens autoregressively,
// one decision per knob in the space's order, sampling only values with a legal completion.
//
// Network (sizes in ScheduleNetConfig):
//   h_0 = tanh(L2(tanh(L1(task features))))  [+ C(teacher context), SDPO's teacher only]
//   (C is never trained: the teacher scores without gradients and no loss reads the context, so the
//   feedback enters as a fixed random projection. This policy cannot do SDPO's feedback teacher; only
//   the demonstration's copy bonus below is a signal its teacher can use.)
//   at knob k: h_k = tanh(L3([h_{k-1}, knob embedding, embedding of the previous decision]))
//              logit(v) = <L4(h_k), value embedding(knob=v)> + value bias(knob=v)
//                         [+ copy_gain * (v == the demonstration's value), teacher only]
// Knob names and "knob=value" strings are hashed into embedding tables shared by every family,
// so one network covers every task and knobs with a shared name share what they learn.
// L1..L4 are LoRA-adaptable linear layers; with an adapter only the adapters train.
// The network runs on CPU or a CUDA device; sampling draws from splitmix64 on the host, so the
// same seed gives the same samples.
#include <memory>
#include <string>

#include "policy.h"

namespace kbrl {

struct ScheduleNetConfig {
  int hidden = 64;
  int embed = 32;
  int value_buckets = 2048;  // hashed "knob=value" embeddings
  int knob_buckets = 256;    // hashed knob-name embeddings
  uint64_t seed = 0;         // weight initialization
  std::string device = "cpu";  // "cpu" or "cuda[:N]"
};

class SchedulePolicy final : public TrainablePolicy {
 public:
  explicit SchedulePolicy(const ScheduleNetConfig& config = {});
  ~SchedulePolicy() override;
  SchedulePolicy(const SchedulePolicy&) = delete;
  SchedulePolicy& operator=(const SchedulePolicy&) = delete;

  std::string name() const override { return "schedule"; }
  std::vector<Sample> sample(const TaskSpec& task, int n, double temperature, uint64_t seed) override;
  std::vector<std::vector<double>> logprob(const TaskSpec& task,
                                           const std::vector<std::vector<int>>& tokens,
                                           double temperature = 1.0) override;
  std::vector<std::vector<double>> teacher_logprob(const TaskSpec& task,
                                                   const std::vector<std::vector<int>>& tokens,
                                                   const TeacherContext& context,
                                                   double temperature = 1.0) override;

  void add_adapter(const LoraConfig& config, uint64_t seed) override;
  void reset_adapter(uint64_t seed) override;
  void merge_adapter() override;
  void remove_adapter() override;
  bool has_adapter() const override;

  void set_optimizer(const OptimizerConfig& config) override;
  UpdateStats update(const std::vector<TrainItem>& batch, const UpdateConfig& config) override;
  UpdateStats measure(const std::vector<TrainItem>& batch, double temperature) override;

  int64_t parameter_count(bool trainable_only) const override;

  void save_base(const std::filesystem::path& file) const override;
  void load_base(const std::filesystem::path& file) override;
  void save_adapter(const std::filesystem::path& file) const override;
  void load_adapter(const std::filesystem::path& file) override;
  std::string adapter_state() const override;
  void restore_adapter(const std::string& state) override;

  const ScheduleNetConfig& config() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kbrl
