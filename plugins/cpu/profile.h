/*
 * profile.h - GGMLC_DEBUG=cpu-ops (profile.c): the graph walker's wall time per
 * kind of node (operation, result type, first operand's type), summed over the
 * process and printed to stderr at exit.
 */
#ifndef GGMLC_CPU_PROFILE_H
#define GGMLC_CPU_PROFILE_H

#include "cpu-impl.h"

/* Whether the channel is on (looked up once; registers the report at exit when it is). */
CPU_HIDDEN bool cpu_profile_enabled(void);
/* Seconds of a monotonic clock. */
CPU_HIDDEN double cpu_profile_now(void);
/* Add seconds to node's kind; node NULL: the walker's start (also counts a graph). */
CPU_HIDDEN void cpu_profile_add(const struct ggml_tensor *node, double seconds);

#endif /* GGMLC_CPU_PROFILE_H */
