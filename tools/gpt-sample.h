/*
 * gpt-sample.h - picking the next byte from a GPT's 256 logits: repetition penalty on the
 * recent bytes, temperature, top-k, top-p (nucleus), then a draw from a seeded generator.
 */
#ifndef GGMLC_GPT_SAMPLE_H
#define GGMLC_GPT_SAMPLE_H

#include <stdint.h>

struct gpt_sampler {
    float temperature;    /* 0: always the most likely byte (greedy) */
    int top_k;            /* keep the k most likely bytes; 0: all */
    float top_p;          /* keep the fewest bytes whose probabilities add up to top_p; 1: all */
    float repeat_penalty; /* > 1 makes bytes among the last repeat_last_n less likely; 1: off */
    int repeat_last_n;
    uint64_t rng;         /* generator state: set it to the seed */
};

/* NULL when the settings are valid, else a sentence saying which is not. */
const char *gpt_sampler_check(const struct gpt_sampler *s);

/* The next byte for logits[256], given the n_history bytes generated or prompted so far
 * (history[n_history - 1] the latest).  Advances the generator. */
int gpt_sample(struct gpt_sampler *s, const float *logits, const int32_t *history, int n_history);

#endif
