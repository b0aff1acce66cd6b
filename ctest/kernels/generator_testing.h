#pragma once
// Shared by the generator tests: every legal configuration of some tasks compiles, and the precision
// audit sees exactly the unsafe precision knobs.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <harness/compile.h>
#include <harness/compile_cache.h>
#include <harness/compile_pool.h>
#include <kernels/generator.h>

namespace kbrl::testing {

/// The audit category a `precision` knob value must show: fp16_compute -> fp16, bf16_compute ->
/// bf16, tf32 and tf32x3 (tensor cores with TF32 inputs; x3 splits each value in a high and a low
/// TF32 part for near-fp32 accuracy, still TF32 instructions) -> tf32; fp32 -> none.
inline std::optional<PrecisionCategory> precision_category_of(const std::string& precision) {
  if (precision == "fp32") return std::nullopt;
  if (precision == "fp16_compute") return PrecisionCategory::fp16;
  if (precision == "bf16_compute") return PrecisionCategory::bf16;
  if (precision == "tf32" || precision == "tf32x3") return PrecisionCategory::tf32;
  ADD_FAILURE() << "precision value '" << precision << "' has no expected audit category";
  return std::nullopt;
}

/// Generates every legal configuration of every task in `tasks`, groups the candidates by (source,
/// options), and compiles each distinct unit once for sm_90a on a CompilePool over a fresh cache (so
/// every unit really goes through NVRTC). Expects every unit to compile and its precision audit to
/// match the shared unsafe knobs: fast_math=on shows fast_math, a precision below fp32 shows its
/// category (precision_category_of), and a configuration with neither shows no reduced precision (tail=dropped is not a precision
/// matter: the audit cannot see it). Prints the counts and the time under `family`.
inline void expect_every_config_compiles(const std::vector<TaskSpec>& tasks, const std::string& family) {
  struct Unit {
    Candidate candidate;
    Config config;  // one configuration that produces it
  };
  std::map<std::string, Unit> units;  // by source + options
  int64_t total = 0;
  for (const TaskSpec& task : tasks) {
    const Generator& g = generator_for(task.id);
    for (const Config& config : g.space(task).enumerate()) {
      Candidate c = g.generate(task, config);
      std::string key = c.source;
      for (const auto& o : c.options) key += "\n//option " + o;
      auto [it, inserted] = units.try_emplace(key);
      if (inserted) it->second = {std::move(c), config};
      ++total;
    }
  }
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kbrl-gen-" + family + "-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  int failures = 0, hits = 0;
  const unsigned threads = std::max(2u, std::thread::hardware_concurrency());
  const auto start = std::chrono::steady_clock::now();
  {
    CompileCache cache(dir);
    CompilePool pool(threads, CompileOptions{}, &cache);
    std::vector<std::pair<const Unit*, std::future<CompileResult>>> jobs;
    for (const auto& [key, unit] : units) jobs.emplace_back(&unit, pool.submit(unit.candidate));
    for (auto& [unit, future] : jobs) {
      const CompileResult r = future.get();
      const Config& c = unit->config;
      hits += r.cache_hit ? 1 : 0;
      if (!r.ok) {
        if (++failures <= 5)
          ADD_FAILURE() << "task " << unit->candidate.task_id << " " << c.str() << ": " << r.error
                        << "\n" << r.log;
        continue;
      }
      const PrecisionAudit& audit = r.module.audit;
      const bool fast_math = c.has("fast_math") && c.at("fast_math") == "on";
      const std::string precision = c.has("precision") ? c.at("precision") : "fp32";
      const std::optional<PrecisionCategory> reduced = precision_category_of(precision);
      if (fast_math) {
        EXPECT_TRUE(audit.has(PrecisionCategory::fast_math)) << c.str();
      }
      if (reduced) {
        EXPECT_TRUE(audit.has(*reduced)) << c.str() << ": " << audit.summary();
      }
      if (!fast_math && !reduced) {
        EXPECT_FALSE(audit.reduced_precision())
            << "task " << unit->candidate.task_id << " " << c.str() << ": " << audit.summary();
      }
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::filesystem::remove_all(dir);
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(hits, 0);
  std::printf("[ %s ] %lld configurations, %zu distinct units compiled in %.1f s on %u threads\n",
              family.c_str(), static_cast<long long>(total), units.size(), seconds, threads);
}

}  // namespace kbrl::testing
