#include "endpoint_policy.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "endpoint_wire.h"

namespace kbrl {
namespace {

using nlohmann::json;
namespace wire = endpoint_wire;

using wire::base_url;
using wire::redact;

// The response log: JSONL lines {"key", "endpoint", "response"}, appended and flushed one at a time.
// A torn final line (a killed run) is ignored and the next append starts on a fresh line.
class ResponseLog {
 public:
  explicit ResponseLog(const std::filesystem::path& path) : path_(path) {
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
    std::ifstream in(path, std::ios::binary);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t begin = 0;
    while (begin < content.size()) {
      const size_t end = content.find('\n', begin);
      if (end == std::string::npos) {
        torn_ = true;
        break;
      }
      const json line = json::parse(content.begin() + begin, content.begin() + end, nullptr, false);
      if (line.is_object() && line.contains("key") && line["key"].is_string() && line.contains("response"))
        entries_[line["key"].get<std::string>()] = line["response"].dump();
      begin = end + 1;
    }
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw InputError(fmt::format("cannot open the response log {}: {}", path.string(), std::strerror(errno)));
  }
  ~ResponseLog() {
    if (fd_ >= 0) ::close(fd_);
  }
  ResponseLog(const ResponseLog&) = delete;
  ResponseLog& operator=(const ResponseLog&) = delete;

  std::optional<json> find(const std::string& key) const {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    return json::parse(it->second);
  }

  void append(const std::string& key, std::string_view endpoint, const json& response) {
    std::string line = json{{"key", key}, {"endpoint", endpoint}, {"response", response}}.dump() + "\n";
    std::lock_guard lock(mutex_);
    if (entries_.contains(key)) return;
    if (torn_) line.insert(line.begin(), '\n');
    size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw Error(fmt::format("cannot append to the response log {}: {}", path_.string(), std::strerror(errno)));
      done += static_cast<size_t>(n);
    }
    ::fdatasync(fd_);
    torn_ = false;
    entries_[key] = response.dump();
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  bool torn_ = false;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::string> entries_;  // key -> response JSON
};

// llama.cpp reports every forced token, except one that ends inside a UTF-8 character, and then
// the end-of-sequence token: `reported` must be `forced` with gaps, plus at most one token.
bool follows(const std::vector<int>& forced, const std::vector<int>& reported) {
  size_t j = 0, extra = 0;
  for (int t : reported) {
    while (j < forced.size() && forced[j] != t) ++j;
    if (j < forced.size()) ++j;
    else if (++extra > 1) return false;
  }
  return true;
}

}  // namespace

struct EndpointPolicy::Impl {
  std::string base;   // the server's root, as requests use it
  std::string shown;  // the same without credentials: messages and log keys
  HttpClient http;
  std::vector<std::string> headers;  // the Authorization header when there is a key
  std::unique_ptr<ResponseLog> log;
  std::optional<ServerKind> kind;

  explicit Impl(const EndpointOptions& o) : base(base_url(o.url)), shown(redact(base)), http(o.http) {}

  struct Fetched {
    json body;
    std::string key;
    bool from_log = false;
  };

  // POSTs a JSON body, or answers it from the response log. Throws the errors endpoint_policy.h
  // promises; the caller validates the body, then remember()s it.
  Fetched post(const std::string& path, const json& body, const std::string& model) {
    const std::string payload = body.dump();
    Fetched f;
    f.key = wire::stable_hash(shown + path + "\n" + model + "\n" + payload);
    if (log) {
      if (auto hit = log->find(f.key)) {
        f.body = std::move(*hit);
        f.from_log = true;
        return f;
      }
    }
    const std::string url = shown + path;
    HttpResponse r;
    try {
      r = http.post_json(base + path, payload, headers);
    } catch (const HttpError& e) {
      throw HttpError(fmt::format("{}; start the server or fix --policy endpoint:URL", e.what()));
    }
    if (r.status < 200 || r.status > 299) wire::throw_status(r, url, model);
    f.body = wire::parse_body(r, url);
    if (f.body.is_object() && f.body.contains("error") && !f.body.contains("choices") && !f.body.contains("tokens"))
      throw Error(fmt::format("the server at {} answered HTTP {} with an error: \"{}\"", url, r.status,
                              wire::server_message(r.body)));
    return f;
  }

  void remember(const Fetched& f, const std::string& path) {
    if (log && !f.from_log) log->append(f.key, path, f.body);
  }

  ServerKind resolve(ServerKind configured) {
    if (kind) return *kind;
    if (configured != ServerKind::auto_detect) return *(kind = configured);
    const std::string key = wire::stable_hash(shown + "\nserver-kind");
    if (log) {
      if (auto hit = log->find(key); hit && hit->is_object() && hit->value("server_kind", "") == "llamacpp")
        return *(kind = ServerKind::llamacpp);
      else if (hit)
        return *(kind = ServerKind::openai);
    }
    HttpResponse r;
    try {
      r = http.get(base + "/props", headers);
    } catch (const HttpError& e) {
      throw HttpError(fmt::format("{}; start the server or fix --policy endpoint:URL", e.what()));
    }
    // llama.cpp's GET /props describes its slots and defaults; vLLM and SGLang have no /props.
    const json props = json::parse(r.body, nullptr, false);
    const bool llama = r.status == 200 && props.is_object() &&
                       (props.contains("default_generation_settings") || props.contains("total_slots"));
    kind = llama ? ServerKind::llamacpp : ServerKind::openai;
    if (log) log->append(key, "/props", json{{"server_kind", to_string(*kind)}});
    return *kind;
  }
};

EndpointPolicy::EndpointPolicy(EndpointOptions options) : options_(std::move(options)) {
  KBRL_CHECK_INPUT(options_.url.starts_with("http://") || options_.url.starts_with("https://"),
                   "endpoint policy: the URL '{}' must start with http:// or https://", redact(options_.url));
  KBRL_CHECK_INPUT(options_.max_tokens >= 1, "endpoint policy: max_tokens must be >= 1, got {}", options_.max_tokens);
  KBRL_CHECK_INPUT(options_.top_p > 0 && options_.top_p <= 1, "endpoint policy: top_p must be in (0, 1], got {}",
                   options_.top_p);
  impl_ = std::make_unique<Impl>(options_);
  impl_->headers = wire::auth_headers(options_);
  if (!options_.response_log.empty()) impl_->log = std::make_unique<ResponseLog>(options_.response_log);
}

EndpointPolicy::~EndpointPolicy() = default;

std::string EndpointPolicy::name() const {
  if (!options_.model.empty()) return "endpoint:" + options_.model;
  const std::string& s = impl_->shown;
  const size_t start = s.find("://") + 3;
  return "endpoint:" + s.substr(start, s.find('/', start) - start);
}

ServerKind EndpointPolicy::server_kind() { return impl_->resolve(options_.server); }

std::vector<Sample> EndpointPolicy::sample(const TaskSpec& task, int n, double temperature, uint64_t seed) {
  KBRL_CHECK_INPUT(n >= 0, "sample count must be >= 0, got {}", n);
  KBRL_CHECK_INPUT(std::isfinite(temperature) && temperature >= 0, "temperature must be >= 0, got {}", temperature);
  if (n == 0) return {};
  const Prompt prompt = build_prompt(task, options_.prompt);
  const ServerKind kind = server_kind();
  const bool greedy = temperature == 0;
  const size_t requests = greedy ? 1 : static_cast<size_t>(n);
  const std::string path(wire::generation_path(options_.api));
  std::vector<wire::Generation> generations(requests);
  for_each_request(requests, options_.http.max_concurrent, [&](size_t i) {
    wire::Generate g;
    g.temperature = temperature;
    g.top_p = options_.top_p;
    g.max_tokens = options_.max_tokens;
    g.seed = endpoint_sample_seed(seed, static_cast<int>(i));
    g.stop = options_.stop;
    const auto f = impl_->post(path, wire::generation_body(options_, kind, prompt, g), options_.model);
    generations[i] = wire::parse_generation(f.body, "POST " + impl_->shown + path);
    impl_->remember(f, path);
  });
  std::vector<Sample> samples(static_cast<size_t>(n));
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto& g = generations[greedy ? 0 : i];
    Sample& s = samples[i];
    s.task_id = task.id;
    s.kind = ActionKind::text;
    s.text = g.text;
    s.tokens = g.tokens;
    s.logprobs = g.logprobs;
    s.prompt_version = prompt.version;
    s.finish_reason = g.finish_reason;
  }
  return samples;
}

std::vector<std::vector<double>> EndpointPolicy::logprob(const TaskSpec& task,
                                                         const std::vector<std::vector<int>>& tokens,
                                                         double temperature) {
  throw InputError(fmt::format("the {} policy writes text, not knob tokens (task {}): score its answers with "
                               "score_text",
                               name(), task.id));
}

std::vector<std::vector<double>> EndpointPolicy::score_text(const TaskSpec& task,
                                                            const std::vector<std::string>& texts) {
  if (texts.empty()) return {};
  const Prompt prompt = build_prompt(task, options_.prompt);
  const ServerKind kind = server_kind();
  const std::string& model = options_.model;
  KBRL_CHECK_INPUT(!(kind == ServerKind::sglang && options_.api == EndpointApi::chat),
                   "score_text on SGLang reads prompt log-probs of /v1/completions with echo: use api=completions "
                   "in --policy endpoint:URL,...");
  std::vector<std::vector<double>> out(texts.size());
  for_each_request(texts.size(), options_.http.max_concurrent, [&](size_t i) {
    const std::string& text = texts[i];
    if (kind == ServerKind::llamacpp) {
      // Forced decoding: the text's tokens, a grammar admitting exactly them, greedy.
      const auto t = impl_->post("/tokenize", json{{"content", text}, {"add_special", false}, {"parse_special", false}},
                                 model);
      const auto ids = wire::parse_tokenize(t.body, "POST " + impl_->shown + "/tokenize");
      impl_->remember(t, "/tokenize");
      wire::Generate g;
      g.temperature = 0.0;
      g.max_tokens = static_cast<int>(ids.size()) + 1;  // and the end of the answer
      g.grammar = wire::forced_grammar(ids);
      const std::string path(wire::generation_path(options_.api));
      const auto f = impl_->post(path, wire::generation_body(options_, kind, prompt, g), model);
      const std::string where = "POST " + impl_->shown + path;
      auto gen = wire::parse_generation(f.body, where);
      if (!gen.tokens.empty() && !follows(ids, gen.tokens))
        throw Error(fmt::format("{}: forced decoding did not follow the text's {} tokens (the server ignored the "
                                "grammar?): reported {} tokens",
                                where, ids.size(), gen.tokens.size()));
      impl_->remember(f, path);
      out[i] = std::move(gen.logprobs);
    } else if (options_.api == EndpointApi::completions) {
      const auto f = impl_->post("/v1/completions", wire::echo_body(options_, prompt, text), model);
      out[i] = wire::parse_echo(f.body, prompt.text(), text, "POST " + impl_->shown + "/v1/completions");
      impl_->remember(f, "/v1/completions");
    } else {
      // vLLM chat: the answer's position from /tokenize, its log-probs from prompt_logprobs.
      const auto t0 = impl_->post("/tokenize", wire::chat_tokenize_body(options_, prompt, nullptr), model);
      const auto t1 = impl_->post("/tokenize", wire::chat_tokenize_body(options_, prompt, &text), model);
      const std::string where = "POST " + impl_->shown + "/tokenize";
      const auto head = wire::parse_tokenize(t0.body, where);
      const auto full = wire::parse_tokenize(t1.body, where);
      if (full.size() < head.size() || !std::equal(head.begin(), head.end(), full.begin()))
        throw Error(fmt::format("{}: the conversation with the answer does not start with the prompt's tokens; "
                                "score with api=completions",
                                where));
      impl_->remember(t0, "/tokenize");
      impl_->remember(t1, "/tokenize");
      const std::vector<int> answer(full.begin() + static_cast<ptrdiff_t>(head.size()), full.end());
      const auto f = impl_->post("/v1/chat/completions", wire::chat_score_body(options_, prompt, text), model);
      out[i] = wire::parse_prompt_logprobs(f.body, head.size(), answer, "POST " + impl_->shown + "/v1/chat/completions");
      impl_->remember(f, "/v1/chat/completions");
    }
  });
  return out;
}

}  // namespace kbrl
