#version 450
// Matrix-vector product with quantized weights (32-value blocks, see quant.glsl):
// a workgroup computes ROWS rows of d, one block per thread and row at each
// step; subgroup adds, then a sum across subgroups in shared memory.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "types.glsl"
#include "mm-push.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint ROWS = 1;
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer A { QUNIT_T data_a[]; };
layout(binding = 1) readonly buffer B { float data_b[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };
#include "quant.glsl"

shared float red[64 * 32]; // [subgroup][row], ROWS <= 32

void main() {
    const uint m0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * ROWS;
    if (m0 >= p.M) return;
    const uint tid = gl_LocalInvocationID.x;
    const uint b2 = gl_WorkGroupID.z % p.ne12, b3 = gl_WorkGroupID.z / p.ne12;
    const uint a_base = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03;
    const uint b_base = p.off_b + b2 * p.nb12 + b3 * p.nb13;
    const uint nblocks = p.K / 32, nrows = min(ROWS, p.M - m0);
    for (uint n = 0; n < p.N; n++) {
        float acc[ROWS];
        [[unroll]] for (uint r = 0; r < ROWS; r++) acc[r] = 0.0;
        for (uint blk = tid; blk < nblocks; blk += WG) {
            [[unroll]] for (uint r = 0; r < ROWS; r++) {
                if (r >= nrows) break;
                acc[r] += dq_dot32(a_base + (m0 + r) * p.nb01 + blk * QWORDS, b_base + n * p.nb11 + blk * 32);
            }
        }
        barrier();
        [[unroll]] for (uint r = 0; r < ROWS; r++) {
            const float s = subgroupAdd(acc[r]);
            if (subgroupElect()) red[gl_SubgroupID * 32 + r] = s;
        }
        barrier();
        if (tid < nrows) {
            float total = 0.0;
            for (uint sg = 0; sg < gl_NumSubgroups; sg++) total += red[sg * 32 + tid];
            data_d[p.off_d + b2 * p.nb2 + b3 * p.nb3 + n * p.nb1 + m0 + tid] = total;
        }
    }
}
