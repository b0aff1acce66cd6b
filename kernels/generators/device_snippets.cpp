#include "device_snippets.h"

namespace kbrl {

std::string load_expr(std::string_view hint, const std::string& ptr) {
  if (hint == "ldg") return "__ldg(" + ptr + ")";
  if (hint == "streaming") return "__ldcs(" + ptr + ")";
  return "*(" + ptr + ")";
}

std::string store_expr(std::string_view hint, const std::string& ptr, const std::string& value) {
  if (hint == "streaming") return "__stcs(" + ptr + ", " + value + ")";
  return "*(" + ptr + ") = " + value;
}

namespace {

/// "__device__ __forceinline__ float <signature> { return <value>; }" and a newline.
std::string float_helper(const std::string& signature, const std::string& value) {
  return "__device__ __forceinline__ float " + signature + " { return " + value + "; }\n";
}

}  // namespace

std::string k_exp_helper(FloatMath math, std::string_view arg) {
  const std::string a(arg);
  std::string value = "expf(" + a + ")";
  if (math == FloatMath::fast) value = "__expf(" + a + ")";
  if (math == FloatMath::half_exp) value = "__half2float(hexp(__float2half(" + a + ")))";
  return float_helper("k_exp(float " + a + ")", value);
}

std::string k_log_helper(FloatMath math) {
  return float_helper("k_log(float v)", math == FloatMath::fast ? "__logf(v)" : "logf(v)");
}

std::string k_div_helper(FloatMath math) {
  return float_helper("k_div(float a, float b)",
                      math == FloatMath::fast ? "__fdividef(a, b)" : "a / b");
}

const char* const kFastMathNote =
    "// fast_math=on (unsafe): intrinsics, and the whole unit under --use_fast_math.\n";

const char* const kMaxSumState = R"(struct MaxSum {
  float m;
  float s;
};

// max that propagates NaN, as torch's reduction does.
__device__ __forceinline__ float kbrl_max(float a, float b) { return (a > b || a != a) ? a : b; }

__device__ __forceinline__ void kbrl_add(MaxSum& st, float v) {
  if (v > st.m) {
    st.s = st.s * k_exp(st.m - v) + 1.0f;  // exp(-inf) = 0 for the first value
    st.m = v;
  } else if (v != KBRL_NEG_INF) {  // -inf adds exp(-inf) = 0 (even while st.m is still -inf)
    st.s += k_exp(v - st.m);  // a NaN value makes the sum NaN
  }
}
)";

std::string block_reduce_helper(WarpStep step) {
  const auto warp_step = [step](const std::string& indent) {
    if (step == WarpStep::warp_reduce_call) return indent + "v = kbrl_warp_reduce(v, op);\n";
    return "#pragma unroll\n" + indent +
           "for (int o = 16; o > 0; o >>= 1) v = op(v, kbrl_shfl(v, o));\n";
  };
  return std::string(
             "// Reduces one value per thread over the block (blockDim.x a multiple of 32, at most "
             "1024); every\n"
             "// thread gets the result. `smem` holds 32 values and may be reused once this "
             "returns.\n"
             R"(template <class T, class Op>
__device__ __forceinline__ T kbrl_block_reduce(T v, T identity, T* smem, Op op) {
)") +
         warp_step("  ") +
         R"(  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = (int)(blockDim.x >> 5);
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? smem[lane] : identity;
)" + warp_step("    ") +
         R"(    if (lane == 0) smem[0] = v;
  }
  __syncthreads();
  const T r = smem[0];
  __syncthreads();
  return r;
}
)";
}

}  // namespace kbrl
