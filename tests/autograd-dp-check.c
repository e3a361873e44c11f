/*
 * autograd-dp-check.c - eager data parallelism over MPI, for tests/test-autograd-dp.sh: run as
 * `mpirun -np 2 autograd-dp-check`, each rank trains an MLP eagerly on its half of every batch
 * with ga_dp_allreduce_grads (scale 1/2) and also, alone, a twin on the whole batch; the two
 * must end with the same weights.  Rank 0 prints TAP.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ggmlc-autograd-nn.h"
#include "ggmlc-dp.h"

enum { BATCH = 8, IN = 4, STEPS = 10 };

static ga_module *mlp(ga_device *dev) {
    ga_manual_seed(5); /* the same initial weights in both models and on both ranks */
    ga_module *net = ga_sequential();
    ga_sequential_add(net, ga_linear_module(dev, IN, 6, true));
    ga_sequential_add(net, ga_tanh_module());
    ga_sequential_add(net, ga_linear_module(dev, 6, 3, true));
    return net;
}

/* STEPS steps of SGD with momentum on rows [first, first + rows) of the batch; with comm, the
 * gradients are averaged over the ranks first. */
static enum ggmlc_status train(ga_module *net, ga_device *dev, const float *x, const float *y,
                               int first, int rows, ggmlc_comm *comm, int size) {
    ga_optimizer *opt = ga_sgd(ga_module_parameters(net), 0.2f, 0.9f, 0, 0, false);
    enum ggmlc_status st = opt ? GGMLC_OK : ggmlc_last_status();
    for (int s = 0; s < STEPS && st == GGMLC_OK; s++) {
        ga_scope_begin();
        ga_optimizer_zero_grad(opt);
        ga_tensor *xs = ga_from_array(dev, x + first * IN, (size_t)rows * IN, GA_SHAPE(rows, IN));
        ga_tensor *ys = ga_from_array(dev, y + first, (size_t)rows, GA_SHAPE(rows));
        ga_tensor *loss = ga_cross_entropy(ga_module_forward(net, xs), ys, -100, 0);
        st = loss ? ga_backward(loss) : ggmlc_last_status();
        if (st == GGMLC_OK && comm)
            st = ga_dp_allreduce_grads(comm, ga_module_parameters(net), 1.0f / (float)size);
        if (st == GGMLC_OK) st = ga_optimizer_step(opt);
        ga_scope_end();
    }
    ga_optimizer_free(opt);
    return st;
}

static double max_rel_diff(ga_module *a, ga_module *b) {
    ga_param_list pa = ga_module_parameters(a);
    ga_tensor *wa[8];
    int n = pa.n;
    memcpy(wa, pa.params, sizeof(ga_tensor *) * (size_t)n);
    ga_param_list pb = ga_module_parameters(b);
    double worst = 0;
    for (int k = 0; k < n; k++) {
        float va[64], vb[64];
        size_t len = (size_t)ga_numel(wa[k]);
        if (ga_to_host(wa[k], va, len) != GGMLC_OK || ga_to_host(pb.params[k], vb, len) != GGMLC_OK)
            return INFINITY;
        for (size_t i = 0; i < len; i++) {
            double d = fabs((double)va[i] - vb[i]) / (1e-6 + fabs((double)vb[i]));
            worst = d > worst ? d : worst;
        }
    }
    return worst;
}

int main(int argc, char **argv) {
    ggmlc_comm *comm = ggmlc_comm_mpi(&argc, &argv);
    ga_device *dev = ga_device_get("CPU");
    if (!comm || !dev) {
        fprintf(stderr, "autograd-dp-check: %s\n", ggmlc_last_error());
        return 2;
    }
    const int rank = ggmlc_comm_rank(comm), size = ggmlc_comm_size(comm);
    float x[BATCH * IN], y[BATCH];
    for (int i = 0; i < BATCH * IN; i++) x[i] = sinf(0.7f * (float)i) * 2;
    for (int i = 0; i < BATCH; i++) y[i] = (float)(i % 3);
    ga_module *dp = mlp(dev), *whole = mlp(dev);
    const int rows = BATCH / size;
    enum ggmlc_status st = train(dp, dev, x, y, rank * rows, rows, comm, size);
    enum ggmlc_status st1 = train(whole, dev, x, y, 0, BATCH, NULL, 1);
    double d = st == GGMLC_OK && st1 == GGMLC_OK ? max_rel_diff(dp, whole) : INFINITY;
    /* a member without a gradient is refused before any collective call */
    ga_module *fresh = mlp(dev);
    enum ggmlc_status gap = ga_dp_allreduce_grads(comm, ga_module_parameters(fresh), 0.5f);
    if (rank == 0) {
        printf("1..2\n");
        printf("%s 1 - %d ranks, eager, half a batch each: the weights of one process on the "
               "whole batch (largest relative difference %.2g)\n",
               d <= 1e-5 ? "ok" : "not ok", size, d);
        printf("%s 2 - a parameter without a gradient is refused: %s\n",
               gap == GGMLC_ERR_INVALID_ARG ? "ok" : "not ok", ggmlc_last_error());
    }
    ga_module_free(dp);
    ga_module_free(whole);
    ga_module_free(fresh);
    ga_shutdown();
    ggmlc_comm_free(comm);
    return d <= 1e-5 && gap == GGMLC_ERR_INVALID_ARG ? 0 : 1;
}
