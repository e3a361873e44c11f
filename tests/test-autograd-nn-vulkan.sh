#!/bin/sh
# test-autograd-nn-vulkan.sh - modules, optimizers and schedulers on Vulkan0 (lavapipe in CI).
exec "${GGMLC_TEST_DATA:?run through make check}/test-autograd-vulkan.sh" test-autograd-nn
