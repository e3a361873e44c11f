#version 450
// timestep_embedding: row n of d is [cos(t f_j) | sin(t f_j)], j < half,
// f_j = exp(-log(max_period) j / half), t = timesteps[n]; an odd dim ends in 0.
#include "types.glsl"
#include "activations.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer T { float data_t[]; };
layout(binding = 1) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_timestep);

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.dim * p.n) return;
    const uint j = idx % p.dim, row = idx / p.dim, half_dim = p.dim / 2;
    float v = 0.0;
    if (j < 2 * half_dim) {
        const uint k = j < half_dim ? j : j - half_dim;
        const float arg = data_t[p.off_t + row * p.nt0] * exp(-p.log_max_period * float(k) / float(half_dim));
        const vec2 cs = cos_sin(arg);
        v = j < half_dim ? cs.x : cs.y;
    }
    data_d[p.off_d + j * p.nd0 + row * p.nd1] = v;
}
