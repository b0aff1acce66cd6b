// The semantics of the convolution tasks (50, 54-87; task_semantics.h), written from a table of
// the arguments each reference module is built with (reference/tasks_conv.cpp, quirks included):
// a sentence naming the module and its arguments, then the sum it computes over x, weight (and
// bias) with the exact index arithmetic.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kbrl::detail {
namespace {

using Ints = std::vector<int>;

struct ConvRow {
  int id;
  bool transposed;
  Ints kernel;  // one entry per spatial dim
  Ints stride{}, padding{}, dilation{}, output_padding{};  // one entry: every dim; empty: default
  int groups = 1;
  bool bias = false;
  const char* note = "";  // a sentence of its own, after the formula
};

// clang-format off
const std::vector<ConvRow>& conv_rows() {
  static const std::vector<ConvRow> rows = {
    {50, false, {11, 11}, {4}, {2}, {}, {}, 1, true, "AlexNet's first layer."},
    {54, false, {3, 3, 3}},
    {55, false, {3, 3}},
    {56, false, {5, 7}},
    {57, true, {3, 3}},
    {58, true, {3, 5, 7}},
    {59, false, {3, 3, 1}, {}, {}, {}, {}, 1, false, "The kernel is 3x3x1 (its last dim is 1)."},
    {60, false, {3, 5, 7}},
    {61, true, {3, 3, 3}},
    {62, false, {5, 9}},
    {63, false, {3, 3}},
    {64, true, {3}},
    {65, true, {3, 7}},
    {66, false, {3, 5, 7}},
    {67, false, {3}},
    {68, true, {3, 5, 5}},
    {69, true, {3, 5}},
    {70, true, {3, 3, 3}},
    {71, true, {3, 3}},
    {72, true, {3, 5, 7}, {2}, {1, 2, 3}, {}, {1}, 4},
    {73, true, {3, 3, 3}, {2}, {1}, {}, {}, 1, false,
     "Despite the task's name the module has groups 1 and output_padding 0."},
    {74, true, {5}, {}, {}, {3}},
    {75, true, {3, 5}, {2, 3}, {1, 2}, {2, 1}, {}, 4},
    {76, false, {3}, {3}, {}, {4}},
    {77, true, {3, 3, 3}, {2}, {1}, {2}},
    {78, true, {3, 7}, {}, {1, 3}},
    {79, true, {3}, {2}, {1}, {2}},
    {80, false, {5, 9}, {}, {2, 4}, {2, 3}},
    {81, true, {3, 3}, {5}, {1}, {2}},
    {82, false, {3, 3}, {}, {}, {}, {}, -1},  // groups -1: depthwise (groups = channels)
    {83, false, {3, 1}, {}, {}, {}, {}, -1},
    {84, false, {3, 3}, {}, {}, {}, {}, -1},
    {85, false, {3, 7}, {}, {}, {}, {}, -1},
    {87, false, {1, 1}, {}, {}, {}, {}, 1, false, "A pointwise (1x1) convolution."},
  };
  return rows;
}
// clang-format on

const char* const kOut[3][3] = {{"l"}, {"h", "w"}, {"d", "h", "w"}};
const char* const kKer[3][3] = {{"k"}, {"kh", "kw"}, {"kd", "kh", "kw"}};
const char* const kIn[3][3] = {{"il"}, {"ih", "iw"}, {"id", "ih", "iw"}};

int at(const Ints& v, size_t i, int fallback) {
  if (v.empty()) return fallback;
  return v.size() == 1 ? v[0] : v[i];
}

std::string joined(const std::vector<std::string>& parts, std::string_view separator) {
  return fmt::format("{}", fmt::join(parts, separator));
}

/// "2", or "(1,2,3)" when the dims differ.
std::string per_dim(const Ints& v, size_t dims, int fallback) {
  Ints all;
  for (size_t i = 0; i < dims; ++i) all.push_back(at(v, i, fallback));
  bool same = true;
  for (int x : all) same = same && x == all[0];
  return same ? std::to_string(all[0]) : fmt::format("({})", fmt::join(all, ","));
}

/// s*o - p + d*k with the identities left out, e.g. "4*h-2+kh" or "w+3*kw".
std::string position(const std::string& o, int s, int p, int d, const std::string& k, int kernel) {
  std::string e = s == 1 ? o : fmt::format("{}*{}", s, o);
  if (p > 0) e += fmt::format("-{}", p);
  if (kernel > 1) e += d == 1 ? "+" + k : fmt::format("+{}*{}", d, k);
  return e;
}

std::string describe(const ConvRow& r) {
  const size_t n = r.kernel.size();
  const bool depthwise = r.groups < 0;
  bool any_padding = false;
  std::vector<std::string> kernel_index, out_index, bounds, in_index, where;
  for (size_t i = 0; i < n; ++i) {
    const int k = r.kernel[i], s = at(r.stride, i, 1), p = at(r.padding, i, 0),
              d = at(r.dilation, i, 1);
    any_padding = any_padding || p > 0;
    out_index.push_back(kOut[n - 1][i]);
    kernel_index.push_back(k > 1 ? kKer[n - 1][i] : "0");
    if (k > 1) bounds.push_back(fmt::format("{}<{}", kKer[n - 1][i], k));
    if (r.transposed) {
      in_index.push_back(kIn[n - 1][i]);
      where.push_back(fmt::format("{}={}", kOut[n - 1][i],
                                  position(kIn[n - 1][i], s, p, d, kKer[n - 1][i], k)));
    } else {
      in_index.push_back(position(kOut[n - 1][i], s, p, d, kKer[n - 1][i], k));
    }
  }
  std::vector<std::string> kernel_text;
  for (int k : r.kernel) kernel_text.push_back(std::to_string(k));
  std::string head = fmt::format("{}{}d, kernel {}, stride {}, padding {}, dilation {}",
                                 r.transposed ? "ConvTranspose" : "Conv", n,
                                 fmt::join(kernel_text, "x"), per_dim(r.stride, n, 1),
                                 per_dim(r.padding, n, 0), per_dim(r.dilation, n, 1));
  if (r.transposed) head += fmt::format(", output_padding {}", per_dim(r.output_padding, n, 0));
  head += depthwise ? ", depthwise (groups = channels)" : fmt::format(", groups {}", r.groups);
  head += r.bias ? ", with bias" : ", no bias";

  const std::string outs = joined(out_index, ","), ks = joined(kernel_index, ",");
  const std::string ins = joined(in_index, ","), over = joined(bounds, ", ");
  const std::string sum_over = over.empty() ? "" : ", " + over;
  std::string formula;
  if (depthwise) {
    formula = fmt::format("y[n,c,{}] = sum over {} of weight[c,0,{}] * x[n,c,{}]", outs, over, ks,
                          ins);
  } else if (!r.transposed) {
    formula = fmt::format("y[n,co,{}] = sum over ci{} of weight[co,ci,{}] * x[n,ci,{}]{}", outs,
                          sum_over, ks, ins, r.bias ? " + bias[co]" : "");
  } else if (r.groups == 1) {
    formula = fmt::format("y[n,co,{}] = sum over ci{} and every input position ({}) with {} of "
                          "x[n,ci,{}] * weight[ci,co,{}]",
                          outs, sum_over, ins, fmt::join(where, ", "), ins, ks);
  } else {
    formula = fmt::format("with G = {} groups, Co = C_out/G and Ci = C_in/G: y[n,co,{}] = sum over "
                          "ci in [Ci*(co/Co), Ci*(co/Co+1)){} and every input position ({}) with {} "
                          "of x[n,ci,{}] * weight[ci,co%Co,{}]",
                          r.groups, outs, sum_over, ins, fmt::join(where, ", "), ins, ks);
  }
  std::string text = head + ": " + formula;
  if (!r.transposed && any_padding) text += ", x being 0 outside its bounds";
  text += ".";
  if (*r.note) text += fmt::format(" {}", r.note);
  return text;
}

const std::map<int, std::string>& conv_texts() {
  static const std::map<int, std::string> texts = [] {
    std::map<int, std::string> out;
    for (const auto& r : conv_rows()) out[r.id] = describe(r);
    out[86] =
        "Depthwise-separable conv, no biases: z[n,c,h,w] = sum over kh<3,kw<3 of "
        "depthwise.weight[c,0,kh,kw] * x[n,c,h-1+kh,w-1+kw] (padding 1, x being 0 outside its "
        "bounds), then y[n,co,h,w] = sum over c of pointwise.weight[co,c,0,0] * z[n,c,h,w].";
    return out;
  }();
  return texts;
}

}  // namespace

std::string_view conv_semantics(int task_id) {
  const auto& texts = conv_texts();
  const auto it = texts.find(task_id);
  return it == texts.end() ? std::string_view{} : std::string_view{it->second};
}

}  // namespace kbrl::detail
