// The content-addressed compile cache (harness/compile/compile_cache.h) and its SHA-256 (harness/sha256.h).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <harness/compile/compile_cache.h>
#include <kbrl/sha256.h>

#include "harness_testing.h"

namespace kbrl {
namespace {

namespace fs = std::filesystem;

using testing::candidate_of;

const char* kScale = R"(extern "C" __global__ void scale(const float* x, float* y, float s, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * s;
}
)";

/// A fresh cache directory, removed afterwards.
class CacheDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("kbrl-test-cache-{}-{}", getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Incremental updates of every split give the one-shot digest.
  const std::string text(200, 'x');
  for (size_t split : {0, 1, 55, 56, 63, 64, 65, 128, 199}) {
    Sha256 h;
    h.update(std::string_view(text).substr(0, split)).update(std::string_view(text).substr(split));
    EXPECT_EQ(h.hex_digest(), sha256_hex(text)) << split;
  }
}

TEST(CompileKey, ChangesWithEveryInput) {
  const std::vector<std::string> options{"-arch=sm_90a", "-std=c++17", "-I/usr/local/cuda/include"};
  const std::string base = compile_key(kScale, options, "sm_90a", "13.0");
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(base, compile_key(kScale, options, "sm_90a", "13.0"));
  EXPECT_NE(base, compile_key(std::string(kScale) + " ", options, "sm_90a", "13.0"));
  EXPECT_NE(base, compile_key(kScale, options, "sm_86", "13.0"));
  EXPECT_NE(base, compile_key(kScale, options, "sm_90a", "13.1"));
  auto with_fast_math = options;
  with_fast_math.push_back("--use_fast_math");
  EXPECT_NE(base, compile_key(kScale, with_fast_math, "sm_90a", "13.0"));
  // Include paths name a machine's directories, not the compile: they stay out of the key.
  auto moved = options;
  moved[2] = "-I/opt/cuda/include";
  EXPECT_EQ(base, compile_key(kScale, moved, "sm_90a", "13.0"));
}

TEST_F(CacheDir, KeyFollowsOptionsAndArchNotTheirOrder) {
  CompileCache cache(dir_);
  const CompileResult a = compile(candidate_of(kScale, {"-lineinfo", "--use_fast_math"}), {}, &cache);
  const CompileResult b = compile(candidate_of(kScale, {"-use_fast_math", "--generate-line-info"}), {}, &cache);
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a.key, b.key);  // canonical, sorted options
  EXPECT_TRUE(b.cache_hit);
  const CompileResult c = compile(candidate_of(kScale, {"-lineinfo"}), {}, &cache);
  EXPECT_NE(a.key, c.key);
  CompileOptions ampere;
  ampere.arch = "sm_86";
  EXPECT_NE(c.key, compile(candidate_of(kScale, {"-lineinfo"}), ampere, &cache).key);
}

TEST_F(CacheDir, MissThenHitAndWarmIsFast) {
  CompileCache cache(dir_);
  const CompileResult cold = compile(candidate_of(kScale), {}, &cache);
  ASSERT_TRUE(cold.ok()) << cold.error();
  EXPECT_FALSE(cold.cache_hit);
  EXPECT_TRUE(fs::is_regular_file(cache.entry_path(cold.key)));
  std::vector<double> warm;
  CompileResult hit;
  for (int i = 0; i < 20; ++i) {
    hit = compile(candidate_of(kScale), {}, &cache);
    warm.push_back(hit.seconds);
  }
  EXPECT_TRUE(hit.cache_hit);
  EXPECT_TRUE(hit.ok());
  EXPECT_EQ(hit.module(), cold.module());
  EXPECT_EQ(hit.log, cold.log);
  EXPECT_EQ(hit.options, cold.options);
  std::sort(warm.begin(), warm.end());
  const double median = warm[warm.size() / 2];
  std::cout << fmt::format("[ timing   ] small kernel: cold compile {:.1f} ms, warm (cache hit) "
                           "median {:.3f} ms, max {:.3f} ms\n",
                           cold.seconds * 1e3, median * 1e3, warm.back() * 1e3);
  ::testing::Test::RecordProperty("cold_ms", static_cast<int>(cold.seconds * 1e3));
  EXPECT_LT(median, 0.020);
  const CompileCacheStats stats = cache.stats();
  EXPECT_EQ(stats.misses, 1);
  EXPECT_EQ(stats.hits, 20);
  EXPECT_EQ(stats.stores, 1);
  EXPECT_EQ(stats.corrupt, 0);
}

TEST_F(CacheDir, CorruptEntryIsAMiss) {
  CompileCache cache(dir_);
  const CompileResult first = compile(candidate_of(kScale), {}, &cache);
  ASSERT_TRUE(first.ok());
  const fs::path entry = cache.entry_path(first.key);
  const auto size = fs::file_size(entry);
  const std::vector<std::function<void()>> corruptions = {
      [&] { fs::resize_file(entry, size / 2); },  // truncated
      [&] {                                        // one flipped byte
        std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>(size / 3));
        f.put('\x5a');
      },
      [&] { std::ofstream(entry, std::ios::trunc) << "not a cache entry"; },
      [&] { std::ofstream(entry, std::ios::trunc); },  // empty
  };
  int64_t corrupt = 0;
  for (const auto& corrupt_it : corruptions) {
    corrupt_it();
    const CompileResult again = compile(candidate_of(kScale), {}, &cache);
    EXPECT_TRUE(again.ok()) << again.error();
    EXPECT_FALSE(again.cache_hit);
    EXPECT_EQ(again.module(), first.module());
    EXPECT_EQ(cache.stats().corrupt, ++corrupt);
    EXPECT_TRUE(compile(candidate_of(kScale), {}, &cache).cache_hit);  // rewritten
  }
  // An entry stored under another key's name is not that key's entry.
  const CompileResult other = compile(candidate_of(std::string(kScale) + "\n"), {}, &cache);
  fs::copy_file(cache.entry_path(other.key), entry, fs::copy_options::overwrite_existing);
  EXPECT_FALSE(compile(candidate_of(kScale), {}, &cache).cache_hit);
}

TEST_F(CacheDir, FailuresAreCachedWithTheirLogRejectionsAreNot) {
  CompileCache cache(dir_);
  const Candidate broken = candidate_of("extern \"C\" __global__ void k() { nope; }\n");
  const CompileResult first = compile(broken, {}, &cache);
  ASSERT_FALSE(first.ok());
  const CompileResult second = compile(broken, {}, &cache);
  EXPECT_TRUE(second.cache_hit);
  EXPECT_FALSE(second.ok());
  EXPECT_EQ(second.log, first.log);
  EXPECT_EQ(second.error(), first.error());
  EXPECT_EQ(second.outcome(), Outcome::compile_error);
  const int64_t stores = cache.stats().stores;
  EXPECT_FALSE(compile(candidate_of(kScale, {"-G"}), {}, &cache).ok());
  EXPECT_EQ(cache.stats().stores, stores);
}

TEST(CompileCacheFormat, RoundTripAndTamper) {
  CompileResult r;
  r.key = std::string(64, 'a');
  r.log = "warning";
  r.options = {"-arch=sm_90a", "--use_fast_math"};
  CompiledModule& m = r.value.emplace<CompiledModule>();
  m.key = r.key;
  m.arch = "sm_90a";
  m.ptx = ".version 9.0\n";
  m.cubin = std::string("\x7f" "ELF\0\1\2", 7);
  m.log = r.log;
  m.options = r.options;
  m.audit.findings = {{PrecisionCategory::fast_math, "options", "--use_fast_math", 0, 1},
                      {PrecisionCategory::fp16, "ptx", "cvt.rn.f16.f32 %rs1, %f1;", 42, 3}};
  const std::string bytes = serialize_compile_result(r);
  const auto back = deserialize_compile_result(bytes);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->module(), r.module());
  EXPECT_EQ(back->options, r.options);
  EXPECT_TRUE(back->ok());
  for (size_t i = 0; i < bytes.size(); i += 7) {
    std::string tampered = bytes;
    tampered[i] = static_cast<char>(tampered[i] ^ 0x01);
    EXPECT_FALSE(deserialize_compile_result(tampered).has_value()) << i;
  }
  EXPECT_FALSE(deserialize_compile_result(bytes.substr(0, bytes.size() - 1)).has_value());
  EXPECT_FALSE(deserialize_compile_result("").has_value());
}

TEST(CompileCacheDir, DefaultFollowsTheEnvironment) {
  ::setenv("KBRL_CACHE_DIR", "/tmp/kbrl-cache-env", 1);
  EXPECT_EQ(CompileCache::default_dir(), fs::path("/tmp/kbrl-cache-env"));
  ::unsetenv("KBRL_CACHE_DIR");
  EXPECT_FALSE(CompileCache::default_dir().empty());
}

}  // namespace
}  // namespace kbrl
