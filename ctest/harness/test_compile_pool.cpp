// The compile thread pool (CompilePool, harness/compile/compile.h).
#include <chrono>
#include <iostream>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <harness/compile/compile.h>
#include <kbrl/error.h>

namespace kbrl {
namespace {

Candidate numbered_kernel(int i) {
  Candidate c;
  c.task_id = 19;
  c.source = fmt::format(
      "extern \"C\" __global__ void k{0}(const float* x, float* y, long long n) {{\n"
      "  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) y[i] = x[i] * {0}.0f + {1}.0f;\n"
      "}}\n",
      i, i * i);
  return c;
}

TEST(CompilePool, CompilesManyInParallel) {
  constexpr int kCount = 12;
  const auto start = std::chrono::steady_clock::now();
  std::vector<CompileResult> results;
  {
    CompilePool pool(4);
    EXPECT_EQ(pool.size(), 4u);
    std::vector<std::future<CompileResult>> futures;
    for (int i = 0; i < kCount; ++i) futures.push_back(pool.submit(numbered_kernel(i)));
    for (auto& f : futures) results.push_back(f.get());
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double sum = 0.0;
  std::set<std::string> keys;
  for (int i = 0; i < kCount; ++i) {
    EXPECT_TRUE(results[i].ok()) << results[i].error();
    EXPECT_NE(results[i].module().ptx.find(fmt::format(".entry k{}(", i)), std::string::npos);
    keys.insert(results[i].key);
    sum += results[i].seconds;
  }
  EXPECT_EQ(keys.size(), static_cast<size_t>(kCount));
  std::cout << fmt::format("[ timing   ] {} compiles on 4 threads: {:.2f} s wall, {:.2f} s summed\n",
                           kCount, wall, sum);
}

TEST(CompilePool, FailuresAndExceptionsReachTheFutures) {
  CompileOptions bad_arch;
  bad_arch.arch = "not-an-arch";
  CompilePool pool(2, bad_arch);
  auto thrown = pool.submit(numbered_kernel(1));
  EXPECT_THROW(thrown.get(), InputError);

  CompilePool good(2);
  Candidate broken = numbered_kernel(2);
  broken.source += "this does not compile\n";
  const CompileResult r = good.submit(broken).get();
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.log.empty());
}

TEST(CompilePool, DestructorFinishesQueuedWork) {
  std::vector<std::future<CompileResult>> futures;
  {
    CompilePool pool(1);
    for (int i = 20; i < 23; ++i) futures.push_back(pool.submit(numbered_kernel(i)));
  }
  for (auto& f : futures) {
    ASSERT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    EXPECT_TRUE(f.get().ok());
  }
}

}  // namespace
}  // namespace kbrl
