#pragma once
// Knob spaces of the kernel generators (docs/design.md, Policies): the schedule policy's action is one
// decision per knob, in a fixed order, and a generator turns the decisions into a Candidate.
//
// A KnobSpace is an ordered list of knobs, each with an ordered list of values, and constraints
// over them. A constraint is checked as soon as every knob it names is decided, so whether a
// configuration is legal is decided knob by knob. The legal values offered at decision i
// (legal_values, legal_mask) are those that still have at least one legal completion: a policy
// that samples each decision from its mask always ends on a legal configuration, and every legal
// configuration can be sampled.
//
// A token is the index of the chosen value among its knob's values; a configuration is one token
// per knob in the space's order.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kbrl {

/// A knob name whose meaning is shared across generator families, with that meaning.
struct CanonicalKnob {
  std::string_view name;
  std::string_view meaning;
};

/// The shared knob names (block, vec, items_per_thread, unroll, tile_m, tile_n, tile_k, stages,
/// variant, tensor_core, precision, fast_math, cache_hint, tail, grid). A family uses these names
/// whenever the meaning fits, and may add its own names for what is specific to it.
std::span<const CanonicalKnob> canonical_knobs();
bool is_canonical_knob(std::string_view name);

/// One decision: a name, its values in a fixed order (printable strings; integers as decimal), and
/// what it means.
struct Knob {
  std::string name;
  std::vector<std::string> values;
  std::string description;

  /// The index of `value` among `values`, or -1.
  int index_of(std::string_view value) const;
};

/// An assignment of values to knobs, in the order they were set: a full configuration or a
/// prefix of one. Printed as "block=256,vec=4,..." (Config::parse reads that back).
class Config {
 public:
  Config() = default;
  Config(std::initializer_list<std::pair<std::string, std::string>> entries);

  bool has(std::string_view name) const;
  /// The value of `name`; throws InputError if the knob is not set.
  const std::string& at(std::string_view name) const;
  /// The value of `name` as an integer; throws InputError if unset or not an integer.
  int64_t integer(std::string_view name) const;
  /// Sets `name` (replacing its value if already set; otherwise appended).
  void set(std::string_view name, std::string_view value);

  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

  /// "block=256,vec=4" ("" for an empty config).
  std::string str() const;
  /// Reads "k=v,k=v" (spaces around items are ignored; "" is the empty config). Syntax only: a
  /// KnobSpace checks names and values. Throws InputError for an item without '=', an empty
  /// name or value, or a knob given twice.
  static Config parse(std::string_view text);

  bool operator==(const Config&) const = default;

 private:
  friend class KnobSpace;
  std::vector<std::pair<std::string, std::string>> entries_;
};

/// A predicate over the knobs it names; checked once all of them are decided.
struct Constraint {
  std::string description;          // in words: "vec * items_per_thread <= 8"
  std::vector<std::string> knobs;   // the knobs `allows` reads
  std::function<bool(const Config&)> allows;
};

class KnobSpace {
 public:
  /// Appends a knob. Throws InternalError for a duplicate name, an empty value list, or a
  /// duplicate or empty value.
  KnobSpace& add_knob(Knob knob);
  /// Adds a constraint. Throws InternalError if it names no knob or a knob not yet added.
  KnobSpace& add_constraint(Constraint constraint);

  const std::vector<Knob>& knobs() const { return knobs_; }
  const std::vector<Constraint>& constraints() const { return constraints_; }
  /// The knob named `name`; throws InputError naming the space's knobs if there is none.
  const Knob& knob(std::string_view name) const;
  /// The position of `name` in the order, or -1.
  int knob_index(std::string_view name) const;

  /// Every legal configuration, in lexicographic order of tokens.
  std::vector<Config> enumerate() const;
  /// The number of legal configurations.
  int64_t size() const;

  /// The values of knob number `prefix.size()` that extend the decisions `prefix` (tokens of
  /// knobs 0..k-1) to at least one legal configuration. Throws InputError if the prefix is too
  /// long, holds an out-of-range token, or itself has no legal completion.
  std::vector<std::string> legal_values(std::span<const int> prefix) const;
  /// The same as a mask over all the values of knob number `prefix.size()`.
  std::vector<bool> legal_mask(std::span<const int> prefix) const;

  /// Why `config` is not a legal full configuration ("" when it is): an unknown knob, a value
  /// outside its knob's list, a missing knob, or the first constraint it breaks.
  std::string why_illegal(const Config& config) const;
  bool is_legal(const Config& config) const { return why_illegal(config).empty(); }
  /// Throws InputError with why_illegal's reason.
  void check(const Config& config) const;

  /// Reads and checks a full configuration ("block=256,vec=4,..."): the knobs may come in any
  /// order; the result is in the space's order. Throws InputError.
  Config parse(std::string_view text) const;
  /// `base` with the knobs of `overrides` replaced, in the space's order; throws InputError for an
  /// unknown knob or value in the overrides or when the result is illegal.
  Config with_overrides(const Config& base, const Config& overrides) const;

  /// One token per knob, in order. Throws InputError if `config` is not legal.
  std::vector<int> tokenize(const Config& config) const;
  /// The configuration of `tokens`; throws InputError for a wrong length, an out-of-range token
  /// or an illegal result.
  Config detokenize(std::span<const int> tokens) const;

 private:
  Config config_of(std::span<const int> tokens) const;  // no checks
  /// Do the constraints decided at knob `depth` hold for tokens[0..depth]?
  bool step_ok(std::vector<int>& tokens, size_t depth, Config& partial) const;
  bool completes(std::vector<int>& tokens, Config& partial) const;
  void walk(std::vector<int>& tokens, Config& partial,
            const std::function<void(const std::vector<int>&)>& visit) const;

  std::vector<Knob> knobs_;
  std::vector<Constraint> constraints_;
  std::vector<std::vector<size_t>> checked_at_;  // per knob: constraints whose last knob it is
};

}  // namespace kbrl
