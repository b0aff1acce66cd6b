// Adversarial (task 51, expected wrong_answer by the stress trial): argmax over dim 1 with the
// integer-atomic trick, valid only for non-negative floats. Each thread packs (float bits << 32 |
// ~row) into a 64-bit key (larger value wins, ties go to the first row), keeps the largest key of
// its rows compared as unsigned integers, and merges it into the int64 output with atomicMax
// (there is no float atomicMax); a last launch unpacks the row. The integer maximum does not depend
// on the order of the atomics, so the result is deterministic, and for non-negative floats the
// unsigned order of the bits is the float order: on KernelBench's inputs (uniform on [0,1)) every
// index is right, so KernelBench's check and kbrl's five trials before the stress trial existed
// pass it. The stress trial draws uniform [-10,10) values and shifts each reduced slice by -15, 0
// or +15: negative floats have the sign bit set, so as unsigned integers they beat every positive
// value and, among themselves, the most negative wins; in every slice with a negative value (two
// thirds of them) the output is the index of the minimum. int64 outputs are compared exactly.
// kbrl: launch clear_keys grid=min(cdiv(numel(y),256),65535) block=256 args=out:y,i64:numel(y)
// kbrl: launch argmax_keys grid=cdiv(size(x,2),32),size(x,0) block=32,8 args=in:x,out:y,i32:size(x,1),i32:size(x,2)
// kbrl: launch unpack_rows grid=min(cdiv(numel(y),256),65535) block=256 args=out:y,i64:numel(y)

#define COLS 32
#define SLICES 8

extern "C" __global__ void clear_keys(long long* __restrict__ y, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = 0;
}

__device__ __forceinline__ unsigned long long key_of(float v, int row) {
  return ((unsigned long long)__float_as_uint(v) << 32) | (unsigned int)~row;
}

extern "C" __global__ void __launch_bounds__(COLS * SLICES)
argmax_keys(const float* __restrict__ x, long long* y, int rows, int cols) {
  const int k = blockIdx.x * COLS + threadIdx.x;
  if (k >= cols) return;
  const float* in = x + (long long)blockIdx.y * rows * cols + k;
  unsigned long long best = 0;
  for (int r = threadIdx.y; r < rows; r += SLICES) {
    const unsigned long long key = key_of(in[(long long)r * cols], r);
    if (key > best) best = key;
  }
  atomicMax(reinterpret_cast<unsigned long long*>(y) + (long long)blockIdx.y * cols + k, best);
}

extern "C" __global__ void unpack_rows(long long* __restrict__ y, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = (long long)(~(unsigned int)(unsigned long long)y[i]);
}
