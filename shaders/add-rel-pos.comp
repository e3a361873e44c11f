#version 450
// add_rel_pos (SAM): a viewed as [Kw, Kh, Q] (Q = every query position and
// batch): d[kw, kh, q] = a[kw, kh, q] + pw[kw, q] + ph[kh, q].  f32, contiguous.
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { float data_a[]; };
layout(binding = 1) readonly buffer PW { float data_pw[]; };
layout(binding = 2) readonly buffer PH { float data_ph[]; };
layout(binding = 3) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_add_rel_pos);

void main() {
    const uint i = linear_id(256);
    if (i >= p.K * p.K * p.n_q) return;
    const uint kw = i % p.K, kh = (i / p.K) % p.K, q = i / (p.K * p.K);
    data_d[p.off_d + i] = data_a[p.off_a + i] + data_pw[p.off_pw + q * p.K + kw] + data_ph[p.off_ph + q * p.K + kh];
}
