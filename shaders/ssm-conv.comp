#version 450
// ssm_conv (Mamba): d[i, t, s] = sum over k < d_conv of sx[t + k, i, s] * c[k, i].
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer SX { float data_sx[]; };
layout(binding = 1) readonly buffer C { float data_c[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_ssm_conv);

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.d_inner * p.n_t * p.n_s) return;
    const uint i = idx % p.d_inner, t = (idx / p.d_inner) % p.n_t, s = idx / (p.d_inner * p.n_t);
    float sum = 0.0;
    for (uint k = 0; k < p.d_conv; k++)
        sum += data_sx[p.off_x + (t + k) * p.nx0 + i * p.nx1 + s * p.nx2] * data_c[p.off_c + k * p.nc0 + i * p.nc1];
    data_d[p.off_d + i * p.nd0 + t * p.nd1 + s * p.nd2] = sum;
}
