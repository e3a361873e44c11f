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

/* CROSS_ENTROPY_LOSS's scratch per task: the logits, labels and exponentials rows and the
 * task's partial sum (a double, in two floats). */
static size_t cross_entropy_work(const struct ggml_tensor *dst, int n_threads) {
    return nn_scratch_bytes(3 * dst->src[1]->ne[0] + 2, n_threads);
}

/* log(sum(exp(x))) of a row, shifted by its maximum; e gets exp(x - max) and *sum their
 * sum.  The exponentials are ew_expf's (vectorized, ~1e-8 relative): a libm exp in double
 * per logit made the loss of a 256-way output (ggmlc-gpt: 2048 x 256 logits) cost more
 * than the product that computed the logits. */
static double log_sum_exp(float *e, const float *x, int64_t n, double *sum) {
    const float max = nn_row_max(x, n, -INFINITY);
    *sum = exp_shifted(e, x, max, n);
    return max + log(*sum);
}

/* Row (i1, i2, i3) of t as f32: where it lies when f32 and contiguous, else converted into buf. */
static const float *loss_row(const struct ggml_tensor *t, int64_t i1, int64_t i2, int64_t i3, float *buf) {
    const float *row = nn_f32_row(t, i1, i2, i3);
    if (row) return row;
    nn_row_load(t, i1, i2, i3, buf);
    return buf;
}

/* sum of t[i] * x[i] over the labels that are not zero (a zero label leaves out its logit,
 * even -inf), and sum of t[i]; in four chains each, so that the row's additions overlap. */
EW_CLONES static void label_sums(const float *t, const float *x, int64_t n, double *dot, double *total) {
    double d[4] = {0}, s[4] = {0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int l = 0; l < 4; l++) {
            d[l] += t[i + l] != 0.0f ? (double)t[i + l] * (double)x[i + l] : 0.0;
            s[l] += (double)t[i + l];
        }
    *dot = (d[0] + d[2]) + (d[1] + d[3]), *total = (s[0] + s[2]) + (s[1] + s[3]);
    for (; i < n; i++) {
        *dot += t[i] != 0.0f ? (double)t[i] * (double)x[i] : 0.0;
        *total += (double)t[i];
    }
}

/* -(1/rows) * sum over rows of <labels, log_softmax(logits)> = sum of <t, x> - sum(t) lse.
 * The rows are split among the tasks, each adding its rows' terms; after a barrier the
 * first task adds the tasks' sums in task order (the last bits then depend on the number
 * of threads, as ggml's do).  One task, the loss of ggmlc-gpt's 2048 x 256 logits took as
 * long as a node of 2 threads takes for twice its work. */
static enum ggml_status cross_entropy_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *logits = dst->src[0], *labels = dst->src[1];
    const int64_t n = logits->ne[0], rows = ggml_nrows(logits);
    float *x_buf = nn_scratch(call, 3 * n + 2), *t_buf = x_buf + n, *e = t_buf + n;
    double part = 0.0, sum, dot, label_total;
    int64_t r0, r1;
    cpu_split_range(rows, call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        nn_row_index(logits, r, &i1, &i2, &i3);
        const float *x = loss_row(logits, i1, i2, i3, x_buf), *t = loss_row(labels, i1, i2, i3, t_buf);
        const double lse = log_sum_exp(e, x, n, &sum);
        label_sums(t, x, n, &dot, &label_total);
        part += dot - label_total * lse;
    }
    memcpy(e + n, &part, sizeof part);
    call->barrier(call);
    if (call->ith != 0) return GGML_STATUS_SUCCESS;
    double total = 0.0;
    for (int i = 0; i < call->nth; i++) {
        const float *task_e = (const float *)call->wdata + nn_scratch_floats(3 * n + 2) * (size_t)i + 2 * n;
        memcpy(&part, task_e + n, sizeof part);
        total += part;
    }
    const float loss = (float)(-total / (double)rows);
    ew_store(dst->data, dst->type, sizeof(float), &loss, 1);
    return GGML_STATUS_SUCCESS;
}

/* d/dlogits = (softmax(logits) * sum(labels) - labels) * grad / rows; src = grad, logits, labels.
 * (With labels summing to one per row this is ggml's softmax - labels; the sum keeps it
 * exact for any labels.)  softmax = exp(x - max) / sum, so one exponential per logit. */
static enum ggml_status cross_entropy_back_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *grad = dst->src[0], *logits = dst->src[1], *labels = dst->src[2];
    const int64_t n = logits->ne[0], rows = ggml_nrows(logits);
    float g;
    ew_load(&g, grad->data, grad->type, sizeof(float), 1);
    const double factor = (double)g / (double)rows;
    float *x_buf = nn_scratch(call, 3 * n), *t_buf = x_buf + n, *e = t_buf + n;
    int64_t r0, r1;
    cpu_split_range(rows, call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        nn_row_index(logits, r, &i1, &i2, &i3);
        const float *x = loss_row(logits, i1, i2, i3, x_buf), *t = loss_row(labels, i1, i2, i3, t_buf);
        double sum, dot, label_sum;
        log_sum_exp(e, x, n, &sum);
        label_sums(t, x, n, &dot, &label_sum);
        const double scale = label_sum / sum;
        float *out = nn_f32_row(dst, i1, i2, i3);
        float *d = out ? out : x_buf; /* dst may be the logits' memory: each value is read before it is written */
        for (int64_t i = 0; i < n; i++) d[i] = (float)(((double)e[i] * scale - t[i]) * factor);
        if (!out) nn_row_store(dst, i1, i2, i3, d);
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
    t->work_size[GGML_OP_CROSS_ENTROPY_LOSS] = cross_entropy_work;
    t->compute[GGML_OP_CROSS_ENTROPY_LOSS_BACK] = cross_entropy_back_compute;
    t->work_size[GGML_OP_CROSS_ENTROPY_LOSS_BACK] = three_rows_work;
    t->compute[GGML_OP_SILU_BACK] = silu_back_compute;
    t->work_size[GGML_OP_SILU_BACK] = two_rows_work;
    t->compute[GGML_OP_OPT_STEP_ADAMW] = adamw_compute;
    t->compute[GGML_OP_OPT_STEP_SGD] = sgd_compute;
    t->work_size[GGML_OP_OPT_STEP_ADAMW] = four_rows_work;
    t->work_size[GGML_OP_OPT_STEP_SGD] = four_rows_work;
}
