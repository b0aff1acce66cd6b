#pragma once
// The output folder of a command that writes a run (`kbrl sample`, `train`, `ttt`, `sft`, `sweep`):
// one run per folder. A folder that already holds files is refused unless the user says what to
// do with them: --resume continues the run it holds (commands that can resume), --force replaces
// it. A folder is a kbrl run's when it holds run.json (written first, so an interrupted run's folder
// is one too); --force empties only such a folder, never one holding other files. An output
// file of its own (a baseline, a corpus, a report) is written whole or not at all.
#include <filesystem>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace kbrl::cli {

struct OutDirFlags {
  std::string out;
  bool resume = false;
  bool force = false;
  bool resumable = false;  // the command takes --resume (set by add_out_flags)
};

/// --out DIR (required), --force, and --resume when `resume_help` is not empty (its help text).
void add_out_flags(CLI::App* cmd, OutDirFlags& flags, std::string_view resume_help = {});

/// The checks of prepare_out_dir, with no side effect: call it before anything slow or anything
/// that may fail on bad input, so that a refused command leaves no folder behind. Returns the path.
std::filesystem::path check_out_dir(const OutDirFlags& flags, std::string_view command);

/// The folder for a run of `command` ("train", "sweep", ...), created if missing, with run.json:
/// the command, kbrl's version and `details` (a learning run's config and setup), written here
/// only. Throws InputError when --out is missing or not a directory; when it holds
/// files and neither --resume nor --force was given (naming both, and what it holds); with
/// --resume, when it holds no run of `command`; with --force, when it is not a kbrl run's folder
/// (no run.json). --force removes everything in the folder first; --resume keeps it (run.json is
/// written anew: it describes the latest invocation).
std::filesystem::path prepare_out_dir(const OutDirFlags& flags, std::string_view command,
                                      const nlohmann::json& details = nlohmann::json::object());

/// Writes `text` to `path` through `path`.part and a rename, so that the file is whole or absent
/// (an interrupted or failed write leaves no half file). InputError naming the file when it cannot
/// be written.
void write_whole_file(const std::string& path, const std::string& text);

}  // namespace kbrl::cli
