/*
 * test-autograd-half.c - float16 and bfloat16 eager tensors against PyTorch 1.13
 * (tests/golden/gen_autograd_half.py, data autograd_half.gold): conversions bit for bit on the
 * host and on the device, compound programs (values, gradients and their dtypes, promotion),
 * creators in a dtype, and the errors of mixed or unsupported dtypes.  Runs on the device named
 * by argv[1] (default: the configuration's).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggmlc-autograd-nn.h"
#include "ggmlc-autograd.h"
#include "testutil.h"

#define MAX_IN 5

static ga_device *dev;
static struct gold_set *gold;

static const struct gold_tensor *golden(const char *fmt, const char *a, const char *b) {
    char name[128];
    snprintf(name, sizeof name, fmt, a, b);
    return gold_get(gold, name);
}

static int gold_shape(const struct gold_tensor *g, int64_t shape[4]) {
    int nd = 0;
    for (int i = 0; i < 4; i++)
        if (g->ne[i] > 1) nd = i + 1;
    for (int i = 0; i < nd; i++) shape[i] = g->ne[nd - 1 - i];
    return nd;
}

/* A tensor of dtype from golden float values (already representable in dtype). */
static ga_tensor *from_gold(const struct gold_tensor *g, enum ga_dtype dtype) {
    if (!g) return NULL;
    int64_t shape[4];
    int nd = gold_shape(g, shape);
    enum ga_dtype was = ga_set_default_dtype(dtype);
    ga_tensor *t = ga_from_array(dev, g->data, g->n, nd, shape);
    ga_set_default_dtype(was);
    return t;
}

/* NaN patterns compare as NaN, whatever their payload. */
static bool is_nan_bits(uint16_t b, enum ga_dtype dtype) {
    return dtype == GA_FLOAT16 ? (b & 0x7c00) == 0x7c00 && (b & 0x3ff)
                               : (b & 0x7f80) == 0x7f80 && (b & 0x7f);
}

static bool bits_equal(const uint16_t *got, const struct gold_tensor *want, enum ga_dtype dtype,
                       const char *what) {
    const int32_t *ref = want->data;
    for (size_t i = 0; i < want->n; i++) {
        uint16_t r = (uint16_t)ref[i];
        if (got[i] != r && !(is_nan_bits(got[i], dtype) && is_nan_bits(r, dtype))) {
            const float *v = gold_get(gold, "conv.values")->data;
            tap_diag("%s[%zu] of %.9g: 0x%04x, PyTorch 0x%04x", what, i, v[i], got[i], r);
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------- conversions */

static void test_rounding(enum ga_dtype dtype, const char *bits_name) {
    const struct gold_tensor *v = gold_get(gold, "conv.values");
    const struct gold_tensor *want = gold_get(gold, bits_name);
    if (!v || !want) return;
    uint16_t *got = calloc(v->n, sizeof *got);
    int64_t n = (int64_t)v->n;
    /* on the host, by a creator in the default dtype */
    ga_tensor *h = from_gold(v, dtype);
    bool ok = h && ga_dtype_of(h) == dtype && ga_to_host_raw(h, got, v->n) == GGMLC_OK &&
              bits_equal(got, want, dtype, "host");
    tap_ok(ok, "float32 -> %s on the host equals torch bit for bit (%lld values)",
           ga_dtype_name(dtype), (long long)n);
    /* in the device's graph, by ga_to_dtype */
    memset(got, 0, v->n * sizeof *got);
    ga_tensor *f = ga_from_array(dev, v->data, v->n, 1, &n);
    ga_tensor *d = ga_to_dtype(f, dtype);
    ok = d && ga_dtype_of(d) == dtype && ga_to_host_raw(d, got, v->n) == GGMLC_OK &&
         bits_equal(got, want, dtype, "device");
    tap_ok(ok, "float32 -> %s by ga_to_dtype on %s equals torch bit for bit",
           ga_dtype_name(dtype), ga_device_name(dev));
    ga_release(h);
    ga_release(f);
    ga_release(d);
    free(got);
}

static bool floats_equal(const float *got, const float *ref, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++) {
        bool same = (isnan(got[i]) && isnan(ref[i])) || memcmp(&got[i], &ref[i], 4) == 0;
        if (!same) {
            tap_diag("%s[%zu]: %.9g, PyTorch %.9g", what, i, got[i], ref[i]);
            return false;
        }
    }
    return true;
}

static void test_widening(enum ga_dtype dtype, const char *float_name) {
    const struct gold_tensor *p = gold_get(gold, "conv.patterns");
    const struct gold_tensor *want = gold_get(gold, float_name);
    if (!p || !want) return;
    uint16_t *raw = malloc(p->n * sizeof *raw);
    float *got = malloc(p->n * sizeof *got);
    for (size_t i = 0; i < p->n; i++) raw[i] = (uint16_t)((const int32_t *)p->data)[i];
    int64_t n = (int64_t)p->n;
    ga_tensor *t = ga_from_raw(dev, raw, p->n, dtype, 1, &n);
    bool ok = t && ga_to_host(t, got, p->n) == GGMLC_OK &&
              floats_equal(got, want->data, p->n, "host");
    tap_ok(ok, "%s patterns read as float32 on the host equal torch's (%lld)",
           ga_dtype_name(dtype), (long long)n);
    ga_tensor *f = ga_to_dtype(t, GA_FLOAT32);
    ok = f && ga_dtype_of(f) == GA_FLOAT32 && ga_to_host(f, got, p->n) == GGMLC_OK &&
         floats_equal(got, want->data, p->n, "device");
    tap_ok(ok, "%s -> float32 by ga_to_dtype on %s equals torch's", ga_dtype_name(dtype),
           ga_device_name(dev));
    ga_release(t);
    ga_release(f);
    free(raw);
    free(got);
}

/* ---------------------------------------------------------------- programs */

typedef ga_tensor *(*program)(ga_tensor *const *in);

static ga_tensor *arith(ga_tensor *const *in) {
    ga_tensor *a = in[0], *b = in[1], *c = in[2];
    ga_tensor *num = ga_add(ga_mul(a, b), c);
    ga_tensor *den = ga_add_scalar(ga_mul(b, b), 1.0f);
    return ga_sum_dim(ga_div(num, den), 1, false);
}

static ga_tensor *mlp(ga_tensor *const *in) {
    ga_tensor *h = ga_relu(ga_linear(in[0], in[1], in[2]));
    return ga_tanh(ga_linear(h, in[3], in[4]));
}

static ga_tensor *softmax_exp(ga_tensor *const *in) {
    ga_tensor *s = ga_softmax(ga_mul_scalar(in[0], 0.5f), -1);
    return ga_mean_dim(ga_mul(s, ga_exp(in[1])), 0, false);
}

static ga_tensor *matmul_sigmoid(ga_tensor *const *in) {
    return ga_sigmoid(ga_matmul(in[0], in[1]));
}

static ga_tensor *promotion(ga_tensor *const *in) {
    return ga_add(ga_mul(in[0], in[2]), in[1]);
}

static const struct {
    const char *name;
    program f;
    const char *inputs[MAX_IN];
    const char *f32; /* the inputs kept float32, by position: "011" */
} programs[] = {
    {"arith", arith, {"a", "b", "c"}, "000"},
    {"mlp", mlp, {"x", "w1", "b1", "w2", "b2"}, "00000"},
    {"softmax_exp", softmax_exp, {"a", "b"}, "00"},
    {"matmul_sigmoid", matmul_sigmoid, {"a", "b"}, "00"},
    {"promotion", promotion, {"a", "b", "s"}, "011"},
};

/* Agreement within two units in the last place of dtype, relative to the value (and to 0.05
 * near zero).  bfloat16 runs on torch's own CPU kernels, whose matrix product rounds its sums
 * in steps of its own: there the bound is relative to the tensor's largest value as well. */
static bool close_in(const ga_tensor *t, const struct gold_tensor *want, enum ga_dtype dtype,
                     const char *what) {
    float got[256];
    if (!t || !want || want->n > 256 || (size_t)ga_numel(t) != want->n ||
        ga_to_host(t, got, want->n) != GGMLC_OK) {
        tap_diag("%s: missing or of another size (%s)", what, ggmlc_last_error());
        return false;
    }
    const float ulp = dtype == GA_FLOAT16 ? 0x1p-10f : dtype == GA_BFLOAT16 ? 0x1p-7f : 0x1p-20f;
    const float *ref = want->data;
    float scale = 0.05f;
    for (size_t i = 0; dtype == GA_BFLOAT16 && i < want->n; i++)
        scale = fmaxf(scale, fabsf(ref[i]));
    for (size_t i = 0; i < want->n; i++) {
        if (!(fabsf(got[i] - ref[i]) <= 2 * ulp * (fabsf(ref[i]) + scale))) {
            tap_diag("%s[%zu]: %.7g, PyTorch %.7g", what, i, got[i], ref[i]);
            return false;
        }
    }
    return true;
}

static void run_program(int p, enum ga_dtype dtype, const char *tag) {
    char key[64];
    snprintf(key, sizeof key, "%s.%s", programs[p].name, tag);
    ga_tensor *in[MAX_IN] = {0};
    int n = 0;
    for (; n < MAX_IN && programs[p].inputs[n]; n++) {
        enum ga_dtype dt = programs[p].f32[n] == '1' ? GA_FLOAT32 : dtype;
        in[n] = ga_requires_grad_(from_gold(golden("%s.%s", key, programs[p].inputs[n]), dt),
                                  true);
    }
    ga_scope_begin();
    ga_tensor *out = programs[p].f(in);
    const bool promoted = strchr(programs[p].f32, '1') != NULL; /* a float32 array input */
    const enum ga_dtype out_dtype = promoted ? GA_FLOAT32 : dtype;
    ga_tensor *w = from_gold(golden("%s.%s", key, "w"), out_dtype);
    bool ok = out && ga_dtype_of(out) == out_dtype && ga_backward_ex(out, w, false) == GGMLC_OK;
    ok = ok && close_in(out, golden("%s.%s", key, "out"), out_dtype, "output");
    for (int i = 0; i < n && ok; i++) {
        char what[64];
        snprintf(what, sizeof what, "grad_%s", programs[p].inputs[i]);
        ga_tensor *g = ga_grad(in[i]);
        ok = g && ga_dtype_of(g) == ga_dtype_of(in[i]) &&
             close_in(g, golden("%s.%s", key, what), ga_dtype_of(in[i]), what);
    }
    ga_scope_end();
    tap_ok(ok, "%s in %s: output, gradients and their dtypes equal PyTorch's%s%s",
           programs[p].name, ga_dtype_name(dtype), ok ? "" : ": ", ok ? "" : ggmlc_last_error());
    for (int i = 0; i < n; i++) ga_release(in[i]);
}

/* ------------------------------------------------------------------ creators */

static void test_creators(void) {
    ga_scope_begin();
    enum ga_dtype was = ga_set_default_dtype(GA_FLOAT16);
    ga_tensor *full = ga_full(dev, GA_SHAPE(2, 3), 0.1f);
    ga_tensor *r = ga_rand(dev, GA_SHAPE(64));
    ga_tensor *z = ga_zeros_like(full);
    ga_set_default_dtype(GA_BFLOAT16);
    ga_tensor *one = ga_ones(dev, GA_SHAPE(3));
    ga_tensor *s = ga_scalar(dev, 1.0f / 3.0f);
    ga_set_default_dtype(was);
    float v[64];
    uint16_t bits[64];
    /* 0.1 in float16 is 0x2e66 = 0.0999755859375; 1/3 in bfloat16 is 0x3eab = 0.333984375 */
    bool ok = ga_dtype_of(full) == GA_FLOAT16 && ga_to_host(full, v, 6) == GGMLC_OK &&
              v[5] == 0.0999755859375f && ga_to_host_raw(full, bits, 6) == GGMLC_OK &&
              bits[0] == 0x2e66 && ga_dtype_of(z) == GA_FLOAT16 && ga_item(ga_sum(z)) == 0;
    ok = ok && ga_dtype_of(s) == GA_BFLOAT16 && ga_item(s) == 0.333984375f &&
         ga_dtype_of(one) == GA_BFLOAT16 && ga_item(ga_sum(one)) == 3.0f;
    bool rand_ok = ga_dtype_of(r) == GA_FLOAT16 && ga_to_host(r, v, 64) == GGMLC_OK;
    for (int i = 0; i < 64 && rand_ok; i++) rand_ok = v[i] >= 0 && v[i] <= 1;
    tap_ok(ok && rand_ok, "creators in the default dtype round their values to it");
    tap_ok(ga_get_default_dtype() == GA_FLOAT32 && ga_dtype_of(ga_ones(dev, GA_SHAPE(2))) ==
                                                       GA_FLOAT32,
           "the default dtype is float32 again after ga_set_default_dtype(was)");
    ga_scope_end();
}

/* d(float32(x) * c)/dx: c rounded to x's float16, computed by hand on the host. */
static void test_conversion_grad(void) {
    ga_scope_begin();
    const float xs[3] = {1, 2, 3}, cs[3] = {0.1f, 1.0f / 3.0f, 1000.7f};
    const float want[3] = {0.0999755859375f, 0.333251953125f, 1000.5f};
    enum ga_dtype was = ga_set_default_dtype(GA_FLOAT16);
    ga_tensor *x = ga_requires_grad_(ga_from_array(dev, xs, 3, GA_SHAPE(3)), true);
    ga_set_default_dtype(was);
    ga_tensor *c = ga_from_array(dev, cs, 3, GA_SHAPE(3));
    ga_tensor *y = ga_sum(ga_mul(ga_to_dtype(x, GA_FLOAT32), c));
    float g[3] = {0};
    bool ok = y && ga_dtype_of(y) == GA_FLOAT32 && ga_backward(y) == GGMLC_OK &&
              ga_dtype_of(ga_grad(x)) == GA_FLOAT16 && ga_to_host(ga_grad(x), g, 3) == GGMLC_OK &&
              memcmp(g, want, sizeof g) == 0;
    tap_ok(ok, "a gradient through ga_to_dtype is rounded to the leaf's float16 (%g %g %g)", g[0],
           g[1], g[2]);
    ga_scope_end();
}

/* A module made under a float16 default holds float16 parameters and computes in float16;
 * its gradients are float16; optimizers refuse them (documented). */
static void test_module(void) {
    ga_scope_begin();
    enum ga_dtype was = ga_set_default_dtype(GA_FLOAT16);
    ga_module *lin = ga_linear_module(dev, 3, 2, true);
    ga_tensor *x = ga_rand(dev, GA_SHAPE(4, 3));
    ga_set_default_dtype(was);
    ga_param_list ps = ga_module_parameters(lin);
    ga_tensor *y = ga_module_forward(lin, x);
    bool ok = lin && ps.n == 2 && ga_dtype_of(ps.params[0]) == GA_FLOAT16 && y &&
              ga_dtype_of(y) == GA_FLOAT16 && ga_backward(ga_sum(y)) == GGMLC_OK &&
              ga_grad(ps.params[0]) && ga_dtype_of(ga_grad(ps.params[0])) == GA_FLOAT16;
    tap_ok(ok, "a Linear made under a float16 default trains its float16 parameters%s%s",
           ok ? "" : ": ", ok ? "" : ggmlc_last_error());
    /* its state through GGUF (float32 in the file) comes back bit for bit */
    ga_set_default_dtype(GA_FLOAT16);
    ga_module *copy = ga_linear_module(dev, 3, 2, true);
    ga_set_default_dtype(was);
    uint16_t a[6] = {0}, b[6] = {1};
    const char *path = "test-autograd-half.gguf";
    ok = copy && ga_module_save(lin, path) == GGMLC_OK && ga_module_load(copy, path) == GGMLC_OK &&
         ga_to_host_raw(ps.params[0], a, 6) == GGMLC_OK &&
         ga_to_host_raw(ga_module_parameters(copy).params[0], b, 6) == GGMLC_OK &&
         memcmp(a, b, sizeof a) == 0;
    tap_ok(ok, "float16 parameters saved and loaded are the same bits%s%s", ok ? "" : ": ",
           ok ? "" : ggmlc_last_error());
    remove(path);
    ga_scope_end();
    ga_module_free(lin);
    ga_module_free(copy);
}

/* ------------------------------------------------------------------- errors */

static bool fails(const void *result, const char *what, const char *needle) {
    const char *msg = ggmlc_last_error();
    bool ok = result == NULL && msg && strstr(msg, needle);
    tap_ok(ok, "%s: NULL and one message (%s)", what, msg ? msg : "(none)");
    ggmlc_clear_error();
    return ok;
}

static void test_errors(void) {
    ga_scope_begin();
    ga_tensor *a = ga_ones(dev, GA_SHAPE(2, 3));
    ga_tensor *h = ga_to_dtype(a, GA_FLOAT16);
    ga_tensor *b = ga_to_dtype(a, GA_BFLOAT16);
    ga_tensor *w = ga_ones(dev, GA_SHAPE(3, 2));
    fails(ga_matmul(h, w), "matmul of float16 and float32", "two dtypes");
    fails(ga_linear(h, ga_to_dtype(ga_ones(dev, GA_SHAPE(4, 3)), GA_BFLOAT16), NULL),
          "linear of float16 and bfloat16", "two dtypes");
    fails(ga_to_dtype(a, (enum ga_dtype)7), "ga_to_dtype to dtype 7", "not a dtype");
    uint16_t raw[4] = {0};
    fails(ga_from_raw(dev, raw, 4, GA_FLOAT16, GA_SHAPE(2, 3)), "ga_from_raw of 4 for 6 values",
          "4 values");
    ga_set_default_dtype((enum ga_dtype)9);
    tap_ok(ga_get_default_dtype() == GA_FLOAT32 && strstr(ggmlc_last_error(), "not a dtype"),
           "an invalid default dtype is refused and leaves float32");
    ggmlc_clear_error();
    tap_ok(ga_assign_(h, b) != GGMLC_OK && strstr(ggmlc_last_error(), "dtypes differ"),
           "ga_assign_ between float16 and bfloat16 is refused");
    ggmlc_clear_error();
    ga_tensor *p = ga_requires_grad_(ga_to_dtype(a, GA_FLOAT16), true);
    fails(ga_adamw((ga_param_list){&p, NULL, 1}, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f),
          "AdamW over a float16 parameter", "float32 parameters");
    /* promotion across the two 16-bit types gives float32, as torch */
    ga_tensor *s = ga_add(h, b);
    tap_ok(s && ga_dtype_of(s) == GA_FLOAT32 && ga_item(ga_sum(s)) == 12.0f,
           "float16 + bfloat16 is float32");
    ga_tensor *same = ga_to_dtype(h, GA_FLOAT16); /* h, with a reference for the scope */
    tap_ok(same == h, "ga_to_dtype to the tensor's own dtype gives the tensor");
    ggmlc_clear_error();
    ga_scope_end();
    /* the refused creators made no handle that the scope would release twice */
    tap_ok(ggmlc_last_status() == GGMLC_OK, "the scope released each of its tensors once (%s)",
           ggmlc_last_status() == GGMLC_OK ? "" : ggmlc_last_error());
}

int main(int argc, char **argv) {
    dev = ga_device_get(argc > 1 ? argv[1] : NULL);
    if (!dev) return tap_skip_all(ggmlc_last_error());
    gold = gold_load("autograd_half.gold");
    if (!gold) return tap_done();
    tap_diag("device %s", ga_device_name(dev));
    test_rounding(GA_FLOAT16, "conv.f16_bits");
    test_rounding(GA_BFLOAT16, "conv.bf16_bits");
    test_widening(GA_FLOAT16, "conv.f16_float");
    test_widening(GA_BFLOAT16, "conv.bf16_float");
    for (size_t p = 0; p < sizeof programs / sizeof *programs; p++) {
        run_program((int)p, GA_FLOAT16, "f16");
        run_program((int)p, GA_BFLOAT16, "bf16");
    }
    test_creators();
    test_conversion_grad();
    test_module();
    test_errors();
    tap_ok(ga_device_tensors_alive(dev) == 0, "every tensor was released (%zu alive)",
           ga_device_tensors_alive(dev));
    gold_free(gold);
    ga_shutdown();
    return tap_done();
}
