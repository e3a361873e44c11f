#version 450
// Matrix-vector products (n small): a workgroup computes one row of d for
// every column n < N; threads stride over k, then reduce in shared memory.
// With VEC defined, a is read 4 floats (f32) or 8 halves (f16) at a time.
#include "types.glsl"
#include "mm-push.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint NMAX = 8;   // columns per pass
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

shared float red[WG];

float block_sum(float v) {
    const uint t = gl_LocalInvocationID.x;
    barrier();
    red[t] = v;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (t < s) red[t] += red[t + s];
        barrier();
    }
    return red[0];
}

void main() {
    const uint m = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (m >= p.M) return;
    const uint tid = gl_LocalInvocationID.x;
    const uint b2 = gl_WorkGroupID.z % p.ne12, b3 = gl_WorkGroupID.z / p.ne12;
    const uint a_row = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03 + m * p.nb01;
    const uint b_base = p.off_b + b2 * p.nb12 + b3 * p.nb13;
    const uint d_base = p.off_d + b2 * p.nb2 + b3 * p.nb3;
    for (uint n0 = 0; n0 < p.N; n0 += NMAX) {
        float acc[NMAX];
        [[unroll]] for (uint j = 0; j < NMAX; j++) acc[j] = 0.0;
        const uint nn = min(NMAX, p.N - n0);
        for (uint c = tid; c < p.K / A_PER; c += WG) {
            const uint k = c * A_PER;
#if A_PER == 4
            const vec4 av = data_a[a_row + c];
            const float w[4] = float[4](av.x, av.y, av.z, av.w);
#elif A_PER == 8
            const uvec4 q = data_a[a_row + c];
            const vec2 h0 = unpackHalf2x16(q.x), h1 = unpackHalf2x16(q.y), h2 = unpackHalf2x16(q.z), h3 = unpackHalf2x16(q.w);
            const float w[8] = float[8](h0.x, h0.y, h1.x, h1.y, h2.x, h2.y, h3.x, h3.y);
#else
            const float w[1] = float[1](TO_F32(A_TYPE, data_a[a_row + c]));
#endif
            [[unroll]] for (uint j = 0; j < NMAX; j++) {
                if (j < nn) {
                    const uint bj = b_base + (n0 + j) * p.nb11 + k;
                    float s = 0.0;
                    [[unroll]] for (uint e = 0; e < A_PER; e++) s = fma(w[e], TO_F32(B_TYPE, data_b[bj + e]), s);
                    acc[j] += s;
                }
            }
        }
        for (uint j = 0; j < nn; j++) {
            const float total = block_sum(acc[j]);
            if (tid == 0) data_d[d_base + (n0 + j) * p.nb1 + m] = total;
        }
    }
}
