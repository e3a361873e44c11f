#version 450
// Cross-entropy of rows of logits x against labels t (f32, contiguous rows).
// The loss d[0] = -(1/rows) sum_rows sum_i t_i (x_i - lse(x)), in two dispatches where the
// plugin has scratch memory for the rows' terms:
//   ROWS: each row's term sum_i t_i (x_i - lse(x)) into d[row] (the scratch): rows of at most
//         SHORT_ROW values (a classifier's: 10 classes) a thread each, longer rows a workgroup
//         each;
//   SUM:  one workgroup adds the terms (x is the scratch) and writes d[0].
// Without scratch, one workgroup does both (the default variant): rows of at most SHORT_ROW
// values a thread each, longer rows the whole workgroup each in turn (a GPT's 8192 rows of 256
// bytes took 16 ms so on an H200, the two dispatches a few microseconds).
// BACK: one workgroup per row, d = (softmax(x) * sum(t) - t) * grad / rows.
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK = 256;
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer T { float t[]; };
layout(binding = 2) readonly buffer G { float grad[]; };
layout(binding = 3) writeonly buffer D { float d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_cross_entropy);

shared float sh[BLOCK];

float block_reduce(float v, bool is_max) {
    const uint i = gl_LocalInvocationID.x;
    barrier();
    sh[i] = v;
    barrier();
    for (uint s = BLOCK / 2; s > 0; s >>= 1) {
        if (i < s) sh[i] = is_max ? max(sh[i], sh[i + s]) : sh[i] + sh[i + s];
        barrier();
    }
    return sh[0];
}

// log(sum(exp(x))) of the row at xr
float row_lse(uint xr) {
    float mx = -1.0 / 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.ne0; i += BLOCK) mx = max(mx, x[xr + i]);
    mx = block_reduce(mx, true);
    float s = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.ne0; i += BLOCK) s += exp(x[xr + i] - mx);
    return mx + log(block_reduce(s, false));
}

#if !defined(BACK) && !defined(SUM)
const uint SHORT_ROW = 64;

// sum_i t_i (x_i - lse(x)) of one row, by one invocation
float short_row_loss(uint xr, uint tr) {
    float mx = -1.0 / 0.0;
    for (uint i = 0; i < p.ne0; i++) mx = max(mx, x[xr + i]);
    float s = 0.0;
    for (uint i = 0; i < p.ne0; i++) s += exp(x[xr + i] - mx);
    const float lse = mx + log(s);
    float sum = 0.0;
    for (uint i = 0; i < p.ne0; i++) sum += t[tr + i] * (x[xr + i] - lse);
    return sum;
}

// sum_i t_i (x_i - lse(x)) of row r, by the whole workgroup
float long_row_loss(uint r) {
    const uint i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    const uint xr = p.off_x + i1 * p.nx1 + i2 * p.nx2 + i3 * p.nx3, tr = p.off_t + i1 * p.nt1 + i2 * p.nt2 + i3 * p.nt3;
    const float lse = row_lse(xr);
    float s = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.ne0; i += BLOCK) s += t[tr + i] * (x[xr + i] - lse);
    return block_reduce(s, false);
}

float short_row_term(uint r) {
    const uint i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    return short_row_loss(p.off_x + i1 * p.nx1 + i2 * p.nx2 + i3 * p.nx3, p.off_t + i1 * p.nt1 + i2 * p.nt2 + i3 * p.nt3);
}
#endif

void main() {
    const uint rows = p.ne1 * p.ne2 * p.ne3, tid = gl_LocalInvocationID.x;
#ifdef BACK
    const uint r = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (r >= rows) return;
    const uint i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    const uint xr = p.off_x + i1 * p.nx1 + i2 * p.nx2 + i3 * p.nx3, tr = p.off_t + i1 * p.nt1 + i2 * p.nt2 + i3 * p.nt3;
    const uint dr = p.off_d + i1 * p.nd1 + i2 * p.nd2 + i3 * p.nd3;
    const float lse = row_lse(xr);
    float ts = 0.0;
    for (uint i = tid; i < p.ne0; i += BLOCK) ts += t[tr + i];
    ts = block_reduce(ts, false);
    const float factor = grad[p.off_g] / float(rows);
    for (uint i = tid; i < p.ne0; i += BLOCK) d[dr + i] = (exp(x[xr + i] - lse) * ts - t[tr + i]) * factor;
#elif defined(ROWS)
    const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (p.ne0 <= SHORT_ROW) {
        const uint r = wg * BLOCK + tid;
        if (r < rows) d[p.off_d + r] = short_row_term(r);
    } else if (wg < rows) {
        const float s = long_row_loss(wg);
        if (tid == 0) d[p.off_d + wg] = s;
    }
#elif defined(SUM)
    float total = 0.0;
    for (uint r = tid; r < rows; r += BLOCK) total += x[p.off_x + r];
    total = block_reduce(total, false);
    if (tid == 0) d[p.off_d] = -total / float(rows);
#else
    float total = 0.0;
    if (p.ne0 <= SHORT_ROW) {
        for (uint r = tid; r < rows; r += BLOCK) total += short_row_term(r);
        total = block_reduce(total, false);
    }
    for (uint r = 0; p.ne0 > SHORT_ROW && r < rows; r++) total += long_row_loss(r);
    if (tid == 0) d[p.off_d] = -total / float(rows);
#endif
}
