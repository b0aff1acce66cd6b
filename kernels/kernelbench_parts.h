#pragma once
// The two halves of the KernelBench importer (kernels/kernelbench_import.h): what the Python answer
// says (kernelbench_python.cpp) and what the host function does (kernelbench_host.cpp).
#include <stdexcept>
#include <string>
#include <vector>

#include <reference/task.h>

namespace kbrl::kernelbench {

/// Thrown inside the importer for an answer it cannot read; the message is the reason.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One argument of forward's call of the extension function, as the host function receives it.
struct CallArg {
  enum class Kind { input, scalar, number } kind = Kind::number;
  int index = 0;        // input: the task's input; scalar: the task's scalar
  double number = 0.0;  // number: a literal
};

/// What the Python answer says.
struct PythonAnswer {
  std::string cuda_source;     // the extension's CUDA source, escapes decoded
  std::string function;        // the extension function forward calls
  std::vector<CallArg> args;   // its arguments
};

/// Reads the Python side. Throws Unsupported.
PythonAnswer read_python_answer(std::string_view code, const TaskSpec& task);

/// The candidate file: the device code of `answer.cuda_source` with the launch plan its host
/// function makes. Throws Unsupported.
std::string translate_host_function(const PythonAnswer& answer, const TaskSpec& task);

/// The source without its host functions (those returning tensors), PYBIND11 blocks and the host
/// headers NVRTC does not have (commented out); FLT_MAX, INFINITY and the fixed-width integer types
/// defined where they are used without them (kernelbench_source.cpp).
std::string device_code(const std::string& source);

/// A kernel's parameters, as C++ types.
struct Kernel {
  std::vector<std::string> params;
};

/// The non-template __global__ kernel `name` of `source`, every definition and declaration of it
/// made extern "C" there (kbrl loads kernels by their unmangled names). Throws Unsupported.
Kernel kernel_signature(std::string& source, const std::string& name);

}  // namespace kbrl::kernelbench
