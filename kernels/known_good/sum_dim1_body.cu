// Known-good: task 47 (sum over dim 1, keepdim) in the scaffold form: x:[B,R,K] = [128,4096,4095]
// -> y:[B,1,K]. One thread per output (the default launch): consecutive threads take consecutive
// k, so each row step of a warp reads contiguous memory; four fp32 accumulators of about R/4 terms.
// kbrl: scaffold
KBRL_GRID_STRIDE_LOOP(o, y_numel) {
  const long long b = o / x_size2, k = o % x_size2;
  const float* col = x + b * x_size1 * x_size2 + k;
  float acc0 = 0.f, acc1 = 0.f, acc2 = 0.f, acc3 = 0.f;
  long long r = 0;
  for (; r + 4 <= x_size1; r += 4) {
    acc0 += col[r * x_size2];
    acc1 += col[(r + 1) * x_size2];
    acc2 += col[(r + 2) * x_size2];
    acc3 += col[(r + 3) * x_size2];
  }
  for (; r < x_size1; ++r) acc0 += col[r * x_size2];
  y[o] = (acc0 + acc1) + (acc2 + acc3);
}
