#pragma once
// Byte strings in JSON. JSON text is UTF-8, and nlohmann::json throws when it dumps a string that is
// not; a candidate, its compile log or a request path may hold any bytes. These helpers make every
// string valid UTF-8 (each byte of an invalid sequence becomes U+FFFD) and keep the exact bytes
// beside it, base64-encoded, so that reading the document back gives the original bytes:
//   {"source": "a\uFFFDb", "source_base64": "Yf9i"}
// A string that is valid UTF-8 is written as is, with no _base64 field: documents of valid text
// are unchanged. In an array of strings, the exact bytes go to a parallel array beside it:
//   {"flags": ["ok", "\uFFFD"], "flags_base64": [null, "/w=="]}
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <kbrl/utf8.h>  // is_valid_utf8, valid_utf8

namespace kbrl {

/// The suffix of the member that keeps a string's exact bytes ("source" -> "source_base64").
inline constexpr std::string_view kExactBytesSuffix = "_base64";

/// Makes every string in `doc` (object members and array elements, at any depth) valid UTF-8,
/// adding the <name>_base64 member beside each one that was not. After it, doc.dump() never throws.
void keep_exact_bytes(nlohmann::json& doc);

/// The inverse of keep_exact_bytes: each <name>_base64 member beside a <name> gives <name> its exact
/// bytes back and is removed. Throws InputError for a malformed base64 text.
void restore_exact_bytes(nlohmann::json& doc);

/// `doc` as compact JSON text; strings that are not UTF-8 are written with U+FFFD (never throws).
std::string dump_lossy(const nlohmann::json& doc, int indent = -1);

}  // namespace kbrl
