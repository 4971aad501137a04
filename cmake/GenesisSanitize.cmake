# cmake/GenesisSanitize.cmake - sanitizer and fuzzing builds.
#
# GENESIS_SANITIZE instruments every target of the build (libraries, plugins,
# tests), e.g. "address,undefined" or "thread".  Undefined behaviour is fatal,
# so a finding fails the test that hit it.  With clang the sanitizer runtime is
# the shared one (-shared-libsan): the core and the plugins are shared libraries
# linked with --no-undefined, and a plugin loaded by dlopen must use the same
# runtime as the program.
#
# GENESIS_BUILD_FUZZERS (clang only) adds libFuzzer's coverage instrumentation
# to the same build, which must then sanitize at least "address", and builds
# the harnesses of tests/fuzz against the instrumented libraries.
set(GENESIS_SANITIZE "" CACHE STRING "Sanitizers for the whole build, e.g. address,undefined or thread (empty: none)")
option(GENESIS_BUILD_FUZZERS "libFuzzer harnesses under tests/fuzz (clang only; implies GENESIS_SANITIZE=address,undefined)" OFF)

if(GENESIS_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "GENESIS_BUILD_FUZZERS needs clang (libFuzzer): configure with CC=clang CXX=clang++")
  endif()
  if(NOT GENESIS_SANITIZE)
    set(GENESIS_SANITIZE "address,undefined" CACHE STRING "" FORCE)
  endif()
  if(NOT GENESIS_SANITIZE MATCHES "address")
    message(FATAL_ERROR "GENESIS_BUILD_FUZZERS needs GENESIS_SANITIZE to include address (it is '${GENESIS_SANITIZE}')")
  endif()
endif()

if(NOT GENESIS_SANITIZE)
  return()
endif()

set(_san_compile -fsanitize=${GENESIS_SANITIZE} -fno-omit-frame-pointer)
if(GENESIS_SANITIZE MATCHES "undefined")
  list(APPEND _san_compile -fno-sanitize-recover=undefined)
endif()
set(_san_link -fsanitize=${GENESIS_SANITIZE})
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  # Sanitizer builds are usually optimised less than -O2 (scripts/sanitize.sh: -O1), where
  # clang's vectorizer does not run and every '#pragma omp simd' loop would warn.
  list(APPEND _san_compile -Wno-pass-failed)
  list(APPEND _san_link -shared-libsan)
  # The shared runtime lives in clang's resource directory, which the dynamic
  # loader does not search: every binary gets it as a run path.
  if(GENESIS_SANITIZE MATCHES "thread")
    set(_san_rt libclang_rt.tsan-x86_64.so)
  elseif(GENESIS_SANITIZE MATCHES "address")
    set(_san_rt libclang_rt.asan-x86_64.so)
  else()
    set(_san_rt libclang_rt.ubsan_standalone-x86_64.so)
  endif()
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${_san_rt}
    OUTPUT_VARIABLE _san_rt_path OUTPUT_STRIP_TRAILING_WHITESPACE)
  get_filename_component(_san_rt_dir "${_san_rt_path}" DIRECTORY)
  list(APPEND _san_link -Wl,-rpath,${_san_rt_dir})
endif()
if(GENESIS_BUILD_FUZZERS)
  list(APPEND _san_compile -fsanitize=fuzzer-no-link)
endif()
# C and C++ only: nvcc takes none of these flags.
add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_san_compile}>")
add_link_options(${_san_link})
message(STATUS "Genesis: sanitizers ${GENESIS_SANITIZE}")
