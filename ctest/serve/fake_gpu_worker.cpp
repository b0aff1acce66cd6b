// A GPU worker without a GPU, for the server's tests and load benchmarks: it answers the evaluator's
// requests (harness/worker/gpu_protocol.h) with a fixed device and a canned result: every candidate
// correct, timed at 0.5 ms against a 1.0 ms reference (speedup 2). Started as the evaluator starts
// `kbrl worker` (KBRL_WORKER=<this program>).
//   KBRL_FAKE_GPU_MS=N          sleep N ms in every run (a slow GPU; default 0)
//   KBRL_FAKE_GPU_RUNS=FILE     append one line per run to FILE, "<task> <device>" (what a test counts)
//   KBRL_FAKE_GPU_CRASH_TASK=T  crash (SIGSEGV) when running task T (a lost worker)
//   KBRL_FAKE_GPU_SLOW=D:N      sleep N ms more in every run on device D (one GPU slower than the others)
//   KBRL_FAKE_GPU_LOST=D|all    on device D (or every one), fail every request: the worker cannot even say its device
//                               (a GPU gone; its worker never comes up)
#include <signal.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include <harness/worker/worker.h>

namespace {

using Json = nlohmann::json;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

int device = 0;  // --device N, as the evaluator starts `kbrl worker --device N`

Json handle(const Json& request) {
  const std::string op = request.at("op").get<std::string>();
  const char* lost = std::getenv("KBRL_FAKE_GPU_LOST");
  if (lost && *lost && (std::string(lost) == "all" || std::atoi(lost) == device))
    throw std::runtime_error("fake GPU worker: device " + std::to_string(device) + " is lost (KBRL_FAKE_GPU_LOST)");
  if (op == "info")
    return {{"device", {{"name", "fake GPU (kbrl tests)"}, {"arch", "sm_90"}, {"sm_count", 132},
                        {"l2_bytes", 50 << 20}, {"memory_bytes", int64_t{80} << 30}, {"cc_major", 9},
                        {"cc_minor", 0}}}};
  if (op == "peaks")  // fast enough that no canned time is under the speed-of-light floor
    return {{"peaks", {{"copy_bytes_per_s", 1e18}, {"fp32_flops_per_s", 1e21}, {"tf32_flops_per_s", 1e21}}}};
  if (op == "run") {
    const Json& job = request.at("job");
    const int task = job.at("task_id").get<int>();
    if (task == env_int("KBRL_FAKE_GPU_CRASH_TASK", -1)) ::raise(SIGSEGV);
    if (const int ms = env_int("KBRL_FAKE_GPU_MS", 0); ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    if (const char* slow = std::getenv("KBRL_FAKE_GPU_SLOW"); slow && std::atoi(slow) == device && std::strchr(slow, ':'))
      std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(std::strchr(slow, ':') + 1)));
    if (const char* path = std::getenv("KBRL_FAKE_GPU_RUNS"); path && *path) {
      if (FILE* f = std::fopen(path, "a")) {
        std::fprintf(f, "%d %d\n", task, device);
        std::fclose(f);
      }
    }
    const size_t n = std::max<int64_t>(1, job.at("timing").value("min_samples", int64_t{5}));
    return {{"result", {{"outcome", "ok"}, {"detail", ""}, {"trials", Json::array()},
                        {"candidate_ms", std::vector<double>(n, 0.5)}, {"reference_ms", std::vector<double>(n, 1.0)},
                        {"timed_runs_checked", static_cast<int64_t>(n)}, {"restart_worker", false}}}};
  }
  if (op == "time_reference") return {{"samples_ms", std::vector<double>(5, 1.0)}};
  throw std::invalid_argument("fake GPU worker: unknown op " + op);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--device") device = std::atoi(argv[i + 1]);
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  return kbrl::serve(kbrl::kWorkerRequestFd, kbrl::kWorkerReplyFd, handle);
}
