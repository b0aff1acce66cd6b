#include "json_text.h"

#include <cstdint>
#include <vector>

#include <harness/worker/gpu_protocol.h>  // base64_encode, base64_decode

namespace kbrl {
namespace {

using Json = nlohmann::json;

/// The length of the well-formed UTF-8 sequence at text[i] (Unicode 15, table 3-7), 0 when none.
size_t sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) -> unsigned { return i + k < text.size() ? static_cast<uint8_t>(text[i + k]) : 0x100u; };
  const unsigned b0 = byte(0);
  if (b0 < 0x80) return 1;
  const auto tail = [&](size_t k) { return byte(k) >= 0x80 && byte(k) <= 0xBF; };
  unsigned lo = 0x80, hi = 0xBF;  // the range of the second byte
  size_t n = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (!tail(k)) return 0;
  return n;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

std::string base64_member(const std::string& name) { return name + std::string(kExactBytesSuffix); }

/// Makes a string valid in place; returns its exact bytes when they had to change, else null.
Json keep_string(Json& value) {
  std::string& text = value.get_ref<std::string&>();
  if (is_valid_utf8(text)) return nullptr;
  Json exact = base64_encode(text);
  text = valid_utf8(text);
  return exact;
}

/// The exact bytes of an array's strings (null where a string is valid); null when all are valid.
Json keep_array(Json& array) {
  Json exact = Json::array();
  bool any = false;
  for (Json& element : array) {
    if (element.is_string()) {
      exact.push_back(keep_string(element));
      any = any || !exact.back().is_null();
    } else {
      keep_exact_bytes(element);
      exact.push_back(nullptr);
    }
  }
  return any ? exact : Json(nullptr);
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = sequence_length(text, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

void keep_exact_bytes(Json& doc) {
  if (doc.is_array()) {
    keep_array(doc);  // a top-level array's exact bytes have no member to go to
    return;
  }
  if (!doc.is_object()) return;
  std::vector<std::string> renamed;  // member names that are not UTF-8 themselves (kept lossy)
  for (auto& [name, value] : doc.items())
    if (!is_valid_utf8(name)) renamed.push_back(name);
  for (const std::string& name : renamed) {
    Json value = std::move(doc[name]);
    doc.erase(name);
    doc[valid_utf8(name)] = std::move(value);
  }
  Json exact = Json::object();
  for (auto& [name, value] : doc.items()) {
    Json bytes;
    if (value.is_string()) bytes = keep_string(value);
    else if (value.is_array()) bytes = keep_array(value);
    else keep_exact_bytes(value);
    if (!bytes.is_null()) exact[base64_member(name)] = std::move(bytes);
  }
  for (auto& [name, bytes] : exact.items()) doc[name] = std::move(bytes);
}

void restore_exact_bytes(Json& doc) {
  if (doc.is_array()) {
    for (Json& element : doc) restore_exact_bytes(element);
    return;
  }
  if (!doc.is_object()) return;
  std::vector<std::string> restored;
  for (auto& [name, value] : doc.items()) {
    restore_exact_bytes(value);
    const auto exact = doc.find(base64_member(name));
    if (exact == doc.end()) continue;
    if (value.is_string() && exact->is_string()) {
      value = base64_decode(exact->get<std::string>());
    } else if (value.is_array() && exact->is_array()) {
      for (size_t i = 0; i < value.size() && i < exact->size(); ++i)
        if ((*exact)[i].is_string()) value[i] = base64_decode((*exact)[i].get<std::string>());
    } else {
      continue;
    }
    restored.push_back(base64_member(name));
  }
  for (const std::string& name : restored) doc.erase(name);
}

std::string dump_lossy(const Json& doc, int indent) { return doc.dump(indent, ' ', false, Json::error_handler_t::replace); }

}  // namespace kbrl
