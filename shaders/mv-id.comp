#version 450
// mul_mat_id for few tokens: workgroup (rows, pair) computes ROWS rows of one
// (slot, token) pair's output as a matrix-vector product with the expert the
// ids tensor names.  Pairs with an out-of-range expert id get zeros.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "types.glsl"
#include "mm-id-push.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint ROWS = 1;
layout(local_size_x_id = 0) in;

shared float red[64 * 32]; // [subgroup][row], ROWS <= 32

// dot of row word offset w (weights) with the activation row at bi, this thread's share
float row_dot(uint w, uint bi) {
    float s = 0.0;
#if !defined(QTYPE)
    for (uint k = gl_LocalInvocationID.x; k < p.K; k += WG) s = fma(TO_F32(A_TYPE, data_a[w + k]), data_b[bi + k], s);
#elif QK == 32
    for (uint blk = gl_LocalInvocationID.x; blk < p.K / 32; blk += WG) s += dq_dot32(w + blk * QWORDS, bi + 32 * blk);
#else
    for (uint sl = gl_LocalInvocationID.x; sl < p.K / 16; sl += WG) s += dq_dot16(w + (sl / 16) * QWORDS, sl % 16, bi + 16 * sl);
#endif
    return s;
}

void main() {
    const uint m0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * ROWS;
    if (m0 >= p.M) return;
    const uint tid = gl_LocalInvocationID.x, q = gl_WorkGroupID.z;
    const uint e = expert_of(q), nrows = min(ROWS, p.M - m0);
    const uint d_row = d_row_of(q);
    if (e >= p.n_as) {
        if (tid < nrows) data_d[d_row + m0 + tid] = 0.0;
        return;
    }
    const uint a_base = p.off_a + e * p.nb02, bi = b_row_of(q);
    float acc[ROWS];
    [[unroll]] for (uint r = 0; r < ROWS; r++) acc[r] = r < nrows ? row_dot(a_base + (m0 + r) * p.nb01, bi) : 0.0;
    [[unroll]] for (uint r = 0; r < ROWS; r++) {
        const float s = subgroupAdd(acc[r]);
        if (subgroupElect()) red[gl_SubgroupID * 32 + r] = s;
    }
    barrier();
    if (tid < nrows) {
        float total = 0.0;
        for (uint sg = 0; sg < gl_NumSubgroups; sg++) total += red[sg * 32 + tid];
        data_d[d_row + m0 + tid] = total;
    }
}
