#version 450
// Row reductions and row normalisations: one workgroup per row of a.
//   SUM, MEAN, ARGMAX write one value per row; NORM, RMS_NORM, L2_NORM write
//   the normalised row, CUMSUM its inclusive prefix sums (d has a's shape).
// Sums are compensated (each partial sum carries its rounding error, Neumaier's
// two-sum), so that a row's sum is about as exact as the CPU backend's double
// one: losses summed over a graph's output, whose finite differences check
// gradients, lose no more than a rounding of the result.
// FUSE_MUL (rows_mul_f32): a normalisation also writes o = d * w (w's rows
// broadcast), the mul that follows it in the graph (vk-fuse.c); d is still written.
// FUSE_Q8 (rows_mul_q8_f32): o's rows also quantized for the integer-dot products that read them
// (q8-lanes.glsl; rows of a multiple of 32 values, all kept in registers).
#ifdef FUSE_Q8
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#include "types.glsl"
#include "op-codes.h"

layout(constant_id = 0) const uint BLOCK = 256;
const uint KEEP = VK_ROW_KEEP; // values of a row per invocation held in registers (rows up to KEEP * BLOCK)
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
layout(binding = 1) writeonly buffer D { STORAGE_T(D_TYPE) data_d[]; };
#ifdef FUSE_MUL
layout(binding = 2) readonly buffer W { float data_w[]; };
layout(binding = 3) writeonly buffer O { float data_o[]; };
#endif
#ifdef FUSE_Q8
layout(binding = 4) writeonly buffer Q { uint data_q[]; };
layout(binding = 4) writeonly buffer S { vec2 data_s[]; };
shared float sh_o[KEEP * BLOCK]; // o's row, regrouped 4 values a lane
#include "q8-lanes.glsl"
#endif

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_rows);

shared float sh[BLOCK];
shared uint sh_i[BLOCK]; // ARGMAX's indices; the sums' errors (as float bits) elsewhere

// sum += v, with the rounding error added to sum.y; precise: no rewriting of the error terms
void add_compensated(inout vec2 sum, float v) {
    precise float s = sum.x + v;
    precise float err = abs(sum.x) >= abs(v) ? (sum.x - s) + v : (v - s) + sum.x;
    sum = vec2(s, sum.y + err);
}

float block_sum(vec2 v) {
    const uint t = gl_LocalInvocationID.x;
    barrier();
    sh[t] = v.x;
    sh_i[t] = floatBitsToUint(v.y);
    barrier();
    for (uint s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) {
            vec2 sum = vec2(sh[t], uintBitsToFloat(sh_i[t]) + uintBitsToFloat(sh_i[t + s]));
            add_compensated(sum, sh[t + s]);
            sh[t] = sum.x;
            sh_i[t] = floatBitsToUint(sum.y);
        }
        barrier();
    }
    return sh[0] + uintBitsToFloat(sh_i[0]);
}

void main() {
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= p.ne01 * p.ne02 * p.ne03) return;
    const uint i1 = row % p.ne01, i2 = (row / p.ne01) % p.ne02, i3 = row / (p.ne01 * p.ne02);
    const uint a0 = p.off_a + i1 * p.nb01 + i2 * p.nb02 + i3 * p.nb03;
    const uint d0 = p.off_d + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3;
    const uint t = gl_LocalInvocationID.x;

    if (p.op == VK_ROW_ARGMAX) {
        const uint NONE = 0xffffffffu;
        float best = 0.0;
        uint best_i = NONE;
        for (uint i = t; i < p.ne00; i += BLOCK) {
            const float v = TO_F32(A_TYPE, data_a[a0 + i * p.nb00]);
            if (best_i == NONE || v > best) { best = v; best_i = i; }
        }
        sh[t] = best;
        sh_i[t] = best_i;
        barrier();
        for (uint s = BLOCK / 2; s > 0; s >>= 1) {
            if (t < s) {
                const float o = sh[t + s];
                const uint oi = sh_i[t + s];
                if (oi != NONE && (sh_i[t] == NONE || o > sh[t] || (o == sh[t] && oi < sh_i[t]))) { sh[t] = o; sh_i[t] = oi; }
            }
            barrier();
        }
        if (t == 0) data_d[d0] = int(sh_i[0]);
        return;
    }

    if (p.op == VK_ROW_CUMSUM) { // chunks of BLOCK values: a scan in shared memory plus the carry
        float carry = 0.0;
        for (uint base = 0; base < p.ne00; base += BLOCK) {
            const uint i = base + t;
            barrier();
            sh[t] = i < p.ne00 ? TO_F32(A_TYPE, data_a[a0 + i * p.nb00]) : 0.0;
            barrier();
            for (uint off = 1; off < BLOCK; off <<= 1) {
                const float add = t >= off ? sh[t - off] : 0.0;
                barrier();
                sh[t] += add;
                barrier();
            }
            if (i < p.ne00) data_d[d0 + i * p.nb0] = FROM_F32(D_TYPE, carry + sh[t]);
            carry += sh[BLOCK - 1];
        }
        return;
    }

    // The row's first KEEP * BLOCK values stay in registers from the first read on, and the weights
    // of FUSE_MUL are read before any store: a store may alias a later load, so a loop of loads and
    // stores waits a memory round trip per step (a decode row of 768 values: three of them).
    float kept[KEEP];
    [[unroll]] for (uint j = 0; j < KEEP; j++) {
        const uint i = t + j * BLOCK;
        kept[j] = i < p.ne00 ? TO_F32(A_TYPE, data_a[a0 + i * p.nb00]) : 0.0;
    }
    vec2 acc = vec2(0.0);
    [[unroll]] for (uint j = 0; j < KEEP; j++)
        if (t + j * BLOCK < p.ne00) add_compensated(acc, (p.op == VK_ROW_RMS_NORM || p.op == VK_ROW_L2_NORM) ? kept[j] * kept[j] : kept[j]);
    for (uint i = t + KEEP * BLOCK; i < p.ne00; i += BLOCK) {
        const float v = TO_F32(A_TYPE, data_a[a0 + i * p.nb00]);
        add_compensated(acc, (p.op == VK_ROW_RMS_NORM || p.op == VK_ROW_L2_NORM) ? v * v : v);
    }
    const float total = block_sum(acc);
    if (p.op == VK_ROW_SUM || p.op == VK_ROW_MEAN) {
        if (t == 0) data_d[d0] = FROM_F32(D_TYPE, p.op == VK_ROW_SUM ? total : total / float(p.ne00));
        return;
    }
    float shift = 0.0, scale;
    if (p.op == VK_ROW_NORM) {
        shift = total / float(p.ne00);
        vec2 var = vec2(0.0);
        [[unroll]] for (uint j = 0; j < KEEP; j++)
            if (t + j * BLOCK < p.ne00) add_compensated(var, (kept[j] - shift) * (kept[j] - shift));
        for (uint i = t + KEEP * BLOCK; i < p.ne00; i += BLOCK) {
            const float v = TO_F32(A_TYPE, data_a[a0 + i * p.nb00]) - shift;
            add_compensated(var, v * v);
        }
        scale = inversesqrt(block_sum(var) / float(p.ne00) + p.eps);
    } else if (p.op == VK_ROW_RMS_NORM) {
        scale = inversesqrt(total / float(p.ne00) + p.eps);
    } else {
        scale = 1.0 / max(sqrt(total), p.eps);
    }
#ifdef FUSE_MUL
    const uint w0 = p.off_w + (i1 % p.wne1) * p.wnb1 + (i2 % p.wne2) * p.wnb2 + (i3 % p.wne3) * p.wnb3;
    const uint o0 = p.off_o + (d0 - p.off_d);
    float w[KEEP];
    [[unroll]] for (uint j = 0; j < KEEP; j++) w[j] = t + j * BLOCK < p.ne00 ? data_w[w0 + t + j * BLOCK] : 0.0;
#endif
    [[unroll]] for (uint j = 0; j < KEEP; j++) {
        const uint i = t + j * BLOCK;
        if (i >= p.ne00) break;
        const float v = (kept[j] - shift) * scale;
        data_d[d0 + i * p.nb0] = FROM_F32(D_TYPE, v);
#ifdef FUSE_MUL
        data_o[o0 + i * p.nb0] = v * w[j];
#endif
#ifdef FUSE_Q8
        sh_o[i] = v * w[j];
#endif
    }
#ifdef FUSE_Q8
    barrier();
    for (uint r = t; r < p.ne00 / 4; r += BLOCK) // whole blocks of 8 lanes: BLOCK is a multiple of 8
        q8_store4(vec4(sh_o[4 * r], sh_o[4 * r + 1], sh_o[4 * r + 2], sh_o[4 * r + 3]), p.off_q + row * (p.ne00 / 4),
                  p.off_s + row * (p.ne00 / 32), r);
    return; // the row was kept whole
#endif
    for (uint i = t + KEEP * BLOCK; i < p.ne00; i += BLOCK) {
        const float v = (TO_F32(A_TYPE, data_a[a0 + i * p.nb00]) - shift) * scale;
        data_d[d0 + i * p.nb0] = FROM_F32(D_TYPE, v);
#ifdef FUSE_MUL
        data_o[o0 + i * p.nb0] = v * data_w[w0 + i];
#endif
    }
}
