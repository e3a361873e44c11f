// activations.glsl - scalar functions shared by the shaders (f32 arithmetic):
// activations (unary.comp, glu.comp, unary-back.comp) and cos/sin of large
// angles (rope.comp, timestep.comp).

// erf with |error| < 1.5e-7 (Abramowitz and Stegun 7.1.26)
float erf_approx(float x) {
    const float t = 1.0 / (1.0 + 0.3275911 * abs(x));
    const float y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-x * x);
    return sign(x) * y;
}

float gelu_tanh(float x) {
    const float inner = 0.7978845608028654 * x * (1.0 + 0.044715 * x * x);
    return 0.5 * x * (1.0 + tanh(clamp(inner, -15.0, 15.0)));
}

float sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }

// exp(x) - 1 without the cancellation of exp(x) - 1.0 near 0 (series below 1e-3)
float expm1_f(float x) {
    if (abs(x) < 1e-3) return x * (1.0 + x * (0.5 + x * (1.0 / 6.0 + x * (1.0 / 24.0))));
    return exp(x) - 1.0;
}

// xIELU: alpha_n, alpha_p, beta, eps as stored by ggml_xielu (already constrained)
float xielu(float x, float alpha_n, float alpha_p, float beta, float eps) {
    if (x > 0.0) return alpha_p * x * x + beta * x;
    return (expm1_f(min(x, eps)) - x) * alpha_n + beta * x;
}

// cos and sin of theta reduced to [-pi, pi] with a two-part 2*pi, so that large
// angles (long positions, timesteps) keep their precision on every driver
vec2 cos_sin(float theta) {
    const float k = round(theta * 0.15915494309189535);
    float r = fma(-k, 6.28318548202514648, theta);
    r = fma(-k, -1.7484556e-7, r);
    return vec2(cos(r), sin(r));
}
