#include "preflight.h"

#include <fmt/format.h>
#include <kernels/candidate_json.h>  // to_string(ArgKind)
#include <kernels/expression.h>      // quote_input

namespace kbrl {
namespace {

std::string plural(size_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

}  // namespace

std::optional<std::string> launch_argument_mismatch(const Candidate& candidate, const KernelParams& kernels) {
  for (size_t i = 0; i < candidate.launches.size(); ++i) {
    const Launch& launch = candidate.launches[i];
    const auto it = kernels.find(launch.kernel);
    if (it == kernels.end()) continue;  // the load stage reports a missing kernel
    const std::vector<KernelParam>& params = it->second;
    const std::string kernel = quote_input(launch.kernel);
    if (launch.args.size() != params.size())
      return fmt::format("launch {} passes {} to kernel '{}', which takes {}", i,
                         plural(launch.args.size(), "argument"), kernel, plural(params.size(), "parameter"));
    for (size_t a = 0; a < params.size(); ++a) {
      const int bytes = arg_bytes(launch.args[a].kind);
      if (bytes != params[a].size)
        return fmt::format("launch {} of kernel '{}': argument {} is {} ({} bytes) but parameter {} "
                           "takes {} bytes", i, kernel, a, to_string(launch.args[a].kind), bytes, a,
                           params[a].size);
    }
  }
  return std::nullopt;
}

std::optional<std::string> preflight(const Candidate& candidate, const CompiledModule& module) {
  if (std::optional<std::string> over = plan_limit_violation(candidate)) return over;
  return launch_argument_mismatch(candidate, module.kernels);
}

}  // namespace kbrl
