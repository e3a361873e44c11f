dnl Vulkan-specific configure checks (owned by the Vulkan plugin): which shader
dnl extensions glslc accepts.  Included from configure.ac.
