#version 450
// Optimizer steps over contiguous f32 parameters, in place.  ADAMW: hp =
// {alpha, beta1, beta2, eps, wd, beta1h, beta2h} (beta*h: bias corrections
// 1/(1 - beta^t)), m and v updated too; SGD: hp = {alpha, wd}.
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) buffer W { float w[]; };
layout(binding = 1) readonly buffer G { float g[]; };
layout(binding = 2) buffer M { float m[]; };
layout(binding = 3) buffer V { float v[]; };
layout(binding = 4) readonly buffer H { float hp[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_optstep);

void main() {
    const uint i = linear_id(256);
    if (i >= p.n) return;
    const float gi = g[p.off_g + i], alpha = hp[p.off_h];
    if (p.adamw == 0) {
        w[p.off_w + i] = w[p.off_w + i] * (1.0 - alpha * hp[p.off_h + 1]) - alpha * gi;
        return;
    }
    const float beta1 = hp[p.off_h + 1], beta2 = hp[p.off_h + 2], eps = hp[p.off_h + 3], wd = hp[p.off_h + 4];
    const float mi = m[p.off_m + i] * beta1 + gi * (1.0 - beta1);
    const float vi = v[p.off_v + i] * beta2 + gi * gi * (1.0 - beta2);
    m[p.off_m + i] = mi;
    v[p.off_v + i] = vi;
    const float mh = mi * hp[p.off_h + 5], vh = sqrt(vi * hp[p.off_h + 6]) + eps;
    w[p.off_w + i] = w[p.off_w + i] * (1.0 - alpha * wd) - alpha * mh / vh;
}
