/*
 * ops-loss.c - training kernels: CROSS_ENTROPY_LOSS and its gradient,
 * SILU_BACK, and the optimizer steps OPT_STEP_ADAMW and OPT_STEP_SGD.
 */
#include "ops-nn.h"

static size_t two_rows_work(const struct ggml_tensor *dst, int n_threads) {
    return nn_scratch_bytes(2 * dst->src[1]->ne[0], n_threads);
}

/* log(sum(exp(x))) of a row, shifted by its maximum. */
static double log_sum_exp(const float *x, int64_t n) {
    float max = -INFINITY;
    for (int64_t i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += exp((double)x[i] - max);
    return max + log(sum);
}

/* -(1/rows) * sum over rows of <labels, log_softmax(logits)>.  One task: the loss is a
 * single sum and cheap next to whatever produced the logits. */
static enum ggml_status cross_entropy_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *logits = dst->src[0], *labels = dst->src[1];
    const int64_t n = logits->ne[0], rows = ggml_nrows(logits);
    float *x = nn_scratch(call, 2 * n), *t = x + n;
    double total = 0.0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t i1, i2, i3;
        nn_row_index(logits, r, &i1, &i2, &i3);
        nn_row_load(logits, i1, i2, i3, x);
        nn_row_load(labels, i1, i2, i3, t);
        const double lse = log_sum_exp(x, n);
        for (int64_t i = 0; i < n; i++) {
            if (t[i] != 0.0f) total += (double)t[i] * ((double)x[i] - lse);
        }
    }
    const float loss = (float)(-total / (double)rows);
    ew_store(dst->data, dst->type, sizeof(float), &loss, 1);
    return GGML_STATUS_SUCCESS;
}

static int one_task(const struct ggml_tensor *node, int n_threads) { return 1; }

/* d/dlogits = (softmax(logits) * sum(labels) - labels) * grad / rows; src = grad, logits, labels.
 * (With labels summing to one per row this is ggml's softmax - labels; the sum keeps it
 * exact for any labels.) */
static enum ggml_status cross_entropy_back_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *grad = dst->src[0], *logits = dst->src[1], *labels = dst->src[2];
    const int64_t n = logits->ne[0], rows = ggml_nrows(logits);
    float g;
    ew_load(&g, grad->data, grad->type, sizeof(float), 1);
    const double factor = (double)g / (double)rows;
    float *x = nn_scratch(call, 2 * n), *t = x + n;
    int64_t r0, r1;
    cpu_split_range(rows, call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        nn_row_index(logits, r, &i1, &i2, &i3);
        nn_row_load(logits, i1, i2, i3, x);
        nn_row_load(labels, i1, i2, i3, t);
        const double lse = log_sum_exp(x, n);
        double label_sum = 0.0;
        for (int64_t i = 0; i < n; i++) label_sum += t[i];
        for (int64_t i = 0; i < n; i++) x[i] = (float)((exp((double)x[i] - lse) * label_sum - t[i]) * factor);
        nn_row_store(dst, i1, i2, i3, x);
    }
    return GGML_STATUS_SUCCESS;
}

/* dx = dy * s * (1 + x * (1 - s)), s = sigmoid(x); src0 = dy, src1 = x. */
static enum ggml_status silu_back_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *dy_t = dst->src[0], *x_t = dst->src[1];
    const int64_t n = dst->ne[0];
    float *dy = nn_scratch(call, 2 * n), *x = dy + n;
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(dst), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        nn_row_index(dst, r, &i1, &i2, &i3);
        nn_row_load(dy_t, i1, i2, i3, dy);
        nn_row_load(x_t, i1, i2, i3, x);
        for (int64_t i = 0; i < n; i++) {
            const float s = 1.0f / (1.0f + expf(-x[i]));
            dy[i] = dy[i] * s * (1.0f + x[i] * (1.0f - s));
        }
        nn_row_store(dst, i1, i2, i3, dy);
    }
    return GGML_STATUS_SUCCESS;
}

/* Apply step(w, g, m, v) to every element; m and v may be NULL (SGD).  Parameters are
 * f32 (checked by the constructors); any strides. */
typedef void (*param_step_fn)(const float *hp, float *w, float g, float *m, float *v);

static void for_each_param(const struct ggmlc_op_call *call, struct ggml_tensor *dst, const float *hp, param_step_fn step) {
    const struct ggml_tensor *g_t = dst->src[1], *m_t = dst->src[2], *v_t = dst->src[3];
    const bool moments = dst->op == GGML_OP_OPT_STEP_ADAMW;
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(dst), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        nn_row_index(dst, r, &i1, &i2, &i3);
        for (int64_t i0 = 0; i0 < dst->ne[0]; i0++) {
            float *w = (float *)nn_elem(dst, i0, i1, i2, i3);
            const float g = *(const float *)nn_elem(g_t, i0, i1, i2, i3);
            float *m = moments ? (float *)nn_elem(m_t, i0, i1, i2, i3) : NULL;
            float *v = moments ? (float *)nn_elem(v_t, i0, i1, i2, i3) : NULL;
            step(hp, w, g, m, v);
        }
    }
}

/* hp = {alpha, beta1, beta2, eps, wd, beta1h, beta2h}; beta1h/beta2h are the bias
 * corrections 1/(1 - beta^t), read at run time so a schedule needs no new graph. */
static void adamw_step(const float *hp, float *w, float g, float *m, float *v) {
    *m = *m * hp[1] + g * (1.0f - hp[1]);
    *v = *v * hp[2] + g * g * (1.0f - hp[2]);
    const float mh = *m * hp[5], vh = sqrtf(*v * hp[6]) + hp[3];
    *w = *w * (1.0f - hp[0] * hp[4]) - hp[0] * mh / vh;
}

/* hp = {alpha, wd}. */
static void sgd_step(const float *hp, float *w, float g, float *m, float *v) {
    *w = *w * (1.0f - hp[0] * hp[1]) - hp[0] * g;
}

static enum ggml_status adamw_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    float hp[7];
    memcpy(hp, dst->src[4]->data, sizeof hp);
    for_each_param(call, dst, hp, adamw_step);
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status sgd_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    float hp[2];
    memcpy(hp, dst->src[2]->data, sizeof hp);
    for_each_param(call, dst, hp, sgd_step);
    return GGML_STATUS_SUCCESS;
}

void cpu_nn_loss_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_CROSS_ENTROPY_LOSS] = cross_entropy_compute;
    t->work_size[GGML_OP_CROSS_ENTROPY_LOSS] = two_rows_work;
    t->n_tasks[GGML_OP_CROSS_ENTROPY_LOSS] = one_task;
    t->compute[GGML_OP_CROSS_ENTROPY_LOSS_BACK] = cross_entropy_back_compute;
    t->work_size[GGML_OP_CROSS_ENTROPY_LOSS_BACK] = two_rows_work;
    t->compute[GGML_OP_SILU_BACK] = silu_back_compute;
    t->work_size[GGML_OP_SILU_BACK] = two_rows_work;
    t->compute[GGML_OP_OPT_STEP_ADAMW] = adamw_compute;
    t->compute[GGML_OP_OPT_STEP_SGD] = sgd_compute;
}
