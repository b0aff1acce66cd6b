#include "out_dir.h"

#include <algorithm>
#include <fstream>
#include <vector>

#include <fmt/format.h>
#include <kbrl/error.h>
#include <nlohmann/json.hpp>

#include <harness/record/build_commit.h>
#include <harness/record/eval_record.h>  // kbrl_version

namespace kbrl::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kManifest = "run.json";

/// Up to four entry names of `dir`, sorted, for a message ("a.csv, b/, ... (7 entries)").
std::string some_entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string() + (e.is_directory() ? "/" : ""));
  std::sort(names.begin(), names.end());
  const size_t n = names.size();
  if (n > 4) names.resize(4);
  return fmt::format("{}{}", fmt::join(names, ", "), n > 4 ? fmt::format(", ... ({} entries)", n) : "");
}

/// The command recorded in DIR/run.json ("" when it holds none or cannot be read).
std::string recorded_command(const fs::path& dir) {
  std::ifstream in(dir / kManifest);
  if (!in) return {};
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("command") || !j["command"].is_string()) return {};
  return j["command"].get<std::string>();
}

}  // namespace

void add_out_flags(CLI::App* cmd, OutDirFlags& flags, std::string_view resume_help) {
  cmd->add_option("--out", flags.out, "output directory (a new or empty one; see --force)")->required();
  cmd->add_flag("--force", flags.force, "replace the run an --out folder already holds (its files are deleted)");
  flags.resumable = !resume_help.empty();
  if (flags.resumable) {
    cmd->add_flag("--resume", flags.resume, std::string(resume_help));
    cmd->get_option("--resume")->excludes(cmd->get_option("--force"));
  }
}

fs::path check_out_dir(const OutDirFlags& flags, std::string_view command) {
  KBRL_CHECK_INPUT(!flags.out.empty(), "--out DIR is required");
  const fs::path dir(flags.out);
  KBRL_CHECK_INPUT(!fs::exists(dir) || fs::is_directory(dir), "--out {} exists and is not a directory", flags.out);
  if (!fs::exists(dir) || fs::is_empty(dir)) return dir;
  const std::string held = recorded_command(dir);
  if (flags.resume) {
    KBRL_CHECK_INPUT(held == command, "--resume: --out {} holds {}, not a `kbrl {}` run to continue", flags.out,
                     held.empty() ? fmt::format("no kbrl run ({})", some_entries(dir))
                                  : fmt::format("a `kbrl {}` run", held),
                     command);
  } else if (flags.force) {
    KBRL_CHECK_INPUT(!held.empty(),
                     "--force empties a kbrl run's folder only, and --out {} holds other files ({}), no run.json: "
                     "choose a new folder",
                     flags.out, some_entries(dir));
  } else {
    throw InputError(fmt::format(
        "--out {} already holds {} ({}): {}--force to replace it, or choose a new folder", flags.out,
        held.empty() ? "files" : fmt::format("a `kbrl {}` run", held), some_entries(dir),
        held == command && flags.resumable ? "--resume to continue it, " : ""));
  }
  return dir;
}

fs::path prepare_out_dir(const OutDirFlags& flags, std::string_view command, const nlohmann::json& details) {
  const fs::path dir = check_out_dir(flags, command);
  const bool has_files = fs::exists(dir) && !fs::is_empty(dir);
  if (has_files && flags.force)
    for (const auto& e : fs::directory_iterator(dir)) fs::remove_all(e.path());
  fs::create_directories(dir);
  nlohmann::json manifest = {{"command", std::string(command)}};
  manifest.update(details);
  manifest["kbrl_version"] = std::string(kbrl_version());
  manifest["commit"] = std::string(kbrl_commit());
  std::ofstream out(dir / kManifest);
  out << manifest.dump(2) << "\n";
  KBRL_CHECK_INPUT(out.good(), "cannot write {}", (dir / kManifest).string());
  return dir;
}

void write_whole_file(const std::string& path, const std::string& text) {
  const std::string part = path + ".part";
  {
    std::ofstream out(part, std::ios::binary | std::ios::trunc);
    KBRL_CHECK_INPUT(out.good(), "cannot write {}", part);
    out << text;
    out.close();
    KBRL_CHECK_INPUT(out.good(), "writing {} failed (disk full?)", part);
  }
  fs::rename(part, path);
}

}  // namespace kbrl::cli
