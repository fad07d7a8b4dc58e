# propdag's benchmark program; include()d from benchmarks/CMakeLists.txt:
#   include(${SUITE_SOURCE_DIR}/propdag/benchmarks.cmake)
# Needs BUILD_PROPDAG (the propdag target).
if(TARGET propdag)
  find_package(benchmark REQUIRED)
  add_executable(propdag_bench ${SUITE_SOURCE_DIR}/benchmarks/propdag_bench.cc)
  target_link_libraries(propdag_bench PRIVATE propdag benchmark::benchmark)
  target_compile_definitions(propdag_bench PRIVATE VNNCOMP_BENCHMARKS="${VNNCOMP_BENCHMARKS}")
endif()
