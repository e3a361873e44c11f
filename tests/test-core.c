/* test-core.c - contexts, tensors, views, graphs and error handling (computing only to check
 * that a misbuilt graph fails). */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlc.h"
#include "testutil.h"
#include "ggml-impl.h" /* n_leafs */

static void test_context_accounting(void) {
    const size_t mem = 4 * ggml_tensor_overhead() + 4 * 16 * 16 * sizeof(float);
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){mem, NULL, false});
    tap_ok(ctx != NULL, "ggml_init with %zu bytes", mem);
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 16, 16);
    tap_ok(a && a->data && ggml_nbytes(a) == 16 * 16 * 4, "2-D f32 tensor has data and 1024 bytes");
    tap_ok(ggml_used_mem(ctx) == ggml_tensor_overhead() + 1024, "used memory = overhead + data (%zu)", ggml_used_mem(ctx));
    struct ggml_tensor *big = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1 << 20);
    tap_ok(big == NULL && ggmlc_last_status() == GGMLC_ERR_NOMEM, "a tensor larger than the arena gives NULL and NOMEM");
    tap_ok(strstr(ggmlc_last_error(), "memory pool") != NULL, "the error names the memory pool: %s", ggmlc_last_error());
    ggml_free(ctx);
}

static void test_shapes_and_views(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, false});
    struct ggml_tensor *a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 3, 2);
    tap_ok(ggml_nelements(a) == 24 && ggml_nrows(a) == 6 && ggml_n_dims(a) == 3, "3-D shape queries");
    struct ggml_tensor *t = ggml_transpose(ctx, a);
    tap_ok(t->ne[0] == 3 && t->ne[1] == 4 && t->nb[0] == a->nb[1] && !ggml_is_contiguous(t), "transpose swaps ne/nb");
    tap_ok(t->view_src == a && t->data == a->data, "transpose is a view of its source");
    struct ggml_tensor *p = ggml_permute(ctx, a, 2, 0, 1, 3);
    tap_ok(p->ne[2] == 4 && p->ne[0] == 3 && p->ne[1] == 2, "permute moves dim i to axis_i");
    tap_ok(ggml_permute(ctx, a, 0, 0, 1, 2) == NULL && ggmlc_last_status() == GGMLC_ERR_INVALID_ARG,
           "permute with repeated axes is rejected");
    struct ggml_tensor *r = ggml_reshape_2d(ctx, a, 8, 3);
    tap_ok(r && r->ne[0] == 8 && r->ne[1] == 3 && r->data == a->data, "reshape of a contiguous tensor");
    tap_ok(ggml_reshape_2d(ctx, a, 5, 5) == NULL && ggmlc_last_status() == GGMLC_ERR_SHAPE, "reshape to another count fails");
    tap_ok(ggml_reshape_2d(ctx, t, 3, 8) == NULL, "reshape of a non-contiguous tensor fails");
    struct ggml_tensor *v = ggml_view_2d(ctx, a, 2, 3, a->nb[1], 2 * sizeof(float));
    tap_ok(v && v->data == (char *)a->data + 8 && v->nb[1] == a->nb[1] && v->view_offs == 8, "2-D view at an offset");
    struct ggml_tensor *vv = ggml_view_1d(ctx, v, 1, 4);
    tap_ok(vv && vv->view_src == a && vv->view_offs == 12, "a view of a view points at the storage owner");
    tap_ok(ggml_view_1d(ctx, a, 25, 0) == NULL && ggmlc_last_status() == GGMLC_ERR_SHAPE, "a view past the end fails");
    tap_ok(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, -1) == NULL, "negative sizes are rejected");
    tap_ok(ggml_new_tensor_1d(ctx, (enum ggml_type)4, 8) == NULL && ggmlc_last_status() == GGMLC_ERR_TYPE,
           "removed type ids are rejected");
    tap_ok(ggml_transpose(ctx, NULL) == NULL && ggml_reshape_1d(ctx, NULL, 3) == NULL, "NULL operands give NULL");
    ggml_set_name(a, "a");
    tap_ok(ggml_get_tensor(ctx, "a") == a, "ggml_get_tensor finds a tensor by name");
    ggml_free(ctx);
}

static void test_types(void) {
    tap_ok(ggml_type_size(GGML_TYPE_Q4_0) == 18 && ggml_blck_size(GGML_TYPE_Q4_0) == 32, "q4_0 blocks: 32 values in 18 bytes");
    tap_ok(ggml_type_size(GGML_TYPE_Q6_K) == 210 && ggml_type_size(GGML_TYPE_Q4_K) == 144, "k-quant block sizes");
    tap_ok(ggml_row_size(GGML_TYPE_Q8_0, 64) == 68, "row size of 64 q8_0 values");
    tap_ok(strcmp(ggml_type_name(GGML_TYPE_BF16), "bf16") == 0, "type names");
    /* slots 4 and 5 (the removed Q4_2, Q4_3) and ids past the table: no block, as in ggml */
    tap_ok(ggml_blck_size((enum ggml_type)4) == 0 && ggml_blck_size((enum ggml_type)5) == 0 &&
           ggml_blck_size(GGML_TYPE_COUNT) == 0 && ggml_type_size((enum ggml_type)4) == 0,
           "removed type slots report block size 0 and type size 0");
    tap_ok(ggml_row_size((enum ggml_type)4, 64) == 0 && ggml_type_sizef((enum ggml_type)4) == 0.0,
           "row size and bytes per value of a removed type are 0, not a division by zero");
    const float vals[] = {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333333f};
    bool exact = true;
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        const float back = ggml_fp16_to_fp32(ggml_fp32_to_fp16(vals[i]));
        if (i < 6 && back != vals[i]) exact = false;
        if (i == 6 && (back < 0.3332f || back > 0.3334f)) exact = false;
    }
    tap_ok(exact, "f16 round trip of representable values (normal, max, min normal, min subnormal)");
    tap_ok(ggml_fp32_to_fp16(1e6f) == 0x7c00 && ggml_fp32_to_fp16(-1e6f) == 0xfc00, "f16 overflow gives infinity");
    tap_ok(ggml_fp32_to_fp16(1.0f + 1.0f / 2048) == 0x3c00, "f16 rounds half to even");
    tap_ok(ggml_bf16_to_fp32(ggml_fp32_to_bf16(3.0f)) == 3.0f && ggml_fp32_to_bf16(1.00390625f).bits == 0x3f80,
           "bf16 conversion rounds to nearest even");
}

static void test_graph(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){16 << 20, NULL, true});
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
    struct ggml_tensor *y = x;
    for (int i = 0; i < 5000; i++) y = ggml_transpose(ctx, y); /* a deep chain */
    struct ggml_cgraph *g = ggml_new_graph_custom(ctx, 8192, false);
    ggml_build_forward_expand(g, y);
    tap_ok(ggml_graph_n_nodes(g) == 5000 && g->n_leafs == 1, "a chain of 5000 nodes expands without recursion");
    tap_ok(ggml_graph_node(g, -1) == y && ggml_graph_node(g, 0)->src[0] == x, "nodes are in dependency order");
    ggml_build_forward_expand(g, y);
    tap_ok(ggml_graph_n_nodes(g) == 5000, "expanding twice adds nothing");
    {
        struct ggml_tensor *w = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
        struct ggml_tensor *v = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
        struct ggml_tensor *sum = ggml_add(ctx, w, v);
        ggml_set_name(v, "v");
        sum->name[0] = w->name[0] = '\0'; /* unnamed: the graph names them by position */
        ggml_build_forward_expand(g, sum);
        const bool named = strcmp(w->name, "leaf_1") == 0 && strcmp(v->name, "v") == 0 &&
                           strcmp(sum->name, "node_5000") == 0;
        tap_ok(named, "unnamed tensors are named by position: '%s', '%s', '%s'", w->name, v->name,
               sum->name);
    }
    struct ggml_cgraph *small = ggml_new_graph_custom(ctx, 16, false);
    ggml_build_forward_expand(small, y);
    tap_ok(ggmlc_last_status() == GGMLC_ERR_NOMEM && ggml_graph_n_nodes(small) == 16, "a full graph reports an error");
    tap_ok(ggml_graph_overhead_custom(16, false) < ggml_graph_overhead(), "graph overhead grows with size");
    ggml_free(ctx);
}

/* GGML_ASSERT in a user's program (this file) reports the failed condition at the user's file
 * and line, as ggml does, and does not call itself a ggmlc bug. */
static void test_user_assert(void) {
    int fds[2];
    if (pipe(fds) != 0) {
        tap_ok(false, "a pipe for the child's stderr");
        return;
    }
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        const int two = 2;
        GGML_ASSERT(two + two == 5);
        _exit(0);
    }
    const int line = __LINE__ - 3;
    close(fds[1]);
    char msg[1024] = {0};
    size_t n = 0;
    for (ssize_t r; n < sizeof msg - 1 && (r = read(fds[0], msg + n, sizeof msg - 1 - n)) > 0;) n += (size_t)r;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    char want[512];
    snprintf(want, sizeof want, "%s:%d: GGML_ASSERT(two + two == 5) failed", __FILE__, line);
    tap_ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "a failed GGML_ASSERT aborts");
    tap_ok(strstr(msg, want) != NULL && strstr(msg, "internal error") == NULL,
           "its message names the condition at the caller's file and line, not a ggmlc bug: %s", msg);
}

static void test_init_sizes(void) {
    const size_t sizes[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 15};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        struct ggml_context *ctx = ggml_init((struct ggml_init_params){sizes[i], NULL, false});
        tap_ok(ctx == NULL && ggmlc_last_status() == GGMLC_ERR_NOMEM, "ggml_init with mem_size SIZE_MAX - %zu gives NULL: %s",
               SIZE_MAX - sizes[i], ggmlc_last_error());
        ggml_free(ctx);
    }
}

/* Computing g on the CPU (ggml's CPU API and the backend API) fails with a message. */
static void compute_fails(struct ggml_context *ctx, struct ggml_cgraph *g, const char *what) {
    const enum ggml_status st = ggml_graph_compute_with_ctx(ctx, g, 1);
    tap_ok(st != GGML_STATUS_SUCCESS && strstr(ggmlc_last_error(), "incomplete"), "%s: ggml_graph_compute fails: %s",
           what, ggmlc_last_error());
    ggml_backend_t cpu = ggml_backend_init_by_name("cpu", NULL);
    const enum ggml_status bst = cpu ? ggml_backend_graph_compute(cpu, g) : GGML_STATUS_SUCCESS;
    tap_ok(cpu && bst != GGML_STATUS_SUCCESS && strstr(ggmlc_last_error(), "incomplete"),
           "%s: ggml_backend_graph_compute fails: %s", what, ggmlc_last_error());
    ggml_backend_free(cpu);
}

/* A graph that lost a node must not compute "successfully" without it. */
static void test_graph_misuse(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, false});
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4), *y = x;
    ggml_set_f32(x, 1.0f);
    for (int i = 0; i < 20; i++) y = ggml_add(ctx, y, x); /* y = 21 x */
    struct ggml_cgraph *small = ggml_new_graph_custom(ctx, 8, false);
    ggml_build_forward_expand(small, y);
    tap_ok(ggmlc_last_status() == GGMLC_ERR_NOMEM, "expanding 20 nodes into a graph of 8 reports an error");
    compute_fails(ctx, small, "an overfilled graph");
    ggml_graph_clear(small);
    ggml_build_forward_expand(small, x);
    tap_ok(ggml_graph_compute_with_ctx(ctx, small, 1) == GGML_STATUS_SUCCESS, "a cleared graph computes again");

    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    const int n = ggml_graph_n_nodes(g);
    ggml_graph_add_node(g, NULL);
    tap_ok(ggmlc_last_status() == GGMLC_ERR_INVALID_ARG && ggml_graph_n_nodes(g) == n, "ggml_graph_add_node(g, NULL) is refused: %s",
           ggmlc_last_error());
    compute_fails(ctx, g, "a graph given a NULL node");
    struct ggml_cgraph *h = ggml_new_graph(ctx);
    ggml_build_forward_expand(h, ggml_add(ctx, x, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 5))); /* shapes differ: NULL */
    compute_fails(ctx, h, "a graph expanded with a failed constructor's NULL");
    struct ggml_cgraph *ok = ggml_new_graph(ctx);
    ggml_build_forward_expand(ok, y);
    const bool computed = ggml_graph_compute_with_ctx(ctx, ok, 1) == GGML_STATUS_SUCCESS;
    tap_ok(computed && ggml_get_f32_1d(y, 3) == 21.0f, "the same nodes in a graph of the default size compute (%g)",
           ggml_get_f32_1d(y, 3));
    ggml_free(ctx);
}

int main(void) {
    test_user_assert();
    test_context_accounting();
    test_shapes_and_views();
    test_types();
    test_graph();
    test_init_sizes();
    ggmlc_init();
    test_graph_misuse();
    return tap_done();
}
