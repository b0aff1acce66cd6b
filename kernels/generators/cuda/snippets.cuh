// CUDA text shared by several generator families (device_snippets.h says which C++ emits each).
// Sections are emitted byte for byte: a change here changes the source of every family using it.
// max_sum_state: the online softmax state; block_reduce with warp_step_shuffle or warp_step_call:
// the block reduction template; k_exp_*, k_log_*, k_div_*: the float math helpers (exact: libm;
// fast: the fast-math intrinsics; half: exp evaluated in __half); fast_math_note: the comment line
// before a fast_math=on unit's intrinsic helpers.

//@section max_sum_state
struct MaxSum {
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
//@section block_reduce
// Reduces one value per thread over the block (blockDim.x a multiple of 32, at most 1024); every
// thread gets the result. `smem` holds 32 values and may be reused once this returns.
template <class T, class Op>
__device__ __forceinline__ T kbrl_block_reduce(T v, T identity, T* smem, Op op) {
@WARP_STEP@  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = (int)(blockDim.x >> 5);
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? smem[lane] : identity;
@WARP_STEP_INNER@    if (lane == 0) smem[0] = v;
  }
  __syncthreads();
  const T r = smem[0];
  __syncthreads();
  return r;
}
//@section warp_step_shuffle
#pragma unroll
@INDENT@for (int o = 16; o > 0; o >>= 1) v = op(v, kbrl_shfl(v, o));
//@section warp_step_call
@INDENT@v = kbrl_warp_reduce(v, op);
//@section k_exp_exact
__device__ __forceinline__ float k_exp(float @ARG@) { return expf(@ARG@); }
//@section k_exp_fast
__device__ __forceinline__ float k_exp(float @ARG@) { return __expf(@ARG@); }
//@section k_exp_half
__device__ __forceinline__ float k_exp(float @ARG@) { return __half2float(hexp(__float2half(@ARG@))); }
//@section k_log_exact
__device__ __forceinline__ float k_log(float v) { return logf(v); }
//@section k_log_fast
__device__ __forceinline__ float k_log(float v) { return __logf(v); }
//@section k_div_exact
__device__ __forceinline__ float k_div(float a, float b) { return a / b; }
//@section k_div_fast
__device__ __forceinline__ float k_div(float a, float b) { return __fdividef(a, b); }
//@section fast_math_note
// fast_math=on (unsafe): intrinsics, and the whole unit under --use_fast_math.
