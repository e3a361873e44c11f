/*
 * ops-loss.c - training kernels: CROSS_ENTROPY_LOSS and its gradient,
 * SILU_BACK, and the optimizer steps OPT_STEP_ADAMW and OPT_STEP_SGD.
 */
#include "ops-nn.h"

static size_t two_rows_work(const struct ggml_tensor *dst, int n_threads) {
    return nn_scratch_bytes(2 * dst->src[1]->ne[0], n_threads);
}

/* The logits, labels and exponentials rows of the cross-entropy kernels. */
static size_t three_rows_work(const struct ggml_tensor *dst, int n_threads) {
    return nn_scratch_bytes(3 * dst->src[1]->ne[0], n_threads);
}

/* The maximum of a row (-inf when empty). */
static float row_max(const float *x, int64_t n) {
    float max = -INFINITY;
    for (int64_t i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
    return max;
}

/* log(sum(exp(x))) of a row, shifted by its maximum; e gets exp(x - max) and *sum their
 * sum.  The exponentials are ew_expf's (vectorized, ~1e-8 relative): a libm exp in double
 * per logit made the loss of a 256-way output (ggmlc-gpt: 2048 x 256 logits) cost more
 * than the product that computed the logits. */
static double log_sum_exp(float *e, const float *x, int64_t n, double *sum) {
    const float max = row_max(x, n);
    *sum = exp_shifted(e, x, max, n);
    return max + log(*sum);
}

/* -(1/rows) * sum over rows of <labels, log_softmax(logits)>.  One task: the loss is a
 * single sum and cheap next to whatever produced the logits. */
static enum ggml_status cross_entropy_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *logits = dst->src[0], *labels = dst->src[1];
    const int64_t n = logits->ne[0], rows = ggml_nrows(logits);
    float *x = nn_scratch(call, 3 * n), *t = x + n, *e = t + n;
    double total = 0.0, sum;
    for (int64_t r = 0; r < rows; r++) {
        int64_t i1, i2, i3;
        nn_row_index(logits, r, &i1, &i2, &i3);
        nn_row_load(logits, i1, i2, i3, x);
        nn_row_load(labels, i1, i2, i3, t);
        const double lse = log_sum_exp(e, x, n, &sum);
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
 * exact for any labels.)  softmax = exp(x - max) / sum, so one exponential per logit. */
static enum ggml_status cross_entropy_back_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *grad = dst->src[0], *logits = dst->src[1], *labels = dst->src[2];
    const int64_t n = logits->ne[0], rows = ggml_nrows(logits);
    float g;
    ew_load(&g, grad->data, grad->type, sizeof(float), 1);
    const double factor = (double)g / (double)rows;
    float *x = nn_scratch(call, 3 * n), *t = x + n, *e = t + n;
    int64_t r0, r1;
    cpu_split_range(rows, call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        nn_row_index(logits, r, &i1, &i2, &i3);
        nn_row_load(logits, i1, i2, i3, x);
        nn_row_load(labels, i1, i2, i3, t);
        double sum, label_sum = 0.0;
        log_sum_exp(e, x, n, &sum);
        for (int64_t i = 0; i < n; i++) label_sum += t[i];
        const double scale = label_sum / sum;
        for (int64_t i = 0; i < n; i++) x[i] = (float)(((double)e[i] * scale - t[i]) * factor);
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

/* The optimizer steps on n contiguous elements (m and v are NULL for SGD); written
 * per row with restrict pointers so that each x86-64 level gets its vector code. */
typedef void (*param_row_fn)(const float *hp, float *restrict w, const float *restrict g, float *restrict m,
                             float *restrict v, int64_t n);

/* hp: the AdamW hyper-parameters (enum ggmlc_adamw_param); beta1h/beta2h are the bias
 * corrections 1/(1 - beta^t), read at run time so a schedule needs no new graph. */
EW_CLONES static void adamw_row(const float *hp, float *restrict w, const float *restrict g, float *restrict m,
                                float *restrict v, int64_t n) {
    const float alpha = hp[GGMLC_ADAMW_ALPHA], beta1 = hp[GGMLC_ADAMW_BETA1],
                beta2 = hp[GGMLC_ADAMW_BETA2];
    const float eps = hp[GGMLC_ADAMW_EPS], decay = 1.0f - alpha * hp[GGMLC_ADAMW_WD];
    const float beta1h = hp[GGMLC_ADAMW_BETA1H], beta2h = hp[GGMLC_ADAMW_BETA2H];
    for (int64_t i = 0; i < n; i++) {
        const float gi = g[i];
        const float mi = m[i] * beta1 + gi * (1.0f - beta1), vi = v[i] * beta2 + gi * gi * (1.0f - beta2);
        m[i] = mi;
        v[i] = vi;
        w[i] = w[i] * decay - alpha * (mi * beta1h) / (sqrtf(vi * beta2h) + eps);
    }
}

/* hp: the SGD hyper-parameters (enum ggmlc_sgd_param). */
EW_CLONES static void sgd_row(const float *hp, float *restrict w, const float *restrict g, float *restrict m,
                              float *restrict v, int64_t n) {
    const float alpha = hp[GGMLC_SGD_ALPHA], decay = 1.0f - alpha * hp[GGMLC_SGD_WD];
    for (int64_t i = 0; i < n; i++) w[i] = w[i] * decay - alpha * g[i];
}

/* Elements of a row of t gathered into (or scattered from) the contiguous buf, for strided views. */
static void strided_row_copy(const struct ggml_tensor *t, int64_t i1, int64_t i2, int64_t i3, float *buf, bool to_tensor) {
    for (int64_t i0 = 0; i0 < t->ne[0]; i0++) {
        float *e = (float *)nn_elem(t, i0, i1, i2, i3);
        if (to_tensor) *e = buf[i0];
        else buf[i0] = *e;
    }
}

/* Apply step to every row of the parameter dst and its gradient (and moments): in place
 * when the rows are contiguous (always, for the model API's parameters), through per-task
 * scratch rows otherwise.  Parameters are f32 (checked by the constructors). */
static void for_each_param(const struct ggmlc_op_call *call, struct ggml_tensor *dst, const float *hp, param_row_fn step) {
    const struct ggml_tensor *g_t = dst->src[1];
    struct ggml_tensor *m_t = dst->op == GGML_OP_OPT_STEP_ADAMW ? dst->src[2] : NULL;
    struct ggml_tensor *v_t = m_t ? dst->src[3] : NULL;
    struct ggml_tensor *const rows[4] = {dst, (struct ggml_tensor *)g_t, m_t, v_t};
    const int64_t n = dst->ne[0];
    float *scratch = NULL;
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(dst), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        nn_row_index(dst, r, &i1, &i2, &i3);
        float *p[4] = {NULL, NULL, NULL, NULL};
        bool strided = false;
        for (int k = 0; k < 4; k++) {
            if (!rows[k]) continue;
            p[k] = nn_f32_row(rows[k], i1, i2, i3);
            if (!p[k]) {
                if (!scratch) scratch = nn_scratch(call, 4 * n);
                p[k] = scratch + k * n;
                strided_row_copy(rows[k], i1, i2, i3, p[k], false);
                strided = true;
            }
        }
        step(hp, p[0], p[1], p[2], p[3], n);
        for (int k = 0; strided && k < 4; k++) {
            if (rows[k] && k != 1 && p[k] == scratch + k * n) strided_row_copy(rows[k], i1, i2, i3, p[k], true);
        }
    }
}

static size_t four_rows_work(const struct ggml_tensor *dst, int n_threads) {
    return nn_scratch_bytes(4 * dst->ne[0], n_threads);
}

static enum ggml_status adamw_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    float hp[GGMLC_ADAMW_N_PARAMS];
    memcpy(hp, dst->src[4]->data, sizeof hp);
    for_each_param(call, dst, hp, adamw_row);
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status sgd_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    float hp[GGMLC_SGD_N_PARAMS];
    memcpy(hp, dst->src[2]->data, sizeof hp);
    for_each_param(call, dst, hp, sgd_row);
    return GGML_STATUS_SUCCESS;
}

void cpu_nn_loss_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_CROSS_ENTROPY_LOSS] = cross_entropy_compute;
    t->work_size[GGML_OP_CROSS_ENTROPY_LOSS] = three_rows_work;
    t->n_tasks[GGML_OP_CROSS_ENTROPY_LOSS] = one_task;
    t->compute[GGML_OP_CROSS_ENTROPY_LOSS_BACK] = cross_entropy_back_compute;
    t->work_size[GGML_OP_CROSS_ENTROPY_LOSS_BACK] = three_rows_work;
    t->compute[GGML_OP_SILU_BACK] = silu_back_compute;
    t->work_size[GGML_OP_SILU_BACK] = two_rows_work;
    t->compute[GGML_OP_OPT_STEP_ADAMW] = adamw_compute;
    t->compute[GGML_OP_OPT_STEP_SGD] = sgd_compute;
    t->work_size[GGML_OP_OPT_STEP_ADAMW] = four_rows_work;
    t->work_size[GGML_OP_OPT_STEP_SGD] = four_rows_work;
}
