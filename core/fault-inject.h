/*
 * fault-inject.h - test hooks of libggmlc (not installed): make the Nth
 * allocation fail, and pretend to run in a set-uid program.
 *
 * The hooks exist only in the test build of the library
 * (tests/hooks/libggmlc.la, compiled with -DGGMLC_TEST_HOOKS, see
 * tests/hooks/Makefile.inc), which the tests that need them link.  In the
 * shipped libggmlc the two queries the core makes are constant inline
 * functions, so the call sites compile away and the library carries no
 * trace of the hooks.
 *
 * In the test build every host allocation made by libggmlc's own code
 * (malloc, calloc, realloc, aligned_alloc, strdup, strndup: that library is
 * linked with -Wl,--wrap for them, see fault-inject.c) and every backend
 * buffer allocation (ggml_backend_buft_alloc_buffer) counts as one
 * allocation.  GGMLC_FAULT_ALLOC=N in the environment arms the hook at load
 * time.
 */
#ifndef GGMLC_FAULT_INJECT_H
#define GGMLC_FAULT_INJECT_H

#include <stdbool.h>

#include "ggml.h"

#ifdef GGMLC_TEST_HOOKS

/* Restart the count and make allocation number n (1 = the next one) fail,
 * once; n = 0 disarms the hook (allocations are still counted). */
GGML_API void ggmlc_fault_fail_alloc_at(long n);
/* Allocations counted since the last ggmlc_fault_fail_alloc_at. */
GGML_API long ggmlc_fault_alloc_count(void);
/* Whether the armed failure has happened since the last ggmlc_fault_fail_alloc_at. */
GGML_API bool ggmlc_fault_triggered(void);
/* Count one allocation; true when this one must fail (for allocators outside the wrapped calls). */
GGML_API bool ggmlc_fault_should_fail(void);

/* Make ggmlc_getenv behave as in a set-uid program (environment ignored), or not. */
GGML_API void ggmlc_fault_simulate_secure_mode(bool on);
/* Whether that simulation is on. */
GGML_API bool ggmlc_fault_secure_mode(void);

#else /* the shipped library: no allocation ever fails on purpose, the environment is the real one */

static inline bool ggmlc_fault_should_fail(void) { return false; }
static inline bool ggmlc_fault_secure_mode(void) { return false; }

#endif /* GGMLC_TEST_HOOKS */

#endif /* GGMLC_FAULT_INJECT_H */
