/*
 * nn-sched.c - learning-rate schedulers over an optimizer: step decay (torch's StepLR), cosine
 * with a linear warmup (the LambdaLR schedule common in Transformer training, with a floor),
 * and one-cycle (torch's OneCycleLR with its defaults: cosine annealing, div_factor 25,
 * final_div_factor 1e4, momentum cycled between 0.85 and 0.95).  As in PyTorch, creating a
 * scheduler sets the rate of step 0, and each ga_scheduler_step moves to the next step.
 */
#include <math.h>
#include <stdlib.h>

#include "ggmlc.h"
#include "nn-impl.h"

enum sched_kind { SCHED_STEP, SCHED_COSINE, SCHED_ONE_CYCLE };

struct ga_scheduler {
    enum sched_kind kind;
    ga_optimizer *opt; /* borrowed */
    float base_lr;
    int64_t step;
    int step_size, warmup, total;
    float gamma, min_lr, max_lr, pct_start;
};

/* torch's _annealing_cos: from start (pct 0) to end (pct 1) along half a cosine. */
static double anneal(double start, double end, double pct) {
    return end + (start - end) / 2.0 * (cos(M_PI * pct) + 1.0);
}

/* One-cycle's rate and momentum at step k: up from max_lr/25 to max_lr over pct_start of the
 * steps (momentum down from 0.95 to 0.85), then down to max_lr/25/1e4 (momentum back up). */
static void one_cycle_at(const struct ga_scheduler *s, int64_t k, double *lr, double *mom) {
    const double initial = s->max_lr / 25.0, final = initial / 1e4;
    const double mid = (double)s->pct_start * s->total - 1.0, last = (double)s->total - 1.0;
    if (k > s->total - 1) k = s->total - 1;
    if ((double)k <= mid) {
        const double pct = mid > 0 ? (double)k / mid : 1.0;
        *lr = anneal(initial, s->max_lr, pct);
        *mom = anneal(0.95, 0.85, pct);
    } else {
        const double pct = last > mid ? ((double)k - mid) / (last - mid) : 1.0;
        *lr = anneal(s->max_lr, final, pct);
        *mom = anneal(0.85, 0.95, pct);
    }
}

static double cosine_at(const struct ga_scheduler *s, int64_t k) {
    if (k < s->warmup) return s->base_lr * (double)k / (double)s->warmup;
    const int64_t span = s->total > s->warmup ? s->total - s->warmup : 1;
    double progress = (double)(k - s->warmup) / (double)span;
    if (progress > 1) progress = 1;
    return s->min_lr + (s->base_lr - s->min_lr) * 0.5 * (1.0 + cos(M_PI * progress));
}

/* Set the optimizer's rate (and one-cycle's momentum: Adam's beta1, SGD's momentum). */
static void apply(struct ga_scheduler *s) {
    double lr = s->base_lr, mom = 0;
    switch (s->kind) {
    case SCHED_STEP: lr = s->base_lr * pow(s->gamma, (double)(s->step / s->step_size)); break;
    case SCHED_COSINE: lr = cosine_at(s, s->step); break;
    case SCHED_ONE_CYCLE:
        one_cycle_at(s, s->step, &lr, &mom);
        if (s->opt->kind == GA_OPTIM_SGD)
            s->opt->momentum = (float)mom;
        else
            s->opt->beta1 = (float)mom;
        break;
    }
    s->opt->lr = (float)lr;
}

static ga_scheduler *scheduler_new(ga_optimizer *opt, enum sched_kind kind, const char *fn) {
    if (!opt) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: NULL optimizer", fn), NULL;
    ga_scheduler *s = calloc(1, sizeof *s);
    if (!s) return ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory", fn), NULL;
    s->kind = kind;
    s->opt = opt;
    s->base_lr = opt->lr;
    return s;
}

static ga_scheduler *started(ga_scheduler *s) {
    if (s) apply(s);
    return s;
}

ga_scheduler *ga_step_lr(ga_optimizer *opt, int step_size, float gamma) {
    if (step_size < 1 || !(gamma > 0))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_step_lr: step_size >= 1, gamma > 0"),
               NULL;
    ga_scheduler *s = scheduler_new(opt, SCHED_STEP, "ga_step_lr");
    if (s) s->step_size = step_size, s->gamma = gamma;
    return started(s);
}

ga_scheduler *ga_cosine_lr(ga_optimizer *opt, int warmup_steps, int total_steps, float min_lr) {
    if (warmup_steps < 0 || total_steps < 1 || warmup_steps > total_steps || !(min_lr >= 0))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ga_cosine_lr: need 0 <= warmup_steps <= total_steps, total_steps "
                               ">= 1 and min_lr >= 0"),
               NULL;
    ga_scheduler *s = scheduler_new(opt, SCHED_COSINE, "ga_cosine_lr");
    if (s) s->warmup = warmup_steps, s->total = total_steps, s->min_lr = min_lr;
    return started(s);
}

ga_scheduler *ga_one_cycle_lr(ga_optimizer *opt, float max_lr, int total_steps, float pct_start) {
    if (!(max_lr > 0) || total_steps < 2 || !(pct_start > 0 && pct_start < 1))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ga_one_cycle_lr: need max_lr > 0, total_steps >= 2 and 0 < "
                               "pct_start < 1"),
               NULL;
    ga_scheduler *s = scheduler_new(opt, SCHED_ONE_CYCLE, "ga_one_cycle_lr");
    if (s) s->max_lr = max_lr, s->total = total_steps, s->pct_start = pct_start;
    return started(s);
}

void ga_scheduler_step(ga_scheduler *s) {
    if (!s) return;
    s->step++;
    apply(s);
}

void ga_scheduler_free(ga_scheduler *s) { free(s); }
