#version 450
// ssm_scan (Mamba 1 and 2): for each sequence q, from the state of slot
// ids[q], each (channel d, head h) runs over the tokens: delta = softplus(dt),
// st[n] = st[n] exp(delta A[n or 0, h]) + B[n, g, t, q] x[d, h, t, q] delta,
// y[d, h, t, q] = sum_n st[n] C[n, g, t, q] (g = the head's group).  The result
// holds y, then each sequence's final state.  One invocation per (d, h, q), for
// tokens [t_begin, t_end): the host splits long sequences into several dispatches
// (lavapipe stops an invocation's loops after 65535 iterations in all); the state
// carries over in the result.
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer S { float data_s[]; };
layout(binding = 1) readonly buffer X { float data_x[]; };
layout(binding = 2) readonly buffer DT { float data_dt[]; };
layout(binding = 3) readonly buffer A { float data_a[]; };
layout(binding = 4) readonly buffer B { float data_b[]; };
layout(binding = 5) readonly buffer C { float data_c[]; };
layout(binding = 6) readonly buffer I { int data_i[]; };
layout(binding = 7) buffer D { float data_d[]; };
#define INDEX_CHECK_BINDING 8
#include "index-check.glsl"

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_ssm_scan);

float softplus(float v) { return v > 20.0 ? v : log(1.0 + exp(v)); }

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.head_dim * p.n_head * p.n_seqs) return;
    const uint d = idx % p.head_dim, h = (idx / p.head_dim) % p.n_head, q = idx / (p.head_dim * p.n_head);
    const uint row = (h * p.head_dim + d) * p.d_state;
    const uint st0 = p.off_d + p.head_dim * p.n_head * p.n_tok * p.n_seqs + q * p.d_state * p.head_dim * p.n_head + row;
    const int slot = data_i[p.off_i + q * p.ni0];
    if (!index_in_range(q, slot, p.n_slots)) return; // reported: the graph fails, as the CPU's does
    const uint g = h / (p.n_head / p.n_group);
    for (uint t = p.t_begin; t < p.t_end; t++) {
        const float delta = softplus(data_dt[p.off_dt + h + t * p.ndt1 + q * p.ndt2]);
        const float x_dt = data_x[p.off_x + d + h * p.nx1 + t * p.nx2 + q * p.nx3] * delta;
        const uint b0 = p.off_b + g * p.nb1 + t * p.nb2 + q * p.nb3, c0 = p.off_c + g * p.nc1 + t * p.nc2 + q * p.nc3;
        float sum = 0.0;
        for (uint n = 0; n < p.d_state; n++) {
            const float decay = exp(delta * data_a[p.off_a + (p.scalar_decay != 0 ? 0 : n) + h * p.na1]);
            const float prev = t == 0 ? data_s[p.off_s + uint(slot) * p.ns3 + row + n] : data_d[st0 + n];
            const float st = prev * decay + data_b[b0 + n] * x_dt;
            data_d[st0 + n] = st;
            sum += st * data_c[c0 + n];
        }
        data_d[p.off_d + ((q * p.n_tok + t) * p.n_head + h) * p.head_dim + d] = sum;
    }
}
