# The one place where kbrl's targets get their shared settings and where tests, experiments and
# benchmarks are registered with their labels and timeouts.

# Warnings live on one interface target; every kbrl target links it privately.
add_library(kbrl_warnings INTERFACE)
target_compile_options(kbrl_warnings INTERFACE -Wall -Wextra -Wno-unused-parameter -Winvalid-pch)
target_compile_features(kbrl_warnings INTERFACE cxx_std_20)

# Is the libtorch we build against able to run on CUDA? (Debian's 1.13 is CPU-only.)
set(KBRL_TORCH_CUDA OFF)
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(KBRL_TORCH_CUDA ON)
endif()
message(STATUS "kbrl: libtorch ${Torch_VERSION} (CUDA: ${KBRL_TORCH_CUDA})")

# kbrl_export_headers(target name source_dir): the target's public include directory is
# ${CMAKE_BINARY_DIR}/include/<target>, which holds <name>, a link to source_dir (a folder or one
# header; name may have folders of its own: harness/compile, harness/stats.h). So <name/x.h>
# resolves for the target and for what links it, and for nothing else: each library exports only
# its own headers (a layering break is a compile error; ctest/layering checks it).
# Include spelling (everywhere): a header of another folder as <folder/path.h> (<harness/gpu/...>,
# <kbrl/error.h>), a header of the same folder as "name.h".
function(kbrl_export_headers target name source_dir)
  set(dir ${CMAKE_BINARY_DIR}/include/${target})
  get_filename_component(parent ${dir}/${name} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(CREATE_LINK ${source_dir} ${dir}/${name} SYMBOLIC)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_include_directories(${target} INTERFACE ${dir})
  else()
    target_include_directories(${target} PUBLIC ${dir})
  endif()
endfunction()

# The one precompiled <torch/torch.h> (about 630 MB for GCC): every torch target reuses it
# (REUSE_FROM) instead of precompiling its own copy, which took 12 copies, 7.5 GB of a build folder,
# and filled a CI machine's disk. Reuse needs the same compile flags: the warnings and the torch flags
# below, nothing target-specific. -Winvalid-pch (in kbrl_warnings) says when a target cannot use it.
file(WRITE ${CMAKE_BINARY_DIR}/kbrl_torch_pch.cpp "// the translation unit that owns the torch precompiled header\n")
add_library(kbrl_torch_pch OBJECT ${CMAKE_BINARY_DIR}/kbrl_torch_pch.cpp)

# kbrl_use_torch(target): link libtorch and use the shared precompiled header.
# Keep the number of translation units that include torch small: each costs seconds to compile.
function(kbrl_use_torch target)
  # libstdc++ is listed before libtorch: the PyPI libtorch.so (2.11) exports its own copies of
  # std::filesystem functions, and remove_all from there crashes (seen on the GPU machine). With
  # libstdc++ earlier in DT_NEEDED, the dynamic linker binds those names to libstdc++'s.
  target_link_libraries(${target} PUBLIC "-Wl,--push-state,--no-as-needed" stdc++ "-Wl,--pop-state"
                                         ${TORCH_LIBRARIES})
  target_include_directories(${target} SYSTEM PUBLIC ${TORCH_INCLUDE_DIRS})
  if(TORCH_CXX_FLAGS)
    separate_arguments(_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
    target_compile_options(${target} PUBLIC ${_torch_flags})
  endif()
  if(KBRL_TORCH_CUDA)
    target_compile_definitions(${target} PUBLIC KBRL_TORCH_CUDA=1)
  endif()
  if(target STREQUAL "kbrl_torch_pch")
    target_precompile_headers(${target} PRIVATE <torch/torch.h>)
  else()
    target_precompile_headers(${target} REUSE_FROM kbrl_torch_pch)
  endif()
endfunction()
target_link_libraries(kbrl_torch_pch PRIVATE kbrl_warnings)
kbrl_use_torch(kbrl_torch_pch)

# The precompiled header of the test executables that do not use torch's: GoogleTest, nlohmann/json
# and the standard containers, built -O1 like the tests (1.1 of 5 s less for a test file on the
# 2-core machine, 86 files). GTest::gtest is found at the top level before the tests (CMakeLists.txt).
if(KBRL_BUILD_TESTS)
  file(WRITE ${CMAKE_BINARY_DIR}/kbrl_test_pch.cpp "// the translation unit that owns the tests' precompiled header\n")
  add_library(kbrl_test_pch OBJECT ${CMAKE_BINARY_DIR}/kbrl_test_pch.cpp)
  target_link_libraries(kbrl_test_pch PRIVATE GTest::gtest nlohmann_json::nlohmann_json kbrl_warnings)
  # libtorch's flags (the C++11 ABI macro) on the header and on every test: most tests get them
  # through the libraries they link, and a header built without them would not be used.
  separate_arguments(KBRL_TEST_TORCH_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  target_compile_options(kbrl_test_pch PRIVATE -O1 ${KBRL_TEST_TORCH_FLAGS})
  target_precompile_headers(kbrl_test_pch PRIVATE <gtest/gtest.h> <nlohmann/json.hpp> <filesystem> <map> <string>
                                                  <vector>)
endif()

# kbrl_add_test(NAME name SOURCES ... [LIBS ...] [LABELS ...] [TIMEOUT s] [TORCH])
# A GoogleTest executable registered with CTest, one CTest entry per executable, run within its
# budget (ctest/with_budget.sh).
# GPU tests (label gpu) call GTEST_SKIP when no GPU is present; SKIP_REGULAR_EXPRESSION turns that
# into a CTest skip, never a pass. Only gpu tests get it: a skipped unit test is a failure to look at.
# GPU tests also hold the resource lock `gpu`: `ctest -j` never runs two at once (under ctest -j6 on
# an H100, a worker failed to initialize its CUDA stream while three other gpu tests ran; serially
# all pass), and the experiments hold it too (timings taken beside another job are not timings).
function(kbrl_add_test)
  cmake_parse_arguments(T "TORCH" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} kbrl_testing GTest::gtest GTest::gtest_main
                                          kbrl_warnings)
  # A test's own code is assertions around calls into the libraries (built -O3): -O1 compiles it in
  # 25-30% less time (test_cli_eval.cpp 6.8 -> 4.8 s, a torch test 13.6 -> 10.0 s on the 2-core
  # machine) and still uses the torch precompiled header (-O0 would not: __OPTIMIZE__ differs).
  # GCC 12 warns falsely on std::string's operator+ inlined at -O1 (-Warray-bounds,
  # -Wstringop-overflow, -Wstringop-overread; GCC bug 105651): off for tests.
  target_compile_options(${T_NAME} PRIVATE -O1 $<$<CXX_COMPILER_ID:GNU>:-Wno-array-bounds -Wno-stringop-overflow
                                                 -Wno-stringop-overread>)
  if(T_TORCH)
    kbrl_use_torch(${T_NAME})
  else()
    target_compile_options(${T_NAME} PRIVATE ${KBRL_TEST_TORCH_FLAGS})
    target_precompile_headers(${T_NAME} REUSE_FROM kbrl_test_pch)
  endif()
  # ctest/with_budget.sh stops it 20 s before CTest's timeout, saying where its time went (each
  # test case's start and end, stamped with the second).
  math(EXPR _budget "${T_TIMEOUT} - 20")
  add_test(NAME ${T_NAME} COMMAND bash ${PROJECT_SOURCE_DIR}/ctest/with_budget.sh ${_budget} $<TARGET_FILE:${T_NAME}>)
  set_tests_properties(${T_NAME} PROPERTIES
    LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "KBRL_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  if("gpu" IN_LIST T_LABELS)
    set_tests_properties(${T_NAME} PROPERTIES
      SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\] [0-9]+ tests?[.,]" RESOURCE_LOCK gpu)
  endif()
endfunction()

# The tests that hold the llama_server lock (the llm tests' one-slot server) run one after another:
# that chain is the test command's longest path. This CTest COST has CTest start them before the
# unit tests even without timing history (a fresh build), so the chain does not end alone on one
# core while the other idles.
set(KBRL_LLM_CHAIN_COST 1000)

# kbrl_add_benchmark(NAME name SOURCES ... [LIBS ...] [TIMEOUT s])
# A Google Benchmark executable registered with CTest under the label bench. It prints its figures
# (the speed targets are checked by reading them, never by a timed unit test).
function(kbrl_add_benchmark)
  cmake_parse_arguments(B "" "NAME;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT KBRL_BUILD_BENCH)
    return()
  endif()
  if(NOT B_TIMEOUT)
    set(B_TIMEOUT 1800)
  endif()
  find_package(benchmark REQUIRED)
  add_executable(${B_NAME} ${B_SOURCES})
  target_link_libraries(${B_NAME} PRIVATE ${B_LIBS} benchmark::benchmark kbrl_warnings)
  add_test(NAME ${B_NAME} COMMAND ${B_NAME})
  set_tests_properties(${B_NAME} PROPERTIES LABELS bench TIMEOUT ${B_TIMEOUT})
endfunction()

# The experiments' budget for `ctest -L experiments` (smoke: minutes on one GPU; paper: the
# reports' settings; tiny: CPU plumbing with the synthetic environment).
set(KBRL_EXPERIMENT_BUDGET "smoke" CACHE STRING "budget of the experiments CTest runs: smoke, paper or tiny")
set_property(CACHE KBRL_EXPERIMENT_BUDGET PROPERTY STRINGS smoke paper tiny)
set(KBRL_RESULTS_DIR "${CMAKE_BINARY_DIR}/results" CACHE PATH "where the experiments write their CSVs and figures")
# The --env the experiment cases run with: auto (the evaluator where a GPU is usable at test time,
# else the synthetic reward table, whose results go to KBRL_RESULTS_DIR/synthetic/), synthetic at
# the tiny budget.
set(KBRL_EXPERIMENT_ENV auto)
if(KBRL_EXPERIMENT_BUDGET STREQUAL "tiny")
  set(KBRL_EXPERIMENT_ENV synthetic)
endif()

# kbrl_add_experiment(NAME name [NEEDS experiment...] [TIMEOUT s]): a CTest case (label
# `experiments`) running `kbrl-experiment NAME` at KBRL_EXPERIMENT_BUDGET with --env
# KBRL_EXPERIMENT_ENV; it sets up the fixture experiment_NAME and requires those of NEEDS. Without a
# GPU it runs on the synthetic reward table (seconds each) and says so on its output.
function(kbrl_add_experiment)
  cmake_parse_arguments(E "" "NAME;TIMEOUT" "NEEDS" ${ARGN})
  if(NOT E_TIMEOUT)
    set(E_TIMEOUT 36000)
  endif()
  add_test(NAME experiment_${E_NAME}
           COMMAND kbrl-experiment ${E_NAME} --budget ${KBRL_EXPERIMENT_BUDGET} --results ${KBRL_RESULTS_DIR}
                   --env ${KBRL_EXPERIMENT_ENV})
  set(_needs "")
  foreach(n IN LISTS E_NEEDS)
    list(APPEND _needs experiment_${n})
  endforeach()
  set_tests_properties(experiment_${E_NAME} PROPERTIES
    LABELS experiments TIMEOUT ${E_TIMEOUT} SKIP_RETURN_CODE 77 RESOURCE_LOCK gpu
    FIXTURES_SETUP experiment_${E_NAME} FIXTURES_REQUIRED "${_needs}")
endfunction()
