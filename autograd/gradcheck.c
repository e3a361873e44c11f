/*
 * gradcheck.c - ga_gradcheck: analytic gradients against central finite differences.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggmlc.h"
#include "optimizer.h"
#include "autograd-impl.h"

/* sum(f(inputs) * w) on the host, in double; NAN on failure. */
static double weighted_value(ga_function f, ga_tensor *const *inputs, int n, void *user,
                             const float *w, size_t nw) {
    ga_tensor *out = f(inputs, n, user);
    if (!out || (size_t)ga_numel(out) != nw) {
        ga_release(out);
        return NAN;
    }
    float *v = malloc(nw * sizeof *v);
    double s = NAN;
    if (v && ga_to_host(out, v, nw) == GGMLC_OK) {
        s = 0;
        for (size_t i = 0; i < nw; i++) s += (double)v[i] * w[i];
    }
    free(v);
    ga_release(out);
    return s;
}

/* The analytic gradient of sum(f * w) for every input into grads[i] (host arrays). */
static enum ggmlc_status analytic(ga_function f, ga_tensor *const *inputs, int n, void *user,
                                  float **w, size_t *nw, float **grads) {
    for (int i = 0; i < n; i++) ga_zero_grad(inputs[i]);
    ga_tensor *out = f(inputs, n, user);
    if (!out) return ggmlc_last_status();
    *nw = (size_t)ga_numel(out);
    *w = malloc(*nw * sizeof **w);
    if (!*w) return ggmlc_set_error(GGMLC_ERR_NOMEM, "ga_gradcheck: out of memory");
    struct ggmlc_rng rng;
    ggmlc__rng_seed(&rng, 1234);
    for (size_t i = 0; i < *nw; i++) (*w)[i] = 0.5f + ggmlc__rng_uniform(&rng);
    int64_t shape[GA_MAX_DIMS];
    int nd = ga_shape(out, shape);
    ga_tensor *wt = ga_from_array(ga_device_of(out), *w, *nw, nd, shape);
    ga_tensor *prod = ga_mul(out, wt), *loss = ga_sum(prod);
    enum ggmlc_status st = loss ? ga_backward(loss) : ggmlc_last_status();
    ga_release(loss);
    ga_release(prod);
    ga_release(wt);
    ga_release(out);
    for (int i = 0; i < n && st == GGMLC_OK; i++) {
        if (!inputs[i]->requires_grad) continue;
        size_t len = (size_t)ga_numel(inputs[i]);
        grads[i] = calloc(len, sizeof *grads[i]);
        if (!grads[i]) return ggmlc_set_error(GGMLC_ERR_NOMEM, "ga_gradcheck: out of memory");
        if (inputs[i]->grad) st = ga_to_host(inputs[i]->grad, grads[i], len);
    }
    return st;
}

/* Compare input k's analytic gradient with finite differences, element by element. */
static enum ggmlc_status numeric_check(ga_function f, ga_tensor *const *inputs, int n, void *user,
                                       int k, const float *w, size_t nw, const float *grad,
                                       float eps, float atol, float rtol) {
    size_t len = (size_t)ga_numel(inputs[k]);
    int64_t shape[GA_MAX_DIMS];
    int nd = ga_shape(inputs[k], shape);
    float *x = malloc(len * sizeof *x);
    ga_tensor **in = malloc((size_t)n * sizeof *in);
    enum ggmlc_status st = x && in ? ga_to_host(inputs[k], x, len) : GGMLC_ERR_NOMEM;
    if (in) memcpy(in, inputs, (size_t)n * sizeof *in);
    for (size_t e = 0; e < len && st == GGMLC_OK; e++) {
        double v[2];
        for (int side = 0; side < 2; side++) {
            float keep = x[e];
            x[e] = keep + (side ? -eps : eps);
            in[k] = ga_from_array(ga_device_of(inputs[k]), x, len, nd, shape);
            x[e] = keep;
            v[side] = in[k] ? weighted_value(f, in, n, user, w, nw) : NAN;
            ga_release(in[k]);
        }
        double num = (v[0] - v[1]) / (2.0 * eps);
        if (!(fabs(num - grad[e]) <= atol + rtol * fabs(num)))
            st = ggmlc_set_error(GGMLC_ERR_INTERNAL,
                                 "ga_gradcheck: input %d element %zu: analytic %.6g, numeric %.6g",
                                 k, e, grad[e], num);
    }
    free(x);
    free(in);
    return st;
}

enum ggmlc_status ga_gradcheck(ga_function f, ga_tensor *const *inputs, int n_inputs, void *user,
                               float eps, float atol, float rtol) {
    if (!f || !inputs || n_inputs < 1 || !(eps > 0))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_gradcheck: bad arguments");
    for (int i = 0; i < n_inputs; i++)
        if (!ggmlc__ga_check(inputs[i], "ga_gradcheck")) return ggmlc_last_status();
    float **grads = calloc((size_t)n_inputs, sizeof *grads), *w = NULL;
    size_t nw = 0;
    if (!grads) return ggmlc_set_error(GGMLC_ERR_NOMEM, "ga_gradcheck: out of memory");
    enum ggmlc_status st = analytic(f, inputs, n_inputs, user, &w, &nw, grads);
    bool was = ga_set_grad_enabled(false);
    for (int i = 0; i < n_inputs && st == GGMLC_OK; i++)
        if (inputs[i]->requires_grad)
            st = numeric_check(f, inputs, n_inputs, user, i, w, nw, grads[i], eps, atol, rtol);
    ga_set_grad_enabled(was);
    for (int i = 0; i < n_inputs; i++) free(grads[i]);
    free(grads);
    free(w);
    return st;
}
