#version 450
// Matrix-vector product (N <= 8 columns of b) with q4_0 or q8_0 weights, laid
// out like mv.comp: a workgroup computes R rows of d, and its threads walk
// along k together.  LPB lanes share a block, each taking 4 of its quant bytes
// (q8_0: 8 lanes, 4 values each; q4_0: 4 lanes, 8 values each), so the lanes
// of a subgroup read a few neighbouring blocks with neighbouring 16-bit loads
// (coalesced, although blocks are 18 or 34 bytes), and b with 16-byte loads,
// reused for the R rows.  Sums: per subgroup, then across subgroups.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "types.glsl"
#include "mm-push.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint R = 2;     // rows of d per workgroup
layout(constant_id = 2) const uint NC = 1;    // columns of b = N (1..8)
layout(constant_id = 3) const uint BVEC = 0;  // 1: b's offset and strides are multiples of 4 floats
layout(constant_id = 4) const uint CONVERT = 0; // quants to floats: 0 bit tricks, 1 int-to-float (quant-float.glsl)
layout(local_size_x_id = 0) in;

#if QTYPE == 2
#define QWORDS 9
#define LPB 4u    // lanes per block; each has 8 values (4 low and 4 high nibbles)
#define VALS 8
#elif QTYPE == 8
#define QWORDS 17
#define LPB 8u    // each has 4 values
#define VALS 4
#else
#error "mvq-lanes.comp: q4_0 (2) or q8_0 (8) only"
#endif

layout(binding = 0) readonly buffer A { uint16_t data_a[]; };  // offsets and strides in halfwords
layout(binding = 1) readonly buffer B { float data_b[]; };
layout(binding = 1) readonly buffer B4 { vec4 data_b4[]; };    // the same, 16 bytes at a time
layout(binding = 2) writeonly buffer D { float data_d[]; };

#include "quant-float.glsl"

shared float red[32 * R * NC]; // [subgroup][row * NC + column], at most 32 subgroups

float x[NC][VALS];   // the values of b this lane multiplies, per column
float xsum[NC];      // their sum (q4_0: the -8 offset is applied once per block)

// b values k0 .. k0+3 of column j into x[j][o .. o+3]
void load_x4(uint j, uint at, uint o) {
    if (BVEC == 1) {
        const vec4 v = data_b4[at / 4];
        x[j][o] = v.x; x[j][o + 1] = v.y; x[j][o + 2] = v.z; x[j][o + 3] = v.w;
    } else {
        [[unroll]] for (uint e = 0; e < 4; e++) x[j][o + e] = data_b[at + e];
    }
}

// this lane's part of the block at halfword h: the dot of its values with x[j], unscaled
float lane_dot(uint h, uint slot, uint j) {
    const uint q = uint(data_a[h + 1 + 2 * slot]) | (uint(data_a[h + 2 + 2 * slot]) << 16);
#if QTYPE == 8
    // XOR 0x80 makes the signed bytes v + 128 in 0..255
    const uint u = q ^ 0x80808080u;
    float s = 0.0;
    [[unroll]] for (uint k = 0; k < 4; k++) s = fma(quant_f((u >> (8 * k)) & 0xffu, 128.0), x[j][k], s);
    return s;
#else
    const uint lo = q & 0x0f0f0f0fu, hi = (q >> 4) & 0x0f0f0f0fu;
    float s0 = 0.0, s1 = 0.0;
    [[unroll]] for (uint k = 0; k < 4; k++) {
        s0 = fma(quant_f((lo >> (8 * k)) & 0xffu, 0.0), x[j][k], s0);
        s1 = fma(quant_f((hi >> (8 * k)) & 0xffu, 0.0), x[j][4 + k], s1);
    }
    return (s0 + s1) - 8.0 * xsum[j];
#endif
}

void main() {
    const uint m0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * R;
    if (m0 >= p.M) return;
    const uint tid = gl_LocalInvocationID.x, slot = tid % LPB, first = tid / LPB, per_step = WG / LPB;
    const uint b2 = gl_WorkGroupID.z % p.ne12, b3 = gl_WorkGroupID.z / p.ne12;
    const uint a_base = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03;
    const uint b_base = p.off_b + b2 * p.nb12 + b3 * p.nb13;
    float acc[R * NC];
    [[unroll]] for (uint i = 0; i < R * NC; i++) acc[i] = 0.0;
    for (uint blk = first; blk < p.K / 32; blk += per_step) {
        [[unroll]] for (uint j = 0; j < NC; j++) {
            const uint at = b_base + j * p.nb11 + blk * 32 + 4 * slot;
            load_x4(j, at, 0);
#if QTYPE == 2
            load_x4(j, at + 16, 4);
            xsum[j] = ((x[j][0] + x[j][1]) + (x[j][2] + x[j][3])) + ((x[j][4] + x[j][5]) + (x[j][6] + x[j][7]));
#endif
        }
        [[unroll]] for (uint r = 0; r < R; r++) {
            // rows past the end re-read the last one; their sums are not stored
            const uint h = a_base + min(m0 + r, p.M - 1) * p.nb01 + blk * QWORDS;
            const float d = unpackHalf2x16(uint(data_a[h])).x;
            [[unroll]] for (uint j = 0; j < NC; j++) acc[r * NC + j] = fma(d, lane_dot(h, slot, j), acc[r * NC + j]);
        }
    }
    [[unroll]] for (uint i = 0; i < R * NC; i++) {
        const float s = subgroupAdd(acc[i]);
        if (subgroupElect()) red[gl_SubgroupID * R * NC + i] = s;
    }
    barrier();
    if (tid < R * NC && m0 + tid / NC < p.M) {
        float total = 0.0;
        for (uint sg = 0; sg < gl_NumSubgroups; sg++) total += red[sg * R * NC + tid];
        data_d[p.off_d + b2 * p.nb2 + b3 * p.nb3 + (tid % NC) * p.nb1 + m0 + tid / NC] = total;
    }
}
