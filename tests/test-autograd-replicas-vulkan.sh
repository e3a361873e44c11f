#!/bin/sh
# test-autograd-replicas-vulkan.sh - one eager replica on the CPU, one on Vulkan0 (lavapipe in CI).
exec "${GGMLC_TEST_DATA:?run through make check}/test-autograd-vulkan.sh" test-autograd-replicas
