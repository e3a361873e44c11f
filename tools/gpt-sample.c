/*
 * gpt-sample.c - sampling the next byte (see gpt-sample.h).
 */
#include "gpt-sample.h"

#include <math.h>
#include <stdlib.h>

#include "gpt-model.h"

const char *gpt_sampler_check(const struct gpt_sampler *s) {
    if (!(s->temperature >= 0 && s->temperature <= 100)) return "--temperature must be 0..100";
    if (s->top_k < 0 || s->top_k > GPT_VOCAB) return "--top-k must be 0..256";
    if (!(s->top_p > 0 && s->top_p <= 1)) return "--top-p must be in (0, 1]";
    if (!(s->repeat_penalty >= 1 && s->repeat_penalty <= 100)) return "--repeat-penalty must be 1..100";
    if (s->repeat_last_n < 0) return "--repeat-last-n must be >= 0";
    return NULL;
}

/* xorshift64*: a uniform number in [0, 1). */
static double next_uniform(uint64_t *state) {
    uint64_t x = *state ? *state : 0x2545f4914f6cdd1dULL;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    *state = x;
    return (double)((x * 0x2545f4914f6cdd1dULL) >> 11) / 9007199254740992.0;
}

struct candidate {
    int token;
    float logit;
    double p;
};

/* Most likely first; ties by byte value so the order never depends on qsort's. */
static int by_logit(const void *a, const void *b) {
    const struct candidate *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return x->token - y->token;
}

/* The n best candidates, best first, at the front of c.  A few (top-k, greedy): one pass that
 * inserts each better one into the sorted front, far cheaper than sorting all 256 per byte. */
static void keep_best(struct candidate *c, int n) {
    if (n >= GPT_VOCAB) {
        qsort(c, GPT_VOCAB, sizeof c[0], by_logit);
        return;
    }
    qsort(c, (size_t)n, sizeof c[0], by_logit);
    for (int i = n; i < GPT_VOCAB; i++) {
        if (by_logit(&c[i], &c[n - 1]) >= 0) continue;
        const struct candidate x = c[i];
        int j = n - 1;
        for (; j > 0 && by_logit(&x, &c[j - 1]) < 0; j--) c[j] = c[j - 1];
        c[j] = x;
    }
}

/* The CTRL paper's penalty, as llama.cpp applies it: divide positive logits, multiply negative. */
static void penalize_repeats(const struct gpt_sampler *s, struct candidate *c, const int32_t *history,
                             int n_history) {
    if (s->repeat_penalty == 1.0f) return;
    bool seen[GPT_VOCAB] = {false};
    const int from = n_history > s->repeat_last_n ? n_history - s->repeat_last_n : 0;
    for (int i = from; i < n_history; i++)
        if (history[i] >= 0 && history[i] < GPT_VOCAB) seen[history[i]] = true;
    for (int t = 0; t < GPT_VOCAB; t++)
        if (seen[t]) c[t].logit = c[t].logit > 0 ? c[t].logit / s->repeat_penalty : c[t].logit * s->repeat_penalty;
}

int gpt_sample(struct gpt_sampler *s, const float *logits, const int32_t *history, int n_history) {
    struct candidate c[GPT_VOCAB];
    for (int t = 0; t < GPT_VOCAB; t++) c[t] = (struct candidate){t, logits[t], 0};
    penalize_repeats(s, c, history, n_history);
    int n = s->temperature == 0 ? 1 : s->top_k > 0 ? s->top_k : GPT_VOCAB;
    keep_best(c, n);
    if (s->temperature == 0) return c[0].token;
    double sum = 0;
    for (int i = 0; i < n; i++) sum += c[i].p = exp((c[i].logit - c[0].logit) / s->temperature);
    double kept = 0;
    for (int i = 0; i < n; i++) { /* the nucleus: stop once top_p of the mass is in */
        kept += c[i].p;
        if (kept >= s->top_p * sum) {
            n = i + 1;
            break;
        }
    }
    double r = next_uniform(&s->rng) * kept;
    for (int i = 0; i < n; i++) {
        if (r < c[i].p) return c[i].token;
        r -= c[i].p;
    }
    return c[n - 1].token;
}
