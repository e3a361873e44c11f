/*
 * compat-cxx.cpp - a C++ program written against ggml's public headers, as a
 * ggml user would write it: every public header included from C++, and each
 * RAII alias of ggml-cpp.h used for what it owns.  Built and run by
 * test-headers-cxx.sh (TAP); it checks the values it computes itself.
 */
#include <ggml.h>
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-opt.h>
#include <gguf.h>
#include <ggml-cpp.h>
#include <ggmlc.h>
#include <ggmlc-nn.h>
#include <ggmlc-plugin.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

static int n_test = 0, n_failed = 0;

static void ok(bool cond, const std::string &what) {
    n_test++;
    if (!cond) n_failed++;
    std::printf("%sok %d - %s\n", cond ? "" : "not ", n_test, what.c_str());
}

/* y = a*x + b on the CPU backend, with the context, buffer and backend owned by smart pointers. */
static void test_backend_ptrs() {
    ggml_init_params params = {ggml_tensor_overhead() * 16 + ggml_graph_overhead(), nullptr, true};
    ggml_context_ptr ctx(ggml_init(params));
    ok(ctx != nullptr, "ggml_context_ptr owns a no_alloc context");
    if (!ctx) return;
    ggml_tensor *x = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 7, 3);
    ggml_tensor *b = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 7);
    ggml_tensor *y = ggml_add(ctx.get(), ggml_scale(ctx.get(), x, -1.5f), b);
    ggml_cgraph *gf = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(gf, y);

    ggml_backend_ptr cpu(ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr));
    ok(cpu != nullptr, "ggml_backend_ptr owns the CPU backend");
    if (!cpu) return;
    ggml_backend_buffer_ptr buf(ggml_backend_alloc_ctx_tensors(ctx.get(), cpu.get()));
    ok(buf != nullptr, "ggml_backend_buffer_ptr owns the tensors' buffer");
    if (!buf) return;

    std::vector<float> xv(21), bv(7), yv(21);
    for (int i = 0; i < 21; i++) xv[i] = 0.25f * (float)(i - 10);
    for (int i = 0; i < 7; i++) bv[i] = 100.0f + (float)i;
    ggml_backend_tensor_set(x, xv.data(), 0, sizeof(float) * xv.size());
    ggml_backend_tensor_set(b, bv.data(), 0, sizeof(float) * bv.size());
    ok(ggml_backend_graph_compute(cpu.get(), gf) == GGML_STATUS_SUCCESS, "the graph computes on the CPU backend");
    ggml_backend_tensor_get(y, yv.data(), 0, sizeof(float) * yv.size());
    bool same = true;
    for (int i = 0; i < 21; i++) same = same && std::fabs(yv[i] - (-1.5f * xv[i] + bv[i % 7])) < 1e-5f;
    ok(same, "y = -1.5 x + b (broadcast) matches plain C++");
}

/* The graph allocator and the scheduler, owned by their aliases, on a graph of y = sum(x^2). */
static void test_alloc_sched_ptrs() {
    ggml_init_params params = {ggml_tensor_overhead() * 16 + ggml_graph_overhead(), nullptr, true};
    ggml_context_ptr ctx(ggml_init(params));
    ggml_tensor *x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 5);
    ggml_set_input(x);
    ggml_tensor *y = ggml_sum(ctx.get(), ggml_sqr(ctx.get(), x));
    ggml_set_output(y);
    ggml_cgraph *gf = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(gf, y);

    ggml_backend_ptr cpu(ggml_backend_cpu_init());
    ggml_gallocr_ptr galloc(ggml_gallocr_new(ggml_backend_get_default_buffer_type(cpu.get())));
    ok(galloc != nullptr && ggml_gallocr_alloc_graph(galloc.get(), gf), "ggml_gallocr_ptr owns an allocator that places the graph");
    const float xv[5] = {1, -2, 3, -4, 0.5f};
    ggml_backend_tensor_set(x, xv, 0, sizeof xv);
    float yv = 0;
    if (ggml_backend_graph_compute(cpu.get(), gf) == GGML_STATUS_SUCCESS) ggml_backend_tensor_get(y, &yv, 0, sizeof yv);
    ok(std::fabs(yv - 30.25f) < 1e-5f, "sum(x^2) through the graph allocator is 30.25");

    ggml_backend_t backends[1] = {cpu.get()};
    ggml_backend_sched_ptr sched(ggml_backend_sched_new(backends, nullptr, 1, GGML_DEFAULT_GRAPH_SIZE, false, true));
    ok(sched != nullptr, "ggml_backend_sched_ptr owns a scheduler");
    ggml_backend_event_ptr event(ggml_backend_event_new(ggml_backend_get_device(cpu.get())));
    ok(true, std::string("ggml_backend_event_ptr holds what ggml_backend_event_new gives (") + (event ? "an event" : "NULL: no events") + ")");
}

/* A GGUF context in a gguf_context_ptr: set keys, read them back. */
static void test_gguf_ptr() {
    gguf_context_ptr g(gguf_init_empty());
    ok(g != nullptr, "gguf_context_ptr owns gguf_init_empty()");
    if (!g) return;
    gguf_set_val_u32(g.get(), "compat.answer", 42);
    gguf_set_val_str(g.get(), "compat.name", "ggml-cpp");
    const int64_t k = gguf_find_key(g.get(), "compat.answer");
    const int64_t s = gguf_find_key(g.get(), "compat.name");
    ok(k >= 0 && gguf_get_val_u32(g.get(), k) == 42 && s >= 0 && std::strcmp(gguf_get_val_str(g.get(), s), "ggml-cpp") == 0,
       "keys set through the owned GGUF context read back");
}

/* ggml_ssm_scan of ggml before August 2026 (8 arguments) and after (K state slots) */
static void test_ssm_scan_both_forms() {
    ggml_init_params params = {16 * ggml_tensor_overhead(), nullptr, true};
    ggml_context_ptr ctx(ggml_init(params));
    ggml_context *c = ctx.get();
    const int64_t d_state = 4, head_dim = 2, n_head = 3, n_tok = 5;
    ggml_tensor *s = ggml_new_tensor_4d(c, GGML_TYPE_F32, d_state, head_dim, n_head, 1);
    ggml_tensor *x = ggml_new_tensor_4d(c, GGML_TYPE_F32, head_dim, n_head, n_tok, 1);
    ggml_tensor *dt = ggml_new_tensor_3d(c, GGML_TYPE_F32, n_head, n_tok, 1);
    ggml_tensor *A = ggml_new_tensor_2d(c, GGML_TYPE_F32, 1, n_head);
    ggml_tensor *B = ggml_new_tensor_4d(c, GGML_TYPE_F32, d_state, 1, n_tok, 1);
    ggml_tensor *ids = ggml_new_tensor_1d(c, GGML_TYPE_I32, 1);
    ggml_tensor *old_form = ggml_ssm_scan(c, s, x, dt, A, B, B, ids);
    ggml_tensor *new_form = ggml_ssm_scan(c, s, x, dt, A, B, B, ids, 2);
    const int64_t y = head_dim * n_head * n_tok, state = d_state * head_dim * n_head;
    ok(old_form && ggml_nelements(old_form) == y + state,
       "ggml_ssm_scan without K holds one state slot");
    ok(new_form && ggml_nelements(new_form) == y + 2 * state, "ggml_ssm_scan with K = 2 holds two");
}

int main() {
    std::printf("1..14\n");
    test_backend_ptrs();
    test_alloc_sched_ptrs();
    test_gguf_ptr();
    test_ssm_scan_both_forms();
    ok(n_test == 13, "every check ran");
    return n_failed == 0 ? 0 : 1;
}
