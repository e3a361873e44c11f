#version 450
// repeat_back: d[j] = sum of a over every i with i % ne(d) == j, per dimension
// (the gradient of repeat).
// Default: one invocation per element of d, walking its repeats (many elements of d,
// few repeats each: a dense layer's bias gradient).
// WG_SUM: one workgroup per element of d, its threads taking the repeats in turn, four
// independent loads at a time, then a tree sum in shared memory (few elements of d with many
// repeats each: a convolution's bias gradient, 32 channels summed over 25088 pixels, walked by
// 32 invocations alone before).
#include "types.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
layout(binding = 1) writeonly buffer D { STORAGE_T(A_TYPE) data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_repeat_back);

#ifdef WG_SUM
shared float partial[WG];

// The element of a of repeat r (r0 fastest) of d's element (i0, i1, i2, i3).
float repeat_at(uint r, uvec4 i, uvec3 reps) {
    const uint r0 = r % reps.x, q = r / reps.x, r1 = q % reps.y, q2 = q / reps.y;
    const uint r2 = q2 % reps.z, r3 = q2 / reps.z;
    const uint at = p.off_a + (i.x + r0 * p.ne0) * p.nb00 + (i.y + r1 * p.ne1) * p.nb01 +
                    (i.z + r2 * p.ne2) * p.nb02 + (i.w + r3 * p.ne3) * p.nb03;
    return TO_F32(A_TYPE, data_a[at]);
}

void main() {
    const uint idx = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    const uint t = gl_LocalInvocationID.x;
    if (idx >= p.ne0 * p.ne1 * p.ne2 * p.ne3) return; // a whole workgroup: no barrier skipped
    const uint r = idx / p.ne0;
    const uvec4 i = uvec4(idx % p.ne0, r % p.ne1, (r / p.ne1) % p.ne2, r / (p.ne1 * p.ne2));
    const uvec3 reps = uvec3(p.ne00 / p.ne0, p.ne01 / p.ne1, p.ne02 / p.ne2);
    const uint n = reps.x * reps.y * reps.z * (p.ne03 / p.ne3);
    vec4 sum = vec4(0.0);
    uint k = t;
    for (; k + 3 * WG < n; k += 4 * WG)
        sum += vec4(repeat_at(k, i, reps), repeat_at(k + WG, i, reps),
                    repeat_at(k + 2 * WG, i, reps), repeat_at(k + 3 * WG, i, reps));
    for (; k < n; k += WG) sum.x += repeat_at(k, i, reps);
    partial[t] = (sum.x + sum.y) + (sum.z + sum.w);
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (t < s) partial[t] += partial[t + s];
        barrier();
    }
    const uint at = p.off_d + i.x * p.nb0 + i.y * p.nb1 + i.z * p.nb2 + i.w * p.nb3;
    if (t == 0) data_d[at] = FROM_F32(A_TYPE, partial[0]);
}
#else
void main() {
    const uint idx = linear_id(WG);
    if (idx >= p.ne0 * p.ne1 * p.ne2 * p.ne3) return;
    const uint r = idx / p.ne0;
    const uint i0 = idx % p.ne0, i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    float sum = 0.0;
    for (uint j3 = i3; j3 < p.ne03; j3 += p.ne3)
        for (uint j2 = i2; j2 < p.ne02; j2 += p.ne2)
            for (uint j1 = i1; j1 < p.ne01; j1 += p.ne1)
                for (uint j0 = i0; j0 < p.ne00; j0 += p.ne0)
                    sum += TO_F32(A_TYPE, data_a[p.off_a + j0 * p.nb00 + j1 * p.nb01 + j2 * p.nb02 + j3 * p.nb03]);
    data_d[p.off_d + i0 * p.nb0 + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3] = FROM_F32(A_TYPE, sum);
}
#endif
