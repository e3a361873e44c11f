// mvq-dot-rows.glsl - the row loop and main() of the integer-dot matrix-vector kernels,
// included after the format's unit, unit_load and unit_term (mvq-dot.glsl).

// RW rows of d from m0 on
void rows(const uint m0) {
    const uint blocks = p.K / 32;
#ifdef MVQ_ID
    // pair q = slot + n_used * token: its expert's weights, b's column (slot % ne11, token), d's row
    const uint q = gl_WorkGroupID.z, e = expert_of(q), d_at = d_row_of(q), nb1 = 0;
    if (e >= p.n_as) { // an id outside the experts: zeros
        if (gl_LocalInvocationID.x < RW && m0 + gl_LocalInvocationID.x < p.M) data_d[d_at + m0 + gl_LocalInvocationID.x] = 0.0;
        return;
    }
    const uint a_base = p.off_a + e * p.nb02, col0 = (q / p.n_used) * p.ne11 + (q % p.n_used) % p.ne11;
#else
    const uint b2 = gl_WorkGroupID.z % p.ne12, b3 = gl_WorkGroupID.z / p.ne12;
    const uint a_base = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03;
    const uint col0 = gl_WorkGroupID.z * NC; // b's first column of this batch
    const uint d_at = p.off_d + b2 * p.nb2 + b3 * p.nb3, nb1 = p.nb1;
#endif
    float acc[RW][NC];
    [[unroll]] for (uint r = 0; r < RW; r++)
        [[unroll]] for (uint j = 0; j < NC; j++) acc[r][j] = 0.0;
    for (uint u = gl_LocalInvocationID.x; u < p.K / UNIT_VALUES; u += WG) {
        unit x[RW];
        // rows past the end re-read the last one; their sums are not stored
        [[unroll]] for (uint r = 0; r < RW; r++) unit_load(a_base + min(m0 + r, p.M - 1) * p.nb01, u, x[r]);
        [[unroll]] for (uint j = 0; j < NC; j++) {
            const b_blocks b = load_b((B_FIRST_COL(col0) + j) * blocks + u * UNIT_BLOCKS);
            [[unroll]] for (uint r = 0; r < RW; r++) acc[r][j] += unit_term(x[r], u, b);
        }
    }
    store_rows(m0, d_at, nb1, acc);
}

// Fewer workgroups than row groups (a tuning choice) take every so many in turn.
void main() {
#ifdef UNIT_INIT
    unit_init(); // shared tables of the format
#endif
#ifdef MVQ_SELF_Q8
    quantize_b_shared();
#endif
#if defined(UNIT_INIT) || defined(MVQ_SELF_Q8)
    barrier();
#endif
    const uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * RW;
    for (uint m0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * RW; m0 < p.M; m0 += stride) {
        rows(m0);
        barrier(); // red is taken again
    }
}
