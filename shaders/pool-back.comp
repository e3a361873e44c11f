#version 450
// pool_2d_back: the gradient of pool_2d, gathered per input element: the sum,
// over the windows (oy, ox ascending, the CPU's order) that contain it, of the
// window's gradient divided by the window area (avg), or the whole gradient
// when this element is the window's first maximum (max).  Padded positions are
// skipped by max and count as zeros for avg, as in the forward pass.
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer DY { float data_dy[]; };
layout(binding = 1) readonly buffer X { STORAGE_T(A_TYPE) data_x[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_pool_back);

// Whether (x, y) is the first maximum of window (ox, oy) of plane base.
bool is_window_max(uint base, int ox, int oy, int x, int y) {
    float best = 0.0;
    int bx = -1, by = -1;
    const int x0 = ox * p.s0 - p.p0, y0 = oy * p.s1 - p.p1;
    for (int yy = max(y0, 0); yy < min(y0 + p.k1, int(p.IH)); yy++)
        for (int xx = max(x0, 0); xx < min(x0 + p.k0, int(p.IW)); xx++) {
            const float v = TO_F32(A_TYPE, data_x[base + uint(xx) * p.nx0 + uint(yy) * p.nx1]);
            if (bx < 0 || v > best) { best = v; bx = xx; by = yy; }
        }
    return bx == x && by == y;
}

// First and last window index along one axis whose window covers position i.
ivec2 windows_covering(int i, int k, int s, int pad, int n_out) {
    const int num = i + pad - k + 1;
    const int lo = num <= 0 ? 0 : (num + s - 1) / s;
    return ivec2(lo, min((i + pad) / s, n_out - 1));
}

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.IW * p.IH * p.C * p.N) return;
    const uint x = idx % p.IW, r = idx / p.IW;
    const uint y = r % p.IH, i2 = (r / p.IH) % p.C, i3 = r / (p.IH * p.C);
    const uint xbase = p.off_x + i2 * p.nx2 + i3 * p.nx3, ybase = p.off_dy + i2 * p.ny2 + i3 * p.ny3;
    const ivec2 wx = windows_covering(int(x), p.k0, p.s0, p.p0, int(p.OW));
    const ivec2 wy = windows_covering(int(y), p.k1, p.s1, p.p1, int(p.OH));
    const float inv_area = 1.0 / float(p.k0 * p.k1);
    float sum = 0.0;
    for (int oy = wy.x; oy <= wy.y; oy++)
        for (int ox = wx.x; ox <= wx.y; ox++) {
            const float g = data_dy[ybase + uint(ox) * p.ny0 + uint(oy) * p.ny1];
            if (p.avg != 0) sum += g * inv_area;
            else if (is_window_max(xbase, ox, oy, int(x), int(y))) sum += g;
        }
    data_d[p.off_d + x * p.nd0 + y * p.nd1 + i2 * p.nd2 + i3 * p.nd3] = sum;
}
