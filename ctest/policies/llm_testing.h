#pragma once
// What the `llm` tests share: the local llama-server's URL and the SmolLM2 model file, and the rule
// that without them a test reports skipped (failed under KBRL_REQUIRE_LLM=1, as in CI).
// The URL comes from KBRL_LLM_URL, else from the file the CTest fixture llama_server_start writes
// (ctest/llm/llama_server.sh; the test gets its path as KBRL_LLM_URL_FILE). The model file from
// KBRL_LLM_MODEL, else $KBRL_LLM_HOME (default ~/.cache/kbrl/llm)/models/SmolLM2-135M-Instruct.Q4_1.gguf,
// where .ci/setup-llm puts it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace kbrl::testing {

inline std::string llm_url() {
  if (const char* env = std::getenv("KBRL_LLM_URL"); env && *env) return env;
#ifdef KBRL_LLM_URL_FILE
  std::ifstream in(KBRL_LLM_URL_FILE);
  std::string url;
  std::getline(in, url);
  return url;
#else
  return "";
#endif
}

inline bool llm_required() {
  const char* r = std::getenv("KBRL_REQUIRE_LLM");
  return r && std::string(r) == "1";
}

/// The SmolLM2 GGUF file, or "" when it is not there.
inline std::string llm_model_path() {
  if (const char* env = std::getenv("KBRL_LLM_MODEL"); env && *env) return env;
  std::string home;
  if (const char* h = std::getenv("KBRL_LLM_HOME"); h && *h) {
    home = h;
  } else if (const char* u = std::getenv("HOME"); u && *u) {
    home = std::string(u) + "/.cache/kbrl/llm";
  }
  const std::string path = home + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  return std::filesystem::is_regular_file(path) ? path : "";
}

}  // namespace kbrl::testing

/// In a test's SetUp (or body): skip, or fail under KBRL_REQUIRE_LLM=1, when `what` is missing.
#define KBRL_REQUIRE_LLM_PIECE(present, what)                                                          \
  do {                                                                                                \
    if (!(present)) {                                                                                 \
      if (::kbrl::testing::llm_required()) FAIL() << "KBRL_REQUIRE_LLM=1 but " << what                \
                                                  << " is missing (run .ci/setup-llm; `ctest -L llm` " \
                                                     "starts the server)";                            \
      GTEST_SKIP() << what << " is missing (.ci/setup-llm installs it)";                              \
    }                                                                                                 \
  } while (0)
