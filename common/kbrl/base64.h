#pragma once
// Base64 (RFC 4648, with padding): bytes in JSON, e.g. a cubin sent to a GPU worker or the exact
// bytes of a string that is not UTF-8 (harness/record/json_text.h).
#include <string>
#include <string_view>

namespace kbrl {

std::string base64_encode(std::string_view bytes);
std::string base64_decode(std::string_view text);  // throws InputError on a malformed text

}  // namespace kbrl
