#pragma once
// Shared by the generator tests (ctest/kernels/test_generator_<family>.cpp): the checks every
// family must pass, parameterized by a FamilySpec (coverage, knob spaces, expert configurations,
// launch plans over the task's own arguments), small source helpers, and the compile-every-config
// check (every legal configuration compiles; the precision audit sees exactly the unsafe knobs).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <harness/compile/compile.h>
#include <harness/compile/compile_cache.h>
#include <kbrl/error.h>
#include <kernels/candidate_file.h>
#include <kernels/generator.h>
#include <reference/task_registry.h>

namespace kbrl::testing {

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The candidate for `task`'s expert configuration with `overrides` ("knob=value,...") applied.
inline Candidate generate_with(const TaskSpec& task, const std::string& overrides = "") {
  const Generator& g = generator_for(task.id);
  return g.generate(task, g.space(task).with_overrides(g.expert(task), Config::parse(overrides)));
}

/// A configuration is unsafe when any precision knob it has leaves the exact setting: precision
/// other than fp32, fast_math other than off, tail other than safe.
inline bool is_unsafe(const Config& c) {
  return (c.has("precision") && c.at("precision") != "fp32") ||
         (c.has("fast_math") && c.at("fast_math") != "off") ||
         (c.has("tail") && c.at("tail") != "safe");
}

/// The specs of `ids` at each of `scales`, scale by scale.
inline std::vector<TaskSpec> task_specs(const std::vector<int>& ids,
                                        const std::vector<Scale>& scales = {Scale::kernelbench}) {
  std::vector<TaskSpec> tasks;
  for (const Scale scale : scales)
    for (int id : ids) tasks.push_back(task_spec(id, scale));
  return tasks;
}

/// What the shared checks need to know about one generator family.
struct FamilySpec {
  std::string name;                        // Generator::name()
  std::map<int, int64_t> space_sizes;      // task id -> exact knob-space size (the covered tasks)
  std::set<std::string> extra_knobs = {};  // non-canonical knob names the family may use
  std::vector<int> foreign_tasks = {19};   // tasks of other families (space/expert/generate throw)
  std::set<ArgKind> arg_kinds = {};        // the kinds a plan's arguments may have
  int round_trip_every = 37;               // every n-th plan goes through the candidate-file form

  std::vector<int> tasks() const {
    std::vector<int> ids;
    for (const auto& [id, size] : space_sizes) ids.push_back(id);
    return ids;
  }
};

/// A map giving every task in `ids` the space size `size_of(id)`.
inline std::map<int, int64_t> sizes_of(const std::vector<int>& ids,
                                       const std::function<int64_t(int)>& size_of) {
  std::map<int, int64_t> sizes;
  for (int id : ids) sizes[id] = size_of(id);
  return sizes;
}

/// The family's generator covers exactly its tasks among 1..100, under its name; no other family
/// claims them; they are covered; for a foreign task, space, expert and generate (with any of the
/// family's expert configurations) throw InputError.
inline void expect_coverage(const FamilySpec& family) {
  const std::vector<int> ids = family.tasks(), covered = covered_tasks();
  const Generator& g = generator_for(ids.at(0));
  for (int id : ids) {
    EXPECT_EQ(generator_for(id).name(), family.name) << id;
    EXPECT_NE(std::find(covered.begin(), covered.end(), id), covered.end()) << id;
    int claims = 0;  // no other family claims the task
    for (const Generator* any : generators()) claims += any->covers(id) ? 1 : 0;
    EXPECT_EQ(claims, 1) << id;
  }
  for (int id = 1; id <= 100; ++id) EXPECT_EQ(g.covers(id), family.space_sizes.count(id) > 0) << id;
  for (int foreign : family.foreign_tasks) {
    const TaskSpec t = task_spec(foreign, Scale::small);
    EXPECT_THROW(g.space(t), InputError) << foreign;
    EXPECT_THROW(g.expert(t), InputError) << foreign;
    for (int id : ids)
      EXPECT_THROW(g.generate(t, g.expert(task_spec(id, Scale::small))), InputError) << foreign;
  }
}

/// Every task's knob space: size in 32..1024 and exactly the expected one; canonical knob names
/// (or the family's extras); enumerate() lists `size` configurations, the same at both scales; each
/// configuration's tokens round-trip, are allowed by the legal mask of their prefix at every step,
/// and its text parses back. `also` adds the family's own checks on (task, space, enumeration).
inline void expect_knob_spaces(
    const FamilySpec& family,
    const std::function<void(const TaskSpec&, const KnobSpace&, const std::vector<Config>&)>&
        also = {}) {
  for (const auto& [id, expected] : family.space_sizes) {
    const TaskSpec task = task_spec(id, Scale::kernelbench);
    const KnobSpace space = generator_for(id).space(task);
    const int64_t size = space.size();
    EXPECT_GE(size, 32) << id;
    EXPECT_LE(size, 1024) << id;
    EXPECT_EQ(size, expected) << id;
    for (const auto& k : space.knobs())
      EXPECT_TRUE(is_canonical_knob(k.name) || family.extra_knobs.count(k.name)) << k.name;
    const std::vector<Config> all = space.enumerate();
    EXPECT_EQ(static_cast<int64_t>(all.size()), size) << id;
    // The space does not depend on the scale: tokens mean the same at both.
    EXPECT_EQ(generator_for(id).space(task_spec(id, Scale::small)).enumerate(), all) << id;
    for (const Config& c : all) {
      const std::vector<int> tokens = space.tokenize(c);
      ASSERT_EQ(tokens.size(), space.knobs().size());
      EXPECT_EQ(space.detokenize(tokens), c);
      for (size_t k = 0; k < tokens.size(); ++k) {
        const std::vector<bool> mask = space.legal_mask(std::span<const int>(tokens.data(), k));
        EXPECT_TRUE(mask.at(static_cast<size_t>(tokens[k]))) << c.str() << " at " << k;
      }
      EXPECT_EQ(space.parse(c.str()), c);
    }
    if (also) also(task, space, all);
  }
}

/// At both scales, every task's expert configuration is legal, safe (is_unsafe) and compiled
/// without options. `also` adds the family's own checks on (task, expert, its candidate).
inline void expect_expert_legal_and_safe(
    const FamilySpec& family,
    const std::function<void(const TaskSpec&, const Config&, const Candidate&)>& also = {}) {
  for (const TaskSpec& task : task_specs(family.tasks(), {Scale::kernelbench, Scale::small})) {
    const Generator& g = generator_for(task.id);
    const Config expert = g.expert(task);
    EXPECT_TRUE(g.space(task).is_legal(expert))
        << task.id << ": " << g.space(task).why_illegal(expert);
    EXPECT_FALSE(is_unsafe(expert)) << task.id << ": " << expert.str();
    const Candidate c = g.generate(task, expert);
    EXPECT_TRUE(c.options.empty()) << task.id;
    if (also) also(task, expert, c);
  }
}

/// One launch of `c` within CUDA's limits, its kernel defined in the source, its arguments of the
/// family's kinds naming only the task's tensors, scalars and parameters and `c`'s scratch.
inline void expect_launch_uses_task_arguments(const FamilySpec& family, const TaskSpec& task,
                                              const Candidate& c, const Launch& l) {
  // The kernel is defined: "name(" after "void ", a ")" of __launch_bounds__, or a line break.
  const std::string call = l.kernel + "(";
  EXPECT_TRUE(contains(c.source, "void " + call) || contains(c.source, ") " + call) ||
              contains(c.source, "\n" + call))
      << l.kernel;
  EXPECT_GE(l.grid.x, 1u);
  EXPECT_LE(l.grid.x, 2147483647u);
  for (const uint32_t yz : {l.grid.y, l.grid.z}) {
    EXPECT_GE(yz, 1u);
    EXPECT_LE(yz, 65535u);
  }
  const uint64_t threads = uint64_t{l.block.x} * l.block.y * l.block.z;
  EXPECT_GE(threads, 32u);
  EXPECT_LE(threads, 1024u);
  EXPECT_EQ(threads % 32, 0u);
  EXPECT_LE(l.shared_bytes, 227u * 1024u);
  const auto below = [](int i, size_t n) { return i >= 0 && static_cast<size_t>(i) < n; };
  for (const KernelArg& a : l.args) {
    EXPECT_TRUE(family.arg_kinds.count(a.kind))
        << "task " << task.id << ": unexpected argument kind " << static_cast<int>(a.kind) << " in "
        << l.kernel;
    switch (a.kind) {
      case ArgKind::input: EXPECT_TRUE(below(a.index, task.inputs.size())) << a.index; break;
      case ArgKind::output: EXPECT_TRUE(below(a.index, task.outputs.size())) << a.index; break;
      case ArgKind::parameter: EXPECT_TRUE(below(a.index, task.parameters.size())); break;
      case ArgKind::task_scalar: EXPECT_TRUE(below(a.index, task.scalars.size())); break;
      case ArgKind::scratch: EXPECT_TRUE(below(a.index, c.scratch.size())) << a.index; break;
      default: EXPECT_EQ(a.index, 0); break;
    }
  }
}

/// At both scales, every legal configuration of every task generates a plan for that task whose
/// launches pass expect_launch_uses_task_arguments and write every output; scratch is declared
/// only where the family passes scratch (and is never empty); options are --use_fast_math exactly
/// when fast_math=on; every `round_trip_every`-th plan reads back from its candidate-file text.
/// `also` adds the family's own checks (exact launch shapes) on (task, config, candidate).
inline void expect_plans_use_only_task_arguments(
    const FamilySpec& family,
    const std::function<void(const TaskSpec&, const Config&, const Candidate&)>& also = {}) {
  int64_t checked = 0;
  for (const TaskSpec& task : task_specs(family.tasks(), {Scale::kernelbench, Scale::small})) {
    const Generator& g = generator_for(task.id);
    for (const Config& config : g.space(task).enumerate()) {
      const Candidate c = g.generate(task, config);
      EXPECT_EQ(c.task_id, task.id);
      ASSERT_FALSE(c.launches.empty()) << config.str();
      std::set<int> written;
      for (const Launch& l : c.launches) {
        expect_launch_uses_task_arguments(family, task, c, l);
        for (const KernelArg& a : l.args)
          if (a.kind == ArgKind::output) written.insert(a.index);
      }
      EXPECT_EQ(written.size(), task.outputs.size()) << config.str();
      if (!family.arg_kinds.count(ArgKind::scratch)) {
        EXPECT_TRUE(c.scratch.empty());
      }
      for (const ScratchBuffer& s : c.scratch) EXPECT_GT(s.bytes, 0) << s.name;
      const bool fast = config.has("fast_math") && config.at("fast_math") == "on";
      EXPECT_EQ(c.options, fast ? std::vector<std::string>{"--use_fast_math"}
                                : std::vector<std::string>{})
          << config.str();
      if (checked++ % family.round_trip_every == 0) {
        // The candidate-file form (what `kbrl gen` prints) reads back to the same plan.
        const Candidate parsed =
            parse_candidate_file(candidate_file_text(c, task, {"header"}), task, "gen.cu");
        EXPECT_EQ(parsed.launches, c.launches);
        EXPECT_EQ(parsed.scratch, c.scratch);
        EXPECT_EQ(parsed.options, c.options);
      }
      if (also) also(task, config, c);
    }
  }
  EXPECT_GT(checked, 0);
}

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

/// A subset of `configs` in which every pair of knob settings that occurs together in some
/// configuration occurs together in a chosen one (greedy: the configuration covering the most
/// uncovered pairs next, the first on ties), so every value of every knob, and every combination of
/// two, is among them.
inline std::vector<Config> pairwise_cover(const std::vector<Config>& configs) {
  using Pair = std::pair<std::string, std::string>;  // "knob=value" twice, in entry order
  auto pairs_of = [](const Config& c) {
    std::vector<Pair> out;
    const auto& e = c.entries();
    for (size_t i = 0; i < e.size(); ++i)
      for (size_t j = i + 1; j < e.size(); ++j)
        out.emplace_back(e[i].first + "=" + e[i].second, e[j].first + "=" + e[j].second);
    if (e.size() == 1) out.emplace_back(e[0].first + "=" + e[0].second, "");
    return out;
  };
  std::vector<std::vector<Pair>> pairs;
  std::set<Pair> uncovered;
  for (const Config& c : configs) {
    pairs.push_back(pairs_of(c));
    uncovered.insert(pairs.back().begin(), pairs.back().end());
  }
  std::vector<Config> chosen;
  std::vector<bool> taken(configs.size(), false);
  while (!uncovered.empty()) {
    size_t best = 0, best_count = 0;
    for (size_t i = 0; i < configs.size(); ++i) {
      if (taken[i]) continue;
      size_t count = 0;
      for (const Pair& p : pairs[i]) count += uncovered.count(p);
      if (count > best_count) best = i, best_count = count;
    }
    taken[best] = true;
    chosen.push_back(configs[best]);
    for (const Pair& p : pairs[best]) uncovered.erase(p);
  }
  return chosen;
}

/// Whether the generator tests compile every legal configuration (KBRL_EVERY_CONFIG=1: the GPU
/// machine's test run, 16 cores) or each task's pairwise cover (the test command on 2 cores: every
/// knob value and every pair of them; elementwise compiles 279 of its 2,214 distinct units).
inline bool every_config_wanted() {
  const char* env = std::getenv("KBRL_EVERY_CONFIG");
  return env && std::string(env) == "1";
}

/// Generates the legal configurations of every task in `tasks` (all of them, or each task's
/// pairwise cover: every_config_wanted), groups the candidates by (source, options), and compiles
/// each distinct unit once for sm_90a on a CompilePool over a fresh cache (so every unit really
/// goes through NVRTC). Expects every unit to compile and its precision audit to match the shared
/// unsafe knobs: fast_math=on shows fast_math, a precision below fp32 shows its category
/// (precision_category_of), and a configuration with neither shows no reduced precision
/// (tail=dropped is not a precision matter: the audit cannot see it). Prints the counts and the
/// time under `family`.
inline void expect_every_config_compiles(const std::vector<TaskSpec>& tasks,
                                         const std::string& family) {
  struct Unit {
    Candidate candidate;
    Config config;  // one configuration that produces it
  };
  std::map<std::string, Unit> units;  // by source + options
  int64_t total = 0, legal = 0;
  const bool every = every_config_wanted();
  for (const TaskSpec& task : tasks) {
    const Generator& g = generator_for(task.id);
    const std::vector<Config> all = g.space(task).enumerate();
    legal += static_cast<int64_t>(all.size());
    for (const Config& config : every ? all : pairwise_cover(all)) {
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
      if (!r.ok()) {
        if (++failures <= 5)
          ADD_FAILURE() << "task " << unit->candidate.task_id << " " << c.str() << ": " << r.error()
                        << "\n" << r.log;
        continue;
      }
      const PrecisionAudit& audit = r.module().audit;
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
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::filesystem::remove_all(dir);
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(hits, 0);
  std::printf("[ %s ] %lld of %lld configurations (%s), %zu distinct units compiled in %.1f s on %u threads\n",
              family.c_str(), static_cast<long long>(total), static_cast<long long>(legal),
              every ? "every one" : "each task's pairwise cover; KBRL_EVERY_CONFIG=1 for all", units.size(),
              seconds, threads);
}

}  // namespace kbrl::testing
