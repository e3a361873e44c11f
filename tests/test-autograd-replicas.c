/*
 * test-autograd-replicas.c - eager data parallelism in one process: two replicas, each on a
 * device of its own (ga_device_open: two CPU backends of one thread, or the CPU and the device
 * named as the argument, Vulkan0) and in a thread of its own, train an MLP on half of every batch and average their gradients through a thread
 * communicator (ga_dp_allreduce_grads); both must end with the weights of one model trained
 * on the whole batch, and with each other's bits.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ggmlc-autograd-nn.h"
#include "ggmlc-dp.h"
#include "testutil.h"

enum { BATCH = 16, IN = 6, STEPS = 20, REPLICAS = 2 };

static float xs[BATCH * IN], ys[BATCH];

struct replica {
    ga_device *dev;
    ga_module *net;
    ggmlc_comm *comm; /* NULL: the whole batch alone */
    int first, rows;
    enum ggmlc_status status;
};

/* The same initial weights for every model: created before any thread starts. */
static ga_module *mlp(ga_device *dev) {
    ga_manual_seed(9);
    ga_module *net = ga_sequential();
    ga_sequential_add(net, ga_linear_module(dev, IN, 12, true));
    ga_sequential_add(net, ga_relu_module());
    ga_sequential_add(net, ga_linear_module(dev, 12, 4, true));
    return net;
}

static void *train(void *arg) {
    struct replica *r = arg;
    ga_optimizer *opt = ga_adamw(ga_module_parameters(r->net), 0.01f, 0.9f, 0.999f, 1e-8f, 0.01f);
    r->status = opt ? GGMLC_OK : ggmlc_last_status();
    for (int s = 0; s < STEPS && r->status == GGMLC_OK; s++) {
        ga_scope_begin();
        ga_optimizer_zero_grad(opt);
        ga_tensor *x = ga_from_array(r->dev, xs + r->first * IN, (size_t)r->rows * IN,
                                     GA_SHAPE(r->rows, IN));
        ga_tensor *y = ga_from_array(r->dev, ys + r->first, (size_t)r->rows, GA_SHAPE(r->rows));
        ga_tensor *loss = ga_cross_entropy(ga_module_forward(r->net, x), y, -100, 0);
        r->status = loss ? ga_backward(loss) : ggmlc_last_status();
        if (r->status == GGMLC_OK && r->comm)
            r->status = ga_dp_allreduce_grads(r->comm, ga_module_parameters(r->net),
                                              (float)r->rows / BATCH);
        if (r->status == GGMLC_OK) r->status = ga_optimizer_step(opt);
        ga_scope_end();
    }
    if (r->status != GGMLC_OK && r->comm) ggmlc_comm_abort(r->comm, ggmlc_last_error());
    ga_optimizer_free(opt);
    if (r->comm) ga_thread_release(); /* a replica's thread ends here */
    return NULL;
}

/* Largest relative difference between the two models' weights (bitwise: 0). */
static double weight_diff(ga_module *a, ga_module *b) {
    ga_param_list pa = ga_module_parameters(a);
    ga_tensor *wa[8];
    const int n = pa.n;
    memcpy(wa, pa.params, sizeof(ga_tensor *) * (size_t)n);
    ga_param_list pb = ga_module_parameters(b);
    double worst = pb.n == n ? 0 : INFINITY;
    for (int k = 0; k < n && pb.n == n; k++) {
        float va[128], vb[128];
        const size_t len = (size_t)ga_numel(wa[k]);
        if (ga_to_host(wa[k], va, len) != GGMLC_OK || ga_to_host(pb.params[k], vb, len) != GGMLC_OK)
            return INFINITY;
        for (size_t i = 0; i < len; i++) {
            const double d = fabs((double)va[i] - vb[i]) / (1e-6 + fabs((double)vb[i]));
            worst = d > worst ? d : worst;
        }
    }
    return worst;
}

int main(int argc, char **argv) {
    const char *names[REPLICAS] = {"CPU", argc > 1 ? argv[1] : "CPU"};
    for (int i = 0; i < BATCH * IN; i++) xs[i] = cosf(0.37f * (float)i) * 1.5f;
    for (int i = 0; i < BATCH; i++) ys[i] = (float)(i % 4);
    struct replica whole = {ga_device_open("CPU", 1), NULL, NULL, 0, BATCH, GGMLC_OK};
    struct replica rep[REPLICAS];
    ggmlc_comm *members[REPLICAS];
    tap_ok(ggmlc_comm_threads(REPLICAS, NULL, members) == GGMLC_OK, "a thread communicator");
    bool devices_ok = whole.dev != NULL;
    for (int r = 0; r < REPLICAS; r++) {
        rep[r] = (struct replica){ga_device_open(names[r], 1), NULL, members[r], r * BATCH / REPLICAS,
                                  BATCH / REPLICAS, GGMLC_OK};
        devices_ok = devices_ok && rep[r].dev && rep[r].dev != whole.dev;
    }
    tap_ok(devices_ok && rep[0].dev != rep[1].dev && rep[0].dev != ga_device_get("CPU"),
           "ga_device_open gives each replica a device of its own (%s, %s)", names[0], names[1]);
    whole.net = mlp(whole.dev);
    for (int r = 0; r < REPLICAS; r++) rep[r].net = mlp(rep[r].dev);
    pthread_t th[REPLICAS];
    for (int r = 0; r < REPLICAS; r++) pthread_create(&th[r], NULL, train, &rep[r]);
    train(&whole); /* meanwhile, the reference on the main thread */
    for (int r = 0; r < REPLICAS; r++) pthread_join(th[r], NULL);
    tap_ok(whole.status == GGMLC_OK && rep[0].status == GGMLC_OK && rep[1].status == GGMLC_OK,
           "%d replicas and the reference trained %d steps at the same time", REPLICAS, STEPS);
    const double d = weight_diff(rep[0].net, whole.net);
    tap_ok(d <= 1e-4, "replicas on half batches end with the whole batch's weights (%.2g)", d);
    const double between = weight_diff(rep[0].net, rep[1].net);
    tap_ok(between == 0, "the replicas' weights are identical (%.2g)", between);
    for (int r = 0; r < REPLICAS; r++) {
        ga_module_free(rep[r].net);
        ggmlc_comm_free(members[r]);
    }
    ga_module_free(whole.net);
    ga_shutdown();
    return tap_done();
}
