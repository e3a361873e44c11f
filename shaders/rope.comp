#version 450
// Rotary position embedding, forward or backward (rotation by -theta), with
// YaRN scaling and optional frequency factors.  One invocation per pair of
// elements; elements past n_dims are copied.  Modes (push word mode):
//   0 normal   pairs (2k, 2k+1)
//   1 NeoX     pairs (k, k + n_dims/2)
//   2 multi-section (NeoX pairs): pair k takes its position from component c of
//     four (t, h, w, e) by the section k % sum(sections) falls in
//   3 interleaved multi-section: components cycle t, h, w within the sections
//   4 vision   pairs (k, k + n_dims) over the whole row; the exponent restarts
//     at each section
// SET_ROWS (rope_f32_set_rows_<cache type>_<index type>; modes 0 and 1): the
// set_rows that follows the rope in the graph comes along (vk-fuse.c): token i2's
// rotated row (all heads, contiguous) is also written into row idx[i2] of the
// cache c, its index checked as set_rows checks it.  Push words s0..s3, which only
// the multi-section modes use, then hold idx's and c's offsets, c's row stride
// and its number of rows.
#include "types.glsl"
#include "activations.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
layout(binding = 1) readonly buffer P { int data_p[]; };
layout(binding = 2) readonly buffer F { float data_f[]; };
layout(binding = 3) writeonly buffer D { STORAGE_T(A_TYPE) data_d[]; };
#ifdef SET_ROWS
layout(binding = 4) readonly buffer I { int data_i[]; };
layout(binding = 5) writeonly buffer C { STORAGE_T(C_TYPE) data_c[]; };
#define INDEX_CHECK_BINDING 6
#include "index-check.glsl"
#endif

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_rope);

const uint NO_ROW = 0xffffffffu;
uint c_row = NO_ROW; // SET_ROWS: where element 0 of this invocation's head goes in c

// Element e of the row at d_row is v (and of c's row, with SET_ROWS).
void put(uint d_row, uint e, float v) {
    data_d[d_row + e * p.nb0] = FROM_F32(A_TYPE, v);
#ifdef SET_ROWS
    if (c_row != NO_ROW) data_c[c_row + e] = FROM_F32(C_TYPE, v);
#endif
}

#ifdef SET_ROWS
// Where head i1 of token i2 goes in c, or NO_ROW for an index out of range (reported).
uint cache_row(uint i1, uint i2) {
#ifdef I64
    const uint lo = uint(data_i[2 * (p.s0 + i2)]), hi = uint(data_i[2 * (p.s0 + i2) + 1]);
    if (!index64_in_range(i2, lo, hi, p.s3)) return NO_ROW;
    const uint row = lo;
#else
    const int v = data_i[p.s0 + i2];
    if (!index_in_range(i2, v, p.s3)) return NO_ROW;
    const uint row = uint(v);
#endif
    return p.s1 + row * p.s2 + i1 * p.ne00;
}
#endif

// For pair k of a multi-section mode: the position component and the exponent of theta_scale.
void multi_section(uint k, out uint comp, out uint expo) {
    const uint total = p.s0 + p.s1 + p.s2 + p.s3, sector = k % total;
    const uint start1 = p.s0, start2 = p.s0 + p.s1, start3 = p.s0 + p.s1 + p.s2;
    if (p.mode == 3) {
        const uint m = sector % 3;
        comp = m == 1 && sector < 3 * p.s1 ? 1 : (m == 2 && sector < 3 * p.s2 ? 2 : (m == 0 && sector < 3 * p.s0 ? 0 : 3));
    } else {
        comp = sector < start1 ? 0 : (sector < start2 ? 1 : (sector < start3 ? 2 : 3));
    }
    const uint start = comp == 0 ? 0 : (comp == 1 ? start1 : (comp == 2 ? start2 : start3));
    expo = p.mode == 4 ? sector - start : k;
}

void main() {
    const uint idx = linear_id(256);
    const uint half_ne0 = p.ne00 / 2;
    if (idx >= half_ne0 * p.ne01 * p.ne02 * p.ne03) return;
    const uint ip = idx % half_ne0, r = idx / half_ne0;
    const uint i1 = r % p.ne01, i2 = (r / p.ne01) % p.ne02, i3 = r / (p.ne01 * p.ne02);
    const uint a_row = p.off_a + i1 * p.nb01 + i2 * p.nb02 + i3 * p.nb03;
    const uint d_row = p.off_d + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3;
#ifdef SET_ROWS
    c_row = cache_row(i1, i2);
#endif
    if (p.mode != 4 && 2 * ip >= p.n_dims) {
        put(d_row, 2 * ip, TO_F32(A_TYPE, data_a[a_row + (2 * ip) * p.nb00]));
        put(d_row, 2 * ip + 1, TO_F32(A_TYPE, data_a[a_row + (2 * ip + 1) * p.nb00]));
        return;
    }
    const uint e0 = p.mode == 0 ? 2 * ip : ip;
    const uint e1 = p.mode == 0 ? 2 * ip + 1 : ip + (p.mode == 4 ? p.n_dims : p.n_dims / 2);
    uint comp = 0, expo = ip;
    if (p.mode >= 2) multi_section(ip, comp, expo);
    const float pos = float(data_p[p.off_p + i2 + comp * p.ne02]);
    const float ff = p.has_ff != 0 ? data_f[p.off_f + ip] : 1.0;
    const float theta_extrap = pos * pow(p.theta_scale, float(expo)) / ff;
    float theta = p.freq_scale * theta_extrap, mscale = p.attn_factor;
    if (p.ext_factor != 0.0) {
        const float y = (float(ip) - p.corr0) / max(0.001, p.corr1 - p.corr0);
        const float mix = (1.0 - min(1.0, max(0.0, y))) * p.ext_factor;
        theta = theta * (1.0 - mix) + theta_extrap * mix;
        mscale *= 1.0 + 0.1 * log(1.0 / p.freq_scale);
    }
    vec2 cs = cos_sin(theta) * mscale;
    if (p.backward != 0) cs.y = -cs.y;
    const float x0 = TO_F32(A_TYPE, data_a[a_row + e0 * p.nb00]), x1 = TO_F32(A_TYPE, data_a[a_row + e1 * p.nb00]);
    put(d_row, e0, x0 * cs.x - x1 * cs.y);
    put(d_row, e1, x0 * cs.y + x1 * cs.x);
}
