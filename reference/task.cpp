#include "task.h"

#include <numeric>

#include <kbrl/error.h>

namespace kbrl {

std::string_view to_string(DType dtype) { return enum_name(dtype); }
std::string_view to_string(Scale scale) { return enum_name(scale); }
std::string_view to_string(Family family) { return enum_name(family); }
std::string_view to_string(InputSet set) { return enum_name(set); }
Scale parse_scale(std::string_view text) { return parse_enum<Scale>(text); }
InputSet parse_input_set(std::string_view text) { return parse_enum<InputSet>(text); }
Family parse_family(std::string_view text) { return parse_enum<Family>(text); }

int64_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::i64: return 8;
    case DType::b8: return 1;
  }
  return 0;
}

int64_t TensorSpec::numel() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

std::string format_shape(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

}  // namespace kbrl
