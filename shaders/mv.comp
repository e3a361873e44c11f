#version 450
// Matrix-vector products (n small): a workgroup computes ROWS rows of d for
// every column n < N; threads stride over k, partial sums are reduced with
// subgroup adds and then across subgroups in shared memory.  With VEC
// defined, a is read 4 floats (f32) or 8 halves (f16) at a time.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "types.glsl"
#include "mm-push.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint NMAX = 8;   // columns per pass
layout(constant_id = 2) const uint ROWS = 1;   // rows per workgroup
layout(local_size_x_id = 0) in;

#if defined(VEC) && A_TYPE == 0
layout(binding = 0) readonly buffer A { vec4 data_a[]; };
#define A_PER 4
#elif defined(VEC) && A_TYPE == 1
layout(binding = 0) readonly buffer A { uvec4 data_a[]; };
#define A_PER 8
#else
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
#define A_PER 1
#endif
layout(binding = 1) readonly buffer B { STORAGE_T(B_TYPE) data_b[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };

shared float red[64 * 32]; // [subgroup][row * NMAX + column], at most 64 subgroups, ROWS * NMAX <= 32

void main() {
    const uint m0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * ROWS;
    if (m0 >= p.M) return;
    const uint tid = gl_LocalInvocationID.x;
    const uint b2 = gl_WorkGroupID.z % p.ne12, b3 = gl_WorkGroupID.z / p.ne12;
    const uint a_base = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03;
    const uint b_base = p.off_b + b2 * p.nb12 + b3 * p.nb13;
    const uint d_base = p.off_d + b2 * p.nb2 + b3 * p.nb3;
    const uint nrows = min(ROWS, p.M - m0);
    for (uint n0 = 0; n0 < p.N; n0 += NMAX) {
        float acc[ROWS][NMAX];
        [[unroll]] for (uint r = 0; r < ROWS; r++)
            [[unroll]] for (uint j = 0; j < NMAX; j++) acc[r][j] = 0.0;
        const uint nn = min(NMAX, p.N - n0);
        for (uint c = tid; c < p.K / A_PER; c += WG) {
            const uint k = c * A_PER;
            [[unroll]] for (uint r = 0; r < ROWS; r++) {
                if (r >= nrows) break;
                const uint at = a_base + (m0 + r) * p.nb01 + c;
#if A_PER == 4
                const vec4 av = data_a[at];
                const float w[4] = float[4](av.x, av.y, av.z, av.w);
#elif A_PER == 8
                const uvec4 q = data_a[at];
                const vec2 h0 = unpackHalf2x16(q.x), h1 = unpackHalf2x16(q.y), h2 = unpackHalf2x16(q.z), h3 = unpackHalf2x16(q.w);
                const float w[8] = float[8](h0.x, h0.y, h1.x, h1.y, h2.x, h2.y, h3.x, h3.y);
#else
                const float w[1] = float[1](TO_F32(A_TYPE, data_a[at]));
#endif
                [[unroll]] for (uint j = 0; j < NMAX; j++) {
                    if (j >= nn) break;
                    const uint bj = b_base + (n0 + j) * p.nb11 + k;
                    float s = 0.0;
                    [[unroll]] for (uint e = 0; e < A_PER; e++) s = fma(w[e], TO_F32(B_TYPE, data_b[bj + e]), s);
                    acc[r][j] += s;
                }
            }
        }
        barrier(); // red is reused across passes
        [[unroll]] for (uint r = 0; r < ROWS; r++)
            [[unroll]] for (uint j = 0; j < NMAX; j++) {
                const float s = subgroupAdd(acc[r][j]);
                if (subgroupElect()) red[gl_SubgroupID * 32 + r * NMAX + j] = s;
            }
        barrier();
        if (tid < nrows * NMAX && tid % NMAX < nn) {
            float total = 0.0;
            for (uint sg = 0; sg < gl_NumSubgroups; sg++) total += red[sg * 32 + tid];
            data_d[d_base + (n0 + tid % NMAX) * p.nb1 + m0 + tid / NMAX] = total;
        }
    }
}
