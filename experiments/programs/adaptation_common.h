#pragma once
// The summary row of one TTT or SDPO run (schemas::adaptation_runs()).
#include <string>
#include <vector>

#include <experiments/training_loops.h>

namespace kbrl {

std::vector<std::string> adaptation_row(const std::string& experiment, const std::string& method,
                                        const std::string& value, const TttConfig& config,
                                        const TttResult& result);

}  // namespace kbrl
