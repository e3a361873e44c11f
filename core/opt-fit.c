/*
 * opt-fit.c - the high-level training loop of ggml-opt: epochs over a
 * dataset, a progress bar, and ggml_opt_fit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggml-alloc.h"
#include "opt-impl.h"

/* ggml_opt_epoch; copied: the device's copy of the dataset (if any) is up to date. */
static void run_epoch(ggml_opt_context_t opt_ctx, ggml_opt_dataset_t dataset, ggml_opt_result_t result_train,
                      ggml_opt_result_t result_eval, int64_t idata_split, ggml_opt_epoch_callback callback_train,
                      ggml_opt_epoch_callback callback_eval, bool copied) {
    struct ggml_tensor *inputs = ggml_opt_inputs(opt_ctx), *labels = ggml_opt_labels(opt_ctx);
    if (!ggml_opt_static_graphs(opt_ctx) || !inputs) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_opt_epoch: needs an optimization context with static graphs");
        return;
    }
    const int64_t ndata = ggml_opt_dataset_ndata(dataset), batch = inputs->ne[1];
    if (idata_split < 0) idata_split = ndata;
    if (idata_split % batch != 0 || ndata % batch != 0) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_opt_epoch: the split (%lld) and the dataset (%lld) must be multiples of the batch size %lld",
                        (long long)idata_split, (long long)ndata, (long long)batch);
        return;
    }
    const int64_t ibatch_split = idata_split / batch, nbatches = ndata / batch;
    /* A callback of the caller's may change the dataset between steps: then every batch comes
     * from it, as it is then. */
    const bool own_callbacks = (!callback_train || callback_train == ggml_opt_epoch_callback_progress_bar) &&
                               (!callback_eval || callback_eval == ggml_opt_epoch_callback_progress_bar);
    const bool on_device = own_callbacks && ggmlc__opt_gather_begin(opt_ctx, dataset, copied);
    int64_t t_start = ggml_time_us();
    for (int64_t ib = 0; ib < nbatches; ib++) {
        const bool train = ib < ibatch_split;
        if (ib == ibatch_split) t_start = ggml_time_us();
        if (on_device) ggmlc__opt_gather_step(opt_ctx, dataset, ib);
        ggml_opt_alloc(opt_ctx, train);
        if (!on_device) ggml_opt_dataset_get_batch(dataset, inputs, labels, ib);
        ggml_opt_eval(opt_ctx, train ? result_train : result_eval);
        ggml_opt_epoch_callback callback = train ? callback_train : callback_eval;
        if (callback) {
            const int64_t done = train ? ib + 1 : ib + 1 - ibatch_split, total = train ? ibatch_split : nbatches - ibatch_split;
            callback(train, opt_ctx, dataset, train ? result_train : result_eval, done, total, t_start);
        }
    }
    if (on_device) ggmlc__opt_gather_end(opt_ctx);
}

/* The dataset is copied to the device (where its batches are gathered there) at every call:
 * the caller may have changed it since the last. */
void ggml_opt_epoch(ggml_opt_context_t opt_ctx, ggml_opt_dataset_t dataset, ggml_opt_result_t result_train,
                    ggml_opt_result_t result_eval, int64_t idata_split, ggml_opt_epoch_callback callback_train,
                    ggml_opt_epoch_callback callback_eval) {
    run_epoch(opt_ctx, dataset, result_train, result_eval, idata_split, callback_train, callback_eval, false);
}

static void print_hms(int64_t us) {
    const int64_t s = us / 1000000;
    fprintf(stderr, "%02d:%02d:%02d", (int)(s / 3600), (int)(s / 60 % 60), (int)(s % 60));
}

void ggml_opt_epoch_callback_progress_bar(bool train, ggml_opt_context_t opt_ctx, ggml_opt_dataset_t dataset,
                                          ggml_opt_result_t result, int64_t ibatch, int64_t ibatch_max, int64_t t_start_us) {
    (void)opt_ctx;
    (void)dataset;
    enum { WIDTH = 25 };
    const int filled = (int)(WIDTH * ibatch / (ibatch_max > 0 ? ibatch_max : 1));
    fprintf(stderr, "\r%s: [", train ? "train" : "val  ");
    for (int i = 0; i < WIDTH; i++) fputc(i < filled ? '=' : i == filled ? '>' : ' ', stderr);
    int64_t ndata;
    double loss, loss_unc, acc, acc_unc;
    ggml_opt_result_ndata(result, &ndata);
    ggml_opt_result_loss(result, &loss, &loss_unc);
    ggml_opt_result_accuracy(result, &acc, &acc_unc);
    fprintf(stderr, "] batch %lld/%lld, loss=%.5f", (long long)ibatch, (long long)ibatch_max, loss);
    if (!isnan(loss_unc)) fprintf(stderr, "±%.5f", loss_unc);
    if (!isnan(acc)) fprintf(stderr, ", accuracy=%.2f%%", 100 * acc);
    const int64_t elapsed = ggml_time_us() - t_start_us;
    fprintf(stderr, ", t=");
    print_hms(elapsed);
    fprintf(stderr, ", ETA=");
    print_hms(ibatch > 0 ? elapsed * (ibatch_max - ibatch) / ibatch : 0);
    fprintf(stderr, "   ");
    if (ibatch == ibatch_max) fputc('\n', stderr);
    fflush(stderr);
}

void ggml_opt_fit(ggml_backend_sched_t backend_sched, struct ggml_context *ctx_compute, struct ggml_tensor *inputs,
                  struct ggml_tensor *outputs, ggml_opt_dataset_t dataset, enum ggml_opt_loss_type loss_type,
                  enum ggml_opt_optimizer_type optimizer, ggml_opt_get_optimizer_params get_opt_pars, int64_t nepoch,
                  int64_t nbatch_logical, float val_split, bool silent) {
    const int64_t ndata = ggml_opt_dataset_ndata(dataset), nbatch_physical = inputs->ne[1];
    if (nbatch_logical % nbatch_physical != 0 || !(val_split >= 0.0f && val_split < 1.0f)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_opt_fit: nbatch_logical must be a multiple of the input batch and val_split in [0, 1)");
        return;
    }
    const int64_t idata_split = (int64_t)(ndata * (1.0 - val_split)) / nbatch_logical * nbatch_logical;
    int64_t epoch = 1;
    struct ggml_opt_params params = ggml_opt_default_params(backend_sched, loss_type);
    params.ctx_compute = ctx_compute;
    params.inputs = inputs;
    params.outputs = outputs;
    params.opt_period = (int32_t)(nbatch_logical / nbatch_physical);
    params.optimizer = optimizer;
    params.get_opt_pars = get_opt_pars;
    params.get_opt_pars_ud = &epoch;
    ggml_opt_context_t opt_ctx = ggml_opt_init(params);
    ggml_opt_result_t train = ggml_opt_result_init(), val = ggml_opt_result_init();
    if (!opt_ctx || !train || !val) goto done;
    const int64_t t_start = ggml_time_us();
    for (; epoch <= nepoch; epoch++) {
        if (nbatch_logical < idata_split) ggml_opt_dataset_shuffle(opt_ctx, dataset, idata_split);
        ggml_opt_result_reset(train);
        ggml_opt_result_reset(val);
        if (!silent) fprintf(stderr, "%s: epoch %04lld/%04lld:\n", __func__, (long long)epoch, (long long)nepoch);
        /* nothing of the caller's runs between the epochs: the dataset's copy stays valid */
        run_epoch(opt_ctx, dataset, train, val, idata_split, silent ? NULL : ggml_opt_epoch_callback_progress_bar,
                  silent ? NULL : ggml_opt_epoch_callback_progress_bar, epoch > 1);
    }
    if (!silent) {
        fprintf(stderr, "%s: training took ", __func__);
        print_hms(ggml_time_us() - t_start);
        fprintf(stderr, "\n");
    }
done:
    ggml_opt_result_free(train);
    ggml_opt_result_free(val);
    ggml_opt_free(opt_ctx);
}
