/* eager.h - ggmlc-bench's eager-autograd modes (bench/eager.c): eager-mlp, eager-op. */
#ifndef GGMLC_BENCH_EAGER_H
#define GGMLC_BENCH_EAGER_H

/* Run `ggmlc-bench eager-mlp|eager-op [options]`; the process exit status. */
int bench_eager(int argc, char **argv);

#endif
