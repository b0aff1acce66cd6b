#pragma once
// What the `kbrl` learning commands and the experiment programs share when they set up a run:
// the policy factory, task selection, the JSON configs of the loops (flat snake_case keys) and the
// evaluator's settings from the common flags. No libtorch and no CLI11 here.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <harness/evaluator.h>
#include <policies/policy.h>

#include "training_loops.h"

namespace kbrl {

// ---- policies ----

struct PolicyOptions {
  std::string name = "schedule";  // schedule | uniform | heuristic | endpoint:URL[,...] | lm:MODEL[,...]
  std::string checkpoint;         // schedule and lm: base weights (.pt) to load; "" = fresh from `seed` / the model file
  std::string adapter;            // schedule and lm: a LoRA adapter (.pt) to load on top; "" = none
  double noise = 0.25;            // heuristic only
  std::string device = "cpu";     // schedule and lm (unless the spec names one): "cpu" or "cuda[:N]"
  uint64_t seed = 0;              // schedule only: weight initialization
  std::string response_log;       // endpoint only: the JSONL of server responses (resume); "" = none
};

/// "schedule", "uniform", "heuristic", "endpoint:URL[,model=NAME,...]" (policies/endpoint_policy.h),
/// "lm:MODEL[,key=value...]" (policies/lm/lm_policy.h).
const std::vector<std::string>& policy_names();
/// Does the name start with "endpoint:"?
bool is_endpoint_policy(const std::string& name);
/// Does the name start with "lm:" (a language model in the process, policies/lm/lm_policy.h)?
bool is_lm_policy(const std::string& name);
/// A policy whose actions are text (endpoint or lm).
bool is_text_policy(const std::string& name);
/// Where the policy computes: a language model's spec device= when it names a GPU, else --policy-device.
std::string policy_device(const PolicyOptions& o);
/// The adapter the policy loads last (what run.json records): --adapter, else a language model's
/// spec adapter=, else "".
std::string policy_adapter(const PolicyOptions& o);

/// The policy `options` names. InputError for an unknown name (listing the names), a checkpoint or
/// adapter given to a policy without weights, a noise outside [0, 1], a file that is missing, or
/// a malformed endpoint spec.
std::unique_ptr<Policy> make_policy(const PolicyOptions& options);

/// make_policy for the loops that train: InputError when the policy is not trainable. An adapter
/// loaded from options.adapter is merged into the base, so that the loops start from it.
std::unique_ptr<TrainablePolicy> make_trainable_policy(const PolicyOptions& options);

// ---- tasks ----

/// The task ids to run: `ids` (checked, duplicates dropped, order kept) or the split named `split`
/// (in its order); exactly one of the two must be given. InputError for an unknown id or split.
std::vector<int> select_tasks(const std::vector<int>& ids, const std::string& split);

/// The ids some generator covers, in order. Each uncovered id is reported through `warn` (one line)
/// and dropped; with no `warn`, an uncovered id is an InputError naming it. InputError when none
/// is left.
std::vector<int> covered_only(const std::vector<int>& ids,
                              const std::function<void(const std::string&)>& warn = {});

/// Which of `size` configurations a sweep evaluates: all of them (ascending) when `max_configs` is
/// 0 or at least `size`, else `max_configs` indices drawn uniformly without replacement that always
/// include `must_include` (the expert configuration) and the first max_configs - 1 of the others
/// after kbrl::shuffle from derive_seed(seed, {task_id}), so the same arguments give the same draw
/// everywhere;
/// ascending. InputError for max_configs < 0; `must_include` must be < size.
std::vector<size_t> sweep_sample(size_t size, size_t must_include, int max_configs, uint64_t seed, int task_id);

// ---- JSON configs ----

/// The JSON object in `file`; InputError when it cannot be read or is not a JSON object.
nlohmann::json read_json_file(const std::filesystem::path& file);

/// Sets `key` of the object `config` from "VALUE" text: parsed as JSON when it parses (numbers,
/// true/false, quoted strings), else taken as a string. For command-line overrides.
void set_config_value(nlohmann::json& config, const std::string& key, const std::string& value);

/// The settings of a best-of-N run (`kbrl sample`).
struct SampleConfig {
  std::vector<int> tasks;
  Scale scale = Scale::kernelbench;
  int k = 8;  // samples per task
  double temperature = 1.0;
  uint64_t seed = 0;
  std::string run = "sample";
};

// Readers of a JSON object with flat snake_case keys into a loop's config; `source` names where the
// object came from (a file) in errors. Missing keys keep the struct's defaults. An unknown key, a
// value of the wrong type or a bad value is an InputError naming the key, `source` and the valid
// keys. Every config takes "tasks" (array of ids) or "split" (a split's name), and "scale".
//
// Shared keys: optimizer: learning_rate, beta1, beta2, eps, weight_decay, max_grad_norm;
// LoRA: lora_rank, lora_alpha; GRPO: normalize_std, clip_epsilon, aggregation
// (sequence_mean|token_mean|constant), kl_coef, constant_length.
//   rlvr: tasks_per_batch, group_size, steps, temperature, lora, checkpoint_every, seed, run + shared
//   ttt:  k, steps, temperature, update (grpo|sdpo), teacher (feedback|prompt_only), sdpo_beta,
//         patience, seed, run + shared
//   sft:  epochs, batch_size, temperature, lora, seed, optimizer and LoRA keys
//   sample: k, temperature, seed, run
RlvrConfig read_rlvr_config(const nlohmann::json& j, const std::string& source);
TttConfig read_ttt_config(const nlohmann::json& j, const std::string& source);
SftConfig read_sft_config(const nlohmann::json& j, const std::string& source);
SampleConfig read_sample_config(const nlohmann::json& j, const std::string& source);

/// The valid keys of each reader, sorted.
std::vector<std::string> rlvr_config_keys();
std::vector<std::string> ttt_config_keys();
std::vector<std::string> sft_config_keys();
std::vector<std::string> sample_config_keys();

// ---- the evaluator ----

/// The evaluator's settings as the command-line flags give them.
struct EvalFlags {
  std::string mode = "fast";           // fast | full | adaptive
  std::string scale = "kernelbench";   // kernelbench | small
  std::string tolerance = "strict";    // strict | legacy
  std::string inputs = "robust";       // robust | kernelbench
  std::string reward = "speedup";      // speedup | composite | normalized
  std::string precision = "flag";      // allow | flag | reject
  int trials = 5;
  double timeout = 120;  // seconds per GPU job
  std::string arch;      // "" = the device's
  int device = 0;        // CUDA device index
};

/// EvalSettings from the flags (the on-disk compile cache at its default place). InputError for an
/// unknown value, trials < 1 or timeout <= 0.
EvalSettings eval_settings(const EvalFlags& flags);

}  // namespace kbrl
