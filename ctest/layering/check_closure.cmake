# Run by the test_layering_harness_* cases (ctest/layering/CMakeLists.txt): the layering of harness/'s
# stages, which share one library (so include visibility cannot keep it):
#   cmake -DCXX=compiler -DINCLUDES=dir|dir|... -DHEADERS=a.h|b.h -DFORBIDDEN=regex -DWORK=dir
#         -P check_closure.cmake
# Compiles `#include <HEADER>` for each header with -H (the compiler lists every file it opens) and
# fails when a file of the closure matches FORBIDDEN, naming the header and the file.
string(REPLACE "|" ";" dirs "${INCLUDES}")
string(REPLACE "|" ";" headers "${HEADERS}")
set(flags "")
foreach(d IN LISTS dirs)
  list(APPEND flags "-I${d}")
endforeach()
file(MAKE_DIRECTORY "${WORK}")
foreach(header IN LISTS headers)
  file(WRITE "${WORK}/probe.cpp" "#include <${header}>\n")
  execute_process(COMMAND "${CXX}" -std=c++20 -fsyntax-only -H ${flags} "${WORK}/probe.cpp"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE log)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "<${header}> does not compile on its own:\n${log}")
  endif()
  string(REPLACE "\n" ";" lines "${log}")
  set(opened 0)
  foreach(line IN LISTS lines)
    if(line MATCHES "^\\.+ (.*)$")
      math(EXPR opened "${opened} + 1")
      if(CMAKE_MATCH_1 MATCHES "${FORBIDDEN}")
        message(FATAL_ERROR "layering break: <${header}> includes ${CMAKE_MATCH_1}")
      endif()
    endif()
  endforeach()
  if(opened EQUAL 0)
    message(FATAL_ERROR "<${header}>: the compiler listed no included file (no -H output?):\n${log}")
  endif()
  message(STATUS "<${header}>: ${opened} files, none matching ${FORBIDDEN}")
endforeach()
