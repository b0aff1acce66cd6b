#pragma once
// Shared by the candidate-format tests (test_candidate_file.cpp, test_candidate_limits.cpp): a ReLU
// candidate file, variants of its launch line, and the error a text gives.
#include <string>

#include <gtest/gtest.h>

#include <kbrl/error.h>
#include <kernels/candidate_file.h>
#include <reference/task_registry.h>

namespace kbrl::testing {

inline const std::string kRelu = R"(// A ReLU.
// kbrl: launch relu grid=cdiv(numel(x), 256) block=256 args=in:x,out:y,i64:numel(x)
extern "C" __global__ void relu(const float* x, float* y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] < 0.f ? 0.f : x[i];
}
)";

inline TaskSpec relu_task() { return task_spec(19, Scale::small); }

/// The InputError message of parsing `text` against task `id` (small scale).
inline std::string error_of(const std::string& text, int id = 19) {
  try {
    parse_candidate_file(text, task_spec(id, Scale::small), "k.cu");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

/// kRelu with its launch line replaced by `line`.
inline std::string relu_with(const std::string& line) {
  std::string text = kRelu;
  const size_t start = text.find("// kbrl: launch");
  return text.replace(start, text.find('\n', start) - start, line);
}

}  // namespace kbrl::testing
