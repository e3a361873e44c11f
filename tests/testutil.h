/*
 * testutil.h - TAP output, golden data and comparison helpers for the tests.
 *
 * Golden files (tests/golden/ *.gold) are written by the PyTorch scripts in
 * tests/golden/ (see goldfile.py for the format) and read here, so that
 * `make check` needs no Python.
 */
#ifndef GGMLC_TESTUTIL_H
#define GGMLC_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggml.h"
#include "ggmlc.h"

/* ---------------------------------------------------------------- TAP */

/* Print one "ok N - name" / "not ok N - name" line; returns cond. */
bool tap_ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "ok N - name # SKIP reason". */
void tap_skip(const char *reason, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A "# ..." diagnostic line. */
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print the plan "1..N" and return the exit status (0 when every test passed). */
int tap_done(void);
/* Skip the whole program ("1..0 # SKIP reason") and return the exit status. */
int tap_skip_all(const char *reason);

/* ------------------------------------------------------------- numbers */

/* Normalised mean squared error sum((a-b)^2)/sum(b^2); INFINITY if any value is NaN/Inf
 * where the reference is finite. */
double nmse(const float *out, const float *ref, size_t n);
/* tap_ok(nmse(out, ref) <= max_err) with the error in the message. */
bool ok_nmse(const float *out, const float *ref, size_t n, double max_err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Largest absolute difference. */
double max_abs_diff(const float *a, const float *b, size_t n);

/* The build tree's Vulkan setup for a test: GGMLC_CONFIG names $GGMLC_BUILDDIR's
 * tests/ggmlc-test-vulkan.ini and XDG_CACHE_HOME its tests/vk-cache (the pipeline cache).
 * Returns $GGMLC_BUILDDIR, or NULL (nothing set: make check's configuration, the CPU, stays)
 * when it is not set or the build has no Vulkan plugin (no such file). */
const char *test_vulkan_env(void);

/* Deterministic pseudo-random numbers (xorshift), uniform in [lo, hi). */
void  test_seed(uint64_t seed);
float test_uniform(float lo, float hi);
float test_normal(void);
/* Fill a host buffer with uniform values in [lo, hi). */
void  test_fill_uniform(float *x, size_t n, float lo, float hi);

/* ----------------------------------------------------------- tensors */

/* Write n floats into a tensor (any float type, any layout, host or backend memory). */
void tensor_set_f32(struct ggml_tensor *t, const float *src);
/* Read a tensor as floats in logical order (ne[0] fastest) into dst (ggml_nelements floats). */
void tensor_get_f32(const struct ggml_tensor *t, float *dst);

/* One TAP line: a constructor's result r must be NULL with ggmlc_last_status() == status and
 * an error message that names func ("what: <the message>"). */
bool tap_expect_op_fail(struct ggml_tensor *r, enum ggmlc_status status, const char *func, const char *what);

/* Mark loss (an F32 scalar in ctx, which holds its data) as the loss, build the forward and
 * backward graph (graph_size nodes) and compute it on the CPU with 2 threads; the gradients
 * are then ggml_graph_get_grad(returned graph, param). */
struct ggml_cgraph *test_compute_backward(struct ggml_context *ctx, struct ggml_tensor *loss, size_t graph_size);

/* --------------------------------------------------------- golden data */

enum gold_dtype { GOLD_F32 = 0, GOLD_I32 = 1, GOLD_I64 = 2 };

struct gold_tensor {
    char    name[128];
    int64_t ne[4];       /* ggml order: ne[0] is the innermost (last torch) dimension */
    enum gold_dtype dtype;
    size_t  n;           /* elements */
    void   *data;
};

struct gold_set;

/* Load tests/golden/<file> (under $GGMLC_TEST_DATA); NULL with a TAP diagnostic on failure. */
struct gold_set *gold_load(const char *file);
/* Tensor by name, or NULL (with a diagnostic). */
const struct gold_tensor *gold_get(const struct gold_set *set, const char *name);
void gold_free(struct gold_set *set);

/* Create a tensor in ctx of the golden tensor's shape and type (F32 or I32) and fill it. */
struct ggml_tensor *gold_new_tensor(struct ggml_context *ctx, const struct gold_tensor *g);

#endif /* GGMLC_TESTUTIL_H */
