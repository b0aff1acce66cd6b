// Known-good: task 42 (MaxPool2d kernel 4, stride 1, padding 1, dilation 1) of x:[N,C,H,W] ->
// y:[N,C,H-1,W-1]. One thread per output (grid-stride, 64-bit flat index); padding never wins, and
// NaN propagates as in PyTorch's kernel (a NaN in the window is the result).
// kbrl: launch max_pool2d_k4s1p1 grid=min(cdiv(numel(y),256),65535) block=256 args=in:x,out:y,i32:size(x,2),i32:size(x,3),i32:size(y,2),i32:size(y,3),i64:numel(y)

#define KERNEL 4
#define PAD 1

extern "C" __global__ void __launch_bounds__(256)
max_pool2d_k4s1p1(const float* __restrict__ x, float* __restrict__ y, int height, int width,
                  int out_height, int out_width, long long total) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int ow = (int)(i % out_width);
    const long long rest = i / out_width;
    const int oh = (int)(rest % out_height);
    const long long plane = rest / out_height;  // n * C + c
    const float* in = x + plane * height * width;
    const int h0 = max(oh - PAD, 0), h1 = min(oh - PAD + KERNEL, height);
    const int w0 = max(ow - PAD, 0), w1 = min(ow - PAD + KERNEL, width);
    float best = __int_as_float(0xff800000);  // -inf
    for (int h = h0; h < h1; ++h) {
      for (int w = w0; w < w1; ++w) {
        const float v = in[h * width + w];
        if (v > best || v != v) best = v;
      }
    }
    y[i] = best;
  }
}
