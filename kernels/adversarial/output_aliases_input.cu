// Adversarial (task 49, expected input_mutated): the launch plan hands the input x to the kernel a
// second time, as the workspace it writes (args=...,in:x), so the kernel may write the input without
// a const_cast in its source. The kernel computes the max over dim 1 correctly and "clears" its
// workspace afterwards, keeping only each column's maximum; its output is right on every run, so only
// the check that inputs are unchanged after the launch catches it.
// kbrl: launch max_with_workspace grid=cdiv(size(x,2),256),size(x,0) block=256 args=in:x,out:y,in:x,i32:size(x,1),i32:size(x,2)

extern "C" __global__ void max_with_workspace(const float* x, float* __restrict__ y,
                                              float* workspace, int rows, int cols) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= cols) return;
  const long long base = (long long)blockIdx.y * rows * cols + k;
  float best = x[base];
  int at = 0;
  for (int r = 1; r < rows; ++r) {
    const float v = x[base + (long long)r * cols];
    if (v > best) best = v, at = r;
  }
  y[(long long)blockIdx.y * cols + k] = best;
  for (int r = 0; r < rows; ++r)
    if (r != at) workspace[base + (long long)r * cols] = 0.f;
}
