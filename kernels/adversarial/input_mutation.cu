// Adversarial (task 51, expected input_mutated): a correct argmax over dim 1 that then uses the
// input as free workspace through a const_cast, zeroing every element except each column's winner.
// Its output stays right on every run (the winner keeps its value and index), so only the harness's
// check that inputs and parameters are unchanged after the launch catches it. A kernel that may
// scribble over its inputs corrupts whatever reads them next (the reference, the next launch).
// kbrl: launch argmax_scribble grid=cdiv(size(x,2),256),size(x,0) block=256 args=in:x,out:y,i32:size(x,1),i32:size(x,2)

extern "C" __global__ void argmax_scribble(const float* __restrict__ x, long long* __restrict__ y,
                                           int rows, int cols) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= cols) return;
  const float* in = x + (long long)blockIdx.y * rows * cols + k;
  float best = in[0];
  int at = 0;
  for (int r = 1; r < rows; ++r) {
    const float v = in[(long long)r * cols];
    if (v > best) best = v, at = r;
  }
  y[(long long)blockIdx.y * cols + k] = at;
  float* scratch = const_cast<float*>(in);
  for (int r = 0; r < rows; ++r)
    if (r != at) scratch[(long long)r * cols] = 0.f;
}
