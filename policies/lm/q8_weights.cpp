// Q8_0 weights and their products (q8_weights.h).
#include "q8_weights.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <kbrl/error.h>

namespace kbrl::lm {
namespace {

// Below this largest magnitude a block is held as zeros (127 / amax would overflow float).
constexpr float kQ8Tiny = 1e-30f;

// One block's scale and values: max |v| / 127, and each value over it rounded to the nearest
// integer (ties to even, as the AVX2 rounding of llama.cpp's quantize_row_q8_0). A block holding a
// NaN or an infinity gets a NaN scale, so products over it are NaN as float32's would be.
float quantize_block(const float* v, int8_t* q) {
  float amax = 0;
  bool finite = true;
  for (int64_t k = 0; k < kQ8Block; ++k) {
    finite = finite && std::isfinite(v[k]);
    amax = std::max(amax, std::fabs(v[k]));
  }
  if (!finite || amax < kQ8Tiny) {
    std::fill(q, q + kQ8Block, int8_t{0});
    return finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
  }
  const float inverse = 127.0f / amax;
  for (int64_t k = 0; k < kQ8Block; ++k)
    q[k] = static_cast<int8_t>(std::clamp(std::nearbyint(v[k] * inverse), -127.0f, 127.0f));
  return amax / 127.0f;
}

// The plain product: each block's integer dot product times the two scales, added in block order.
void rows_plain(const Q8Matrix& w, const Q8Activations& x, int64_t begin, int64_t end, float* y) {
  const int64_t cols = w.cols, blocks = cols / kQ8Block;
  for (int64_t j = 0; j < x.rows.rows; ++j)
    for (int64_t r = begin; r < end; ++r) {
      const int8_t* wr = w.values.data() + r * cols;
      const int8_t* xr = x.rows.values.data() + j * cols;
      float sum = 0;
      for (int64_t b = 0; b < blocks; ++b) {
        int32_t dot = 0;
        for (int64_t k = b * kQ8Block; k < (b + 1) * kQ8Block; ++k) dot += int32_t{wr[k]} * int32_t{xr[k]};
        sum += static_cast<float>(dot) * w.scales[r * blocks + b] * x.rows.scales[j * blocks + b];
      }
      y[j * w.rows + r] = sum;
    }
}

#if defined(__x86_64__)
#define KBRL_AVX2 __attribute__((target("avx2,fma")))

// Bytes ahead of the weight being read that are asked for: the weights stream from memory, and the
// hardware's own prefetcher alone leaves one core at about half the bandwidth it can reach.
constexpr int64_t kPrefetchBytes = 8192;

// Asks for the line `ahead` bytes past `p` (an address, never dereferenced: past the end is fine).
inline void prefetch(const void* p, int64_t ahead) {
  _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(ahead)), _MM_HINT_T0);
}

KBRL_AVX2 inline float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Up to 4 rows of x (from row j0) against the weight rows [begin, end): each weight block is read
// once for all of them. The block's dot product: |x| (unsigned) times w with x's signs (signed),
// pairs summed to int16 (at most 2 * 127 * 127: no saturation), then to int32.
template <int N>
KBRL_AVX2 void rows_avx2(const Q8Matrix& w, const Q8Activations& x, int64_t j0, int64_t begin, int64_t end, float* y) {
  const int64_t cols = w.cols, blocks = cols / kQ8Block;
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t r = begin; r < end; ++r) {
    const int8_t* wr = w.values.data() + r * cols;
    const float* ws = w.scales.data() + r * blocks;
    __m256 acc[N];
    for (int j = 0; j < N; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      if ((b & 1) == 0) prefetch(wr + b * kQ8Block, kPrefetchBytes);
      if ((b & 15) == 0) prefetch(ws + b, kPrefetchBytes / 8);
      const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wr + b * kQ8Block));
      for (int j = 0; j < N; ++j) {
        const int64_t at = (j0 + j) * cols + b * kQ8Block;
        const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.rows.values.data() + at));
        const __m256i xm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.magnitudes.data() + at));
        const __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(xm, _mm256_sign_epi8(wv, xq)), ones);
        const float scale = ws[b] * x.rows.scales[(j0 + j) * blocks + b];
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(scale), acc[j]);
      }
    }
    for (int j = 0; j < N; ++j) y[(j0 + j) * w.rows + r] = horizontal_sum(acc[j]);
  }
}

#endif

}  // namespace

bool q8_uses_avx2() {
#if defined(__x86_64__)
  static const bool yes = std::getenv("KBRL_Q8_PLAIN") == nullptr && __builtin_cpu_supports("avx2") &&
                          __builtin_cpu_supports("fma");
  return yes;
#else
  return false;
#endif
}

void resize_q8(int64_t rows, int64_t cols, Q8Matrix& out) {
  KBRL_CHECK_INPUT(q8_fits(cols), "8-bit weights: a row of {} values is not a whole number of {}-value blocks", cols,
                   kQ8Block);
  out.rows = rows;
  out.cols = cols;
  out.values.resize(static_cast<size_t>(rows * cols));
  out.scales.resize(static_cast<size_t>(rows * (cols / kQ8Block)));
}

void quantize_q8_rows(const float* w, int64_t begin, int64_t end, Q8Matrix& out) {
  const int64_t per_row = out.cols / kQ8Block;
  for (int64_t b = begin * per_row; b < end * per_row; ++b)
    out.scales[b] = quantize_block(w + b * kQ8Block, out.values.data() + b * kQ8Block);
}

void quantize_q8(const float* w, int64_t rows, int64_t cols, Q8Matrix& out) {
  resize_q8(rows, cols, out);
  quantize_q8_rows(w, 0, rows, out);
}

void quantize_q8_activations(const float* x, int64_t n, int64_t cols, Q8Activations& out) {
  quantize_q8(x, n, cols, out.rows);
  out.magnitudes.resize(out.rows.values.size());
  for (size_t k = 0; k < out.rows.values.size(); ++k)
    out.magnitudes[k] = static_cast<uint8_t>(std::abs(static_cast<int>(out.rows.values[k])));
}

void q8_matmul_rows(const Q8Matrix& w, const Q8Activations& x, int64_t begin, int64_t end, float* y) {
  KBRL_ASSERT(x.rows.cols == w.cols, "8-bit product: rows of {} values against weights of {}", x.rows.cols, w.cols);
#if defined(__x86_64__)
  if (q8_uses_avx2()) {
    for (int64_t j = 0; j < x.rows.rows; j += 4) {
      switch (std::min<int64_t>(4, x.rows.rows - j)) {
        case 1: rows_avx2<1>(w, x, j, begin, end, y); break;
        case 2: rows_avx2<2>(w, x, j, begin, end, y); break;
        case 3: rows_avx2<3>(w, x, j, begin, end, y); break;
        default: rows_avx2<4>(w, x, j, begin, end, y); break;
      }
    }
    return;
  }
#endif
  rows_plain(w, x, begin, end, y);
}

}  // namespace kbrl::lm
