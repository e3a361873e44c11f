// Push constants shared by the matrix-product shaders (mm*.comp, mv*.comp):
// d[m, n, b2, b3] = sum_k a[k, m, b2 / r2, b3 / r3] * b[k, n, b2, b3].
// The layout is struct vk_pc_mm of push-constants.h (shared with the plugin's C).
#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_mm);
