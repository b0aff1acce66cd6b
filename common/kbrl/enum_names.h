#pragma once
// One enum-to-string mechanism for every named enum of kbrl (issue #13). Each enum has one table,
// written next to its declaration as a specialization of EnumNames:
//
//   template <>
//   struct EnumNames<TimingMode> {
//     static constexpr std::string_view what = "timing mode";  // the noun of the error messages
//     static constexpr EnumEntry<TimingMode> entries[] = {
//         {TimingMode::fast, "fast"}, {TimingMode::full, "full"}, {TimingMode::adaptive, "adaptive"}};
//     // optional: static constexpr std::string_view note = "...";  appended to parse errors
//   };
//
// and everything else is derived from it: enum_name(v), parse_enum<E>(text), find_enum<E>(text),
// enum_values<E>() and enum_names_list<E>(). The table must list every value once, in declaration
// order (value i at index i), with distinct non-empty names: checked at compile time, so a value
// added in the middle of an enum without a name does not compile, and lookups by value are O(1).
// A specialization for an enum of another namespace goes in namespace kbrl.
#include <array>
#include <concepts>
#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "error.h"

namespace kbrl {

/// One row of an enum's table: a value and its name (what to_string prints and parse accepts).
template <typename E>
struct EnumEntry {
  E value;
  std::string_view name;
};

/// Specialize for each named enum (see the top of this file).
template <typename E>
struct EnumNames;

/// An enum with a table.
template <typename E>
concept NamedEnum = std::is_enum_v<E> && requires {
  { EnumNames<E>::what } -> std::convertible_to<std::string_view>;
  std::size(EnumNames<E>::entries);
};

namespace enum_names_detail {

template <typename E>
consteval bool table_is_valid() {
  const auto& entries = EnumNames<E>::entries;
  for (size_t i = 0; i < std::size(entries); ++i) {
    // Declaration order: value i at index i (no gaps, no repeats, no reordering).
    if (static_cast<std::underlying_type_t<E>>(entries[i].value) !=
        static_cast<std::underlying_type_t<E>>(i))
      return false;
    if (entries[i].name.empty()) return false;
    for (size_t j = 0; j < i; ++j)
      if (entries[j].name == entries[i].name) return false;
  }
  return std::size(entries) > 0 && !std::string_view(EnumNames<E>::what).empty();
}

template <NamedEnum E>
const auto& checked_entries() {
  static_assert(table_is_valid<E>(),
                "EnumNames<E>::entries must list every value once, in declaration order, with "
                "distinct non-empty names, and `what` must not be empty");
  return EnumNames<E>::entries;
}

}  // namespace enum_names_detail

/// How many values the table of E lists.
template <NamedEnum E>
constexpr size_t enum_count() {
  return std::size(EnumNames<E>::entries);
}

/// Every value of E, in declaration order.
template <NamedEnum E>
std::array<E, enum_count<E>()> enum_values() {
  std::array<E, enum_count<E>()> out{};
  const auto& entries = enum_names_detail::checked_entries<E>();
  for (size_t i = 0; i < out.size(); ++i) out[i] = entries[i].value;
  return out;
}

/// The name of `value`. A value outside the table (a cast from a bad integer) is a bug in kbrl:
/// InternalError.
template <NamedEnum E>
std::string_view enum_name(E value) {
  const auto& entries = enum_names_detail::checked_entries<E>();
  const auto index = static_cast<std::underlying_type_t<E>>(value);
  if (std::cmp_less(index, 0) || std::cmp_greater_equal(index, std::size(entries)))
    throw InternalError(fmt::format("internal error: {} value {} has no name (the table lists {})",
                                    EnumNames<E>::what, index, std::size(entries)));
  return entries[static_cast<size_t>(index)].name;
}

/// The legal names of E, comma-separated in declaration order ("fast, full, adaptive").
template <NamedEnum E>
std::string enum_names_list() {
  std::string out;
  for (const auto& entry : enum_names_detail::checked_entries<E>()) {
    if (!out.empty()) out += ", ";
    out += entry.name;
  }
  return out;
}

/// The value named `text` (exact, case-sensitive), or nullopt. For callers that word their own
/// error (e.g. a key=value spec that names the key).
template <NamedEnum E>
std::optional<E> find_enum(std::string_view text) {
  for (const auto& entry : enum_names_detail::checked_entries<E>())
    if (entry.name == text) return entry.value;
  return std::nullopt;
}

/// The value named `text`. Anything else is bad input:
///   InputError "unknown <what> '<text>' (expected <a, b, c>)[: <note>]".
template <NamedEnum E>
E parse_enum(std::string_view text) {
  if (const std::optional<E> value = find_enum<E>(text)) return *value;
  std::string note;
  if constexpr (requires { EnumNames<E>::note; })
    note = fmt::format(": {}", std::string_view(EnumNames<E>::note));
  throw InputError(fmt::format("unknown {} '{}' (expected {}){}", EnumNames<E>::what, text,
                               enum_names_list<E>(), note));
}

}  // namespace kbrl
