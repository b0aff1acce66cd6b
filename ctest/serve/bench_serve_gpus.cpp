// kbrl serve on several GPUs of one host (label bench; a case needing more GPUs than the host has is
// skipped with an error). The candidates: KBRL_SCALING_PER_TASK (default 16) seeded configurations
// of each of 16 tasks spread over the generators' tasks (256 in all), one request to a fresh server,
// compiles warm (every candidate compiled once before the first case, into the cases' shared cache:
// what scales with GPUs is the GPUs' work).
//   BM_ServeGpus/gpus:N/full:F/first:D  a server on GPUs D..D+N-1 in fast (F=0) or full mode:
//       wall_s, evals_per_s, ok (outcome ok), requeued (items given back to the queue), compile_s,
//       kernel_s (timed runs of candidates and references), efficiency (gpus:1/first:0's wall time
//       over N times this one's, same mode);
//     with one GPU also setup_ms: per task, what its first candidate's GPU job cost beyond the
//       median of the task's others (the GPU setting up the task: reference outputs, inputs);
//     first:1 also compares each candidate with GPU 0's record of it: same_outcome (fraction),
//       in_interval (GPU 1's speedup inside GPU 0's 95% interval, of those timed on both) and
//       ratio_median (GPU 1's speedup over GPU 0's, paired per candidate).
// KBRL_BENCH_OUT=DIR writes each case's records as DIR/serve_gpus_<case>.csv.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <fmt/format.h>

#include <experiments/run_setup.h>
#include <harness/gpu/cuda_driver.h>
#include <harness/gpu/gpu_session.h>
#include <kbrl/http_client.h>
#include <kernels/action.h>
#include <kernels/candidate_file.h>
#include <kernels/generator.h>
#include <reference/task_registry.h>
#include <serve/local_server.h>

namespace kbrl::serving {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

fs::path cache_dir() { return fs::temp_directory_path() / "kbrl-bench-serve-gpus-cache"; }

struct Item {
  int task_id = 0;
  std::string file;  // the candidate file
};

/// 16 tasks spread over the covered ids, `per_task` seeded configurations each (the expert's first).
std::vector<Item> scaling_items() {
  const char* env = std::getenv("KBRL_SCALING_PER_TASK");
  const int per_task = env && *env ? std::atoi(env) : 16;
  const std::vector<int> covered = covered_tasks();
  std::vector<Item> items;
  for (size_t t = 0; t < 16 && t < covered.size(); ++t) {
    const int id = covered[t * covered.size() / 16];
    const TaskSpec task = task_spec(id, Scale::kernelbench);
    const Generator& generator = generator_for(id);
    const KnobSpace space = generator.space(task);
    const std::vector<Config> all = space.enumerate();
    const Config expert = space.parse(generator.expert(task).str());
    const size_t expert_index = static_cast<size_t>(std::find(all.begin(), all.end(), expert) - all.begin());
    for (size_t i : sweep_sample(all.size(), expert_index, per_task, 42, id)) {
      Realized real = realize(task, {ActionKind::knobs, all[i], {}});
      items.push_back({id, candidate_file_text(*real.candidate, task)});
    }
  }
  return items;
}

const std::vector<Item>& items() {
  static const std::vector<Item> all = scaling_items();
  return all;
}

/// Compiles every candidate once for GPU 0's architecture into the shared cache.
void warm_compile_cache() {
  static const bool done = [] {
    EvalSettings probe;
    probe.cache_dir = cache_dir();
    Evaluator on_gpu(probe);
    EvalSettings compile = probe;
    compile.compile_only = true;
    compile.arch = on_gpu.device().arch;
    Evaluator compiler(compile);
    std::vector<Candidate> candidates;
    for (const Item& item : items())
      candidates.push_back(parse_candidate_file(item.file, task_spec(item.task_id, Scale::kernelbench), "gen.cu"));
    compiler.evaluate_all(candidates);
    return true;
  }();
  (void)done;
}

double gpu_job_ms(const EvalRecord& r) {
  double ms = 0;
  for (const auto& [stage, value] : r.gpu_stage_ms)
    if (stage.find('.') == std::string::npos) ms += value;  // the steps, not their parts
  return ms;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

/// Per task, its first candidate's GPU job beyond the median of the task's others, averaged.
double setup_ms(const std::vector<EvalRecord>& records) {
  std::map<int, std::vector<double>> by_task;  // in evaluation order within a task (one GPU)
  for (const EvalRecord& r : records)
    if (!r.gpu_stage_ms.empty()) by_task[r.task_id].push_back(gpu_job_ms(r));
  std::vector<double> extra;
  for (const auto& [task, ms] : by_task)
    if (ms.size() > 1) extra.push_back(ms.front() - median({ms.begin() + 1, ms.end()}));
  double sum = 0;
  for (double e : extra) sum += e;
  return extra.empty() ? 0 : sum / static_cast<double>(extra.size());
}

void write_csv(const std::string& name, const std::vector<EvalRecord>& records) {
  const char* dir = std::getenv("KBRL_BENCH_OUT");
  if (!dir || !*dir) return;
  std::ofstream out(fs::path(dir) / ("serve_gpus_" + name + ".csv"));
  out << "task_id,key,outcome,speedup,speedup_low,speedup_high,gpu_job_ms\n";
  for (const EvalRecord& r : records)
    out << fmt::format("{},{},{},{},{},{},{:.3f}\n", r.task_id, r.key, to_string(r.outcome), r.speedup,
                       r.speedup_ci ? fmt::format("{}", r.speedup_ci->low) : "",
                       r.speedup_ci ? fmt::format("{}", r.speedup_ci->high) : "", gpu_job_ms(r));
}

void BM_ServeGpus(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const bool full = state.range(1) != 0;
  const int first = static_cast<int>(state.range(2));
  std::string why;
  if (!gpu_available(&why)) return state.SkipWithError(("no GPU: " + why).c_str());
  const int count = cuda::driver_status().device_count;
  if (first + gpus > count)
    return state.SkipWithError(fmt::format("needs GPUs {}..{}; this host has {}", first, first + gpus - 1, count).c_str());
  warm_compile_cache();
  static std::map<std::pair<bool, int>, std::vector<EvalRecord>> one_gpu;  // (full, device) -> records
  static std::map<bool, double> one_gpu_wall;                              // GPU 0 alone, by mode

  EvalSettings settings;
  settings.cache_dir = cache_dir();
  settings.mode = full ? TimingMode::full : TimingMode::fast;
  SchedulerOptions options;
  options.gpus.clear();
  for (int d = first; d < first + gpus; ++d) options.gpus.push_back(d);
  options.max_queue = 1 << 16;
  LocalServer server(settings, options);
  Scheduler& scheduler = server.scheduler();
  const std::string url = server.url();
  HttpClient http([] {
    HttpOptions o;
    o.retries = 0;
    o.timeout_seconds = 3600;
    return o;
  }());
  for (int i = 0; i < 2400 && !scheduler.ready(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));

  Json body = {{"items", Json::array()}};  // the server's mode: settings.mode
  for (const Item& item : items()) body["items"].push_back({{"task_id", item.task_id}, {"candidate", item.file}});
  std::vector<EvalRecord> records;
  double wall = 0;
  for (auto _ : state) {
    const auto start = Clock::now();
    const HttpResponse r = http.post_json(url + "/v1/evaluate", body.dump());
    wall = std::chrono::duration<double>(Clock::now() - start).count();
    if (r.status != 200) {
      state.SkipWithError(("kbrl serve answered " + std::to_string(r.status) + ": " + r.body.substr(0, 300)).c_str());
      break;
    }
    const Json answer = Json::parse(r.body);  // kept: a range-for over a temporary's member dangles
    for (const Json& j : answer.at("records")) records.push_back(record_from_json(j));
  }
  const SchedulerMetrics m = scheduler.metrics();
  server.stop();
  if (records.empty()) return state.SkipWithError("the server answered no records");

  const auto n = static_cast<double>(records.size());
  state.counters["candidates"] = n;
  state.counters["wall_s"] = wall;
  state.counters["evals_per_s"] = n / wall;
  state.counters["ok"] = static_cast<double>(
      std::count_if(records.begin(), records.end(), [](const EvalRecord& r) { return r.outcome == Outcome::ok; }));
  state.counters["requeued"] = static_cast<double>(m.requeued);
  state.counters["compile_s"] = m.compile_seconds;
  state.counters["kernel_s"] = m.kernel_seconds;
  const std::string name = fmt::format("gpus{}_{}_first{}", gpus, full ? "full" : "fast", first);
  write_csv(name, records);
  if (gpus == 1) {
    state.counters["setup_ms"] = setup_ms(records);
    one_gpu[{full, first}] = records;
    if (first == 0) one_gpu_wall[full] = wall;
  }
  if (one_gpu_wall.count(full)) state.counters["efficiency"] = one_gpu_wall[full] / (gpus * wall);
  if (gpus == 1 && first == 1 && one_gpu.count({full, 0})) {
    std::map<std::string, const EvalRecord*> gpu0;
    for (const EvalRecord& r : one_gpu[{full, 0}]) gpu0[r.key] = &r;
    double same = 0, both_timed = 0, inside = 0;
    std::vector<double> ratios;
    for (const EvalRecord& r : records) {
      auto it = gpu0.find(r.key);
      if (it == gpu0.end()) continue;
      const EvalRecord& o = *it->second;
      same += r.outcome == o.outcome;
      if (r.speedup_ci && o.speedup_ci && o.speedup > 0) {
        both_timed += 1;
        inside += r.speedup >= o.speedup_ci->low && r.speedup <= o.speedup_ci->high;
        ratios.push_back(r.speedup / o.speedup);
      }
    }
    state.counters["same_outcome"] = same / n;
    state.counters["both_timed"] = both_timed;
    state.counters["in_interval"] = both_timed > 0 ? inside / both_timed : 0;
    state.counters["ratio_median"] = median(ratios);
  }
}
// Each mode: GPU 0 alone, GPU 1 alone (the pairing), then 2 and 4 GPUs.
BENCHMARK(BM_ServeGpus)
    ->ArgNames({"gpus", "full", "first"})
    ->Args({1, 0, 0})
    ->Args({1, 0, 1})
    ->Args({2, 0, 0})
    ->Args({4, 0, 0})
    ->Args({1, 1, 0})
    ->Args({1, 1, 1})
    ->Args({2, 1, 0})
    ->Args({4, 1, 0})
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace
}  // namespace kbrl::serving
