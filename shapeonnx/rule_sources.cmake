# Shape-rule families, one file each (the families of common/ADDING_AN_OP.md); included by
# shapeonnx/CMakeLists.txt.
set(SHAPEONNX_RULE_SOURCES
  rules_activation.cc rules_conv.cc rules_elementwise.cc rules_generator.cc rules_index.cc
  rules_linalg.cc rules_norm.cc rules_pool.cc rules_quant.cc rules_recurrent.cc rules_reduce.cc
  rules_resize.cc rules_shape.cc rules_signal.cc rules_text.cc rules_training.cc rules_util.cc)
set(SHAPEONNX_RULE_TESTS
  rules_test_util.cc rules_activation_test.cc rules_conv_test.cc rules_elementwise_test.cc
  rules_generator_test.cc rules_index_test.cc rules_linalg_test.cc rules_norm_test.cc
  rules_pool_test.cc rules_quant_test.cc rules_recurrent_test.cc rules_reduce_test.cc
  rules_registry_test.cc rules_resize_test.cc rules_shape_test.cc rules_signal_test.cc
  rules_training_test.cc)
