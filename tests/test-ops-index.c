/* test-ops-index.c - get_rows (f32/f16/bf16/i32 tables, strided), get_rows_back,
 * set_rows (I64/I32 indices, broadcast, f16 destination), add_id, argsort and
 * top_k on the CPU backend against PyTorch golden data (tests/golden/gen_index.py). */
#include <stdio.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggmlc.h"
#include "opstest.h"

static struct gold_set *G;
#define GOLD(name) gold_get(G, name)

static void test_get_rows(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *idx = gold_new_tensor(ctx, GOLD("get_rows.idx"));
    const struct { enum ggml_type type; bool transposed; const char *ref; const char *name; } cases[] = {
        {GGML_TYPE_F32, false, "get_rows.out", "get_rows f32"},
        {GGML_TYPE_F32, true, "get_rows.out", "get_rows f32 from a strided (transposed) table"},
        {GGML_TYPE_F16, false, "get_rows.out_f16", "get_rows f16"},
        {GGML_TYPE_BF16, true, "get_rows.out_bf16", "get_rows bf16 from a strided table"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ggml_tensor *a = ops_input(ctx, GOLD("get_rows.a"), cases[i].type, cases[i].transposed);
        struct ggml_tensor *r = ggml_get_rows(ctx, a, idx);
        tap_ok(r && r->type == GGML_TYPE_F32, "%s: result is f32", cases[i].name);
        if (ops_compute(ctx, r)) ops_check(r, GOLD(cases[i].ref), 0.0, cases[i].name);
    }
    struct ggml_tensor *ai = gold_new_tensor(ctx, GOLD("get_rows_i32.a"));
    struct ggml_tensor *ri = ggml_get_rows(ctx, ai, gold_new_tensor(ctx, GOLD("get_rows_i32.idx")));
    tap_ok(ri && ri->type == GGML_TYPE_I32, "get_rows of an I32 table stays I32");
    if (ops_compute(ctx, ri)) ops_check_exact(ri, GOLD("get_rows_i32.out"), "get_rows i32");

    struct ggml_tensor *wrong = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 7, 9, 2, 2);
    ggmlc_clear_error();
    ops_check_rejected(ggml_get_rows(ctx, wrong, idx), "ggml_get_rows", "indices whose dims 1, 2 differ from the data's dims 2, 3");
    ggmlc_clear_error();
    ops_check_rejected(ggml_get_rows(ctx, ai, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3)), "ggml_get_rows", "f32 indices");
    tap_ok(ggml_get_rows(ctx, NULL, idx) == NULL, "get_rows of a NULL operand is NULL");

    /* an index past the table fails the computation instead of reading out of bounds */
    struct ggml_tensor *bad_idx = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 1);
    ((int32_t *)bad_idx->data)[0] = 11;
    struct ggml_tensor *rb = ggml_get_rows(ctx, ai, bad_idx);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, rb);
    tap_ok(ggml_graph_compute_with_ctx(ctx, gf, 1) != GGML_STATUS_SUCCESS, "get_rows with an out-of-range index fails");
    ggml_free(ctx);
}

/* Quantized tables: get_rows dequantizes through the type's to_float, set_rows quantizes through from_float. */
static void test_quantized_rows(void) {
    const struct { enum ggml_type type; double tol; } cases[] = {{GGML_TYPE_Q8_0, 1e-4}, {GGML_TYPE_Q4_0, 2e-2}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const enum ggml_type type = cases[i].type;
        struct ggml_context *ctx = ops_ctx();
        const struct gold_tensor *ga = GOLD("get_rows_q.a");
        struct ggml_tensor *a = ggml_new_tensor_3d(ctx, type, ga->ne[0], ga->ne[1], ga->ne[2]);
        ggml_quantize_chunk(type, ga->data, a->data, 0, ga->ne[1] * ga->ne[2], ga->ne[0], NULL);
        struct ggml_tensor *r = ggml_get_rows(ctx, a, gold_new_tensor(ctx, GOLD("get_rows_q.idx")));
        char name[64];
        snprintf(name, sizeof name, "get_rows from a %s table", ggml_type_name(type));
        if (ops_compute(ctx, r)) ops_check(r, GOLD("get_rows_q.out"), cases[i].tol, name);
        struct ggml_tensor *a1 = ggml_view_2d(ctx, a, ga->ne[0], ga->ne[1], a->nb[1], 0); /* the first table */
        struct ggml_tensor *s = ggml_set_rows(ctx, a1, gold_new_tensor(ctx, GOLD("set_rows_q.src")), gold_new_tensor(ctx, GOLD("set_rows_q.idx")));
        snprintf(name, sizeof name, "set_rows into a %s table", ggml_type_name(type));
        struct ggml_tensor *all = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, ga->ne[1]);
        for (int64_t k = 0; k < ga->ne[1]; k++) ((int32_t *)all->data)[k] = (int32_t)k;
        struct ggml_tensor *back = ggml_get_rows(ctx, a1, all); /* read the table back as f32 */
        if (ops_compute(ctx, s) && ops_compute(ctx, back)) ops_check(back, GOLD("set_rows_q.out"), cases[i].tol, name);
        ggml_free(ctx);
    }
}

/* As in ggml, set_rows takes F16 source rows too: into f32, f16 and q8_0 tables. */
static void test_set_rows_f16_source(void) {
    const struct { enum ggml_type type; double tol; } dst_types[] = {
        {GGML_TYPE_F32, 1e-6}, {GGML_TYPE_F16, 1e-6}, {GGML_TYPE_Q8_0, 1e-4}};
    for (size_t i = 0; i < sizeof dst_types / sizeof dst_types[0]; i++) {
        struct ggml_context *ctx = ops_ctx();
        const struct gold_tensor *ga = GOLD("get_rows_q.a");
        const enum ggml_type type = dst_types[i].type;
        struct ggml_tensor *tables = type == GGML_TYPE_Q8_0 ? ggml_new_tensor_3d(ctx, type, ga->ne[0], ga->ne[1], ga->ne[2])
                                                            : ops_input(ctx, ga, type, false);
        if (type == GGML_TYPE_Q8_0) ggml_quantize_chunk(type, ga->data, tables->data, 0, ga->ne[1] * ga->ne[2], ga->ne[0], NULL);
        struct ggml_tensor *a = ggml_view_2d(ctx, tables, ga->ne[0], ga->ne[1], tables->nb[1], 0); /* the first table */
        struct ggml_tensor *src = ops_input(ctx, GOLD("set_rows_q.src"), GGML_TYPE_F16, false);
        struct ggml_tensor *s = ggml_set_rows(ctx, a, src, gold_new_tensor(ctx, GOLD("set_rows_q.idx")));
        struct ggml_tensor *all = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, ga->ne[1]);
        for (int64_t k = 0; k < ga->ne[1]; k++) ((int32_t *)all->data)[k] = (int32_t)k;
        struct ggml_tensor *back = ggml_get_rows(ctx, a, all);
        char name[64];
        snprintf(name, sizeof name, "set_rows of f16 rows into a %s table", ggml_type_name(type));
        if (!s) tap_ok(false, "%s: %s", name, ggmlc_last_error());
        else if (ops_compute(ctx, s) && ops_compute(ctx, back)) ops_check(back, GOLD("set_rows_q.out"), dst_types[i].tol, name);
        ggml_free(ctx);
    }
}

static void test_get_rows_back(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *dy = gold_new_tensor(ctx, GOLD("get_rows_back.dy"));
    struct ggml_tensor *idx = gold_new_tensor(ctx, GOLD("get_rows_back.idx"));
    struct ggml_tensor *shape = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 6, 5);
    struct ggml_tensor *r = ggml_get_rows_back(ctx, dy, idx, shape);
    if (ops_compute(ctx, r)) ops_check(r, GOLD("get_rows_back.out"), 1e-12, "get_rows_back accumulates repeated rows");
    ggmlc_clear_error();
    ops_check_rejected(ggml_get_rows_back(ctx, dy, idx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5)), "ggml_get_rows_back",
                       "a shape tensor of another row length");
    ggml_free(ctx);
}

static void test_set_rows(void) {
    const enum ggml_type idx_types[] = {GGML_TYPE_I64, GGML_TYPE_I32};
    for (int it = 0; it < 2; it++) {
        for (int f16 = 0; f16 < 2; f16++) {
            struct ggml_context *ctx = ops_ctx();
            struct ggml_tensor *dst = ops_input(ctx, GOLD("set_rows.dst"), f16 ? GGML_TYPE_F16 : GGML_TYPE_F32, false);
            struct ggml_tensor *src = gold_new_tensor(ctx, GOLD("set_rows.src"));
            struct ggml_tensor *idx = ops_input(ctx, GOLD("set_rows.idx"), GGML_TYPE_I32, false);
            if (idx_types[it] == GGML_TYPE_I64) idx = gold_new_tensor(ctx, GOLD("set_rows.idx"));
            struct ggml_tensor *r = ggml_set_rows(ctx, dst, src, idx);
            tap_ok(r && r->view_src == dst, "set_rows returns a view of its destination");
            char name[96];
            snprintf(name, sizeof name, "set_rows %s indices into %s (indices broadcast over dim 2)",
                     ggml_type_name(idx_types[it]), f16 ? "f16" : "f32");
            if (ops_compute(ctx, r)) ops_check(dst, GOLD(f16 ? "set_rows.out_f16" : "set_rows.out"), 0.0, name);
            if (it == 0 && f16 == 0) {
                ggmlc_clear_error();
                ops_check_rejected(ggml_set_rows(ctx, dst, src, ggml_new_tensor_3d(ctx, GGML_TYPE_I64, 4, 2, 2)), "ggml_set_rows",
                                   "indices whose dim 1 does not divide the source's dim 2");
                ggmlc_clear_error();
                ops_check_rejected(ggml_set_rows(ctx, dst, src, ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 1, 2)), "ggml_set_rows",
                                   "f32 indices");
            }
            ggml_free(ctx);
        }
    }
}

static void test_add_id(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *a = ops_input(ctx, GOLD("add_id.a"), GGML_TYPE_F32, true);
    struct ggml_tensor *b = gold_new_tensor(ctx, GOLD("add_id.b"));
    struct ggml_tensor *ids = gold_new_tensor(ctx, GOLD("add_id.ids"));
    struct ggml_tensor *r = ggml_add_id(ctx, a, b, ids);
    if (ops_compute(ctx, r)) ops_check(r, GOLD("add_id.out"), 1e-14, "add_id with a strided a");
    ggmlc_clear_error();
    ops_check_rejected(ggml_add_id(ctx, a, b, ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 4, 4)), "ggml_add_id", "ids of the wrong shape");
    ggml_free(ctx);
}

static void test_sort(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *x = ops_input(ctx, GOLD("argsort.x"), GGML_TYPE_F32, false);
    struct ggml_tensor *asc = ggml_argsort(ctx, x, GGML_SORT_ORDER_ASC);
    if (ops_compute(ctx, asc)) ops_check_exact(asc, GOLD("argsort.asc"), "argsort ascending");
    struct ggml_tensor *xt = ops_input(ctx, GOLD("argsort.x"), GGML_TYPE_F32, true);
    struct ggml_tensor *desc = ggml_argsort(ctx, xt, GGML_SORT_ORDER_DESC);
    if (ops_compute(ctx, desc)) ops_check_exact(desc, GOLD("argsort.desc"), "argsort descending of a strided tensor");
    struct ggml_tensor *xi = gold_new_tensor(ctx, GOLD("argsort_i32.x"));
    struct ggml_tensor *ai = ggml_argsort(ctx, xi, GGML_SORT_ORDER_ASC);
    if (ops_compute(ctx, ai)) ops_check_exact(ai, GOLD("argsort_i32.asc"), "argsort of I32 rows");
    struct ggml_tensor *tk = ggml_top_k(ctx, gold_new_tensor(ctx, GOLD("top_k.x")), 4);
    tap_ok(tk && tk->type == GGML_TYPE_I32 && tk->ne[0] == 4, "top_k gives k I32 indices per row");
    if (ops_compute(ctx, tk)) ops_check_exact(tk, GOLD("top_k.idx"), "top_k, largest first");
    ggmlc_clear_error();
    ops_check_rejected(ggml_top_k(ctx, x, 14), "ggml_top_k", "k larger than the row");
    ggmlc_clear_error();
    ops_check_rejected(ggml_argsort(ctx, ggml_new_tensor_1d(ctx, GGML_TYPE_Q4_0, 32), GGML_SORT_ORDER_ASC), "ggml_argsort",
                       "a quantized tensor");
    ggml_free(ctx);
}

/* Rows with many equal values: top_k (heap path for small k) must pick the same indices, in the
 * same order, as the first k of a descending argsort (equal values by index in both). */
static void test_top_k_ties(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1000, 3);
    test_seed(7);
    for (int64_t i = 0; i < 3000; i++) ((float *)x->data)[i] = (float)(int)test_uniform(-5.0f, 5.0f);
    struct ggml_tensor *order = ggml_argsort(ctx, x, GGML_SORT_ORDER_DESC);
    const int ks[2] = {10, 300};
    struct ggml_tensor *tk[2] = {ggml_top_k(ctx, x, ks[0]), ggml_top_k(ctx, x, ks[1])};
    if (!ops_compute(ctx, order) || !ops_compute(ctx, tk[0]) || !ops_compute(ctx, tk[1])) return;
    for (int c = 0; c < 2; c++) {
        bool same = true;
        for (int64_t r = 0; r < 3; r++)
            for (int i = 0; i < ks[c]; i++)
                same &= ((int32_t *)tk[c]->data)[r * ks[c] + i] == ((int32_t *)order->data)[r * 1000 + i];
        tap_ok(same, "top_k %d of 1000 with ties equals the head of a descending argsort", ks[c]);
    }
    bool ties_by_index = true;
    for (int64_t i = 1; i < 1000; i++) {
        const int32_t a = ((int32_t *)order->data)[i - 1], b = ((int32_t *)order->data)[i];
        if (((float *)x->data)[a] == ((float *)x->data)[b] && a > b) ties_by_index = false;
    }
    tap_ok(ties_by_index, "argsort keeps equal values in index order");
    ggml_free(ctx);
}

int main(void) {
    G = gold_load("index.gold");
    if (!G) return tap_skip_all("golden data tests/golden/index.gold missing");
    test_get_rows();
    test_quantized_rows();
    test_get_rows_back();
    test_set_rows();
    test_set_rows_f16_source();
    test_add_id();
    test_sort();
    test_top_k_ties();
    gold_free(G);
    return tap_done();
}
