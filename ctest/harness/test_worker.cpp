// The isolation layer against a fake worker (fake_worker.cpp) that misbehaves on request.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <kbrl/error.h>

#include <harness/worker/worker.h>
#include <harness/worker/worker_process.h>

namespace kbrl {
namespace {

using Json = nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kJob{10'000};      // generous: jobs that should succeed
constexpr double kWatchdogSlack = 1.0;  // seconds allowed past a timeout

WorkerOptions fake_options(std::vector<std::string> extra = {}) {
  WorkerOptions options;
  options.argv = {KBRL_FAKE_WORKER};
  options.argv.insert(options.argv.end(), extra.begin(), extra.end());
  options.start_timeout = milliseconds(30'000);
  return options;
}

Json op(const std::string& name, Json fields = Json::object()) {
  fields["op"] = name;
  return fields;
}

// True once `pid` is gone or a zombie (killed, waiting for init to reap it).
bool process_dead(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

// Calls echo and checks it worked; returns the worker's pid.
pid_t expect_healthy(Worker& worker) {
  const CallResult echo = worker.call(op("echo", {{"value", 42}}), kJob);
  EXPECT_EQ(echo.status, CallStatus::ok) << echo.detail;
  EXPECT_EQ(echo.reply, Json({{"echo", 42}}));
  const CallResult pid = worker.call(op("pid"), kJob);
  EXPECT_EQ(pid.status, CallStatus::ok) << pid.detail;
  return pid.reply.value("pid", pid_t{-1});
}

TEST(Worker, EchoesAndReusesOneProcess) {
  Worker worker(fake_options());
  EXPECT_FALSE(worker.running());
  const Json value = {{"list", {1, 2.5, "three"}}, {"unicode", "\u00e9"}};
  const CallResult first = worker.call(op("echo", {{"value", value}}), kJob);
  ASSERT_EQ(first.status, CallStatus::ok) << first.detail;
  EXPECT_TRUE(first.started_worker);
  EXPECT_EQ(first.reply.at("echo"), value);
  const pid_t pid = worker.pid();
  EXPECT_GT(pid, 0);
  const CallResult second = worker.call(op("sleep", {{"ms", 50}}), kJob);
  EXPECT_EQ(second.status, CallStatus::ok);
  EXPECT_FALSE(second.started_worker);
  EXPECT_GE(second.seconds, 0.05);
  EXPECT_EQ(worker.pid(), pid);
  EXPECT_EQ(worker.starts(), 1);
}

TEST(Worker, WatchdogKillsAHungJobAndTheNextCallGetsAFreshWorker) {
  Worker worker(fake_options());
  const pid_t before = expect_healthy(worker);
  const auto begin = std::chrono::steady_clock::now();
  const CallResult hung = worker.call(op("sleep", {{"ms", 60'000}}), milliseconds(300));
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_EQ(hung.status, CallStatus::timeout);
  EXPECT_GE(elapsed, 0.3);
  EXPECT_LT(elapsed, 0.3 + kWatchdogSlack);
  EXPECT_EQ(hung.term_signal, SIGKILL);
  EXPECT_NE(hung.detail.find("no reply within 300 ms"), std::string::npos) << hung.detail;
  EXPECT_FALSE(worker.running());
  EXPECT_TRUE(process_dead(before));
  const pid_t after = expect_healthy(worker);
  EXPECT_NE(after, before);
  EXPECT_EQ(worker.starts(), 2);
}

TEST(Worker, SegfaultIsACrashWithTheSignalName) {
  Worker worker(fake_options());
  expect_healthy(worker);
  const CallResult crash = worker.call(op("segfault"), kJob);
  EXPECT_EQ(crash.status, CallStatus::crashed);
  EXPECT_EQ(crash.term_signal, SIGSEGV);
  EXPECT_TRUE(crash.reply.is_null());
  EXPECT_NE(crash.detail.find("SIGSEGV"), std::string::npos) << crash.detail;
  EXPECT_LT(crash.seconds, 5.0);
  expect_healthy(worker);
  EXPECT_EQ(worker.starts(), 2);
}

TEST(Worker, AbortIsACrashWithTheLastStderrLines) {
  Worker worker(fake_options());
  const CallResult crash = worker.call(op("abort"), kJob);
  EXPECT_EQ(crash.status, CallStatus::crashed);
  EXPECT_EQ(crash.term_signal, SIGABRT);
  EXPECT_NE(crash.detail.find("SIGABRT"), std::string::npos) << crash.detail;
  EXPECT_NE(crash.detail.find("fake worker: aborting on request"), std::string::npos)
      << crash.detail;
  expect_healthy(worker);
}

TEST(Worker, ExitIsACrashWithTheExitCode) {
  Worker worker(fake_options());
  const CallResult exited = worker.call(op("exit", {{"code", 3}}), kJob);
  EXPECT_EQ(exited.status, CallStatus::crashed);
  EXPECT_EQ(exited.exit_code, 3);
  EXPECT_EQ(exited.term_signal, 0);
  EXPECT_NE(exited.detail.find("exited with status 3"), std::string::npos) << exited.detail;
  EXPECT_NE(exited.detail.find("fake worker: exiting with 3"), std::string::npos)
      << exited.detail;
  expect_healthy(worker);
}

TEST(Worker, GarbageIsAProtocolErrorFoundWithoutWaitingForTheTimeout) {
  Worker worker(fake_options());
  for (const char* kind : {"garbage_text", "garbage_json"}) {
    SCOPED_TRACE(kind);
    const CallResult garbage = worker.call(op(kind), kJob);
    EXPECT_EQ(garbage.status, CallStatus::protocol_error);
    EXPECT_LT(garbage.seconds, 5.0);  // the worker then sleeps 60 s: it was killed, not waited for
    EXPECT_FALSE(worker.running());
    expect_healthy(worker);
  }
  EXPECT_EQ(worker.starts(), 3);  // the first, and one after each protocol error
}

TEST(Worker, StderrFloodIsDrainedAndItsTailKept) {
  Worker worker(fake_options());
  const CallResult flood = worker.call(op("flood", {{"lines", 100'000}}), kJob);
  ASSERT_EQ(flood.status, CallStatus::ok) << flood.detail;
  EXPECT_EQ(flood.reply.at("lines"), 100'000);
  const auto& tail = worker.stderr_tail();
  ASSERT_EQ(tail.size(), 20u);
  EXPECT_EQ(tail.back(), "flood line 99999 of 100000");
  EXPECT_EQ(tail.front(), "flood line 99980 of 100000");
  expect_healthy(worker);
  EXPECT_EQ(worker.starts(), 1);
}

TEST(Worker, HandlerAsksForARestart) {
  Worker worker(fake_options());
  const pid_t before = expect_healthy(worker);
  const CallResult poisoned = worker.call(op("restart"), kJob);
  EXPECT_EQ(poisoned.status, CallStatus::ok);
  EXPECT_TRUE(poisoned.restart_requested);
  EXPECT_EQ(poisoned.reply, Json({{"note", "context poisoned"}}));  // the flag is removed
  EXPECT_FALSE(worker.running());
  const pid_t after = expect_healthy(worker);
  EXPECT_NE(after, before);
  EXPECT_EQ(worker.starts(), 2);
  EXPECT_TRUE(process_dead(before));
}

TEST(Worker, HandlerExceptionLeavesTheWorkerRunning) {
  Worker worker(fake_options());
  const pid_t before = expect_healthy(worker);
  const CallResult failed = worker.call(op("throw"), kJob);
  EXPECT_EQ(failed.status, CallStatus::handler_error);
  EXPECT_EQ(failed.reply.at(std::string(kWorkerErrorKey)), "handler failed on purpose");
  EXPECT_NE(failed.detail.find("handler failed on purpose"), std::string::npos);
  EXPECT_EQ(expect_healthy(worker), before);
}

TEST(Worker, TimeoutKillsTheWholeProcessGroup) {
  Worker worker(fake_options());
  const CallResult spawned = worker.call(op("spawn_grandchild"), kJob);
  ASSERT_EQ(spawned.status, CallStatus::ok) << spawned.detail;
  const pid_t grandchild = spawned.reply.at("child").get<pid_t>();
  ASSERT_FALSE(process_dead(grandchild));
  const auto begin = std::chrono::steady_clock::now();
  const CallResult hung = worker.call(op("sleep", {{"ms", 60'000}}), milliseconds(200));
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_EQ(hung.status, CallStatus::timeout);
  EXPECT_LT(elapsed, 0.2 + kWatchdogSlack);  // the grandchild holding the output pipe is no excuse
  bool dead = false;
  for (int i = 0; i < 200 && !dead; ++i) {
    dead = process_dead(grandchild);
    if (!dead) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(dead);
}

TEST(Worker, ProgramThatCannotBeExecutedThrows) {
  WorkerOptions options;
  options.argv = {"/nonexistent/kbrl-worker"};
  Worker worker(options);
  EXPECT_THROW(worker.call(op("echo"), kJob), ApiError);
}

TEST(Worker, WorkerThatDiesBeforeItsHelloIsACrash) {
  WorkerOptions options;
  options.argv = {"/bin/sh", "-c", "echo 'cannot initialize' >&2; exit 7"};
  Worker worker(options);
  const CallResult result = worker.call(op("echo"), kJob);
  EXPECT_EQ(result.status, CallStatus::crashed);
  EXPECT_TRUE(result.started_worker);
  EXPECT_EQ(result.exit_code, 7);
  EXPECT_NE(result.detail.find("starting the worker"), std::string::npos) << result.detail;
  EXPECT_NE(result.detail.find("cannot initialize"), std::string::npos) << result.detail;
}

TEST(Worker, StartUpIsBoundedByStartTimeoutNotByTheJobTimeout) {
  WorkerOptions slow = fake_options({"--delay-hello", "600"});
  {
    Worker worker(slow);  // a slow start within start_timeout does not eat the job's 300 ms
    const CallResult result = worker.call(op("echo", {{"value", 1}}), milliseconds(300));
    EXPECT_EQ(result.status, CallStatus::ok) << result.detail;
    EXPECT_GE(result.seconds, 0.6);
  }
  slow.start_timeout = milliseconds(200);
  Worker worker(slow);
  const CallResult result = worker.call(op("echo"), kJob);
  EXPECT_EQ(result.status, CallStatus::timeout);
  EXPECT_LT(result.seconds, 0.2 + kWatchdogSlack);
}

TEST(Worker, WritingToADeadWorkerDoesNotKillTheParent) {
  Worker worker(fake_options({"--exit-after-hello"}));
  const std::string big(4 << 20, 'x');  // more than a pipe holds: the write must hit EPIPE
  const CallResult result = worker.call(op("echo", {{"value", big}}), kJob);
  EXPECT_EQ(result.status, CallStatus::crashed) << result.detail;
  EXPECT_EQ(result.exit_code, 0);
}

void on_alarm(int) {}

TEST(Worker, SignalsInterruptingTheWaitAreRetried) {
  struct sigaction action {}, old_action {};
  action.sa_handler = on_alarm;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: poll and read fail with EINTR
  ASSERT_EQ(::sigaction(SIGALRM, &action, &old_action), 0);
  itimerval every_2ms{{0, 2000}, {0, 2000}}, off{};
  ASSERT_EQ(::setitimer(ITIMER_REAL, &every_2ms, nullptr), 0);
  Worker worker(fake_options());
  const CallResult result = worker.call(op("sleep", {{"ms", 300}}), kJob);
  const CallResult flood = worker.call(op("flood", {{"lines", 20'000}}), kJob);
  ::setitimer(ITIMER_REAL, &off, nullptr);
  ::sigaction(SIGALRM, &old_action, nullptr);
  EXPECT_EQ(result.status, CallStatus::ok) << result.detail;
  EXPECT_EQ(flood.status, CallStatus::ok) << flood.detail;
  EXPECT_EQ(worker.starts(), 1);
}

TEST(Worker, DestructorEndsTheWorker) {
  pid_t pid = -1;
  {
    Worker worker(fake_options());
    pid = expect_healthy(worker);
    ASSERT_FALSE(process_dead(pid));
  }
  EXPECT_EQ(::kill(pid, 0), -1);  // reaped: no such process
}

TEST(Worker, IsMovable) {
  std::vector<Worker> workers;
  workers.emplace_back(fake_options());
  workers.emplace_back(fake_options());
  Worker moved = std::move(workers[0]);
  EXPECT_EQ(moved.call(op("echo", {{"value", 1}}), kJob).status, CallStatus::ok);
  EXPECT_EQ(workers[1].call(op("echo", {{"value", 2}}), kJob).status, CallStatus::ok);
  EXPECT_NE(moved.pid(), workers[1].pid());
}

TEST(WorkerProtocol, FramesAreBigEndianLengthPrefixedJson) {
  const std::string frame = encode_frame(Json{{"a", 1}});
  ASSERT_EQ(frame.size(), 4u + 7u);
  EXPECT_EQ(frame.substr(0, 4), std::string("\0\0\0\x07", 4));
  EXPECT_EQ(frame.substr(4), R"({"a":1})");
  const unsigned char header[4] = {0x01, 0x02, 0x03, 0x04};
  EXPECT_EQ(decode_frame_length(header), 0x01020304u);
  EXPECT_EQ(describe_signal(SIGSEGV), "SIGSEGV (Segmentation fault)");
  EXPECT_EQ(to_string(CallStatus::protocol_error), "protocol_error");
}

// A descriptor the parent opened without O_CLOEXEC (kbrl serve's client sockets, a test's
// connections) does not live on in the worker: once the parent closes its end, the other end sees
// the close at once, while the worker still runs.
TEST(WorkerProcess, TheWorkerInheritsNoOtherDescriptor) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);  // no O_CLOEXEC, as a careless library would make it
  const int write_end = ::fcntl(fds[1], F_DUPFD, 100);  // above the worker's own descriptors (3, 4)
  ASSERT_GE(write_end, 100);
  ::close(fds[1]);
  detail::WorkerProcess worker = detail::spawn_worker_process({"/bin/sh", "-c", "sleep 5"});
  ::close(write_end);
  pollfd p{fds[0], POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 2000), 1) << "the write end lives on in the worker";
  char c;
  EXPECT_EQ(::read(fds[0], &c, 1), 0);  // end of file: no other holder
  ::close(fds[0]);
  ::kill(-worker.pid, SIGKILL);
  ::waitpid(worker.pid, nullptr, 0);
}

// The program is looked up in PATH, as a shell would (kbrl::spawn with search_path), and runs in
// its own process group.
TEST(WorkerProcess, ProgramIsLookedUpInPathInItsOwnGroup) {
  detail::WorkerProcess worker = detail::spawn_worker_process({"sh", "-c", "exit 3"});
  EXPECT_EQ(::getpgid(worker.pid), worker.pid);  // a zombie until reaped: its group is still known
  int status = 0;
  ASSERT_EQ(::waitpid(worker.pid, &status, 0), worker.pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_THROW(detail::spawn_worker_process({"kbrl-no-such-program-in-path"}), ApiError);
}

TEST(WorkerProcess, OutputTailKeepsTheLastLinesCutToLength) {
  detail::OutputTail tail(3);
  tail.feed("one\ntw");
  tail.feed("o\nthree\nfour\n");
  tail.feed(std::string(5000, 'x'));
  EXPECT_EQ(tail.lines(), (std::vector<std::string>{"two", "three", "four"}));
  tail.flush();  // an unterminated last line still counts
  ASSERT_EQ(tail.lines().size(), 3u);
  EXPECT_EQ(tail.lines().back(),
            std::string(detail::OutputTail::kMaxLineChars, 'x') + " [...]");
  tail.clear();
  EXPECT_TRUE(tail.lines().empty());
}

}  // namespace
}  // namespace kbrl
