#include "outcome.h"

#include "error.h"

namespace kbrl {

std::string_view to_string(Outcome outcome) { return enum_name(outcome); }
Outcome parse_outcome(std::string_view text) { return parse_enum<Outcome>(text); }

}  // namespace kbrl
