#version 450
// SAM's window helpers as gathers, one invocation per element of d:
//   mode 0 win_part:   d[c, i, j, win] = a[c, (win % npx) w + i, (win / npx) w + j] (0 past a's edge)
//   mode 1 win_unpart: d[c, x, y] = a[c, x % w, y % w, (y / w) npx + x / w]
//   mode 2 get_rel_pos: d[c, k, q] = a[c, q - k + kh - 1], kh = d's ne1
// Types by A_TYPE (a and d alike: f32, f16, bf16).
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
layout(binding = 1) writeonly buffer D { STORAGE_T(A_TYPE) data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_window);

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.ne0 * p.ne1 * p.ne2 * p.ne3) return;
    const uint c = idx % p.ne0, r = idx / p.ne0;
    const uint i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    uint j1, j2, j3 = 0;
    bool inside = true;
    if (p.mode == 0) {
        j1 = (i3 % p.npx) * p.w + i1;
        j2 = (i3 / p.npx) * p.w + i2;
        inside = j1 < p.ne01 && j2 < p.ne02;
    } else if (p.mode == 1) {
        j1 = i1 % p.w;
        j2 = i2 % p.w;
        j3 = (i2 / p.w) * p.npx + i1 / p.w;
    } else {
        j1 = i2 + p.ne1 - 1 - i1;
        j2 = 0;
    }
    const uint at = p.off_d + c * p.nd0 + i1 * p.nd1 + i2 * p.nd2 + i3 * p.nd3;
    if (inside) data_d[at] = data_a[p.off_a + c * p.na0 + j1 * p.na1 + j2 * p.na2 + j3 * p.na3];
    else data_d[at] = FROM_F32(A_TYPE, 0.0);
}
