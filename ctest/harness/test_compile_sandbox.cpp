// The compile child's confinement (harness/compile/compile_child.h): a secret
// planted in a file beside the process and in its environment never reaches a compile's result,
// log or cache entry, whatever #include trick the source uses and whether or not the source scanner
// sees it; the child dies with its parent; a compile bomb's timeout is cached.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <harness/compile/compile.h>
#include <harness/compile/compile_cache.h>
#include <harness/compile/compile_child.h>
#include <harness/compile/nvrtc_wire.h>
#include <kbrl/subprocess.h>

#include "harness_testing.h"

namespace kbrl {
namespace {

namespace fs = std::filesystem;
using testing::candidate_of;
using testing::macro_bomb;

constexpr const char* kSecret = "kbrl_planted_secret_7f3a91";

/// A secret file (its first line is the secret, as a declaration NVRTC would quote in an error) and
/// the same secret in this process's environment; both removed afterwards.
class Secrets : public ::testing::Test {
 protected:
  void SetUp() override {
    if (probe_sandbox_support().landlock_abi <= 0)
      GTEST_SKIP() << "this kernel offers no Landlock: compiles are not confined here";
    dir_ = fs::temp_directory_path() / fmt::format("kbrl-secret-{}", getpid());
    fs::create_directories(dir_);
    file_ = (dir_ / "secret.h").string();
    std::ofstream(file_) << kSecret << " x;\n";
    setenv("KBRL_TEST_SECRET", kSecret, 1);
  }
  void TearDown() override {
    unsetenv("KBRL_TEST_SECRET");
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  /// Every file under `dir`, concatenated.
  static std::string all_bytes(const fs::path& dir) {
    std::string out;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      out += std::string(std::istreambuf_iterator<char>(in), {});
    }
    return out;
  }
  fs::path dir_;
  std::string file_;
};

const char* kKernel = "extern \"C\" __global__ void k(float* y) { y[0] = 1.f; }\n";

// NVRTC itself, with no scanner in front: the child cannot open a file outside the CUDA headers.
TEST_F(Secrets, ChildCannotReadHostFiles) {
  for (const std::string& path : {file_, std::string("/proc/self/environ"), std::string("/etc/hostname")}) {
    NvrtcJob job;
    job.sandbox = CompileSandbox::best_effort;  // so that a missing sandbox shows as a leak
    job.source = fmt::format("#include \"{}\"\n{}", path, kKernel);
    job.options = nvrtc_options({}, CompileOptions{});
    for (const std::string& o : job.options)
      if (o.starts_with("-I")) job.read_only_dirs.push_back(o.substr(2));
    const NvrtcOutput out = run_nvrtc_isolated(job, 60, int64_t{4} << 30);
    EXPECT_EQ(out.status, NvrtcOutput::Status::failed) << path;
    EXPECT_EQ(out.log.find(kSecret), std::string::npos) << path << ":\n" << out.log;
    EXPECT_NE(out.log.find("cannot open source file"), std::string::npos) << path << ":\n" << out.log;
    EXPECT_NE(out.sandbox.find("Landlock"), std::string::npos) << out.sandbox;
  }
}

// The allowed headers still compile inside the sandbox.
TEST_F(Secrets, AllowedHeadersStillCompile) {
  const CompileResult r = compile(candidate_of("#include <cuda_fp16.h>\n#include <cooperative_groups.h>\n" +
                                               std::string(kKernel)));
  EXPECT_TRUE(r.ok()) << r.error() << "\n" << r.log;
}

// Includes hidden from a scanner in every way we know: whatever the scanner says, the secret stays out
// of the result, its log and the cache.
TEST_F(Secrets, HiddenIncludesLeakNothing) {
  const std::string f = file_;
  const std::vector<std::pair<std::string, std::string>> sources = {
      {"plain", fmt::format("#include \"{}\"\n", f)},
      // A scanner that reads R"(" as a string that ends at the second quote sees a comment start.
      {"raw string", fmt::format("const char* s = R\"(\" /* )\";\n#include \"{}\"\nconst char* t = \"*/\";\n", f)},
      {"raw string, delimited", fmt::format("const char* s = R\"x(\")x\";\n#include \"{}\"\n", f)},
      // A scanner that reads 1'2 as a character literal runs to the next quote, then sees /*.
      {"digit separator", fmt::format("int a = 1'2; const char* s = \"'/*\";\n#include \"{}\"\nconst char* t = \"*/\";\n", f)},
      {"line splice", fmt::format("#inc\\\nlude \"{}\"\n", f)},
      {"splice in the path", fmt::format("#include \"{}\\\n{}\"\n", f.substr(0, 5), f.substr(5))},
      {"trigraph", fmt::format("?\?=include \"{}\"\n", f)},
      {"digraph", fmt::format("%:include \"{}\"\n", f)},
      {"_Pragma", fmt::format("_Pragma(\"once\") %:include \"{}\"\n", f)},
      {"__has_include", fmt::format("#if __has_include(\"{}\")\n#error FILE_EXISTS\n#endif\n", f)},
      {"#line", fmt::format("#line 1 \"{}\"\nint x = ;\n", f)},
      {"macro", fmt::format("#define P \"{}\"\n#include P\n", f)},
      {"stringized macro", fmt::format("#define S(x) #x\n#define F(x) S(x)\n#include F({})\n", f)},
      {"comment trick", fmt::format("/* */ # /* */ include \"{}\"\n", f)},
      {"environ", "#include \"/proc/self/environ\"\n"},
      {"environ via fd", "#include \"/dev/fd/0\"\n"},
      {"include_next", fmt::format("#include_next \"{}\"\n", f)},
  };
  CompileCache cache(dir_ / "cache");
  for (const auto& [name, prefix] : sources) {
    const CompileResult r = compile(candidate_of(prefix + kKernel), CompileOptions{}, &cache);
    const std::string all = r.error() + "\n" + r.log + "\n" + (r.ok() ? r.module().ptx : "");
    EXPECT_EQ(all.find(kSecret), std::string::npos) << name << " leaked:\n" << all;
    EXPECT_EQ(all.find("FILE_EXISTS"), std::string::npos) << name << " learned the file exists:\n" << all;
  }
  EXPECT_EQ(all_bytes(dir_ / "cache").find(kSecret), std::string::npos) << "the cache holds the secret";
}

/// The pids of kbrl-nvrtc processes whose parent argument is `parent`.
std::vector<pid_t> compile_children_of(pid_t parent) {
  std::vector<pid_t> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    const std::string cmdline(std::istreambuf_iterator<char>(in), {});
    if (cmdline.find("kbrl-nvrtc") != std::string::npos &&
        cmdline.find(std::string(1, '\0') + std::to_string(parent)) != std::string::npos)
      pids.push_back(std::stoi(name));
  }
  return pids;
}


/// Whether `pid` exists and is not a zombie (a dead child waiting for whoever adopted it to reap it).
bool running(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

/// A file holding a kbrl-nvrtc job that compiles the macro bomb (CPU limit `cpu_seconds`, 0: none),
/// for starting the child by hand from a shell.
fs::path write_bomb_job(const std::string& name, int64_t cpu_seconds) {
  const fs::path file = fs::temp_directory_path() / fmt::format("{}-{}", name, getpid());
  nvrtc_wire::ChildJob bomb;
  bomb.job.source = macro_bomb();
  bomb.job.options = nvrtc_options({}, CompileOptions{});
  bomb.job.sandbox = CompileSandbox::best_effort;
  bomb.cpu_seconds = cpu_seconds;
  std::ofstream(file, std::ios::binary) << nvrtc_wire::encode_job(bomb);
  return file;
}

// A parent killed mid-compile takes its compile child with it (the parent here: a shell that starts
// kbrl-nvrtc on a compile bomb and waits).
TEST(CompileChild, DiesWithItsParent) {
  const fs::path job_file = write_bomb_job("kbrl-bomb-job", 0);
  SpawnSpec spec;
  spec.argv = {"/bin/bash", "-c", "\"$0\" $$ < \"$1\" 3>/dev/null & wait", nvrtc_child_path(), job_file.string()};
  ChildProcess parent = spawn(spec);
  std::vector<pid_t> children;
  for (int i = 0; i < 200 && children.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    children = compile_children_of(parent.pid());
  }
  ASSERT_EQ(children.size(), 1u) << "no compile child of the parent appeared";
  parent.kill();
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gone = !running(children[0]);
  }
  EXPECT_TRUE(gone) << "kbrl-nvrtc " << children[0] << " outlived its parent";
  if (!gone) kill(children[0], SIGKILL);
  fs::remove(job_file);
}

// The child's CPU-time limit stops a bomb by itself (RLIMIT_CPU: SIGXCPU, then SIGKILL), whatever the
// parent's wall-time limit: here 1 CPU second, where the bomb needs minutes.
TEST(CompileChild, CpuLimitStopsABomb) {
  const fs::path job_file = write_bomb_job("kbrl-cpu-job", 1);
  SpawnSpec spec;
  spec.argv = {"/bin/bash", "-c", "\"$0\" $$ < \"$1\" 3>/dev/null; exit $?", nvrtc_child_path(), job_file.string()};
  const auto start = std::chrono::steady_clock::now();
  ChildProcess shell = spawn(spec);
  const auto status = shell.wait_until(start + std::chrono::seconds(30));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fs::remove(job_file);
  ASSERT_TRUE(status.has_value()) << "the bomb ran past 30 s: no CPU limit";
  ASSERT_TRUE(WIFEXITED(*status));
  const int code = WEXITSTATUS(*status);  // bash: 128 + the signal that ended kbrl-nvrtc
  EXPECT_TRUE(code == 128 + SIGXCPU || code == 128 + SIGKILL) << "exit " << code;
  EXPECT_LT(seconds, 10.0);
}

// A compile bomb costs its time limit once: the timeout is cached under its content key and limit.
TEST(CompileChild, TimeoutIsCached) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("kbrl-test-timeout-cache-{}", getpid());
  fs::remove_all(dir);
  CompileCache cache(dir);
  CompileOptions options;
  options.time_limit_seconds = 1.0;
  const CompileResult first = compile(candidate_of(macro_bomb()), options, &cache);
  EXPECT_EQ(first.error(), "compile timed out after 1 s");
  EXPECT_FALSE(first.cache_hit);
  const CompileResult again = compile(candidate_of(macro_bomb()), options, &cache);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.error(), first.error());
  EXPECT_EQ(again.key, first.key);
  EXPECT_LT(again.seconds, 0.5);
  options.time_limit_seconds = 2.0;  // a longer limit compiles again
  EXPECT_FALSE(compile(candidate_of(macro_bomb()), options, &cache).cache_hit);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kbrl
