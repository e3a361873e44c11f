#version 450
// flash_attn_ext with split keys (flash-attn.comp): one workgroup per (query, head, batch) row
// adds the NS partial results of its row, each scaled from its own maximum to the row's:
// d = sum_s exp(m_s - m) acc_s / (sum_s exp(m_s - m) l_s + exp(sink - m)), m the largest of the
// m_s and the head's sink (when given); a row whose keys are all masked and has no sink is 0,
// as the unsplit kernel makes it.
layout(local_size_x = 128) in;
layout(binding = 0) readonly buffer P { float data_p[]; }; // per (row, split): DV sums, maximum, normaliser
layout(binding = 1) readonly buffer S { float data_s[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_fattn_combine);

shared float weight[64]; // exp(m_s - m) of each split (NS <= 64: ATTN_SPLIT_MAX in ops-nn.c), 0 for empty ones

void main() {
    const uint r = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
    if (r >= p.rows) return;
    const uint ps = p.DV + 2, base = r * p.NS * ps, d0 = p.off_d + r * p.DV;
    const float NEG_INF = -1.0 / 0.0;
    float m = p.sinks != 0 ? data_s[p.off_s + r % p.H] : NEG_INF;
    for (uint s = 0; s < p.NS; s++) m = max(m, data_p[base + s * ps + p.DV]);
    if (t < p.NS) {
        const float ms = data_p[base + t * ps + p.DV];
        weight[t] = ms != NEG_INF ? exp(ms - m) : 0.0;
    }
    barrier();
    float l = p.sinks != 0 && m != NEG_INF ? exp(data_s[p.off_s + r % p.H] - m) : 0.0;
    for (uint s = 0; s < p.NS; s++) l += weight[s] * data_p[base + s * ps + p.DV + 1];
    const float inv = l > 0.0 ? 1.0 / l : 0.0;
    for (uint c = t; c < p.DV; c += 128) {
        float v = 0.0;
        for (uint s = 0; s < p.NS; s++) v += weight[s] * data_p[base + s * ps + c];
        data_d[d0 + c] = v * inv;
    }
}
