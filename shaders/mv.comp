#version 450
// Matrix-vector products (N <= 8 columns of b): a workgroup computes R rows
// of d for all NC (= N) columns.  Its threads stride along k together, so
// every load of a and b is coalesced; each thread keeps R x NC partial sums,
// added up per subgroup and then across subgroups (one barrier).  b is read
// once per step and reused for the R rows.  With VEC, a is read 16 bytes at a
// time (4 f32 or 8 f16/bf16 values) and b 4 floats at a time; without, one
// value at a time (any alignment).  With STEPS > 1 a thread takes STEPS steps along k per
// iteration, their loads issued together: more bytes in flight per thread where short rows
// leave each thread few steps (measured: vk-tuning of ops-matmul.c's mv_float_by_k).
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "types.glsl"
#include "mm-push.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint R = 4;     // rows of d per workgroup
layout(constant_id = 2) const uint NC = 1;    // columns of b = N (1..8)
layout(constant_id = 3) const uint STEPS = 1; // steps along k per iteration of a thread
layout(local_size_x_id = 0) in;

#if defined(VEC) && A_TYPE == 0
layout(binding = 0) readonly buffer A { vec4 data_a[]; };
#define A_PER 4
#elif defined(VEC)
layout(binding = 0) readonly buffer A { uvec4 data_a[]; };
#define A_PER 8
#else
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
#define A_PER 1
#endif
#ifdef VEC
layout(binding = 1) readonly buffer B { vec4 data_b[]; };
#else
layout(binding = 1) readonly buffer B { STORAGE_T(B_TYPE) data_b[]; };
#endif
layout(binding = 2) writeonly buffer D { float data_d[]; };
#include "mv-store.glsl"

shared float red[32 * R * NC]; // [subgroup][row * NC + column], at most 32 subgroups

float w[A_PER];     // A_PER values of one row of a
float x[NC][A_PER]; // the matching values of each column of b

void load_a(uint at) {
#if A_PER == 4
    const vec4 v = data_a[at];
    w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w;
#elif A_PER == 8
    const uvec4 q = data_a[at];
    [[unroll]] for (uint e = 0; e < 4; e++) {
#if A_TYPE == 2
        w[2 * e] = uintBitsToFloat(q[e] << 16);
        w[2 * e + 1] = uintBitsToFloat(q[e] & 0xffff0000u);
#else
        const vec2 h = unpackHalf2x16(q[e]);
        w[2 * e] = h.x;
        w[2 * e + 1] = h.y;
#endif
    }
#else
    w[0] = TO_F32(A_TYPE, data_a[at]);
#endif
}

void load_b(uint j, uint at) {
#ifdef VEC
    [[unroll]] for (uint e = 0; e < A_PER / 4; e++) {
        const vec4 v = data_b[at + e];
        x[j][4 * e] = v.x; x[j][4 * e + 1] = v.y; x[j][4 * e + 2] = v.z; x[j][4 * e + 3] = v.w;
    }
#else
    x[j][0] = TO_F32(B_TYPE, data_b[at]);
#endif
}

float acc[R * NC];

// step c along k (A_PER values) of the R rows from m0 on (of the matrix at a_base) against the NC
// columns from b_col on
void mul_step(const uint c, const uint a_base, const uint m0, const uint b_col) {
    const uint B_STEP = A_PER < 4 ? 1 : A_PER / 4; // b elements (vec4 or scalar) per step
    [[unroll]] for (uint j = 0; j < NC; j++) load_b(j, b_col + j * p.nb11 + c * B_STEP);
    [[unroll]] for (uint r = 0; r < R; r++) {
        // rows past the end re-read the last one; their sums are not stored
        load_a(a_base + min(m0 + r, p.M - 1) * p.nb01 + c);
        [[unroll]] for (uint j = 0; j < NC; j++) {
            float s = acc[r * NC + j];
            [[unroll]] for (uint e = 0; e < A_PER; e++) s = fma(w[e], x[j][e], s);
            acc[r * NC + j] = s;
        }
    }
}

void main() {
    const uint m0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * R;
    if (m0 >= p.M) return;
    const uint tid = gl_LocalInvocationID.x;
    const uint b2 = gl_WorkGroupID.z % p.ne12, b3 = gl_WorkGroupID.z / p.ne12;
    const uint a_base = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03;
    const uint b_base = p.off_b + b2 * p.nb12 + b3 * p.nb13;
    [[unroll]] for (uint i = 0; i < R * NC; i++) acc[i] = 0.0;
    const uint steps = p.K / A_PER;
    uint c = tid;
    for (; c + (STEPS - 1) * WG < steps; c += STEPS * WG) // whole iterations: STEPS steps' loads together
        [[unroll]] for (uint s = 0; s < STEPS; s++) mul_step(c + s * WG, a_base, m0, b_base);
    for (; c < steps; c += WG) mul_step(c, a_base, m0, b_base);
    [[unroll]] for (uint i = 0; i < R * NC; i++) {
        const float s = subgroupAdd(acc[i]);
        if (subgroupElect()) red[gl_SubgroupID * R * NC + i] = s;
    }
    barrier();
    if (tid < R * NC && m0 + tid / NC < p.M) {
        float total = 0.0;
        for (uint sg = 0; sg < gl_NumSubgroups; sg++) total += red[sg * R * NC + tid];
        store_d(p.off_d + b2 * p.nb2 + b3 * p.nb3 + (tid % NC) * p.nb1 + m0 + tid / NC, total);
    }
}
