// kbrl serve's speed on the CPU with a fake GPU worker (label bench): what the server adds to the
// evaluator. Candidates are the known-good ReLU with distinct launch plans: distinct records (no
// deduplication), one compile (every later one a cache hit): "already-compiled candidates".
//   BM_EvaluatorDirect      Evaluator::evaluate_all in process, batches of 64: the floor
//   BM_ServeThroughput      64 clients, requests of 16 items through HTTP: evaluations/s
//   BM_SchedulerLatency     64 clients, one item a request, straight into the scheduler (no HTTP)
//   BM_ServeLatency         the same through HTTP: p50/p99 (ms); the difference is what HTTP adds
// On a GPU (the real worker, `kbrl worker`; skipped with an error where there is none):
//   BM_ServeGpuReluFull     one ReLU candidate in full mode, in process (direct_s) and through HTTP
//                           (served_s), warm
//   BM_ServeGpuBatch64Fast  64 ReLU samples in fast mode in one request, against the same 64 through
//                           Evaluator::evaluate_all in process: server_over_direct
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include <harness/gpu/gpu_session.h>
#include <kernels/candidate_file.h>
#include <kbrl/http_client.h>
#include <reference/task_registry.h>
#include <serve/local_server.h>

#include "serve_testing.h"

namespace kbrl::serving {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

/// A candidate no earlier one equals (a distinct record), compiled from the one cached source.
std::string relu_variant() {
  static std::atomic<int64_t> counter{0};
  return testing::relu_body(counter++ % 60000 + 1000, KBRL_SOURCE_DIR);
}

EvalSettings fake_settings() {
  EvalSettings s;
  s.worker_program = KBRL_FAKE_GPU_WORKER;
  s.cache_dir = fs::temp_directory_path() / "kbrl-bench-serve-cache";
  s.secret = 1;
  return s;
}

/// One server for every case, warmed up (worker started, the source compiled).
struct Fixture {
  LocalServer local{fake_settings(),
                    [] {
                      SchedulerOptions o;
                      o.max_queue = 1 << 16;
                      return o;
                    }(),
                    [] {
                      ServerOptions o;
                      o.http_threads = 4;
                      return o;
                    }()};
  Scheduler& scheduler = local.scheduler();
  std::string url = local.url();
  Fixture() {
    HttpClient http;
    http.post_json(url + "/v1/evaluate", Json{{"items", {{{"task_id", 19}, {"candidate", relu_variant()}}}}}.dump());
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

Json items_json(int n) {
  Json items = Json::array();
  for (int i = 0; i < n; ++i) items.push_back({{"task_id", 19}, {"candidate", relu_variant()}});
  return items;
}

void report_latency(benchmark::State& state, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  if (ms.empty()) return;
  state.counters["p50_ms"] = ms[ms.size() / 2];
  state.counters["p99_ms"] = ms[std::min(ms.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(ms.size())))];
  state.counters["requests"] = static_cast<double>(ms.size());
}

void BM_EvaluatorDirect(benchmark::State& state) {
  Evaluator evaluator(fake_settings());
  const TaskSpec task = task_spec(19, Scale::kernelbench);
  evaluator.evaluate(parse_candidate_file(relu_variant(), task, "relu.cu"));
  int64_t items = 0;
  for (auto _ : state) {
    std::vector<Candidate> batch;
    for (int i = 0; i < 64; ++i) batch.push_back(parse_candidate_file(relu_variant(), task, "relu.cu"));
    const auto records = evaluator.evaluate_all(batch);
    items += static_cast<int64_t>(records.size());
  }
  state.counters["evals_per_s"] = benchmark::Counter(static_cast<double>(items), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EvaluatorDirect)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3);

/// An HTTP client for `clients` concurrent requests, without retries.
std::unique_ptr<HttpClient> http_for(int clients) {
  HttpOptions o;
  o.retries = 0;
  o.max_concurrent = clients;
  return std::make_unique<HttpClient>(o);
}

void BM_ServeThroughput(benchmark::State& state) {
  Fixture& f = fixture();
  const int clients = static_cast<int>(state.range(0));
  auto http = http_for(clients);
  int64_t items = 0;
  for (auto _ : state) {
    std::vector<std::future<int>> done;
    for (int c = 0; c < clients; ++c)
      done.push_back(std::async(std::launch::async, [&] {
        const HttpResponse r = http->post_json(f.url + "/v1/evaluate", Json{{"items", items_json(16)}}.dump());
        return r.status == 200 ? 16 : 0;
      }));
    for (auto& d : done) items += d.get();
  }
  state.counters["evals_per_s"] = benchmark::Counter(static_cast<double>(items), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ServeThroughput)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3);

/// `clients` threads, each sending `per_client` one-item jobs one after another through `send`.
template <typename Send>
std::vector<double> closed_loop(int clients, int per_client, Send send) {
  std::vector<std::vector<double>> ms(static_cast<size_t>(clients));
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      for (int i = 0; i < per_client; ++i) {
        const auto start = Clock::now();
        send();
        ms[c].push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
      }
    });
  for (auto& t : threads) t.join();
  std::vector<double> all;
  for (const auto& v : ms) all.insert(all.end(), v.begin(), v.end());
  return all;
}

void BM_SchedulerLatency(benchmark::State& state) {
  Fixture& f = fixture();
  const int clients = static_cast<int>(state.range(0));
  std::vector<double> ms;
  for (auto _ : state) {
    auto batch = closed_loop(clients, 10, [&] {
      std::promise<void> done;
      auto items = parse_evaluate_request(Json{{"items", items_json(1)}}.dump(), f.scheduler.defaults());
      f.scheduler.submit("bench", std::move(items), [&done](const Job&) { done.set_value(); });
      done.get_future().wait();
    });
    ms.insert(ms.end(), batch.begin(), batch.end());
  }
  report_latency(state, ms);
}
BENCHMARK(BM_SchedulerLatency)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_ServeLatency(benchmark::State& state) {
  Fixture& f = fixture();
  const int clients = static_cast<int>(state.range(0));
  auto http = http_for(clients);
  std::vector<double> ms;
  for (auto _ : state) {
    auto batch = closed_loop(clients, 10, [&] {
      const HttpResponse r = http->post_json(f.url + "/v1/evaluate", Json{{"items", items_json(1)}}.dump());
      if (r.status != 200) state.SkipWithError(("HTTP " + std::to_string(r.status)).c_str());
    });
    ms.insert(ms.end(), batch.begin(), batch.end());
  }
  report_latency(state, ms);
}
BENCHMARK(BM_ServeLatency)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

/// A server on the real GPU worker (device 0), warmed up; nullptr (and the state skipped) without a GPU.
struct GpuFixture {
  EvalSettings settings = [] {
    EvalSettings s;
    s.cache_dir = fs::temp_directory_path() / "kbrl-bench-serve-cache";
    return s;
  }();
  LocalServer local{settings, SchedulerOptions{}};
  std::string url = local.url();
  HttpClient http;
  GpuFixture() { post(items_json(1)); }  // starts the worker, compiles the source
  Json post(const Json& items) {
    const HttpResponse r = http.post_json(url + "/v1/evaluate", Json{{"items", items}}.dump());
    if (r.status != 200) throw Error("kbrl serve answered " + std::to_string(r.status) + ": " + r.body);
    return Json::parse(r.body);
  }
};

GpuFixture* gpu_fixture(benchmark::State& state) {
  static std::string reason;
  static const bool usable = gpu_available(&reason);
  if (!usable) {
    state.SkipWithError(("no GPU: " + reason).c_str());
    return nullptr;
  }
  static GpuFixture f;
  return &f;
}

void BM_ServeGpuReluFull(benchmark::State& state) {
  GpuFixture* f = gpu_fixture(state);
  if (!f) return;
  EvalSettings full = f->settings;
  full.mode = TimingMode::full;
  Evaluator direct(full);
  const TaskSpec task = task_spec(19, Scale::kernelbench);
  direct.evaluate(parse_candidate_file(relu_variant(), task, "relu_body.cu"));  // its worker started
  double direct_s = 0, served_s = 0;
  for (auto _ : state) {
    const Candidate candidate = parse_candidate_file(relu_variant(), task, "relu_body.cu");
    auto start = Clock::now();
    direct.evaluate(candidate);
    direct_s += std::chrono::duration<double>(Clock::now() - start).count();
    Json items = items_json(1);
    items[0]["mode"] = "full";
    start = Clock::now();
    const Json r = f->post(items)["records"][0];
    served_s += std::chrono::duration<double>(Clock::now() - start).count();
    if (r["outcome"] != "ok") state.SkipWithError(("outcome " + r["outcome"].get<std::string>()).c_str());
    state.counters["speedup"] = r["speedup"].get<double>();
  }
  state.counters["direct_s"] = direct_s / static_cast<double>(state.iterations());
  state.counters["served_s"] = served_s / static_cast<double>(state.iterations());
}
BENCHMARK(BM_ServeGpuReluFull)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(10);

void BM_ServeGpuBatch64Fast(benchmark::State& state) {
  GpuFixture* f = gpu_fixture(state);
  if (!f) return;
  Evaluator direct(f->settings);
  const TaskSpec task = task_spec(19, Scale::kernelbench);
  double direct_s = 0, served_s = 0;
  for (auto _ : state) {
    std::vector<Candidate> batch;
    for (int i = 0; i < 64; ++i) batch.push_back(parse_candidate_file(relu_variant(), task, "relu_body.cu"));
    auto start = Clock::now();
    direct.evaluate_all(batch);
    direct_s += std::chrono::duration<double>(Clock::now() - start).count();
    const Json items = items_json(64);
    start = Clock::now();
    const Json records = f->post(items)["records"];
    served_s += std::chrono::duration<double>(Clock::now() - start).count();
    for (const Json& r : records)
      if (r["outcome"] != "ok") state.SkipWithError(("outcome " + r["outcome"].get<std::string>()).c_str());
  }
  state.counters["direct_s"] = direct_s / static_cast<double>(state.iterations());
  state.counters["served_s"] = served_s / static_cast<double>(state.iterations());
  state.counters["server_over_direct"] = served_s / direct_s;
}
BENCHMARK(BM_ServeGpuBatch64Fast)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(3);

}  // namespace
}  // namespace kbrl::serving

BENCHMARK_MAIN();
