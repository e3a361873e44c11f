// Push constants and bindings shared by the mul_mat_id shaders (mm-id.comp,
// mv-id.comp, mvq-dot.comp's MVQ_ID variants): d[m, slot, t] = sum_k as[k, m,
// ids[slot, t]] * b[k, slot % ne11, t].  Strides are in elements of each binding's
// array type (16-bit words for quantized weights); the expert matrices are nb02
// apart.  An includer that declares the weights itself defines MM_ID_OWN_A.  The push
// layout is struct vk_pc_mm_id of push-constants.h (shared with the plugin's C).
#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_mm_id);

#ifndef MM_ID_OWN_A
#ifdef QTYPE
layout(binding = 0) readonly buffer A { QUNIT_T data_a[]; };
#else
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
#endif
#endif
layout(binding = 1) readonly buffer B { float data_b[]; };
layout(binding = 2) readonly buffer I { int data_i[]; };
layout(binding = 3) writeonly buffer D { float data_d[]; };
#define INDEX_CHECK_BINDING 4
#include "index-check.glsl"
#if defined(QTYPE) && !defined(MM_ID_OWN_A)
#include "quant.glsl"
#endif

// Expert of pair q = slot + n_used * t (its position in ids); an id outside the experts is
// reported and reads as n_as (its pair's output rows are zeros).
uint expert_of(uint q) {
    const int id = data_i[p.off_i + (q % p.n_used) * p.nbi0 + (q / p.n_used) * p.nbi1];
    return index_in_range(q, id, p.n_as) ? uint(id) : p.n_as;
}
// First element of pair q's activation row in data_b, and of its output row in data_d.
uint b_row_of(uint q) { return p.off_b + ((q % p.n_used) % p.ne11) * p.nb11 + (q / p.n_used) * p.nb12; }
uint d_row_of(uint q) { return p.off_d + (q % p.n_used) * p.nb1 + (q / p.n_used) * p.nb2; }
