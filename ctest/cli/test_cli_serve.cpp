// `kbrl serve`'s flags: each that makes no sense is refused with a clear message and exit 2, before
// anything listens (bounded: a server that starts anyway would serve until killed, exit 124).
#include <gtest/gtest.h>

#include "cli_testing.h"

namespace kbrl::testing {
namespace {

CliResult serve(const std::string& flags) { return run_cli_bounded("serve --compile-only --port 0 " + flags, "", 20); }

// kbrl serve shares the eval flags but picks its GPUs with --gpus: --device is refused, not ignored.
TEST(CliServe, RefusesDevice) {
  const CliResult r = serve("--device 1");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--device 1: kbrl serve picks its GPUs with --gpus (e.g. --gpus 1)"), std::string::npos)
      << r.output;
}

// --request-timeout 0 used to start a server whose every synchronous evaluate timed out at once.
TEST(CliServe, RefusesARequestTimeoutThatIsNotPositive) {
  for (const char* timeout : {"0", "-5", "1e300"}) {
    const CliResult r = serve(std::string("--request-timeout ") + timeout);
    EXPECT_EQ(r.status, 2) << timeout << ": " << r.output;
    EXPECT_NE(r.output.find("kbrl: error: --request-timeout"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("must be a positive number of seconds"), std::string::npos) << r.output;
  }
}

// --gpus 0,0 used to start two dispatchers (and two workers) on one GPU.
TEST(CliServe, RefusesAGpuListedTwice) {
  const CliResult r = serve("--gpus 0,1,0");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("kbrl: error: GPU 0 is listed twice (--gpus)"), std::string::npos) << r.output;
}

// Where the kernel cannot confine compiles, kbrl serve refuses to start unless told that every client
// is trusted.
TEST(CliServe, RefusesToServeUnconfinedCompilesUnlessAllowed) {
  const CliResult r = run_cli_bounded("serve --compile-only --port 0", "export KBRL_ASSUME_NO_LANDLOCK=1", 20);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("this kernel cannot confine compiles"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--allow-unconfined-compile"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kbrl::testing
