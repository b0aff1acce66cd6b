#pragma once
// The JSON API of `kbrl serve` (docs/serve.md): parsing an evaluate request into items, checked
// field by field, and the error every endpoint answers with. No networking here.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <harness/evaluate_actions.h>
#include <harness/evaluator.h>
#include <harness/record/eval_record.h>
#include <kernels/candidate.h>

namespace kbrl::serving {

/// An HTTP error answer: status, a stable code, a message, the request field it is about ("" for
/// none), whether a client should retry, and Retry-After seconds (0: no header).
struct ApiError {
  int status = 500;
  std::string code;
  std::string message;
  std::string field;
  bool retryable = false;
  int retry_after_seconds = 0;
};

ApiError bad_request(std::string message, std::string field = {});
ApiError too_large(std::string message, std::string field = {});  // 413: the body as a whole
ApiError field_too_large(std::string message, std::string field);  // 400 too_large: one field over its limit
ApiError not_found(std::string message);

/// {"error": {"code", "message", "field", "retryable"}} (field only when there is one); message
/// and field made valid UTF-8 (json_text.h).
nlohmann::json error_json(const ApiError& error);

/// Thrown by the parsers below and by the scheduler; the server turns it into an answer.
class ApiException : public std::exception {
 public:
  explicit ApiException(ApiError error) : error_(std::move(error)) {}
  const ApiError& error() const { return error_; }
  const char* what() const noexcept override { return error_.message.c_str(); }

 private:
  ApiError error_;
};

struct ServeLimits {
  size_t max_body_bytes = 32u << 20;
  size_t max_items = 1024;
  size_t max_text_bytes = 256u << 10;  // a text or candidate item (kernels/action.h's limit)
};

/// One item of an evaluate request, realized: the candidate (or why there is none) and the
/// settings it is evaluated under (the server's, with the item's overrides).
struct PreparedItem {
  int task_id = 0;
  EvalSettings settings;
  std::string settings_id;  // equal for items one Evaluator can serve (settings.key_json())
  /// The item's action realized: its candidate, or why it has none (a format_error or
  /// unsupported_format record); its raw action is what the record keeps (the text, the candidate
  /// file, "k=v,...").
  PreparedAction prepared;
  /// Evaluator::keyed's observation: a candidate evaluated under another one is evaluated (and
  /// timed) again; "" for none.
  std::string observation;
  /// The item could not be read (an unknown task, a wrong type, an unknown field, ...): it is never
  /// evaluated, and its place in the answer holds this error.
  std::optional<ApiError> error;
};

/// One item's answer: its record, or why the item could not be read.
using ItemAnswer = std::variant<EvalRecord, ApiError>;

/// Parses and realizes `POST /v1/evaluate`'s body. Throws ApiException: 400 bad_request for
/// malformed JSON or a body that is not {"items": [...]}, 400 too_large for too many items, 413
/// too_large for a body over its limit. An item that cannot be read (a wrong type, an unknown field,
/// a bad value, its text over its limit: the error names the field, e.g. "items[3].mode") has
/// `error` and the others are evaluated; when no item can be read, the first item's error is
/// thrown. A text, candidate or configuration that yields no candidate is not an error: its item
/// has `format_error`.
std::vector<PreparedItem> parse_evaluate_request(std::string_view body, const EvalSettings& defaults,
                                                 const ServeLimits& limits = {});

/// `GET /v1/tasks`: every task with its name, family and the splits it belongs to.
nlohmann::json tasks_json();

/// OpenRLHF's remote reward model request (POST /v1/openrlhf/reward, what its --remote_rm_url
/// sends): {"query": [prompt + response, ...], "prompts": [prompt, ...] (optional), "labels":
/// [task id, ...]}: one text item per query, its response the query without its prompt (the whole
/// query when it does not start with it), its task the label (a number, or its text). Errors as
/// parse_evaluate_request's, naming query[i] or labels[i].
std::vector<PreparedItem> parse_openrlhf_request(std::string_view body, const EvalSettings& defaults,
                                                 const ServeLimits& limits = {});
/// The answer OpenRLHF reads: {"rewards": [each record's reward, 0.0 when not finite or the item had
/// an error], "outcomes": [kbrl's outcome per query, or "error"]}.
nlohmann::json openrlhf_rewards_json(const std::vector<ItemAnswer>& answers);

/// `?format=kbrl` (the default: "records", kbrl's EvalRecords) or `?format=kernelbench` ("results",
/// KernelBench's result fields: harness/record/kernelbench_result.h). Throws 400 for another value.
bool kernelbench_format(const std::map<std::string, std::string>& params);
/// The answers of an evaluate request or a done job, under "records" or, in KernelBench's format,
/// "results": per item its record (or KernelBench's fields), or {"error": {...}} for an item that
/// could not be read.
nlohmann::json records_json(const std::vector<ItemAnswer>& answers, bool kernelbench);
/// One answer as JSON: the record (KernelBench's fields when asked) or {"error": {...}}.
nlohmann::json answer_json(const ItemAnswer& answer, bool kernelbench = false);
/// `GET /v1/tasks/{id}/prompt?style=`: throws ApiException 404 for an unknown task, 400 for a bad
/// style.
nlohmann::json prompt_json(int task_id, std::string_view style, Scale scale);

}  // namespace kbrl::serving
