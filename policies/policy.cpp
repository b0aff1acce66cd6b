#include "policy.h"

#include <map>
#include <memory>
#include <mutex>
#include <numeric>

#include <kbrl/error.h>
#include <kernels/generator.h>

namespace kbrl {

double Sample::logprob() const { return std::accumulate(logprobs.begin(), logprobs.end(), 0.0); }

double Sample::mean_logprob() const {
  return logprobs.empty() ? 0.0 : logprob() / static_cast<double>(logprobs.size());
}

std::vector<std::vector<double>> Policy::score_text(const TaskSpec& task, const std::vector<std::string>& texts) {
  throw InputError(fmt::format("the {} policy chooses knobs and cannot score text (task {}): use a language-model "
                               "policy (--policy endpoint:URL)",
                               name(), task.id));
}

std::vector<int> Policy::text_tokens(const std::string& text) {
  throw InputError(fmt::format("the {} policy cannot tokenize text for training: use a language model in the "
                               "process (--policy lm:MODEL)",
                               name()));
}

const KnobSpace& knob_space_of(const TaskSpec& task) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<KnobSpace>> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(task.id);
  if (it == cache.end())
    it = cache.emplace(task.id, std::make_unique<KnobSpace>(generator_for(task.id).space(task))).first;
  return *it->second;
}

std::string_view to_string(Aggregation a) { return enum_name(a); }
Aggregation parse_aggregation(std::string_view text) { return parse_enum<Aggregation>(text); }

}  // namespace kbrl
