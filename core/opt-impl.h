/* opt-impl.h - shared by the files implementing ggml-opt.h. */
#ifndef GGMLC_OPT_IMPL_H
#define GGMLC_OPT_IMPL_H

#include "ggml-impl.h"
#include "ggml-opt.h"
#include "optimizer.h"

/* The optimization context's random generator (seeded alike in every context). */
GGMLC_HIDDEN struct ggmlc_rng *ggmlc__opt_rng(ggml_opt_context_t opt_ctx);

#endif /* GGMLC_OPT_IMPL_H */
