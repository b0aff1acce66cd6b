#pragma once
// The JSON of a stage value (stage_values.h): a trial travels from the GPU worker in it, and the
// record (record/eval_record.h) keeps it as it came. JSON has no NaN or infinity: a non-finite number
// is written as the string "nan", "inf" or "-inf", and both forms are read.
#include <nlohmann/json.hpp>

#include "stage_values.h"

namespace kbrl {

/// The fields of a trial (a record's "trials" entries).
namespace trial_field {
inline constexpr const char* trial = "trial";
inline constexpr const char* seed_id = "seed_id";
inline constexpr const char* passed = "passed";
inline constexpr const char* max_abs_error = "max_abs_error";
inline constexpr const char* max_rel_error = "max_rel_error";
inline constexpr const char* failure = "failure";
inline constexpr const char* f64_error = "f64_error";
inline constexpr const char* f64_reference_error = "f64_reference_error";
}  // namespace trial_field

/// `value` as JSON: the number, or "nan", "inf", "-inf".
nlohmann::json json_number(double value);
/// j[field] as a number (either form); InputError naming the field when it is neither.
double json_get_number(const nlohmann::json& j, const char* field);

void to_json(nlohmann::json& j, const TrialCheck& trial);
void from_json(const nlohmann::json& j, TrialCheck& trial);

}  // namespace kbrl
