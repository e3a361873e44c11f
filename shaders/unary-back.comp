#version 450
// UNARY_BACK: d = dy * f'(x) for the activation f named by op (a VK_UN_* code),
// x, dy and d of one shape (f32, any strides).  p0..p3 carry xIELU's parameters.
// Piecewise-constant functions (sgn, step, floor, ceil, round, trunc) have a zero gradient.
#include "types.glsl"
#include "op-codes.h"
#include "activations.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer X { float data_x[]; };
layout(binding = 1) readonly buffer DY { float data_dy[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_unary_back);

float derivative(float x) {
    switch (p.op) {
    case VK_UN_ABS: return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0);
    case VK_UN_NEG: return -1.0;
    case VK_UN_TANH: { const float t = tanh(clamp(x, -15.0, 15.0)); return 1.0 - t * t; }
    case VK_UN_ELU: return x > 0.0 ? 1.0 : exp(x);
    case VK_UN_RELU: return x > 0.0 ? 1.0 : 0.0;
    case VK_UN_SIGMOID: { const float s = sigmoid(x); return s * (1.0 - s); }
    case VK_UN_GELU: {
        const float c = 0.7978845608028654, k = 0.044715;
        const float t = tanh(clamp(c * (x + k * x * x * x), -15.0, 15.0));
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * k * x * x);
    }
    case VK_UN_GELU_ERF: return 0.5 * (1.0 + erf_approx(x * 0.7071067811865476)) + x * exp(-0.5 * x * x) * 0.3989422804014327;
    case VK_UN_GELU_QUICK: { const float s = sigmoid(1.702 * x); return s + 1.702 * x * s * (1.0 - s); }
    case VK_UN_SILU: { const float s = sigmoid(x); return s * (1.0 + x * (1.0 - s)); }
    case VK_UN_HARDSWISH: return x <= -3.0 ? 0.0 : (x >= 3.0 ? 1.0 : (2.0 * x + 3.0) / 6.0);
    case VK_UN_HARDSIGMOID: return x > -3.0 && x < 3.0 ? 1.0 / 6.0 : 0.0;
    case VK_UN_EXP: case VK_UN_EXPM1: return exp(x);
    case VK_UN_SOFTPLUS: return sigmoid(x);
    case VK_UN_XIELU: return x > 0.0 ? 2.0 * p.p1 * x + p.p2 : (x < p.p3 ? exp(x) - 1.0 : -1.0) * p.p0 + p.p2;
    default: return 0.0;
    }
}

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.ne0 * p.ne1 * p.ne2 * p.ne3) return;
    const uint i0 = idx % p.ne0, r = idx / p.ne0;
    const uint i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    const float x = data_x[p.off_x + i0 * p.nx0 + i1 * p.nx1 + i2 * p.nx2 + i3 * p.nx3];
    const float dy = data_dy[p.off_dy + i0 * p.ny0 + i1 * p.ny1 + i2 * p.ny2 + i3 * p.ny3];
    data_d[p.off_d + i0 * p.nd0 + i1 * p.nd1 + i2 * p.nd2 + i3 * p.nd3] = dy * derivative(x);
}
