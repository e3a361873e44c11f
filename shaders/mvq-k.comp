#version 450
// Matrix-vector product with K-quant weights (256-value super-blocks, see
// quant.glsl) for up to NMAX columns of b: each thread decodes 16-value slices
// of ROWS rows once and multiplies them with every column, so the weights are
// read once whatever N is; subgroup adds, then a sum across subgroups.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "types.glsl"
#include "mm-push.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint ROWS = 1;
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer A { uint16_t data_a[]; };
layout(binding = 1) readonly buffer B { float data_b[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };
#include "quant.glsl"

#define NMAX 8
#define RED 32                  // partial sums reduced per round
shared float red[64 * RED];     // [subgroup][value]

void main() {
    const uint m0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * ROWS;
    if (m0 >= p.M) return;
    const uint tid = gl_LocalInvocationID.x;
    const uint b2 = gl_WorkGroupID.z % p.ne12, b3 = gl_WorkGroupID.z / p.ne12;
    const uint a_base = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03;
    const uint b_base = p.off_b + b2 * p.nb12 + b3 * p.nb13;
    const uint nrows = min(ROWS, p.M - m0), ncols = min(p.N, NMAX);

    float acc[ROWS * NMAX];
    [[unroll]] for (uint i = 0; i < ROWS * NMAX; i++) acc[i] = 0.0;
    for (uint s = tid; s < p.K / 16; s += WG) {
        const uint bi = b_base + 16 * s;
        [[unroll]] for (uint r = 0; r < ROWS; r++) {
            if (r >= nrows) break;
            float v[16];
            dq_slice16(a_base + (m0 + r) * p.nb01 + (s / 16) * QWORDS, s % 16, v);
            [[unroll]] for (uint n = 0; n < NMAX; n++) {
                if (n >= ncols) break;
                float t = 0.0;
                [[unroll]] for (uint i = 0; i < 16; i++) t = fma(v[i], data_b[bi + n * p.nb11 + i], t);
                acc[r * NMAX + n] += t;
            }
        }
    }
    // reduce RED values per round: value i is (row i / NMAX, column i % NMAX)
    const uint d_base = p.off_d + b2 * p.nb2 + b3 * p.nb3;
    [[unroll]] for (uint i0 = 0; i0 < ROWS * NMAX; i0 += RED) {
        barrier();
        [[unroll]] for (uint i = i0; i < min(i0 + RED, ROWS * NMAX); i++) {
            const float s = subgroupAdd(acc[i]);
            if (subgroupElect()) red[gl_SubgroupID * RED + (i - i0)] = s;
        }
        barrier();
        const uint i = i0 + tid, r = i / NMAX, n = i % NMAX;
        if (tid < RED && i < ROWS * NMAX && r < nrows && n < ncols) {
            float total = 0.0;
            for (uint sg = 0; sg < gl_NumSubgroups; sg++) total += red[sg * RED + tid];
            data_d[d_base + n * p.nb1 + m0 + r] = total;
        }
    }
}
