#version 450
// solve_tri: one triangular system per right-hand side v and batch (i2, i3),
// solved by substitution in dependency order (forward or backward).  The C
// side folds left/right solves into strides: A(p, q) = a[p*a_p + q*a_q],
// b(p) = b[p*b_p + v*b_v], x(p) = d[p*x_p + v*x_v].  f32.
#include "types.glsl"

layout(local_size_x = 64) in;
layout(binding = 0) readonly buffer A { float data_a[]; };
layout(binding = 1) readonly buffer B { float data_b[]; };
layout(binding = 2) buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_solve_tri);

void main() {
    const uint idx = linear_id(64);
    if (idx >= p.n_rhs * p.ne2 * p.ne3) return;
    const uint v = idx % p.n_rhs, i2 = (idx / p.n_rhs) % p.ne2, i3 = idx / (p.n_rhs * p.ne2);
    const uint a0 = p.off_a + i2 * p.na2 + i3 * p.na3, b0 = p.off_b + v * p.b_v + i2 * p.nb2 + i3 * p.nb3;
    const uint x0 = p.off_d + v * p.x_v + i2 * p.nd2 + i3 * p.nd3;
    for (uint step = 0; step < p.n; step++) {
        const uint r = p.forward != 0 ? step : p.n - 1 - step;
        float sum = 0.0;
        const uint q0 = p.forward != 0 ? 0 : r + 1, q1 = p.forward != 0 ? r : p.n;
        for (uint q = q0; q < q1; q++) sum += data_a[a0 + r * p.a_p + q * p.a_q] * data_d[x0 + q * p.x_p];
        const float diag = p.unit_diag != 0 ? 1.0 : data_a[a0 + r * (p.a_p + p.a_q)];
        data_d[x0 + r * p.x_p] = (data_b[b0 + r * p.b_p] - sum) / diag;
    }
}
