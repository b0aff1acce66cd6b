#pragma once
// The fields of a `--policy` spec (`kind:first[,key=value...]`, e.g. endpoint:URL,... and lm:FILE,...):
// the comma split with its escapes, and the checked numbers of the values. One parser for every
// spec kind.
#include <string>
#include <string_view>
#include <vector>

#include <kernels/prompt.h>

namespace kbrl {

/// Splits on commas that are not escaped with a backslash, and undoes the escapes \, \\ \n \t.
/// InputError (quoting `spec`) for a lone backslash or an unknown escape.
std::vector<std::string> split_spec_fields(std::string_view s, std::string_view spec);
/// An integer in [min, max]; InputError naming `key` otherwise.
int parse_spec_int(std::string_view key, const std::string& value, int min, int max);
/// A finite number in [min, max] ((min, max] when `min_open`); InputError naming `key` otherwise.
double parse_spec_double(std::string_view key, const std::string& value, double min, double max, bool min_open);
/// The prompt keys every text policy's spec shares: style, shots, system. Sets `prompt` and returns
/// true when `key` is one of them (InputError for a bad value), false otherwise.
bool set_prompt_key(PromptOptions& prompt, std::string_view key, const std::string& value);

}  // namespace kbrl
