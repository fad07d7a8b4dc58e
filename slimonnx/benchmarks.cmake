# Included from benchmarks/CMakeLists.txt: slimonnx's Google Benchmark program.
# One process per model: benchmarks/slimonnx_bench.sh [BUILD_DIR].
if(TARGET slimonnx_lib AND TARGET shapeonnx_lib)
  add_executable(slimonnx_bench ${SUITE_SOURCE_DIR}/benchmarks/slimonnx_bench.cc)
  target_link_libraries(slimonnx_bench PRIVATE slimonnx_lib shapeonnx_lib common_testing
                        benchmark::benchmark)
endif()
