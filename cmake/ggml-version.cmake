# ggml-version.cmake - the name the ggml clients' documentation uses for the version
# check; CMake itself reads ggml-config-version.cmake next to it.
include("${CMAKE_CURRENT_LIST_DIR}/ggml-config-version.cmake")
