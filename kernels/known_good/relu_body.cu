// Known-good: task 19 (ReLU) in the scaffold form: y = max(x, 0) over x:[4096,393216].
// The body of kbrl_forward with a helper; the scaffold line caps the grid at 8192 blocks of 256
// threads (one thread per element would launch 6.3 million blocks: about 0.66x of PyTorch on an
// H100, this 0.9x), and the grid-stride loop walks the 1.6e9 elements with 64-bit indices.
// NaN passes through as in torch.relu.
__device__ __forceinline__ float relu(float v) { return v < 0.f ? 0.f : v; }
// kbrl: scaffold grid=min(cdiv(numel(y), 256), 8192)
KBRL_GRID_STRIDE_LOOP(i, y_numel) y[i] = relu(x[i]);
