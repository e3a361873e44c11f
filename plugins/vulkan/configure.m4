dnl Vulkan-specific configure checks (owned by the Vulkan plugin): which shader
dnl extensions glslc accepts.  Included from configure.ac after HAVE_VULKAN is set.
dnl
dnl GGMLC_GLSLC_ACCEPTS(EXTENSION, VARIABLE): VARIABLE=yes when glslc compiles a
dnl compute shader that requires EXTENSION for Vulkan 1.2.
AC_DEFUN([GGMLC_GLSLC_ACCEPTS], [
  AC_CACHE_CHECK([whether glslc accepts $1], [ggmlc_cv_glslc_$1], [
    printf '#version 450\n#extension %s : require\nlayout(local_size_x = 1) in;\nvoid main() {}\n' "$1" > conftest.comp
    AS_IF([$GLSLC --target-env=vulkan1.2 -c conftest.comp -o conftest.spv >/dev/null 2>&1],
      [ggmlc_cv_glslc_$1=yes], [ggmlc_cv_glslc_$1=no])
    rm -f conftest.comp conftest.spv])
  $2=$ggmlc_cv_glslc_$1
])

glslc_nv_coopmat=no
glslc_khr_coopmat=no
VULKAN_SHADER_FLAGS=
AS_IF([test "x$have_vulkan" = xyes], [
  GGMLC_GLSLC_ACCEPTS([GL_EXT_shader_16bit_storage], [glslc_16bit])
  AS_IF([test "x$glslc_16bit" != xyes],
    [AC_MSG_ERROR([glslc does not accept GL_EXT_shader_16bit_storage; use --with-vulkan=no])])
  GGMLC_GLSLC_ACCEPTS([GL_NV_cooperative_matrix], [glslc_nv_coopmat])
  GGMLC_GLSLC_ACCEPTS([GL_KHR_cooperative_matrix], [glslc_khr_coopmat])
  dnl Debian 12's shaderc knows only the NV extension; the plugin picks the
  dnl matching shaders at run time from what the device offers.
  AS_IF([test "x$glslc_nv_coopmat" = xyes], [VULKAN_SHADER_FLAGS="$VULKAN_SHADER_FLAGS nvcoopmat"])
  AS_IF([test "x$glslc_khr_coopmat" = xyes], [VULKAN_SHADER_FLAGS="$VULKAN_SHADER_FLAGS khrcoopmat"])
  dnl KHR cooperative matrices (16x16 fragments, and the flexible sizes of VK_NV_cooperative_matrix2): written in
  dnl the NV syntax and rewritten into KHR instructions by plugins/vulkan/spv-coopmat-khr.py
  AC_PATH_PROGS([PYTHON3], [python3], [])
  AS_IF([test "x$glslc_nv_coopmat" = xyes && test -n "$PYTHON3"], [VULKAN_SHADER_FLAGS="$VULKAN_SHADER_FLAGS coopmatflex coopmatkhr"])
  dnl SPIR-V instructions glslc has no GLSL built-in for (the integer dot products of mvq-dot.comp)
  GGMLC_GLSLC_ACCEPTS([GL_EXT_spirv_intrinsics], [glslc_spirv_intrinsics])
  AS_IF([test "x$glslc_spirv_intrinsics" = xyes], [VULKAN_SHADER_FLAGS="$VULKAN_SHADER_FLAGS spirvintrinsics"])
])
AM_CONDITIONAL([GLSLC_NV_COOPMAT], [test "x$glslc_nv_coopmat" = xyes])
AM_CONDITIONAL([GLSLC_KHR_COOPMAT], [test "x$glslc_khr_coopmat" = xyes])
AC_SUBST([VULKAN_SHADER_FLAGS])
