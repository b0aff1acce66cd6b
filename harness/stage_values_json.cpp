#include "stage_values_json.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include <kbrl/error.h>

namespace kbrl {

using Json = nlohmann::json;

Json json_number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

double json_get_number(const Json& j, const char* field) {
  const Json& v = j.at(field);
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto& text = v.get_ref<const std::string&>();
    if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (text == "inf") return std::numeric_limits<double>::infinity();
    if (text == "-inf") return -std::numeric_limits<double>::infinity();
  }
  throw InputError(fmt::format("record field '{}' is not a number: {}", field, v.dump()));
}

namespace f = trial_field;

void to_json(Json& j, const TrialCheck& t) {
  j = {{f::trial, t.trial},
       {f::seed_id, t.seed_id},
       {f::passed, t.passed},
       {f::max_abs_error, json_number(t.max_abs_error)},
       {f::max_rel_error, json_number(t.max_rel_error)},
       {f::failure, t.failure}};
  if (t.f64_error) j[f::f64_error] = json_number(*t.f64_error);
  if (t.f64_reference_error) j[f::f64_reference_error] = json_number(*t.f64_reference_error);
}

void from_json(const Json& j, TrialCheck& t) {
  t.trial = j.at(f::trial).get<int>();
  t.seed_id = j.at(f::seed_id).get<std::string>();
  t.passed = j.at(f::passed).get<bool>();
  t.max_abs_error = json_get_number(j, f::max_abs_error);
  t.max_rel_error = json_get_number(j, f::max_rel_error);
  t.failure = j.at(f::failure).get<std::string>();
  if (j.contains(f::f64_error)) t.f64_error = json_get_number(j, f::f64_error);
  if (j.contains(f::f64_reference_error)) t.f64_reference_error = json_get_number(j, f::f64_reference_error);
}

}  // namespace kbrl
