#!/bin/sh
# test-autograd-golden-vulkan.sh - the PyTorch-golden eager programs on Vulkan0 (lavapipe in CI).
exec "${GGMLC_TEST_DATA:?run through make check}/test-autograd-vulkan.sh" test-autograd-golden
