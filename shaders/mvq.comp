#version 450
// Matrix-vector product with quantized weights (32-value blocks, see quant.glsl):
// a workgroup per row of d, one block per thread and step, reduction in shared memory.
#include "types.glsl"
#include "mm-push.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer A { uint16_t data_a[]; };
layout(binding = 1) readonly buffer B { float data_b[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };
#include "quant.glsl"

shared float red[WG];

void main() {
    const uint m = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (m >= p.M) return;
    const uint tid = gl_LocalInvocationID.x;
    const uint b2 = gl_WorkGroupID.z % p.ne12, b3 = gl_WorkGroupID.z / p.ne12;
    const uint a_row = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03 + m * p.nb01;
    const uint b_base = p.off_b + b2 * p.nb12 + b3 * p.nb13;
    const uint nblocks = p.K / 32;
    for (uint n = 0; n < p.N; n++) {
        float acc = 0.0;
        for (uint blk = tid; blk < nblocks; blk += WG) acc += dq_dot32(a_row + blk * QWORDS, b_base + n * p.nb11 + blk * 32);
        barrier();
        red[tid] = acc;
        barrier();
        for (uint s = WG / 2; s > 0; s >>= 1) {
            if (tid < s) red[tid] += red[tid + s];
            barrier();
        }
        if (tid == 0) data_d[p.off_d + b2 * p.nb2 + b3 * p.nb3 + n * p.nb1 + m] = red[0];
    }
}
