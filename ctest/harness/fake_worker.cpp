// A worker for the isolation tests: its handler does whatever the request's "op" asks, including
// the ways a real worker can go wrong (hang, crash, exit, talk nonsense, flood its output). It also
// plays a GPU worker for the evaluator's tests without a GPU ("info", "peaks", "run"): every job is
// `ok` at 1 ms against a 2 ms reference, except on task 5, where the handler fails (a harness fault).
//   fake_worker [--delay-hello MS] [--exit-after-hello]
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

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

void write_raw(const std::string& bytes) {
  [[maybe_unused]] ssize_t n = ::write(kbrl::kWorkerReplyFd, bytes.data(), bytes.size());
}

void sleep_ms(int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

Json handle(const Json& request) {
  const std::string op = request.at("op").get<std::string>();
  if (op == "echo") return {{"echo", request.value("value", Json())}};
  if (op == "pid") return {{"pid", static_cast<int64_t>(::getpid())}};
  if (op == "sleep") {
    sleep_ms(request.at("ms").get<int64_t>());
    return {{"slept", request.at("ms")}};
  }
  if (op == "segfault") ::raise(SIGSEGV);
  if (op == "abort") {
    std::fprintf(stderr, "fake worker: aborting on request\n");
    std::abort();
  }
  if (op == "exit") {
    std::fprintf(stderr, "fake worker: exiting with %d\n", request.at("code").get<int>());
    std::_Exit(request.at("code").get<int>());
  }
  if (op == "garbage_text") {  // not a frame at all; then hang, so only validation can catch it
    write_raw("this is not a frame\n");
    sleep_ms(60'000);
  }
  if (op == "garbage_json") {  // a well-formed frame whose payload is not JSON
    write_raw(std::string("\0\0\0\x07{oops!!", 11));
    sleep_ms(60'000);
  }
  if (op == "flood") {
    const int lines = request.at("lines").get<int>();
    for (int i = 0; i < lines; ++i) std::fprintf(stderr, "flood line %d of %d\n", i, lines);
    return {{"lines", lines}};
  }
  if (op == "restart")
    return {{"note", "context poisoned"}, {std::string(kbrl::kRestartWorkerKey), true}};
  if (op == "throw") throw std::runtime_error("handler failed on purpose");
  if (op == "info")
    return {{"device",
             {{"name", "fake GPU"}, {"arch", "sm_90a"}, {"sm_count", 132}, {"l2_bytes", 50 << 20},
              {"memory_bytes", int64_t{80} << 30}, {"cc_major", 9}, {"cc_minor", 0}}}};
  if (op == "peaks")
    return {{"peaks", {{"copy_bytes_per_s", 3e12}, {"fp32_flops_per_s", 5e13}, {"tf32_flops_per_s", 4e14}}}};
  if (op == "run") {
    if (request.at("job").at("task_id").get<int>() == 5) throw std::runtime_error("fake GPU worker: failed on task 5");
    return {{"result",
             {{"outcome", "ok"}, {"detail", ""}, {"trials", Json::array()}, {"candidate_ms", {1.0, 1.0, 1.0, 1.0, 1.0}},
              {"reference_ms", {2.0, 2.0, 2.0, 2.0, 2.0}}, {"timed_runs_checked", 5}}}};
  }
  if (op == "spawn_grandchild") {  // a child that would outlive the worker without a group kill
    const pid_t child = ::fork();
    if (child == 0) {
      sleep_ms(60'000);
      std::_Exit(0);
    }
    return {{"child", static_cast<int64_t>(child)}};
  }
  throw std::invalid_argument("unknown op " + op);
}

}  // namespace

int main(int argc, char** argv) {
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // crashes on request should not leave core files
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--delay-hello") == 0 && i + 1 < argc) {
      sleep_ms(std::atoll(argv[++i]));
    } else if (std::strcmp(argv[i], "--exit-after-hello") == 0) {
      write_raw(kbrl::encode_frame({{"kbrl_worker", "ready"}}));
      return 0;
    }
  }
  return kbrl::serve(kbrl::kWorkerRequestFd, kbrl::kWorkerReplyFd, handle);
}
