# Run by the test_layering_* cases (ctest/layering/CMakeLists.txt):
#   cmake -DCXX=compiler -DINCLUDES=dir|dir|... -DLIBRARY=name -DVISIBLE=header -DHIDDEN=header
#         -DWORK=dir -P check_layering.cmake
# Compiles `#include <VISIBLE>` and `#include <HIDDEN>` with LIBRARY's include directories: the first
# must compile (so a broken command line cannot pass for a hidden header), the second must not be
# found.
string(REPLACE "|" ";" dirs "${INCLUDES}")
set(flags "")
foreach(d IN LISTS dirs)
  list(APPEND flags "-I${d}")
endforeach()
file(MAKE_DIRECTORY "${WORK}")

function(probe header rc_var log_var)
  file(WRITE "${WORK}/probe.cpp" "#include <${header}>\n")
  execute_process(COMMAND "${CXX}" -std=c++20 -fsyntax-only ${flags} "${WORK}/probe.cpp"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
  set(${rc_var} "${rc}" PARENT_SCOPE)
  set(${log_var} "${log}" PARENT_SCOPE)
endfunction()

probe("${VISIBLE}" rc log)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "<${VISIBLE}> should compile for ${LIBRARY} but does not:\n${log}")
endif()
probe("${HIDDEN}" rc log)
if(rc EQUAL 0)
  message(FATAL_ERROR "layering break: <${HIDDEN}> is visible to ${LIBRARY}, which does not link it")
endif()
string(FIND "${log}" "${HIDDEN}" at)
if(at EQUAL -1 OR NOT log MATCHES "No such file|file not found")
  message(FATAL_ERROR "<${HIDDEN}> failed for ${LIBRARY}, but not as a missing header:\n${log}")
endif()
message(STATUS "${LIBRARY}: <${VISIBLE}> found, <${HIDDEN}> not found")
