// activations.glsl - scalar activation functions shared by unary.comp,
// glu.comp and unary-back.comp (f32 arithmetic).

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
