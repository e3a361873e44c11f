#version 450
// get_rows_back: d[e, r] = sum of dy[e, i] over the i with idx[i] == r (dy
// f32, f16 or bf16 by A_TYPE; d f32), the gradient of get_rows.  Each invocation owns column e of a chunk of
// CHUNK rows: it zeroes them, then adds the gradient rows that land there in
// index order (the CPU's order, so sums round alike; no atomics needed).  The workgroup reads the
// indices together, a tile at a time into shared memory, since every invocation scans all of
// them; CHUNK (a power of two, from the plugin) is small where d is small, so that a
// language model's embedding gradient (256 x 128) still spreads over many invocations.  An index
// outside d's rows adds nothing and is reported (index-check.glsl) by the invocations of chunk 0.
#include "types.glsl"

layout(constant_id = 0) const uint CHUNK = 64;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer DY { STORAGE_T(A_TYPE) data_dy[]; };
layout(binding = 1) readonly buffer I { int data_i[]; };
layout(binding = 2) buffer D { float data_d[]; };
#define INDEX_CHECK_BINDING 3
#include "index-check.glsl"

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_get_rows_back);

shared int tile[256];

void main() {
    const uint idx = linear_id(256), lid = gl_LocalInvocationID.x;
    const uint n_chunks = (p.n_rows + CHUNK - 1) / CHUNK;
    const bool owns_rows = idx < p.ne0 * n_chunks; // the others only help load the tiles
    const uint e = idx % p.ne0, r0 = (idx / p.ne0) * CHUNK, r1 = min(r0 + CHUNK, p.n_rows);
    for (uint r = r0; owns_rows && r < r1; r++) data_d[p.off_d + e * p.nd0 + r * p.nd1] = 0.0;
    for (uint base = 0; base < p.n_idx; base += 256) {
        barrier();
        tile[lid] = base + lid < p.n_idx ? data_i[p.off_i + (base + lid) * p.ni0] : -1;
        barrier();
        const uint n = owns_rows ? min(256u, p.n_idx - base) : 0u;
        for (uint k = 0; k < n; k++) {
            const int r = tile[k];
            if (r0 == 0 && !index_in_range(base + k, r, p.n_rows)) continue;
            if (r < int(r0) || r >= int(r1)) continue;
            data_d[p.off_d + e * p.nd0 + uint(r) * p.nd1] += TO_F32(A_TYPE, data_dy[p.off_dy + e * p.ny0 + (base + k) * p.ny1]);
        }
    }
}
