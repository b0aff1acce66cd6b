#pragma once
// How kbrl's programs (kbrl, kbrl-experiment) end: every error as "PROGRAM: error: ..." on stderr with
// one of the documented exit codes (README, "Exit codes"), and a failed write to standard output (a
// full disk, `> /dev/full`, a closed pipe) an error rather than a success.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "error.h"

namespace kbrl::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitFault = 1,              // the harness or the machine failed (no GPU worker, CUDA, I/O)
  kExitInput = 2,              // bad input: arguments, files, configurations; nothing was run
  kExitInternal = 3,           // a bug in kbrl
  kExitCandidateFailed = 4,    // kbrl eval: the candidate was evaluated and is not correct
  kExitSkipped = 77,           // kbrl-experiment: nothing to run on (no GPU, no --arch); CTest's skip
};

/// Throws Error (exit 1) when a batch recorded `harness_error` for some candidates: everything was
/// written, and a rerun with the same rollout log evaluates just those again.
inline void fail_on_harness_errors(long long count) {
  if (count > 0)
    throw Error(std::to_string(count) +
                " candidate(s) hit a harness fault: their records say harness_error, everything else was "
                "written, and a rerun with the same --log evaluates just those again");
}

/// Parses the arguments, runs `body` (after the subcommands' callbacks) and returns the exit code.
inline int run_program(const char* program, CLI::App& app, int argc, char** argv,
                       const std::function<int()>& body) {
  int code = kExitOk;
  try {
    app.parse(argc, argv);
    code = body();
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "%s: error: %s\nRun '%s --help' for the options.\n", program, e.what(), program);
    return kExitInput;
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return kExitInput;
  } catch (const std::filesystem::filesystem_error& e) {  // a path that cannot be used as asked
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return kExitInput;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return kExitFault;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", program, e.what());
    return kExitInternal;
  }
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "%s: error: writing to standard output failed: %s\n", program, std::strerror(errno));
    return kExitFault;
  }
  return code;
}

}  // namespace kbrl::cli
