# Included by benchmarks/CMakeLists.txt: torchonnx's conversion benchmark. The latency of the
# generated code against onnxruntime is measured by benchmarks/torchonnx_bench.py; two builds' generated
# code against each other by benchmarks/torchonnx_ab.py.
if(TARGET torchonnx_lib)
  add_executable(torchonnx_bench ${SUITE_SOURCE_DIR}/benchmarks/torchonnx_bench.cc)
  target_link_libraries(torchonnx_bench PRIVATE torchonnx_lib common_testing benchmark::benchmark)
endif()
