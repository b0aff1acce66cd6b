// What each reference computes, in our own words (task_semantics.h). The convolutions (50, 54-87)
// are written by task_semantics_conv.cpp from a table of their module arguments; every other task
// has its sentence here. Written from reference/tasks_*.cpp; a tensor is named as its TaskSpec
// names it, and x:[B,R,K]-style letters name the dims of the shapes the prompt lists.
#include "task_semantics.h"

#include <utility>

#include <kbrl/error.h>

namespace kbrl {
namespace detail {
/// The sentence of a convolution task, or an empty view for a task that is not one.
std::string_view conv_semantics(int task_id);
}  // namespace detail

namespace {

constexpr std::pair<int, std::string_view> kSemantics[] = {
    // gemm (matrices row-major; A, B inputs, C output) and attention
    {1, "C = A @ B: C[m,n] = sum_k A[m,k] * B[k,n] for square A:[M,K], B:[K,N]."},
    {2, "C = A @ B: C[m,n] = sum_k A[m,k] * B[k,n] for A:[M,K], B:[K,N]."},
    {3, "Batched matmul: C[b,m,n] = sum_k A[b,m,k] * B[b,k,n] for each batch index b."},
    {4, "Matrix-vector product: C[m,0] = sum_k A[m,k] * B[k,0] for A:[M,K] and the column B:[K,1]."},
    {6, "C = A @ B with a very large K: C[m,n] = sum_k A[m,k] * B[k,n] for A:[M,K], B:[K,N]."},
    {7, "C = A @ B with a small K: C[m,n] = sum_k A[m,k] * B[k,n] for A:[M,K], B:[K,N]."},
    {8, "C = A @ B with sizes that are not multiples of any tile: C[m,n] = sum_k A[m,k] * B[k,n] "
        "for A:[M,K], B:[K,N]."},
    {9, "C = A @ B for tall-skinny A:[M,K] and B:[K,N] with a small K: C[m,n] = sum_k A[m,k] * "
        "B[k,n]."},
    {10, "3-D tensor times matrix: C[n,m,l] = sum_k A[n,m,k] * B[k,l]."},
    {11, "4-D tensor times matrix (einsum bijl,lk->bijk): C[b,i,j,k] = sum_l A[b,i,j,l] * B[l,k]."},
    {12, "diag(A) @ B as row scaling: C[i,j] = A[i] * B[i,j] for the vector A:[N] and B:[N,N]."},
    {13, "C = A @ B where A and B are symmetric (A[i,j] = A[j,i]): C[m,n] = sum_k A[m,k] * B[k,n]."},
    {14, "C = triu(A @ B) for upper-triangular A and B (zero below the diagonal): C[i,j] = sum_{k=i..j} "
         "A[i,k] * B[k,j] for j >= i, and C[i,j] = 0 for j < i."},
    {15, "C = tril(A @ B) for lower-triangular A and B (zero above the diagonal): C[i,j] = sum_{k=j..i} "
         "A[i,k] * B[k,j] for j <= i, and C[i,j] = 0 for j > i."},
    {16, "C = A^T @ B with A stored transposed as [K,M]: C[m,n] = sum_k A[k,m] * B[k,n]."},
    {17, "C = A @ B^T with B stored transposed as [N,K]: C[m,n] = sum_k A[m,k] * B[n,k]."},
    {18, "C = A^T @ B^T with A stored as [K,M] and B as [N,K]: C[m,n] = sum_k A[k,m] * B[n,k]."},
    {97, "Scaled dot-product attention per (b,h), no mask, no dropout: S[i,j] = sum_d Q[b,h,i,d] * "
         "K[b,h,j,d] / sqrt(D) with D = Q's last dim, P = softmax of S over j, out[b,h,i,d] = sum_j "
         "P[i,j] * V[b,h,j,d]."},
    // elementwise (y = f(x) for every element unless said otherwise)
    {5, "C = A * s elementwise, s being the scalar argument (a float)."},
    {19, "ReLU: y = max(x, 0) elementwise (NaN stays NaN)."},
    {20, "LeakyReLU, negative slope 0.01: y = x where x > 0, else 0.01 * x, elementwise."},
    {21, "Sigmoid: y = 1 / (1 + exp(-x)), elementwise."},
    {22, "y = tanh(x), elementwise."},
    {25, "Swish: y = x * sigmoid(x) = x / (1 + exp(-x)), elementwise."},
    {26, "GELU, exact erf form: y = 0.5 * x * (1 + erf(x / sqrt(2))), elementwise."},
    {27, "SELU: y = 1.0507009873554805 * x where x > 0, else 1.0507009873554805 * "
         "1.6732632423543772 * (exp(x) - 1), elementwise."},
    {28, "HardSigmoid: y = min(max(x / 6 + 0.5, 0), 1), elementwise."},
    {29, "Softplus (beta 1, threshold 20): y = log1p(exp(x)) = log(1 + exp(x)), except y = x where x > 20, "
         "elementwise."},
    {30, "Softsign: y = x / (1 + |x|), elementwise."},
    {31, "ELU, alpha 1: y = x where x > 0, else exp(x) - 1, elementwise."},
    {32, "HardTanh: y = min(max(x, -1), 1), elementwise."},
    {88, "MinGPT's tanh GELU: y = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), "
         "elementwise."},
    // softmax family: rows of x:[B,D], dim 1
    {23, "Softmax over dim 1 of x:[B,D]: y[b,d] = exp(x[b,d] - m_b) / sum_j exp(x[b,j] - m_b), "
         "m_b = max_j x[b,j]."},
    {24, "LogSoftmax over dim 1 of x:[B,D]: y[b,d] = x[b,d] - m_b - log(sum_j exp(x[b,j] - m_b)), "
         "m_b = max_j x[b,j]."},
    // norms (variances are biased: divided by the count, not count - 1)
    {33, "BatchNorm2d in training mode on x:[N,C,H,W]: per channel c, mean_c and biased var_c over "
         "(n,h,w); y = (x - mean_c) / sqrt(var_c + 1e-5) * weight[c] + bias[c]."},
    {34, "InstanceNorm2d, no affine, eps 1e-5, on x:[N,C,H,W]: per (n,c), mean and biased var over "
         "(h,w); y = (x - mean) / sqrt(var + 1e-5)."},
    {35, "GroupNorm, 8 groups of C/8 consecutive channels, eps 1e-5, on x:[N,C,H,W]: per (n,group), "
         "mean and biased var over the group's (c,h,w); y = (x - mean) / sqrt(var + 1e-5) * "
         "weight[c] + bias[c]."},
    {36, "RMS norm over the channels (dim 1) of x:[N,C,H,W]: y[n,c,h,w] = x[n,c,h,w] / "
         "sqrt(mean_c' x[n,c',h,w]^2 + 1e-5)."},
    {37, "Frobenius normalization: y = x / sqrt(sum of x^2 over ALL elements of x), no eps."},
    {38, "L1 normalization over dim 1 of x:[B,D]: y[b,d] = x[b,d] / (mean_j |x[b,j]|), a mean (not a "
         "sum), no eps."},
    {39, "L2 normalization over dim 1 of x:[B,D]: y[b,d] = x[b,d] / sqrt(sum_j x[b,j]^2), no eps."},
    {40, "LayerNorm over the last three dims of x:[N,C,H,W], eps 1e-5: per n, mean and biased var "
         "over (c,h,w); y = (x - mean) / sqrt(var + 1e-5) * weight[c,h,w] + bias[c,h,w]."},
    // pooling (floor mode; max pooling ignores padded positions and propagates NaN)
    {41, "MaxPool1d kernel 8, stride 1, padding 4, dilation 3 on x:[N,C,L]: y[n,c,o] = max over "
         "k = 0..7 of x[n,c,o - 4 + 3k], positions outside 0..L-1 skipped."},
    {42, "MaxPool2d kernel 4, stride 1, padding 1 on x:[N,C,H,W]: y[n,c,i,j] = max over a,b = 0..3 "
         "of x[n,c,i - 1 + a, j - 1 + b], out-of-range positions skipped."},
    {43, "MaxPool3d kernel 3, stride 2, padding 1, dilation 3 on x:[N,C,D,H,W]: y[n,c,d,h,w] = max "
         "over a,b,e = 0..2 of x[n,c,2d - 1 + 3a, 2h - 1 + 3b, 2w - 1 + 3e], out-of-range positions "
         "skipped."},
    {44, "AvgPool1d kernel 8, stride 1, padding 4, count_include_pad on x:[N,C,L]: y[n,c,o] = "
         "(sum over k = 0..7 of x[n,c,o - 4 + k], out-of-range terms 0) / 8."},
    {45, "AvgPool2d kernel 11, stride 11, no padding on x:[N,C,H,W]: y[n,c,i,j] = mean of the 11x11 "
         "block x[n,c,11i..11i+10, 11j..11j+10] (leftover rows and columns unused)."},
    {46, "AvgPool3d kernel 3, stride 2, padding 1, count_include_pad on x:[N,C,D,H,W]: y[n,c,d,h,w] "
         "= (sum over a,b,e = 0..2 of x[n,c,2d - 1 + a, 2h - 1 + b, 2w - 1 + e], out-of-range terms 0) "
         "/ 27."},
    // reductions over dim 1 of x:[B,R,K]
    {47, "Sum over dim 1 of x:[B,R,K], keepdim: y[b,0,k] = sum_r x[b,r,k]."},
    {48, "Mean over dim 1 of x:[B,R,K]: y[b,k] = (sum_r x[b,r,k]) / R."},
    {49, "Max over dim 1 of x:[B,R,K]: y[b,k] = max_r x[b,r,k]."},
    {53, "Min over dim 1 of x:[B,R,K]: y[b,k] = min_r x[b,r,k]."},
    {51, "Argmax over dim 1 of x:[B,R,K]: y[b,k] = the smallest r with x[b,r,k] = max_r x[b,r,k], "
         "as int64 (first index on ties)."},
    {52, "Argmin over dim 1 of x:[B,R,K]: y[b,k] = the smallest r with x[b,r,k] = min_r x[b,r,k], "
         "as int64 (first index on ties)."},
    // scans along dim 1 of x:[B,L]
    {89, "Inclusive cumulative sum along dim 1 of x:[B,L]: y[b,j] = sum_{k<=j} x[b,k]."},
    {90, "Inclusive cumulative product along dim 1 of x:[B,L]: y[b,j] = prod_{k<=j} x[b,k]."},
    {91, "Reverse cumulative sum along dim 1 of x:[B,L]: y[b,j] = sum_{k>=j} x[b,k]."},
    {92, "Exclusive cumulative sum along dim 1 of x:[B,L]: y[b,0] = 0 and y[b,j] = sum_{k<j} x[b,k]."},
    {93, "Masked cumulative sum along dim 1: y[b,j] = sum_{k<=j} (mask[b,k] ? x[b,k] : 0), mask "
         "being bool."},
    // losses: a 0-d output
    {94, "MSE, mean reduction: loss = mean over all elements of (predictions - targets)^2."},
    {95, "Cross-entropy, mean reduction, predictions:[B,C] logits, targets:[B] int64 classes: loss = "
         "mean_b (log(sum_c exp(predictions[b,c])) - predictions[b,targets[b]])."},
    {96, "Smooth L1 (Huber, beta 1), mean reduction: with d = predictions - targets, loss = mean of "
         "(0.5 * d^2 where |d| < 1, else |d| - 0.5)."},
    {98, "KL divergence, batchmean: loss = (sum over all b,j of targets[b,j] * (log(targets[b,j]) - "
         "log(predictions[b,j]))) / B, B = predictions' dim 0."},
    {99, "Triplet margin loss, margin 1, p 2, eps 1e-6, mean reduction over rows i: loss = mean_i "
         "max(dp_i - dn_i + 1, 0), dp_i = ||anchor[i,:] - positive[i,:] + 1e-6||_2, dn_i likewise "
         "with negative."},
    {100, "Hinge loss with targets broadcast along the LAST dim: loss = mean over all i,j of "
          "max(1 - predictions[i,j] * targets[j], 0)."},
};

}  // namespace

std::string_view task_semantics(int task_id) {
  for (const auto& [id, text] : kSemantics)
    if (id == task_id) return text;
  const std::string_view conv = detail::conv_semantics(task_id);
  if (!conv.empty()) return conv;
  throw InputError(fmt::format("unknown task id {}: no semantics (level-1 task ids are 1..100)",
                               task_id));
}

}  // namespace kbrl
