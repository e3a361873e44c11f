#!/bin/sh
# test-autograd-half-vulkan.sh - the float16/bfloat16 eager tensors on Vulkan0 (lavapipe in CI).
exec "${GGMLC_TEST_DATA:?run through make check}/test-autograd-vulkan.sh" test-autograd-half
