# Helpers that give every pkforge target the same shape:
#   pkforge_add_library(<folder> SOURCES ... DEPS ...)  -> pkforge_<folder>, alias pkforge::<folder>
#   pkforge_add_executable(<name> SOURCES ... DEPS ...)
#   pkforge_add_test(<name> SOURCES ... DEPS ... [LABELS ...] [TIMEOUT s])
#   pkforge_add_benchmark(<name> SOURCES ... DEPS ...)
# With PKFORGE_UNITY_BUILD (the ci preset) each of them compiles its C++
# sources in unity batches (pkforge_unity).

# Unity batches of 8 sources: the gRPC/protobuf/gtest headers parsed once a
# batch, not once a file; small enough that a target's batches still keep
# both CI cores busy. Sources with their own compile definitions (the renamed
# problem references) stay on their own (CMake leaves them out of unity
# files); so does any source marked SKIP_UNITY_BUILD_INCLUSION.
function(pkforge_unity target)
  if(PKFORGE_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()

function(pkforge_add_library folder)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(pkforge_${folder} ${A_SOURCES})
  add_library(pkforge::${folder} ALIAS pkforge_${folder})
  target_include_directories(pkforge_${folder} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}>)
  target_link_libraries(pkforge_${folder} PUBLIC ${A_DEPS} PRIVATE ${A_PRIVATE_DEPS})
  target_compile_options(pkforge_${folder} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${PKFORGE_WARNING_FLAGS}>)
  pkforge_unity(pkforge_${folder})
endfunction()

function(pkforge_add_executable name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_DEPS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${PKFORGE_WARNING_FLAGS}>)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
  pkforge_unity(${name})
endfunction()

function(pkforge_add_test name)
  if(NOT PKFORGE_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(A "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${PKFORGE_WARNING_FLAGS}>)
  pkforge_unity(${name})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 120)
  endif()
  # One ctest entry per test binary (not per case): cheaper to start on 2 cores.
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${A_TIMEOUT} LABELS "${A_LABELS}")
endfunction()

function(pkforge_add_benchmark name)
  if(NOT PKFORGE_BUILD_BENCHMARKS)
    return()
  endif()
  cmake_parse_arguments(A "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_DEPS} benchmark::benchmark)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
  pkforge_unity(${name})
endfunction()
