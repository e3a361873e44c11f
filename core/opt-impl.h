/* opt-impl.h - shared by the files implementing ggml-opt.h. */
#ifndef GGMLC_OPT_IMPL_H
#define GGMLC_OPT_IMPL_H

#include "ggml-impl.h"
#include "ggml-opt.h"

/* The optimization context's random generator (deterministic per context). */
GGMLC_HIDDEN uint64_t ggmlc_opt_random(ggml_opt_context_t opt_ctx);

#endif /* GGMLC_OPT_IMPL_H */
