#include "compile.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <stdexcept>

#include <kbrl/error.h>
#include <kbrl/sha256.h>
#include <kernels/expression.h>      // quote_input

#include "compile_cache.h"
#include "compile_child.h"
#include "compile_flags.h"
#include "nvrtc_check.h"
#include "source_scan.h"

namespace kbrl {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool has_cuda_headers(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::exists(dir / "cuda_fp16.h", ec);
}

std::string find_cuda_include_dir() {
  for (const char* var : {"KBRL_CUDA_INCLUDE_DIR", "CUDA_HOME", "CUDA_PATH"}) {
    const char* value = std::getenv(var);
    if (!value || !*value) continue;
    const fs::path dir = std::string_view(var) == "KBRL_CUDA_INCLUDE_DIR" ? fs::path(value)
                                                                           : fs::path(value) / "include";
    if (has_cuda_headers(dir)) return dir.string();
  }
  // Next to the NVRTC library this process uses: <toolkit>/lib64/libnvrtc.so -> <toolkit>/include.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) != 0 && info.dli_fname) {
    std::error_code ec;
    const fs::path lib = fs::canonical(info.dli_fname, ec);
    if (!ec) {
      for (const fs::path& dir : {lib.parent_path().parent_path() / "include",
                                 lib.parent_path().parent_path().parent_path() / "include"}) {
        if (has_cuda_headers(dir)) return dir.string();
      }
    }
  }
  return has_cuda_headers("/usr/local/cuda/include") ? "/usr/local/cuda/include" : "";
}

const std::string& cached_nvrtc_version() {
  static const std::string version = nvrtc_version();
  return version;
}

/// The first line of NVRTC's log that reports an error (or the first line at all).
std::string first_error_line(const std::string& log) {
  std::string first;
  size_t offset = 0;
  while (offset < log.size()) {
    const size_t end = std::min(log.find('\n', offset), log.size());
    const std::string line = log.substr(offset, end - offset);
    offset = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (line.find("error") != std::string::npos) return line;
    if (first.empty()) first = line;
  }
  return first.empty() ? "NVRTC compilation failed (empty log)" : first;
}

/// Why compiled PTX may not run in the evaluator, or "". Device printf (vprintf) would flood the
/// worker's output and slow every launch to a crawl.
std::string forbidden_ptx(std::string_view ptx) {
  for (size_t pos = ptx.find("vprintf"); pos != std::string_view::npos; pos = ptx.find("vprintf", pos + 1)) {
    const size_t line_start = ptx.rfind('\n', pos) + 1;  // npos + 1 == 0
    const std::string_view line = ptx.substr(line_start, ptx.find('\n', pos) - line_start);
    if (line.find(".func") != std::string_view::npos || line.find("call") != std::string_view::npos)
      return "device printf is not allowed (the PTX calls vprintf)";
  }
  return {};
}

/// Where a timeout of the compile `key` under `limit` seconds is cached: a bomb sent again costs
/// nothing, and a longer limit compiles again.
std::string timeout_key(const std::string& key, double limit) {
  return sha256_hex(fmt::format("{}/timed-out-within/{:g}", key, limit));
}

/// The folders NVRTC may read: the include folders among the options.
std::vector<std::string> include_dirs(const std::vector<std::string>& nvrtc_options) {
  std::vector<std::string> dirs;
  for (const std::string& o : nvrtc_options)
    if (o.starts_with("-I")) dirs.push_back(o.substr(2));
  return dirs;
}

}  // namespace

std::string CompileOptions::default_cuda_include_dir() {
  static const std::string dir = find_cuda_include_dir();
  return dir;
}

std::string arch_for(int major, int minor) {
  return fmt::format("sm_{}{}{}", major, minor, major >= 9 ? "a" : "");
}

std::vector<std::string> nvrtc_options(const std::vector<std::string>& candidate_options,
                                       const CompileOptions& options) {
  std::vector<std::string> out{"-arch=" + options.arch, "-std=c++17"};
  std::error_code ec;
  if (!options.cuda_include_dir.empty() && fs::is_directory(options.cuda_include_dir, ec)) {
    out.push_back("-I" + options.cuda_include_dir);
    const fs::path cccl = fs::path(options.cuda_include_dir) / "cccl";
    if (fs::is_directory(cccl, ec)) out.push_back("-I" + cccl.string());
  }
  out.insert(out.end(), candidate_options.begin(), candidate_options.end());
  return out;
}

CompileResult compile(const Candidate& candidate, const CompileOptions& options,
                      CompileCache* cache) {
  const auto start = Clock::now();
  static const std::regex arch_pattern("(sm|compute)_[0-9]{2,3}[af]?");
  KBRL_CHECK_INPUT(std::regex_match(options.arch, arch_pattern),
                   "bad compile arch '{}': expected e.g. sm_90a, sm_86 or compute_90", options.arch);
  KBRL_CHECK_INPUT(options.time_limit_seconds > 0, "the compile time limit must be positive, got {}",
                   options.time_limit_seconds);
  CompileResult result;
  auto finish = [&]() -> CompileResult& {
    // The kernels' parameters, compiled now or a cache hit (the cache does not store them).
    if (auto* m = std::get_if<CompiledModule>(&result.value); m && !m->cubin.empty())
      m->kernels = kernel_params(m->cubin);
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return result;
  };

  if (auto problem = check_source(candidate.source)) {
    result.value = CompileError{std::move(*problem)};
    return finish();
  }
  const CanonicalOptions canonical = canonical_options(candidate.options);
  if (!canonical.ok()) {
    result.value = CompileError{canonical.error};
    return finish();
  }
  result.options = nvrtc_options(canonical.options, options);
  result.key = compile_key(candidate.source, result.options, options.arch, cached_nvrtc_version());
  if (cache) {
    auto hit = cache->load(result.key);
    if (!hit) {
      hit = cache->load(timeout_key(result.key, options.time_limit_seconds), false);
      if (hit) hit->key = result.key;
    }
    if (hit) {
      result = std::move(*hit);
      result.cache_hit = true;
      return finish();
    }
  }

  NvrtcJob job;
  job.source = candidate.source;
  job.options = result.options;
  job.want_cubin = options.arch.rfind("sm_", 0) == 0;
  job.read_only_dirs = include_dirs(result.options);
  job.sandbox = options.sandbox;
  // The child is exec'd (not forked from this threaded process), so a timeout is the candidate's
  // own. A child that ends with no result and no limit reached is run again, up to twice: on a
  // loaded GPU host (a language model sampling, workers on every GPU) 1-2% of compiles once ended
  // so (exit status 2) and compiled the next time; one that ends so every time is the candidate's.
  NvrtcOutput out = run_nvrtc_isolated(job, options.time_limit_seconds, options.memory_limit_bytes);
  for (int again = 1; again <= 2 && out.status == NvrtcOutput::Status::died && out.died_unexplained; ++again) {
    NvrtcOutput next = run_nvrtc_isolated(job, options.time_limit_seconds, options.memory_limit_bytes);
    if (next.status == NvrtcOutput::Status::died && next.died_unexplained)
      next.detail = fmt::format("{} (the same on {} runs)", next.detail, again + 1);
    out = std::move(next);
  }
  if (out.status == NvrtcOutput::Status::died && !out.printed.empty())
    out.detail += fmt::format("; it printed: {}", out.printed);
  result.log = std::move(out.log);
  switch (out.status) {
    case NvrtcOutput::Status::timed_out:
      result.value = CompileError{fmt::format("compile timed out after {:g} s", options.time_limit_seconds)};
      if (cache) {
        CompileResult stored = result;
        stored.key = timeout_key(result.key, options.time_limit_seconds);
        cache->store(stored);
      }
      return finish();
    case NvrtcOutput::Status::died:
      result.value = CompileError{out.detail};
      return finish();
    case NvrtcOutput::Status::failed:
      result.value = CompileError{first_error_line(result.log)};
      break;
    case NvrtcOutput::Status::compiled: {
      if (std::string why = forbidden_ptx(out.ptx); !why.empty()) {
        result.value = CompileError{std::move(why)};
        break;
      }
      CompiledModule& m = result.value.emplace<CompiledModule>();
      m.key = result.key;
      m.arch = options.arch;
      m.ptx = std::move(out.ptx);
      m.cubin = std::move(out.cubin);
      m.log = result.log;
      m.options = result.options;
      m.audit = audit_precision(candidate.source, canonical.options, m.ptx, m.cubin);
      break;
    }
  }
  if (cache) cache->store(result);
  return finish();
}

const CompiledModule& CompileResult::module() const {
  if (const auto* m = std::get_if<CompiledModule>(&value)) return *m;
  throw std::logic_error("CompileResult::module() of a candidate that did not compile: " + error());
}

const std::string& CompileResult::error() const {
  static const std::string kNone;
  const auto* e = std::get_if<CompileError>(&value);
  return e ? e->message : kNone;
}

std::string log_naming_file(std::string_view log, std::string_view file) {
  std::string out;
  size_t pos = 0;
  while (pos < log.size()) {
    const size_t eol = std::min(log.find('\n', pos), log.size());
    std::string_view line = log.substr(pos, eol - pos);
    if (line.starts_with(kNvrtcProgramName) && line.substr(kNvrtcProgramName.size()).starts_with("(")) {
      out.append(file);
      line.remove_prefix(kNvrtcProgramName.size());
    }
    // NVRTC's closing line: 'N errors detected in the compilation of "candidate.cu".'
    std::string quoted(1, '"');  // built in steps: g++ 12 warns (-Wrestrict) about "\"" + name
    quoted.append(kNvrtcProgramName).push_back('"');
    if (const size_t at = line.find(quoted); at != std::string_view::npos) {
      out.append(line.substr(0, at)).append("\"").append(file).append("\"");
      line.remove_prefix(at + quoted.size());
    }
    out.append(line);
    if (eol < log.size()) out.push_back('\n');
    pos = eol + 1;
  }
  return out;
}

// ---- the preflight ----

namespace {

std::string plural(size_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

}  // namespace

std::optional<std::string> launch_argument_mismatch(const Candidate& candidate, const KernelParams& kernels) {
  for (size_t i = 0; i < candidate.launches.size(); ++i) {
    const Launch& launch = candidate.launches[i];
    const auto it = kernels.find(launch.kernel);
    if (it == kernels.end()) continue;  // the load stage reports a missing kernel
    const std::vector<KernelParam>& params = it->second;
    const std::string kernel = quote_input(launch.kernel);
    if (launch.args.size() != params.size())
      return fmt::format("launch {} passes {} to kernel '{}', which takes {}", i,
                         plural(launch.args.size(), "argument"), kernel, plural(params.size(), "parameter"));
    for (size_t a = 0; a < params.size(); ++a) {
      const int bytes = arg_bytes(launch.args[a].kind);
      if (bytes != params[a].size)
        return fmt::format("launch {} of kernel '{}': argument {} is {} ({} bytes) but parameter {} "
                           "takes {} bytes", i, kernel, a, to_string(launch.args[a].kind), bytes, a,
                           params[a].size);
    }
  }
  return std::nullopt;
}

std::optional<std::string> preflight(const Candidate& candidate, const CompiledModule& module) {
  if (std::optional<std::string> over = plan_limit_violation(candidate)) return over;
  return launch_argument_mismatch(candidate, module.kernels);
}

// ---- the pool ----

CompilePool::CompilePool(size_t threads, CompileOptions options, CompileCache* cache)
    : options_(std::move(options)), cache_(cache) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

CompilePool::~CompilePool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& t : threads_) t.join();
}

std::future<CompileResult> CompilePool::submit(Candidate candidate) {
  std::packaged_task<CompileResult()> task(
      [this, candidate = std::move(candidate)] { return compile(candidate, options_, cache_); });
  auto future = task.get_future();
  {
    std::lock_guard lock(mutex_);
    KBRL_ASSERT(!stopping_, "submit to a CompilePool that is shutting down");
    queue_.push_back(std::move(task));
  }
  ready_.notify_one();
  return future;
}

void CompilePool::work() {
  for (;;) {
    std::packaged_task<CompileResult()> task;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();  // a packaged_task stores compile()'s exception in the future
  }
}

}  // namespace kbrl
