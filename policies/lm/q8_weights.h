#pragma once
// 8-bit weights for the CPU decoder (ModelOptions::cpu_weights = "q8"; no libtorch): a float32
// matrix in GGUF's Q8_0 layout (32 consecutive inputs of a row share one scale, max |w| / 127, the
// values rounded to int8; the scales kept in float32, where GGUF stores float16), and its product
// with rows quantized the same way, as llama.cpp's Q8_0 x Q8_0 dot products. A block with a NaN or
// an infinity has a NaN scale (its products are NaN, as float32's); one of magnitudes below 1e-30,
// zeros. A token's projections read a quarter of float32's bytes: on a 2-core CPU
// the step of one completion is bound by memory, not arithmetic. Relative error of a product against
// float32: about 0.8% (test_q8_weights). AVX2 and FMA where the CPU has them (chosen at run time),
// else plain C++ with the same results up to float rounding.
#include <cstdint>
#include <vector>

namespace kbrl::lm {

inline constexpr int64_t kQ8Block = 32;

/// A [rows, cols] matrix in Q8_0 blocks (cols a multiple of kQ8Block): values row-major, one scale
/// per block, [rows, cols / kQ8Block].
struct Q8Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<int8_t> values;
  std::vector<float> scales;
};

/// Whether a matrix of `cols` inputs can be held in Q8_0 blocks.
inline bool q8_fits(int64_t cols) { return cols > 0 && cols % kQ8Block == 0; }

/// Sizes `out` for a [rows, cols] matrix (its storage reused). cols must be q8_fits (else InputError).
void resize_q8(int64_t rows, int64_t cols, Q8Matrix& out);
/// Rows [begin, end) of `w` (row-major float32, out.cols a row) into `out`, sized by resize_q8:
/// threads may share one matrix by taking disjoint row ranges.
void quantize_q8_rows(const float* w, int64_t begin, int64_t end, Q8Matrix& out);
/// Both, for the whole of `w` [rows, cols].
void quantize_q8(const float* w, int64_t rows, int64_t cols, Q8Matrix& out);

/// Rows of activations [n, cols] in the same blocks, each value also as its magnitude (the kernel's
/// unsigned operand).
struct Q8Activations {
  Q8Matrix rows;
  std::vector<uint8_t> magnitudes;
};
void quantize_q8_activations(const float* x, int64_t n, int64_t cols, Q8Activations& out);

/// Whether the products run the AVX2 kernel: the CPU has AVX2 and FMA and KBRL_Q8_PLAIN is not set
/// (set, the plain C++ one runs: for tests and for comparing the two).
bool q8_uses_avx2();

/// y[j, r] = sum over k of w[r, k] x[j, k] for the weight rows r in [begin, end) and every row j of
/// x; y is [x rows, w.rows] row-major. Threads may share one product by taking disjoint row ranges.
void q8_matmul_rows(const Q8Matrix& w, const Q8Activations& x, int64_t begin, int64_t end, float* y);

}  // namespace kbrl::lm
