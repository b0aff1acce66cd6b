#pragma once
// The embedded .cuh files (internal to cuda_text.cpp and the generated file that defines them).
#include <string_view>
#include <vector>

namespace kbrl::cuda_text {

struct EmbeddedFile {
  std::string_view name;  // "conv.cuh"
  std::string_view text;  // the file's bytes
};

/// Every file of kernels/generators/cuda/, in name order (written by embed_cuda.cmake).
const std::vector<EmbeddedFile>& embedded_files();

}  // namespace kbrl::cuda_text
