// Known-good: task 44 (AvgPool1d kernel 8, stride 1, padding 4, count_include_pad) of x:[N,C,L] ->
// y:[N,C,L+1]. One thread per output: the in-range window elements are summed in order and the sum
// is divided by the kernel size (padding counts as zeros), as PyTorch's average pooling does.
// kbrl: launch avg_pool1d_k8s1p4 grid=min(cdiv(numel(y),256),65535) block=256 args=in:x,out:y,i32:size(x,2),i32:size(y,2),i64:numel(y)

#define KERNEL 8
#define PAD 4

extern "C" __global__ void __launch_bounds__(256)
avg_pool1d_k8s1p4(const float* __restrict__ x, float* __restrict__ y, int length, int out_length,
                  long long total) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int o = (int)(i % out_length);
    const long long row = i / out_length;
    const float* in = x + row * length;
    const int start = max(o - PAD, 0), end = min(o - PAD + KERNEL, length);
    float sum = 0.f;
    for (int t = start; t < end; ++t) sum += in[t];
    y[i] = sum / (float)KERNEL;
  }
}
