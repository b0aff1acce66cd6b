// The candidate format's limits (kernels/candidate.h plan_limits, kernels/expression.h): the plan's
// limits, every plan kbrl makes keeps them, short error messages for long input, and the files
// read_candidate_file refuses.
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include <kbrl/error.h>
#include <kernels/candidate_file.h>
#include <kernels/expression.h>
#include <kernels/generator.h>
#include <kernels/kernel_catalog.h>
#include <kernels/scaffold.h>
#include <reference/task_registry.h>

#include "candidate_file_testing.h"

namespace kbrl {
namespace {

using namespace testing;

TEST(CandidateFile, PlanLimits) {
  const std::string source = "extern \"C\" __global__ void relu(const float* x, float* y, long long n) {}\n";
  auto launches = [&](int n) {
    std::string text;
    for (int i = 0; i < n; ++i) text += "// kbrl: launch relu grid=1 block=32 args=in:x,out:y,i64:1\n";
    return text + source;
  };
  EXPECT_EQ(parse_candidate_file(launches(64), relu_task()).launches.size(), 64u);
  EXPECT_NE(error_of(launches(65)).find("k.cu:65: more than 64 launches"), std::string::npos)
      << error_of(launches(65));

  auto scratch = [&](int n) {
    std::string text;
    for (int i = 0; i < n; ++i) text += fmt::format("// kbrl: scratch s{} bytes=4\n", i);
    return text + launches(1);
  };
  EXPECT_EQ(parse_candidate_file(scratch(16), relu_task()).scratch.size(), 16u);
  EXPECT_NE(error_of(scratch(17)).find("k.cu:17: more than 16 scratch buffers"), std::string::npos)
      << error_of(scratch(17));
  const std::string eight_gib = "// kbrl: scratch a bytes=8 * 1024 * 1024 * 1024\n";
  EXPECT_EQ(parse_candidate_file(eight_gib + launches(1), relu_task()).scratch[0].bytes, int64_t{8} << 30);
  EXPECT_NE(error_of(eight_gib + "// kbrl: scratch b bytes=1\n" + launches(1))
                .find("k.cu:2: scratch 'b' of 1 bytes brings the plan's scratch to more than 8589934592"),
            std::string::npos);
  EXPECT_NE(error_of("// kbrl: scratch a bytes=9 * 1024 * 1024 * 1024\n" + launches(1)).find("k.cu:1: scratch 'a'"),
            std::string::npos);

  const std::string max_smem = "// kbrl: launch relu grid=1 block=32 smem=227 * 1024 args=in:x,out:y,i64:1";
  EXPECT_EQ(parse_candidate_file(relu_with(max_smem), relu_task()).launches[0].shared_bytes, 232448u);
  const std::string too_much = error_of(relu_with("// kbrl: launch relu grid=1 block=32 smem=232449 args=in:x"));
  EXPECT_NE(too_much.find("k.cu:2: smem is 232449: dynamic shared memory must be 0 to 232448 bytes"),
            std::string::npos) << too_much;
  EXPECT_NE(error_of(relu_with("// kbrl: launch relu grid=1 block=32 smem=1073741824 args=in:x")).find("smem is"),
            std::string::npos);
  EXPECT_NE(error_of("// kbrl: scaffold smem=300000\n").find("k.cu:1: smem is 300000"), std::string::npos);

  std::string args = "in:x,out:y";
  for (int i = 2; i < 256; ++i) args += ",i32:1";
  EXPECT_EQ(parse_candidate_file(relu_with("// kbrl: launch relu grid=1 block=1 args=" + args), relu_task())
                .launches[0].args.size(), 256u);
  EXPECT_NE(error_of(relu_with("// kbrl: launch relu grid=1 block=1 args=" + args + ",i32:1"))
                .find("k.cu:2: 257 arguments: a launch may have at most 256"),
            std::string::npos);
}

TEST(CandidateFile, PlanLimitViolation) {
  Candidate c = parse_candidate_file(kRelu, relu_task());
  EXPECT_EQ(plan_limit_violation(c), std::nullopt);
  auto violation = [](Candidate c) { return plan_limit_violation(c).value_or("none"); };
  Candidate many = c;
  many.launches.assign(65, c.launches[0]);
  EXPECT_NE(violation(many).find("65 launches: a plan may have at most 64"), std::string::npos) << violation(many);
  Candidate smem = c;
  smem.launches[0].shared_bytes = 232449;
  EXPECT_NE(violation(smem).find("launch 0 ('relu'): 232449 bytes of dynamic shared memory"), std::string::npos)
      << violation(smem);
  Candidate grid = c;
  grid.launches[0].grid.y = 65536;
  EXPECT_NE(violation(grid).find("grid.y is 65536"), std::string::npos) << violation(grid);
  Candidate block = c;
  block.launches[0].block = {64, 32, 1};
  EXPECT_NE(violation(block).find("block has 2048 threads"), std::string::npos) << violation(block);
  block.launches[0].block = {1, 1, 0};
  EXPECT_NE(violation(block).find("block.z is 0"), std::string::npos) << violation(block);
  Candidate args = c;
  args.launches[0].args.resize(257);
  EXPECT_NE(violation(args).find("257 arguments"), std::string::npos) << violation(args);
  Candidate scratch = c;
  scratch.scratch = {{"a", int64_t{6} << 30}, {"b", int64_t{3} << 30}};
  EXPECT_NE(violation(scratch).find("scratch 'b'"), std::string::npos) << violation(scratch);
  scratch.scratch.assign(17, {"s", 4});
  EXPECT_NE(violation(scratch).find("17 scratch buffers"), std::string::npos) << violation(scratch);
  scratch.scratch = {{"z", 0}};
  EXPECT_NE(violation(scratch).find("scratch 'z' has 0 bytes"), std::string::npos) << violation(scratch);
}

// Every plan kbrl itself makes keeps the limits: each catalogue entry (one that broke them would
// no longer parse) and every legal configuration of every generator, at both scales.
TEST(CandidateFile, CatalogueAndGeneratorPlansKeepTheLimits) {
  std::vector<CatalogKernel> catalogue = known_good_kernels();
  catalogue.insert(catalogue.end(), adversarial_kernels().begin(), adversarial_kernels().end());
  for (const CatalogKernel& k : catalogue) {
    SCOPED_TRACE(k.name);
    try {
      const Candidate c = parse_candidate_file(kernel_source(k), task_spec(k.task_id, Scale::kernelbench), k.file);
      EXPECT_EQ(plan_limit_violation(c), std::nullopt);
    } catch (const InputError& e) {
      ADD_FAILURE() << e.what();
    }
  }
  int checked = 0;
  for (const int id : covered_tasks()) {
    for (const Scale scale : {Scale::kernelbench, Scale::small}) {
      const TaskSpec task = task_spec(id, scale);
      const Generator& g = generator_for(id);
      for (const Config& config : g.space(task).enumerate()) {
        const Candidate c = g.generate(task, config);
        EXPECT_EQ(plan_limit_violation(c), std::nullopt) << "task " << id << " " << config.str();
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// Error messages quote at most about 120 characters of any one piece of input, whatever its size.
TEST(CandidateFile, ErrorsQuoteLongInputShortly) {
  const std::string huge(5000, 'q');
  const std::vector<std::string> lines = {
      "// kbrl: launch relu grid=1 block=1 " + huge + "=1 args=in:x",
      "// kbrl: launch relu" + huge + " grid=1 block=1 args=in:x",
      "// kbrl: launch 9" + huge + " grid=1 block=1 args=in:x",
      "// kbrl: launch relu grid=1 block=1 args=in:" + huge,
      "// kbrl: launch relu grid=1 block=1 args=out:" + huge,
      "// kbrl: launch relu grid=1 block=1 args=scratch:" + huge,
      "// kbrl: launch relu grid=1 block=1 args=" + huge + ":x",
      "// kbrl: launch relu grid=1 block=1 args=" + huge,
      "// kbrl: launch relu grid=1 block=1 args=f32:" + huge,
      "// kbrl: launch relu grid=1 block=1 args=in:x,,out:y" + std::string(5000, ' ') + huge,
      "// kbrl: launch relu grid=1,1,1," + huge + " block=1 args=in:x",
      "// kbrl: launch relu grid=1 block=1 args=i32:" + huge,
      "// kbrl: launch relu grid=" + std::string(1000, '9') + " block=1 args=in:x",
      "// kbrl: launch relu grid=" + std::string(2000, '1') + "+q block=1 args=in:x",
      "// kbrl: " + huge,
      "// kbrl: scratch " + huge + " bytes=0",
  };
  for (const std::string& line : lines) {
    const std::string message = error_of(relu_with(line));
    EXPECT_NE(message, "no error") << line.substr(0, 80);
    EXPECT_LT(message.size(), 400u) << message;
  }
  const std::string scaffold = error_of("// kbrl: scaffold " + huge + "\n");
  EXPECT_NE(scaffold.find("unexpected 'qqq"), std::string::npos) << scaffold.substr(0, 400);
  EXPECT_LT(scaffold.size(), 400u) << scaffold;
}

/// The InputError message of read_candidate_file(path), or "read N bytes". It runs in a child
/// process limited to 20 seconds and 2 GiB of data, so that a regression (reading /dev/zero
/// without end, waiting on a FIFO for a writer) fails the test instead of exhausting the machine.
void expect_read_refused(const std::string& path, const std::string& message_pattern) {
  const auto child = [&] {
    alarm(20);
    const rlimit data{rlim_t{2} << 30, rlim_t{2} << 30};
    setrlimit(RLIMIT_DATA, &data);
    try {
      const std::string text = read_candidate_file(path);
      std::fprintf(stderr, "read %zu bytes\n", text.size());
    } catch (const InputError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      std::_Exit(0);
    }
    std::_Exit(1);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), message_pattern) << path;
}

// `kbrl eval --kernel /dev/zero` read forever and a FIFO blocked: only regular files of at most
// 16 MiB are read, symbolic links followed.
TEST(CandidateFile, ReadsOnlyRegularFilesOfBoundedSize) {
  const auto dir = std::filesystem::temp_directory_path() / ("kbrl-test-read-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto fifo = dir / "fifo.cu";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/zero", dir / "zero.cu");
  std::filesystem::create_symlink(fifo, dir / "fifo_link.cu");
  const auto big = dir / "big.cu";
  std::ofstream(big) << kRelu;
  std::filesystem::resize_file(big, kMaxCandidateFileBytes + 1);  // sparse: no disk used

  expect_read_refused("/dev/zero", "'/dev/zero' is a character device, not a regular file");
  expect_read_refused((dir / "zero.cu").string(), "zero.cu' is a character device, not a regular file");
  expect_read_refused(fifo.string(), "fifo.cu' is a FIFO .named pipe., not a regular file");
  expect_read_refused((dir / "fifo_link.cu").string(), "is a FIFO");
  expect_read_refused(dir.string(), "is a directory, not a regular file");
  expect_read_refused(big.string(), "has 16777217 bytes: at most 16777216 .16 MiB. are read");
  expect_read_refused((dir / "missing.cu").string(), "cannot read candidate file .*No such file");

  // A regular file, through a symbolic link too, and one of exactly the limit.
  const auto good = dir / "relu.cu";
  std::ofstream(good) << kRelu;
  std::filesystem::create_symlink(good, dir / "relu_link.cu");
  EXPECT_EQ(read_candidate_file(dir / "relu_link.cu"), kRelu);
  EXPECT_EQ(load_candidate_file(dir / "relu_link.cu", relu_task()).launches.size(), 1u);
  const auto at_limit = dir / "at_limit.cu";
  {
    std::ofstream out(at_limit);
    out << kRelu << "//";
    out << std::string(static_cast<size_t>(kMaxCandidateFileBytes) - kRelu.size() - 3, 'x') << "\n";
  }
  ASSERT_EQ(std::filesystem::file_size(at_limit), static_cast<uintmax_t>(kMaxCandidateFileBytes));
  EXPECT_EQ(load_candidate_file(at_limit, relu_task()).launches.size(), 1u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kbrl
