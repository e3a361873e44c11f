/*
 * autograd-mlp.c - a PyTorch-style training loop written with the eager engine
 * (ggmlc-autograd.h, ggmlc-autograd-nn.h): an MLP classifies the embedded 8x8 digits (or
 * Fashion-MNIST with --fashion DIR), with AdamW, a cosine schedule with warmup, gradient
 * clipping and a shuffling data loader, then reports the test accuracy.
 *
 *   autograd-mlp [--fashion DIR] [--epochs N] [--device NAME] [--min-accuracy A]
 *
 * Exit status: 0, or 1 when training fails or the accuracy is below --min-accuracy.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggmlc-autograd-nn.h"
#include "ggmlc-nn.h"

struct options {
    const char *fashion, *device;
    int epochs;
    double min_accuracy;
};

static bool parse(int argc, char **argv, struct options *o) {
    *o = (struct options){NULL, NULL, 10, 0};
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--fashion") == 0 && v)
            o->fashion = argv[++i];
        else if (strcmp(argv[i], "--device") == 0 && v)
            o->device = argv[++i];
        else if (strcmp(argv[i], "--epochs") == 0 && v)
            o->epochs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--min-accuracy") == 0 && v)
            o->min_accuracy = atof(argv[++i]);
        else
            return false;
    }
    return o->epochs > 0;
}

/* The share of test samples whose largest logit is at the label. */
static double accuracy(ga_module *net, const struct ggmlc_dataset *test, ga_device *dev) {
    ga_loader *l = ga_loader_new(test, dev, 256, false, false, 0);
    ga_tensor *x, *y;
    int64_t right = 0;
    ga_module_train(net, false);
    bool was = ga_set_grad_enabled(false); /* torch.no_grad() */
    while (l && ga_loader_next(l, &x, &y)) {
        ga_scope_begin();
        const int64_t n = ga_size(x, 0);
        float pred[256], label[256];
        ga_to_host(ga_argmax(ga_module_forward(net, x), 1, false), pred, (size_t)n);
        ga_to_host(y, label, (size_t)n);
        for (int64_t i = 0; i < n; i++) right += pred[i] == label[i];
        ga_scope_end();
        ga_release(x);
        ga_release(y);
    }
    ga_set_grad_enabled(was);
    ga_module_train(net, true);
    ga_loader_free(l);
    return (double)right / (double)test->n;
}

static ga_module *make_mlp(ga_device *dev, int64_t in, int64_t classes) {
    ga_module *net = ga_sequential();
    ga_sequential_add(net, ga_flatten_module());
    ga_sequential_add(net, ga_linear_module(dev, in, 128, true));
    ga_sequential_add(net, ga_relu_module());
    ga_sequential_add(net, ga_dropout_module(0.1f));
    ga_sequential_add(net, ga_linear_module(dev, 128, classes, true));
    return net;
}

static bool load(const struct options *o, struct ggmlc_dataset *train, struct ggmlc_dataset *test) {
    struct ggmlc_dataset all;
    if (o->fashion)
        return ggmlc_dataset_load_fashion_mnist(o->fashion, true, train) == GGMLC_OK &&
               ggmlc_dataset_load_fashion_mnist(o->fashion, false, test) == GGMLC_OK &&
               (ggmlc_dataset_normalize(train), ggmlc_dataset_normalize(test), true);
    if (ggmlc_dataset_load_digits(&all) != GGMLC_OK) return false;
    ggmlc_dataset_normalize(&all);
    bool ok = ggmlc_dataset_split(&all, 0.2, 42, train, test) == GGMLC_OK;
    ggmlc_dataset_free(&all);
    return ok;
}

/* One epoch; returns the mean training loss (NAN on failure). */
static double train_epoch(ga_module *net, ga_loader *loader, ga_optimizer *opt,
                          ga_scheduler *sched) {
    ga_tensor *x, *y, *total = NULL;
    int64_t batches = 0;
    while (ga_loader_next(loader, &x, &y)) {
        ga_scope_begin();
        ga_optimizer_zero_grad(opt);
        ga_tensor *loss = ga_cross_entropy(ga_module_forward(net, x), y, -100, 0.0f);
        bool ok = loss && ga_backward(loss) == GGMLC_OK;
        if (!ok) {
            ga_scope_end();
            ga_release(x), ga_release(y), ga_release(total);
            return NAN;
        }
        ga_clip_grad_norm(ga_module_parameters(net), 5.0f, 2.0f);
        ga_optimizer_step(opt);
        ga_scheduler_step(sched);
        /* the running sum stays on the device: no read-back per step */
        ga_tensor *sum = total ? ga_add(total, ga_detach(loss)) : ga_detach(loss);
        ga_release(total);
        total = ga_retain(sum);
        ga_scope_end();
        ga_release(x);
        ga_release(y);
        batches++;
    }
    double mean = total ? ga_item(total) / (double)batches : NAN;
    ga_release(total);
    return mean;
}

int main(int argc, char **argv) {
    struct options o;
    if (!parse(argc, argv, &o)) {
        fprintf(stderr,
                "usage: %s [--fashion DIR] [--epochs N] [--device NAME] "
                "[--min-accuracy A]\n",
                argv[0]);
        return 2;
    }
    ga_device *dev = ga_device_get(o.device);
    struct ggmlc_dataset train, test;
    if (!dev || !load(&o, &train, &test)) {
        fprintf(stderr, "autograd-mlp: %s\n", ggmlc_last_error());
        return 1;
    }
    ga_manual_seed(1);
    ga_module *net = make_mlp(dev, ggmlc_dataset_sample_size(&train), train.n_classes);
    ga_loader *loader = ga_loader_new(&train, dev, 64, true, false, 7);
    ga_optimizer *opt = ga_adamw(ga_module_parameters(net), 3e-3f, 0.9f, 0.999f, 1e-8f, 0.01f);
    const int steps = o.epochs * (int)ga_loader_batches(loader);
    ga_scheduler *sched = ga_cosine_lr(opt, steps / 10, steps, 1e-4f);
    int status = net && loader && opt && sched ? 0 : 1;
    printf("%s: %lld training and %lld test samples on %s\n",
           o.fashion ? "Fashion-MNIST" : "digits", (long long)train.n, (long long)test.n,
           ga_device_name(dev));
    for (int e = 0; e < o.epochs && status == 0; e++) {
        double loss = train_epoch(net, loader, opt, sched);
        double acc = accuracy(net, &test, dev);
        printf("epoch %2d  loss %.4f  test accuracy %.4f\n", e + 1, loss, acc);
        if (isnan(loss)) status = 1;
        if (e == o.epochs - 1 && acc < o.min_accuracy) status = 1;
    }
    if (status) fprintf(stderr, "autograd-mlp: %s\n", ggmlc_last_error());
    ga_scheduler_free(sched);
    ga_optimizer_free(opt);
    ga_loader_free(loader);
    ga_module_free(net);
    ggmlc_dataset_free(&train);
    ggmlc_dataset_free(&test);
    ga_shutdown();
    return status;
}
