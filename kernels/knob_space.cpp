#include "knob_space.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

#include <kbrl/error.h>

namespace kbrl {
namespace {

constexpr std::array<CanonicalKnob, 15> kCanonical = {{
    {"block", "threads per block (x dimension)"},
    {"vec", "elements per vector load/store (float2, float4)"},
    {"items_per_thread", "vector items each thread handles per pass"},
    {"unroll", "unroll factor of the innermost loop"},
    {"tile_m", "rows of the output tile a block computes"},
    {"tile_n", "columns of the output tile a block computes"},
    {"tile_k", "depth of the reduction tile staged per step"},
    {"stages", "pipeline stages of the shared-memory staging (cp.async / TMA)"},
    {"variant", "algorithm variant (family-specific list)"},
    {"tensor_core", "use of tensor cores (none, wmma, mma, wgmma)"},
    {"precision", "arithmetic precision (fp32; reduced: tf32, fp16, bf16); unsafe below fp32"},
    {"fast_math", "fast-math approximations (--use_fast_math, __expf, ...); unsafe"},
    {"cache_hint", "load/store cache policy (none, ldg, streaming __ldcs/__stcs)"},
    {"tail", "handling of the elements past the last whole tile (safe, dropped: unsafe)"},
    {"grid", "grid policy (exact: one tile per block; waves: capped grid with a grid-stride loop)"},
}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

std::span<const CanonicalKnob> canonical_knobs() { return kCanonical; }

bool is_canonical_knob(std::string_view name) {
  return std::any_of(kCanonical.begin(), kCanonical.end(),
                     [&](const CanonicalKnob& k) { return k.name == name; });
}

int Knob::index_of(std::string_view value) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] == value) return static_cast<int>(i);
  return -1;
}

// ---- Config ----

Config::Config(std::initializer_list<std::pair<std::string, std::string>> entries) {
  for (const auto& [name, value] : entries) set(name, value);
}

bool Config::has(std::string_view name) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == name; });
}

const std::string& Config::at(std::string_view name) const {
  for (const auto& entry : entries_)
    if (entry.first == name) return entry.second;
  throw InputError(fmt::format("knob '{}' is not set in '{}'", name, str()));
}

int64_t Config::integer(std::string_view name) const {
  const std::string& value = at(name);
  int64_t out = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  KBRL_CHECK_INPUT(ec == std::errc() && end == value.data() + value.size() && !value.empty(),
                   "knob '{}' has value '{}', not an integer", name, value);
  return out;
}

void Config::set(std::string_view name, std::string_view value) {
  for (auto& entry : entries_) {
    if (entry.first == name) {
      entry.second = std::string(value);
      return;
    }
  }
  entries_.emplace_back(std::string(name), std::string(value));
}

std::string Config::str() const {
  std::string out;
  for (const auto& [name, value] : entries_) out += (out.empty() ? "" : ",") + name + "=" + value;
  return out;
}

Config Config::parse(std::string_view text) {
  Config config;
  if (trim(text).empty()) return config;
  size_t offset = 0;
  while (offset <= text.size()) {
    const size_t comma = std::min(text.find(',', offset), text.size());
    const std::string_view item = trim(text.substr(offset, comma - offset));
    const size_t eq = item.find('=');
    KBRL_CHECK_INPUT(eq != std::string_view::npos,
                     "knob setting '{}' has no '=' (expected name=value, e.g. block=256)", item);
    const std::string_view name = trim(item.substr(0, eq));
    const std::string_view value = trim(item.substr(eq + 1));
    KBRL_CHECK_INPUT(!name.empty() && !value.empty(), "knob setting '{}' needs a name and a value",
                     item);
    KBRL_CHECK_INPUT(!config.has(name), "knob '{}' is given twice", name);
    config.set(name, value);
    offset = comma + 1;
  }
  return config;
}

// ---- KnobSpace: building ----

KnobSpace& KnobSpace::add_knob(Knob knob) {
  KBRL_ASSERT(knob_index(knob.name) < 0, "duplicate knob {}", knob.name);
  KBRL_ASSERT(!knob.name.empty() && !knob.values.empty(), "knob '{}' needs values", knob.name);
  for (size_t i = 0; i < knob.values.size(); ++i) {
    KBRL_ASSERT(!knob.values[i].empty() && knob.index_of(knob.values[i]) == static_cast<int>(i),
                "knob {}: empty or duplicate value '{}'", knob.name, knob.values[i]);
    KBRL_ASSERT(knob.values[i].find_first_of(",= ") == std::string::npos,
                "knob {}: value '{}' holds ',', '=' or a space", knob.name, knob.values[i]);
  }
  knobs_.push_back(std::move(knob));
  checked_at_.emplace_back();
  return *this;
}

KnobSpace& KnobSpace::add_constraint(Constraint constraint) {
  KBRL_ASSERT(!constraint.knobs.empty() && constraint.allows, "constraint '{}' names no knob",
              constraint.description);
  int last = -1;
  for (const auto& name : constraint.knobs) {
    const int index = knob_index(name);
    KBRL_ASSERT(index >= 0, "constraint '{}' names unknown knob {}", constraint.description, name);
    last = std::max(last, index);
  }
  checked_at_.at(static_cast<size_t>(last)).push_back(constraints_.size());
  constraints_.push_back(std::move(constraint));
  return *this;
}

const Knob& KnobSpace::knob(std::string_view name) const {
  const int index = knob_index(name);
  if (index < 0) {
    std::vector<std::string> names;
    for (const auto& k : knobs_) names.push_back(k.name);
    throw InputError(fmt::format("unknown knob '{}' (knobs: {})", name, join(names)));
  }
  return knobs_[static_cast<size_t>(index)];
}

int KnobSpace::knob_index(std::string_view name) const {
  for (size_t i = 0; i < knobs_.size(); ++i)
    if (knobs_[i].name == name) return static_cast<int>(i);
  return -1;
}

// ---- KnobSpace: search ----

Config KnobSpace::config_of(std::span<const int> tokens) const {
  Config config;
  for (size_t i = 0; i < tokens.size(); ++i)
    config.entries_.emplace_back(knobs_[i].name, knobs_[i].values[static_cast<size_t>(tokens[i])]);
  return config;
}

bool KnobSpace::step_ok(std::vector<int>& tokens, size_t depth, Config& partial) const {
  for (const size_t c : checked_at_[depth])
    if (!constraints_[c].allows(partial)) return false;
  return true;
}

// `partial` holds knobs 0..tokens.size()-1; is there a legal completion?
bool KnobSpace::completes(std::vector<int>& tokens, Config& partial) const {
  const size_t depth = tokens.size();
  if (depth == knobs_.size()) return true;
  const Knob& k = knobs_[depth];
  for (size_t v = 0; v < k.values.size(); ++v) {
    tokens.push_back(static_cast<int>(v));
    partial.entries_.emplace_back(k.name, k.values[v]);
    const bool ok = step_ok(tokens, depth, partial) && completes(tokens, partial);
    partial.entries_.pop_back();
    tokens.pop_back();
    if (ok) return true;
  }
  return false;
}

void KnobSpace::walk(std::vector<int>& tokens, Config& partial,
                     const std::function<void(const std::vector<int>&)>& visit) const {
  const size_t depth = tokens.size();
  if (depth == knobs_.size()) {
    visit(tokens);
    return;
  }
  const Knob& k = knobs_[depth];
  for (size_t v = 0; v < k.values.size(); ++v) {
    tokens.push_back(static_cast<int>(v));
    partial.entries_.emplace_back(k.name, k.values[v]);
    if (step_ok(tokens, depth, partial)) walk(tokens, partial, visit);
    partial.entries_.pop_back();
    tokens.pop_back();
  }
}

std::vector<Config> KnobSpace::enumerate() const {
  std::vector<Config> out;
  std::vector<int> tokens;
  Config partial;
  walk(tokens, partial, [&](const std::vector<int>& t) { out.push_back(config_of(t)); });
  return out;
}

int64_t KnobSpace::size() const {
  int64_t count = 0;
  std::vector<int> tokens;
  Config partial;
  walk(tokens, partial, [&](const std::vector<int>&) { ++count; });
  return count;
}

std::vector<bool> KnobSpace::legal_mask(std::span<const int> prefix) const {
  KBRL_CHECK_INPUT(prefix.size() < knobs_.size(), "a prefix of {} decisions leaves none to make ({} knobs)",
                   prefix.size(), knobs_.size());
  std::vector<int> tokens;
  Config partial;
  for (size_t i = 0; i < prefix.size(); ++i) {
    const int t = prefix[i];
    KBRL_CHECK_INPUT(t >= 0 && static_cast<size_t>(t) < knobs_[i].values.size(),
                     "token {} of decision {} ({}) is out of range 0..{}", t, i, knobs_[i].name,
                     knobs_[i].values.size() - 1);
    tokens.push_back(t);
    partial.entries_.emplace_back(knobs_[i].name, knobs_[i].values[static_cast<size_t>(t)]);
    KBRL_CHECK_INPUT(step_ok(tokens, i, partial), "prefix '{}' breaks a constraint",
                     partial.str());
  }
  const size_t depth = prefix.size();
  const Knob& k = knobs_[depth];
  std::vector<bool> mask(k.values.size(), false);
  for (size_t v = 0; v < k.values.size(); ++v) {
    tokens.push_back(static_cast<int>(v));
    partial.entries_.emplace_back(k.name, k.values[v]);
    mask[v] = step_ok(tokens, depth, partial) && completes(tokens, partial);
    partial.entries_.pop_back();
    tokens.pop_back();
  }
  KBRL_CHECK_INPUT(std::find(mask.begin(), mask.end(), true) != mask.end(),
                   "prefix '{}' has no legal completion", partial.str());
  return mask;
}

std::vector<std::string> KnobSpace::legal_values(std::span<const int> prefix) const {
  const std::vector<bool> mask = legal_mask(prefix);
  std::vector<std::string> out;
  for (size_t v = 0; v < mask.size(); ++v)
    if (mask[v]) out.push_back(knobs_[prefix.size()].values[v]);
  return out;
}

// ---- KnobSpace: checking, parsing, tokens ----

std::string KnobSpace::why_illegal(const Config& config) const {
  for (const auto& [name, value] : config.entries()) {
    const int index = knob_index(name);
    if (index < 0) {
      std::vector<std::string> names;
      for (const auto& k : knobs_) names.push_back(k.name);
      return fmt::format("unknown knob '{}' (knobs: {})", name, join(names));
    }
    const Knob& k = knobs_[static_cast<size_t>(index)];
    if (k.index_of(value) < 0)
      return fmt::format("illegal value '{}' for knob '{}' (values: {})", value, name,
                         join(k.values));
  }
  for (const auto& k : knobs_)
    if (!config.has(k.name)) return fmt::format("knob '{}' is not set", k.name);
  for (const auto& c : constraints_)
    if (!c.allows(config))
      return fmt::format("'{}' breaks the constraint '{}'", config.str(), c.description);
  return {};
}

void KnobSpace::check(const Config& config) const {
  const std::string why = why_illegal(config);
  if (!why.empty()) throw InputError(why);
}

Config KnobSpace::parse(std::string_view text) const {
  const Config given = Config::parse(text);
  check(given);
  Config ordered;
  for (const auto& k : knobs_) ordered.set(k.name, given.at(k.name));
  return ordered;
}

Config KnobSpace::with_overrides(const Config& base, const Config& overrides) const {
  for (const auto& [name, value] : overrides.entries()) {
    const Knob& k = knob(name);
    KBRL_CHECK_INPUT(k.index_of(value) >= 0, "illegal value '{}' for knob '{}' (values: {})", value,
                     name, join(k.values));
  }
  Config out;
  for (const auto& k : knobs_)
    out.set(k.name, overrides.has(k.name) ? overrides.at(k.name) : base.at(k.name));
  check(out);
  return out;
}

std::vector<int> KnobSpace::tokenize(const Config& config) const {
  check(config);
  std::vector<int> tokens;
  for (const auto& k : knobs_) tokens.push_back(k.index_of(config.at(k.name)));
  return tokens;
}

Config KnobSpace::detokenize(std::span<const int> tokens) const {
  KBRL_CHECK_INPUT(tokens.size() == knobs_.size(), "{} tokens for a space of {} knobs",
                   tokens.size(), knobs_.size());
  for (size_t i = 0; i < tokens.size(); ++i)
    KBRL_CHECK_INPUT(tokens[i] >= 0 && static_cast<size_t>(tokens[i]) < knobs_[i].values.size(),
                     "token {} of decision {} ({}) is out of range 0..{}", tokens[i], i,
                     knobs_[i].name, knobs_[i].values.size() - 1);
  Config config = config_of(tokens);
  check(config);
  return config;
}

}  // namespace kbrl
