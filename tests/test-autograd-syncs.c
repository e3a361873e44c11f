/*
 * test-autograd-syncs.c - an eager training step costs no more host work and no more trips to
 * the device than it must, and still gives the same numbers:
 *   - parameters stepped in any order move by the gradients of the backward pass (the flush
 *     computes released gradients before the updates recorded after them);
 *   - values a tensor was made from are read back from the host copy ga_from_array keeps
 *     (the class indices a cross-entropy reads each step), and never after the storage may
 *     have changed (an assignment, an optimizer update);
 *   - after two warm-up steps of an MLP (AdamW, cross-entropy) the scheduler plans no graph
 *     anew: each step's graph is the last one at the same addresses (the storage pool hands
 *     out buffers first in, first out);
 *   - on a Vulkan device (lavapipe in CI) a step makes 2 submits and 2 fence waits (the graph,
 *     the loss read back), reads 1 value and computes nothing on the CPU, counted with
 *     ggmlc_counters_get; its losses equal the CPU's.
 * The Vulkan part is skipped, visibly, without a Vulkan device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "ggmlc.h"
#include "ggmlc-autograd.h"
#include "testutil.h"

enum { IN = 16, HIDDEN = 32, CLASSES = 4, BATCH = 8, WARMUP = 2, STEPS = 6 };

/* The plans the scheduler makes (GGMLC_DEBUG=sched prints one line each). */
static int n_plans;

static void count_plans(enum ggml_log_level level, const char *text, void *user) {
    (void)level, (void)user;
    if (strncmp(text, "sched: ", 7) == 0 && strstr(text, " nodes in ")) n_plans++;
}

static bool same_values(ga_tensor *t, const float *want, int n) {
    float got[8] = {0};
    if (ga_to_host(t, got, (size_t)n) != GGMLC_OK) return false;
    for (int i = 0; i < n; i++)
        if (fabsf(got[i] - want[i]) > 1e-6f) return false;
    return true;
}

/* The host copy of ga_from_array answers reads until the storage may change. */
static void check_host_copy(ga_device *dev) {
    const char *name = ga_device_name(dev);
    ga_scope_begin();
    ga_tensor *t = ga_from_array(dev, (const float[]){1, 2, 3}, 3, GA_SHAPE(3));
    tap_ok(t && same_values(t, (const float[]){1, 2, 3}, 3), "%s: values read as made", name);
    tap_ok(ga_assign_(t, ga_mul_scalar(t, 2)) == GGMLC_OK &&
               same_values(t, (const float[]){2, 4, 6}, 3),
           "%s: an assignment is read back", name);
    ga_tensor *p = ga_requires_grad_(ga_from_array(dev, (const float[]){1, -2, 3}, 3,
                                                   GA_SHAPE(3)), true);
    const bool stepped = ga_backward(ga_sum(ga_mul(p, p))) == GGMLC_OK &&
                         ga_sgd_step_(p, NULL, 0.25f, 0, 0) == GGMLC_OK; /* p - 0.25 * 2p */
    tap_ok(stepped && same_values(p, (const float[]){0.5f, -1, 1.5f}, 3),
           "%s: an in-place optimizer update is read back", name);
    ga_scope_end();
}

/* Two linear layers (3 -> 4 -> 2) from seed 1 and their summed output on 5 rows. */
static ga_tensor *two_layers(ga_device *dev, ga_tensor *w[2]) {
    ga_manual_seed(1);
    w[0] = ga_requires_grad_(ga_randn(dev, GA_SHAPE(4, 3)), true);
    w[1] = ga_requires_grad_(ga_randn(dev, GA_SHAPE(2, 4)), true);
    ga_tensor *x = ga_randn(dev, GA_SHAPE(5, 3));
    return ga_sum(ga_linear(ga_linear(x, w[0], NULL), w[1], NULL));
}

/* Parameters stepped last layer first get the gradients of the backward pass: an update never
 * runs before a released gradient that reads the weight it overwrites (W1's reads W2). */
static void check_step_order(ga_device *dev) {
    float grad[12], want[12], got[12];
    ga_tensor *w[2];
    ga_scope_begin();
    bool ok = ga_backward(two_layers(dev, w)) == GGMLC_OK &&
              ga_to_host(ga_grad(w[0]), grad, 12) == GGMLC_OK &&
              ga_to_host(w[0], want, 12) == GGMLC_OK;
    for (int i = 0; i < 12; i++) want[i] -= 0.5f * grad[i];
    ga_release(w[0]), ga_release(w[1]);
    ok = ok && ga_backward(two_layers(dev, w)) == GGMLC_OK;
    for (int k = 1; k >= 0 && ok; k--) { /* W2, then W1, each gradient released after its step */
        ok = ga_sgd_step_(w[k], NULL, 0.5f, 0, 0) == GGMLC_OK;
        ga_zero_grad(w[k]);
    }
    ok = ok && ga_to_host(w[0], got, 12) == GGMLC_OK;
    double worst = 0;
    for (int i = 0; i < 12 && ok; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    tap_ok(ok && worst <= 1e-5, "%s: W1 stepped after W2 moves by its own gradient (off by %.2g)",
           ga_device_name(dev), worst);
    ga_release(w[0]), ga_release(w[1]);
    ga_scope_end();
}

struct mlp {
    ga_tensor *p[4], *m[4], *v[4];
};

static bool mlp_init(struct mlp *n, ga_device *dev) {
    const int64_t shapes[4][2] = {{HIDDEN, IN}, {HIDDEN, 1}, {CLASSES, HIDDEN}, {CLASSES, 1}};
    ga_manual_seed(5);
    for (int i = 0; i < 4; i++) {
        ga_tensor *r = ga_randn(dev, i % 2 ? 1 : 2, shapes[i]);
        n->p[i] = ga_requires_grad_(ga_mul_scalar(r, 0.3f), true);
        ga_release(r);
        n->m[i] = n->p[i] ? ga_zeros_like(n->p[i]) : NULL;
        n->v[i] = n->p[i] ? ga_zeros_like(n->p[i]) : NULL;
        if (!n->m[i] || !n->v[i]) return false;
    }
    return true;
}

static void mlp_free(struct mlp *n) {
    for (int i = 0; i < 4; i++) ga_release(n->p[i]), ga_release(n->m[i]), ga_release(n->v[i]);
}

/* One step on batch s; its loss, NaN on failure. */
static float mlp_step(struct mlp *n, ga_device *dev, int s) {
    float x[BATCH * IN], y[BATCH];
    test_seed(100 + (uint64_t)s);
    test_fill_uniform(x, BATCH * IN, -1, 1);
    for (int i = 0; i < BATCH; i++) y[i] = (float)((s + 3 * i) % CLASSES);
    ga_scope_begin();
    ga_tensor *xt = ga_from_array(dev, x, BATCH * IN, GA_SHAPE(BATCH, IN));
    ga_tensor *yt = ga_from_array(dev, y, BATCH, GA_SHAPE(BATCH));
    ga_tensor *h = ga_relu(ga_linear(xt, n->p[0], n->p[1]));
    ga_tensor *loss = ga_cross_entropy(ga_linear(h, n->p[2], n->p[3]), yt, -100, 0);
    bool ok = loss && ga_backward(loss) == GGMLC_OK;
    for (int i = 0; i < 4 && ok; i++) {
        ok = ga_adamw_step_(n->p[i], n->m[i], n->v[i], s + 1, 0.01f, 0.9f, 0.999f, 1e-8f,
                            0.01f) == GGMLC_OK;
        ga_zero_grad(n->p[i]);
    }
    const float value = ok ? ga_item(loss) : NAN;
    ga_scope_end();
    return value;
}

struct run {
    float loss[STEPS];
    int plans;                /* made after the warm-up */
    struct ggmlc_counters c;  /* of the steps after the warm-up */
    bool ok;
};

static struct run train(ga_device *dev) {
    struct run r = {.ok = false};
    struct mlp n = {{0}};
    if (!mlp_init(&n, dev)) {
        mlp_free(&n);
        return r;
    }
    struct ggmlc_counters before;
    r.ok = true;
    for (int s = 0; s < STEPS && r.ok; s++) {
        if (s == WARMUP) {
            n_plans = 0;
            ggmlc_counters_get(&before);
        }
        r.loss[s] = mlp_step(&n, dev, s);
        r.ok = !isnan(r.loss[s]);
    }
    r.plans = n_plans;
    ggmlc_counters_get(&r.c);
    r.c.submits -= before.submits;
    r.c.waits -= before.waits;
    r.c.reads_from_device -= before.reads_from_device;
    r.c.fallback_nodes -= before.fallback_nodes;
    mlp_free(&n);
    return r;
}

static void check_vulkan(ggml_backend_reg_t reg, const struct run *cpu) {
    ga_device *dev = ga_device_get(ggml_backend_dev_name(ggml_backend_reg_dev_get(reg, 0)));
    if (!tap_ok(dev != NULL, "a Vulkan device opens")) return;
    check_host_copy(dev);
    check_step_order(dev);
    const struct run vk = train(dev);
    if (!tap_ok(vk.ok, "the MLP trains on %s", ga_device_name(dev))) return;
    const int steps = STEPS - WARMUP;
    tap_ok(vk.plans == 0, "%s: no graph planned anew after the warm-up (%d plans)",
           ga_device_name(dev), vk.plans);
    tap_ok(vk.c.submits == 2u * steps && vk.c.waits == 2u * steps,
           "%s: 2 submits and 2 waits a step (%llu and %llu in %d steps)", ga_device_name(dev),
           (unsigned long long)vk.c.submits, (unsigned long long)vk.c.waits, steps);
    tap_ok(vk.c.reads_from_device == (uint64_t)steps && vk.c.fallback_nodes == 0,
           "%s: one read a step (the loss; %llu in %d steps), no CPU fallback (%llu nodes)",
           ga_device_name(dev), (unsigned long long)vk.c.reads_from_device, steps,
           (unsigned long long)vk.c.fallback_nodes);
    double worst = 0;
    for (int s = 0; s < STEPS; s++) {
        const double d = fabs((double)vk.loss[s] - cpu->loss[s]) / (1e-3 + fabs(cpu->loss[s]));
        if (d > worst) worst = d;
    }
    tap_ok(worst <= 1e-4, "%s: the losses of %d steps equal the CPU's (relative %.2g)",
           ga_device_name(dev), STEPS, worst);
}

int main(void) {
    setenv("GGMLC_DEBUG", "sched", 1);
    const char *build_dir = getenv("GGMLC_BUILDDIR");
    char ini[1024];
    snprintf(ini, sizeof ini, "%s/tests/ggmlc-test-vulkan.ini", build_dir ? build_dir : ".");
    if (build_dir && access(ini, R_OK) == 0) test_vulkan_env();
    ggml_log_set(count_plans, NULL);
    ga_device *cpu = ga_device_get("CPU");
    if (!cpu) return tap_skip_all(ggmlc_last_error());
    check_host_copy(cpu);
    check_step_order(cpu);
    const struct run r = train(cpu);
    if (tap_ok(r.ok, "the MLP trains on the CPU"))
        tap_ok(r.plans == 0, "CPU: no graph planned anew after the warm-up (%d plans)", r.plans);
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    if (reg && ggml_backend_reg_dev_count(reg) > 0 && r.ok)
        check_vulkan(reg, &r);
    else
        tap_diag("no Vulkan device: the Vulkan checks are skipped");
    ga_shutdown();
    return tap_done();
}
