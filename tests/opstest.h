/*
 * opstest.h - helpers shared by the operator tests (test-ops-*.c): golden
 * inputs in any float type and layout, computing one result on the CPU
 * backend, and comparing it with golden output.
 */
#ifndef GGMLC_OPSTEST_H
#define GGMLC_OPSTEST_H

#include "testutil.h"

/* A context with room for the tensors of one test (data allocated in it). */
struct ggml_context *ops_ctx(void);

/* A tensor of the given type holding the golden values.  transposed: stored with
 * dims 0 and 1 swapped and returned as a (non-contiguous) transposed view. */
struct ggml_tensor *ops_input(struct ggml_context *ctx, const struct gold_tensor *g, enum ggml_type type, bool transposed);

/* Build the forward graph of out and compute it with 2 threads; tap-reports failure. */
bool ops_compute(struct ggml_context *ctx, struct ggml_tensor *out);

/* out has the golden tensor's shape and NMSE(out, ref) <= max_err (NaN fails). */
bool ops_check(const struct ggml_tensor *out, const struct gold_tensor *ref, double max_err, const char *name);

/* out (any type, integers included) equals the golden values exactly. */
bool ops_check_exact(const struct ggml_tensor *out, const struct gold_tensor *ref, const char *name);

/* The op returned NULL and the last error is GGMLC_ERR_SHAPE or _TYPE naming func. */
bool ops_check_rejected(const struct ggml_tensor *r, const char *func, const char *what);

#endif /* GGMLC_OPSTEST_H */
