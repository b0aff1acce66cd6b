# Included by CTest before it runs the tests (TEST_INCLUDE_FILES, ctest/CMakeLists.txt): unless
# OMP_NUM_THREADS is set, each test's math libraries (libtorch's intra-op threads, OpenBLAS) get the
# host's cores divided by the two tests the test preset runs at once. On the 2-core CI machine two
# tests of two threads each oversubscribed the cores, and OpenBLAS's idle threads spin in
# sched_yield: one thread each does the same work in less CPU time (kbrl-experiment ttt with the
# random language model: 24 CPU-seconds with one thread against 39 with two).
if(NOT DEFINED ENV{OMP_NUM_THREADS})
  cmake_host_system_information(RESULT _kbrl_cores QUERY NUMBER_OF_LOGICAL_CORES)
  math(EXPR _kbrl_threads "${_kbrl_cores} / 2")
  if(_kbrl_threads LESS 1)
    set(_kbrl_threads 1)
  endif()
  set(ENV{OMP_NUM_THREADS} ${_kbrl_threads})
endif()
