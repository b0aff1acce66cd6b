#pragma once
// Runs kbrl_lm_dp_rank (lm_dp_rank.cpp) as a data-parallel group: one process per rank, on GPUs one
// GPU each (CUDA_VISIBLE_DEVICES), NVLink multicast off (NCCL_NVLS_ENABLE=0), and reads back what the
// ranks wrote. For test_lm_data_parallel (CPU, Gloo) and bench_lm (GPUs, NCCL).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <kbrl/subprocess.h>

extern char** environ;

namespace kbrl::testing {

struct RankResults {
  std::string error;                         // empty when every rank exited 0
  std::vector<nlohmann::json> reports;       // rank<R>.json, by rank
  std::vector<std::vector<float>> gradients;  // step 1's gradient as each rank holds it
  std::vector<std::vector<float>> gradients2;  // step 2's (after step 1's optimizer step)
};

/// Runs `size` ranks of `exe` with `args` (key=value) in `dir` (made empty first), each rank's output
/// in dir/rank<R>.log; on GPUs, rank R sees only GPU `first_gpu + R`. A rank that fails ends the others
/// (they would wait in a collective); so does `timeout`.
inline RankResults run_ranks(const std::string& exe, const std::vector<std::string>& args, int size,
                             const std::filesystem::path& dir, bool gpus, std::chrono::seconds timeout,
                             int first_gpu = 0) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  RankResults out;
  // Rank r's GPU: the r-th (from first_gpu) of this process's visible GPUs.
  std::vector<std::string> visible;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v && *v) {
    std::string list = v;
    for (size_t at = 0; at <= list.size();) {
      const size_t comma = std::min(list.find(',', at), list.size());
      visible.push_back(list.substr(at, comma - at));
      at = comma + 1;
    }
  }
  std::vector<ChildProcess> children;
  for (int r = 0; r < size; ++r) {
    SpawnSpec spec;
    spec.argv = {exe, "rank=" + std::to_string(r), "size=" + std::to_string(size), "store=" + (dir / "store").string(),
                 "out=" + dir.string()};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21) != 0 && std::strncmp(*e, "NCCL_NVLS_ENABLE=", 17) != 0)
        env.emplace_back(*e);
    env.push_back("NCCL_NVLS_ENABLE=0");
    if (gpus) {
      const size_t g = static_cast<size_t>(first_gpu + r);
      if (!visible.empty() && g >= visible.size()) {
        out.error = "rank " + std::to_string(r) + " needs visible GPU " + std::to_string(g) + "; CUDA_VISIBLE_DEVICES lists " +
                    std::to_string(visible.size());
        return out;
      }
      env.push_back("CUDA_VISIBLE_DEVICES=" + (visible.empty() ? std::to_string(g) : visible[g]));
    }
    spec.env = env;
    UniqueFd log(::open((dir / ("rank" + std::to_string(r) + ".log")).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    spec.fds = {{log.get(), 1}, {log.get(), 2}};
    children.push_back(spawn(spec));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<bool> done(children.size(), false);
  size_t left = children.size();
  while (left > 0 && out.error.empty()) {
    for (size_t r = 0; r < children.size(); ++r) {
      if (done[r]) continue;
      const auto status = children[r].wait_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(20));
      if (!status) continue;
      done[r] = true;
      --left;
      if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
        std::ifstream log(dir / ("rank" + std::to_string(r) + ".log"));
        out.error = "rank " + std::to_string(r) + " failed: " + std::string(std::istreambuf_iterator<char>(log), {});
      }
    }
    if (left > 0 && std::chrono::steady_clock::now() > deadline)
      out.error = "the ranks did not finish within " + std::to_string(timeout.count()) + " s";
  }
  for (size_t r = 0; r < children.size(); ++r)
    if (!done[r]) children[r].kill();  // the others after a failure or the timeout
  if (!out.error.empty()) return out;
  for (int r = 0; r < size; ++r) {
    std::ifstream report(dir / ("rank" + std::to_string(r) + ".json"));
    out.reports.push_back(nlohmann::json::parse(report));
    for (int step : {1, 2}) {
      std::ifstream g(dir / ("gradient_step" + std::to_string(step) + "_rank" + std::to_string(r) + ".f32"), std::ios::binary);
      const std::string bytes(std::istreambuf_iterator<char>(g), {});
      std::vector<float> v(bytes.size() / sizeof(float));
      std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
      (step == 1 ? out.gradients : out.gradients2).push_back(std::move(v));
    }
  }
  return out;
}

/// |a - b| / |b| over the whole vectors (L2); 1 when the sizes differ or b is 0.
inline double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || b.empty()) return 1.0;
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    n += static_cast<double>(b[i]) * b[i];
  }
  return n > 0 ? std::sqrt(d / n) : 1.0;
}

}  // namespace kbrl::testing
