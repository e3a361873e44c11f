/* testutil.c - see testutil.h. */
#include "testutil.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"

/* ---------------------------------------------------------------- TAP */

static int n_tests, n_failed;

static void tap_line(bool cond, const char *directive, const char *fmt, va_list args) {
    printf("%sok %d - ", cond ? "" : "not ", ++n_tests);
    vprintf(fmt, args);
    if (directive) printf(" # %s", directive);
    printf("\n");
    fflush(stdout);
}

bool tap_ok(bool cond, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    tap_line(cond, NULL, fmt, args);
    va_end(args);
    if (!cond) n_failed++;
    return cond;
}

void tap_skip(const char *reason, const char *fmt, ...) {
    char directive[256];
    snprintf(directive, sizeof directive, "SKIP %s", reason);
    va_list args;
    va_start(args, fmt);
    tap_line(true, directive, fmt, args);
    va_end(args);
}

void tap_diag(const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    printf("# ");
    vprintf(fmt, args);
    printf("\n");
    va_end(args);
    fflush(stdout);
}

int tap_done(void) {
    printf("1..%d\n", n_tests);
    return n_failed == 0 && n_tests > 0 ? 0 : 1;
}

int tap_skip_all(const char *reason) {
    printf("1..0 # SKIP %s\n", reason);
    return 0;
}

const char *test_vulkan_env(void) {
    const char *build_dir = getenv("GGMLC_BUILDDIR");
    char path[1024];
    if (!build_dir) return NULL;
    snprintf(path, sizeof path, "%s/tests/ggmlc-test-vulkan.ini", build_dir);
    if (access(path, R_OK) != 0) return NULL; /* a build without the Vulkan plugin */
    setenv("GGMLC_CONFIG", path, 1);
    snprintf(path, sizeof path, "%s/tests/vk-cache", build_dir);
    setenv("XDG_CACHE_HOME", path, 1);
    return build_dir;
}

/* ------------------------------------------------------------- numbers */

double nmse(const float *out, const float *ref, size_t n) {
    double err = 0, norm = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(out[i]) != isnan(ref[i])) return INFINITY;
        if (isinf(ref[i]) || isinf(out[i])) {
            if (out[i] != ref[i]) return INFINITY;
            continue;
        }
        if (isnan(ref[i])) continue;
        const double d = (double)out[i] - (double)ref[i];
        err += d * d;
        norm += (double)ref[i] * (double)ref[i];
    }
    return norm > 0 ? err / norm : err;
}

bool ok_nmse(const float *out, const float *ref, size_t n, double max_err, const char *fmt, ...) {
    const double e = nmse(out, ref, n);
    char name[256];
    va_list args;
    va_start(args, fmt);
    vsnprintf(name, sizeof name, fmt, args);
    va_end(args);
    return tap_ok(e <= max_err, "%s (nmse %.3g <= %.1g)", name, e, max_err);
}

double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - (double)b[i]);
        if (d > m || isnan(d)) m = isnan(d) ? INFINITY : d;
    }
    return m;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

void test_seed(uint64_t seed) { rng_state = seed ? seed : 0x9e3779b97f4a7c15ull; }

static uint64_t next_u64(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

float test_uniform(float lo, float hi) { return lo + (hi - lo) * (float)((next_u64() >> 40) / (double)(1ull << 24)); }

float test_normal(void) {
    const double u1 = ((next_u64() >> 11) + 1.0) / 9007199254740993.0, u2 = (next_u64() >> 11) / 9007199254740992.0;
    return (float)(sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
}

void test_fill_uniform(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = test_uniform(lo, hi);
}

/* ----------------------------------------------------------- tensors */

static void element_io(const struct ggml_tensor *t, int64_t i, float *value, bool write) {
    int64_t i0, i1, i2, i3;
    ggml_unravel_index(t, i, &i0, &i1, &i2, &i3);
    const size_t off = i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
    const size_t es = ggml_type_size(t->type);
    unsigned char raw[8];
    const bool host = t->buffer == NULL || ggml_backend_buffer_is_host(t->buffer);
    if (!write) {
        if (host) memcpy(raw, (const char *)t->data + off, es);
        else ggml_backend_tensor_get(t, raw, off, es);
    }
    switch (t->type) {
    case GGML_TYPE_F32: if (write) memcpy(raw, value, 4); else memcpy(value, raw, 4); break;
    case GGML_TYPE_F16: {
        ggml_fp16_t h;
        if (write) { h = ggml_fp32_to_fp16(*value); memcpy(raw, &h, 2); } else { memcpy(&h, raw, 2); *value = ggml_fp16_to_fp32(h); }
        break;
    }
    case GGML_TYPE_BF16: {
        ggml_bf16_t h;
        if (write) { h = ggml_fp32_to_bf16(*value); memcpy(raw, &h, 2); } else { memcpy(&h, raw, 2); *value = ggml_bf16_to_fp32(h); }
        break;
    }
    case GGML_TYPE_I32: {
        int32_t v;
        if (write) { v = (int32_t)*value; memcpy(raw, &v, 4); } else { memcpy(&v, raw, 4); *value = (float)v; }
        break;
    }
    default: abort(); /* tests only use these types through this helper */
    }
    if (write) {
        if (host) memcpy((char *)t->data + off, raw, es);
        else ggml_backend_tensor_set((struct ggml_tensor *)t, raw, off, es);
    }
}

void tensor_set_f32(struct ggml_tensor *t, const float *src) {
    const int64_t n = ggml_nelements(t);
    for (int64_t i = 0; i < n; i++) {
        float v = src[i];
        element_io(t, i, &v, true);
    }
}

void tensor_get_f32(const struct ggml_tensor *t, float *dst) {
    const int64_t n = ggml_nelements(t);
    for (int64_t i = 0; i < n; i++) element_io(t, i, &dst[i], false);
}

bool tap_expect_op_fail(struct ggml_tensor *r, enum ggmlc_status status, const char *func, const char *what) {
    return tap_ok(r == NULL && ggmlc_last_status() == status && strstr(ggmlc_last_error(), func) != NULL, "%s: %s", what,
                  ggmlc_last_error());
}

struct ggml_cgraph *test_compute_backward(struct ggml_context *ctx, struct ggml_tensor *loss, size_t graph_size) {
    ggml_set_loss(loss);
    struct ggml_cgraph *gb = ggml_new_graph_custom(ctx, graph_size, true);
    ggml_build_forward_expand(gb, loss);
    ggml_build_backward_expand(ctx, gb, NULL);
    ggml_graph_reset(gb);
    ggml_graph_compute_with_ctx(ctx, gb, 2);
    return gb;
}

/* --------------------------------------------------------- golden data */

struct gold_set {
    size_t n;
    struct gold_tensor *t;
};

static bool read_exact(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n; }

struct gold_set *gold_load(const char *file) {
    const char *root = getenv("GGMLC_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/golden/%s", root ? root : "tests", file);
    FILE *f = fopen(path, "rb");
    if (!f) {
        tap_diag("cannot open golden file %s", path);
        return NULL;
    }
    struct gold_set *set = calloc(1, sizeof *set);
    char magic[8];
    uint32_t count = 0;
    bool ok = read_exact(f, magic, 8) && memcmp(magic, "GGMLCGLD", 8) == 0 && read_exact(f, &count, 4) && count < 100000;
    if (ok) set->t = calloc(count ? count : 1, sizeof *set->t);
    for (uint32_t i = 0; ok && i < count; i++) {
        struct gold_tensor *g = &set->t[i];
        uint32_t name_len = 0, dtype = 0;
        ok = read_exact(f, &name_len, 4) && name_len < sizeof g->name && read_exact(f, g->name, name_len) &&
             read_exact(f, g->ne, sizeof g->ne) && read_exact(f, &dtype, 4) && dtype <= GOLD_I64;
        if (!ok) break;
        g->name[name_len] = '\0';
        g->dtype = (enum gold_dtype)dtype;
        g->n = (size_t)(g->ne[0] * g->ne[1] * g->ne[2] * g->ne[3]);
        const size_t es = dtype == GOLD_I64 ? 8 : 4;
        g->data = malloc(g->n * es + 1);
        ok = g->data && read_exact(f, g->data, g->n * es);
        set->n = i + 1;
    }
    fclose(f);
    if (!ok) {
        tap_diag("golden file %s is damaged", path);
        gold_free(set);
        return NULL;
    }
    return set;
}

const struct gold_tensor *gold_get(const struct gold_set *set, const char *name) {
    for (size_t i = 0; set && i < set->n; i++) {
        if (strcmp(set->t[i].name, name) == 0) return &set->t[i];
    }
    tap_diag("golden tensor %s not found", name);
    return NULL;
}

void gold_free(struct gold_set *set) {
    if (!set) return;
    for (size_t i = 0; i < set->n; i++) free(set->t[i].data);
    free(set->t);
    free(set);
}

struct ggml_tensor *gold_new_tensor(struct ggml_context *ctx, const struct gold_tensor *g) {
    if (!g) return NULL;
    const enum ggml_type type = g->dtype == GOLD_F32 ? GGML_TYPE_F32 : g->dtype == GOLD_I32 ? GGML_TYPE_I32 : GGML_TYPE_I64;
    struct ggml_tensor *t = ggml_new_tensor_4d(ctx, type, g->ne[0], g->ne[1], g->ne[2], g->ne[3]);
    if (!t) return NULL;
    ggml_set_name(t, g->name);
    if (t->data && (t->buffer == NULL || ggml_backend_buffer_is_host(t->buffer))) {
        memcpy(t->data, g->data, g->n * ggml_type_size(type));
    } else if (t->buffer) {
        ggml_backend_tensor_set(t, g->data, 0, g->n * ggml_type_size(type));
    }
    return t;
}
