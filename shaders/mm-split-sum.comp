#version 450
// The sum of a split-k matrix product's partial results (mm-coopmat-nv.comp with k_split):
// partial s of d[m, n] at s * M * N + n * M + m of the scratch binding, added in the order of
// s (so the result does not depend on the schedule), into d (column stride nb1).
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer P { float part[]; };
layout(binding = 1) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_split_sum);

void main() {
    const uint i = linear_id(256), mn = p.M * p.N;
    if (i >= mn) return;
    float sum = 0.0;
    for (uint s = 0; s < p.splits; s++) sum += part[s * mn + i];
    data_d[p.off_d + (i / p.M) * p.nb1 + i % p.M] = sum;
}
