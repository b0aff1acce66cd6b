// Adversarial (task 19, expected compile_error): includes a file of the host running the compiler.
// NVRTC resolves an absolute #include against the host file system and quotes the offending lines
// in its error log, so without a guard the compile log (which goes back to the policy as feedback)
// leaks host files. The harness must refuse #include of anything but the NVRTC built-in headers
// before NVRTC reads the source, and report compile_error.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

#include "/etc/passwd"

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = v < 0.f ? 0.f : v;
  }
}
