#include "json_text.h"

#include <cstdint>
#include <vector>

#include <kbrl/base64.h>

namespace kbrl {
namespace {

using Json = nlohmann::json;

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
