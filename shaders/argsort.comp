#version 450
// argsort / top_k of f32 rows: a bitonic sort of (value, index) pairs in
// shared memory, one workgroup per row of at most 2048 values (padded to a
// power of two with entries that always sort last).  Ties keep index order,
// so the result is the stable order.  The first ne0(d) indices are written.
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { float data_a[]; };
layout(binding = 1) writeonly buffer D { int data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_argsort);

shared float key[2048];
shared int idx[2048];

// whether entry x goes before entry y
bool first(uint x, uint y) {
    const int ix = idx[x], iy = idx[y];
    if (ix < 0) return false;
    if (iy < 0) return true;
    const float kx = key[x], ky = key[y];
    if (kx == ky) return ix < iy;
    return p.desc != 0 ? kx > ky : kx < ky;
}

void main() {
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= p.ne01 * p.ne02 * p.ne03) return;
    const uint i1 = row % p.ne01, i2 = (row / p.ne01) % p.ne02, i3 = row / (p.ne01 * p.ne02), t = gl_LocalInvocationID.x;
    const uint a0 = p.off_a + i1 * p.nb01 + i2 * p.nb02 + i3 * p.nb03;
    for (uint i = t; i < p.npad; i += 256) {
        const bool real = i < p.ne00;
        key[i] = real ? data_a[a0 + i * p.nb00] : 0.0;
        idx[i] = real ? int(i) : -1;
    }
    barrier();
    for (uint k = 2; k <= p.npad; k <<= 1) {
        for (uint j = k >> 1; j > 0; j >>= 1) {
            for (uint i = t; i < p.npad; i += 256) {
                const uint l = i ^ j;
                if (l > i) {
                    const bool up = (i & k) == 0;
                    if (up ? first(l, i) : first(i, l)) {
                        const float tk = key[i]; key[i] = key[l]; key[l] = tk;
                        const int ti = idx[i]; idx[i] = idx[l]; idx[l] = ti;
                    }
                }
            }
            barrier();
        }
    }
    const uint d0 = p.off_d + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3;
    for (uint i = t; i < p.ne0; i += 256) data_d[d0 + i] = idx[i];
}
