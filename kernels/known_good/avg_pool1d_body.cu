// Known-good: task 44 (AvgPool1d kernel 8, stride 1, padding 4, count_include_pad) in the scaffold
// form: x:[N,C,L] -> y:[N,C,L+1]. One thread per output (the default launch): the in-range window
// elements are summed in order and divided by 8 (padding counts as zeros).
// kbrl: scaffold
KBRL_GRID_STRIDE_LOOP(i, y_numel) {
  const long long row = i / y_size2;
  const long long o = i % y_size2;
  const float* in = x + row * x_size2;
  const long long start = o - 4 < 0 ? 0 : o - 4;
  const long long end = o + 4 < x_size2 ? o + 4 : x_size2;
  float sum = 0.f;
  for (long long t = start; t < end; ++t) sum += in[t];
  y[i] = sum / 8.f;
}
