#pragma once
// The commit a kbrl program was built from (kbrl::build_commit, stamped on every build by
// record/commit_stamp.cmake): what run records (settings.json, run.json) say they came from.
#include <string_view>

namespace kbrl {

/// "0123456789ab" (12 hex digits of the git commit), with "+dirty" appended when tracked files
/// differed from it, or "unknown" when the tree was not a git checkout (a copied tree).
std::string_view kbrl_commit();

}  // namespace kbrl
