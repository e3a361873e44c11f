#version 450
// top_k of rows too long to sort in shared memory: k rounds of selection, one
// workgroup per row.  Round j finds the best element ranked after the one
// chosen in round j-1, in the order of top_k: larger values first, equal
// values by index (the CPU's order, so the result is the same).  A dispatch runs
// rounds [j_begin, j_end): the host splits k into several dispatches (lavapipe
// stops an invocation's loops after 65535 iterations in all), and a later one
// resumes after the element its predecessor chose last, read back from d.
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK = 256;
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer A { float data_a[]; };
layout(binding = 1) buffer D { int data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_topk_select);

const uint NONE = 0xffffffffu;
shared float sh_v[BLOCK];
shared uint sh_i[BLOCK];

// (v, i) ranks before (w, j)
bool ranks_before(float v, uint i, float w, uint j) {
    if (j == NONE) return i != NONE;
    if (i == NONE) return false;
    return v > w || (v == w && i < j);
}

void main() {
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= p.ne01 * p.ne02 * p.ne03) return;
    const uint i1 = row % p.ne01, i2 = (row / p.ne01) % p.ne02, i3 = row / (p.ne01 * p.ne02);
    const uint a0 = p.off_a + i1 * p.nb01 + i2 * p.nb02 + i3 * p.nb03;
    const uint d0 = p.off_d + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3;
    const uint t = gl_LocalInvocationID.x;
    uint prev_i = p.j_begin > 0 ? uint(data_d[d0 + p.j_begin - 1]) : NONE;
    float prev_v = prev_i != NONE ? data_a[a0 + prev_i * p.nb00] : 0.0;
    for (uint j = p.j_begin; j < p.j_end; j++) {
        float best_v = 0.0;
        uint best_i = NONE;
        for (uint i = t; i < p.ne00; i += BLOCK) {
            const float v = data_a[a0 + i * p.nb00];
            if (prev_i != NONE && !ranks_before(prev_v, prev_i, v, i)) continue;
            if (ranks_before(v, i, best_v, best_i)) { best_v = v; best_i = i; }
        }
        sh_v[t] = best_v;
        sh_i[t] = best_i;
        barrier();
        for (uint s = BLOCK / 2; s > 0; s >>= 1) {
            if (t < s && ranks_before(sh_v[t + s], sh_i[t + s], sh_v[t], sh_i[t])) { sh_v[t] = sh_v[t + s]; sh_i[t] = sh_i[t + s]; }
            barrier();
        }
        prev_v = sh_v[0];
        prev_i = sh_i[0];
        if (t == 0) data_d[d0 + j] = int(prev_i);
        barrier();
    }
}
