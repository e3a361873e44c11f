/*
 * fault-inject.c - the allocation-failure hook of fault-inject.h, part of
 * the test build of the library only (tests/hooks/Makefile.inc).
 *
 * That build is linked with -Wl,--wrap=malloc (and calloc, realloc,
 * aligned_alloc, strdup, strndup): the library's own calls come here, the
 * C library's and the plugins' do not.  Going through the linker rather
 * than a macro keeps the core's sources untouched and still works under
 * AddressSanitizer, whose allocator the __real_ names reach.
 */
#ifndef GGMLC_TEST_HOOKS
#error "fault-inject.c belongs to the test build of libggmlc (-DGGMLC_TEST_HOOKS), never to the shipped one"
#endif

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fault-inject.h"
#include "ggml-impl.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *ptr, size_t size);
void *__real_aligned_alloc(size_t alignment, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *ptr, size_t size);
void *__wrap_aligned_alloc(size_t alignment, size_t size);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static atomic_long alloc_count;
static atomic_long fail_at;       /* 0: never */
static atomic_bool triggered;
static atomic_bool secure_mode;

void ggmlc_fault_fail_alloc_at(long n) {
    atomic_store(&fail_at, n < 0 ? 0 : n);
    atomic_store(&triggered, false);
    atomic_store(&alloc_count, 0);
}

long ggmlc_fault_alloc_count(void) { return atomic_load(&alloc_count); }
bool ggmlc_fault_triggered(void) { return atomic_load(&triggered); }

bool ggmlc_fault_should_fail(void) {
    const long n = atomic_fetch_add(&alloc_count, 1) + 1;
    if (n != atomic_load(&fail_at)) return false;
    atomic_store(&triggered, true);
    return true;
}

void ggmlc_fault_simulate_secure_mode(bool on) { atomic_store(&secure_mode, on); }
bool ggmlc_fault_secure_mode(void) { return atomic_load(&secure_mode); }

/* GGMLC_FAULT_ALLOC=N arms the hook for programs that cannot call it. */
__attribute__((constructor)) static void arm_from_environment(void) {
    const char *n = ggmlc_getenv("GGMLC_FAULT_ALLOC");
    if (n && *n) ggmlc_fault_fail_alloc_at(strtol(n, NULL, 10));
}

void *__wrap_malloc(size_t size) { return ggmlc_fault_should_fail() ? NULL : __real_malloc(size); }
void *__wrap_calloc(size_t n, size_t size) { return ggmlc_fault_should_fail() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *ptr, size_t size) { return ggmlc_fault_should_fail() ? NULL : __real_realloc(ptr, size); }

void *__wrap_aligned_alloc(size_t alignment, size_t size) {
    return ggmlc_fault_should_fail() ? NULL : __real_aligned_alloc(alignment, size);
}

char *__wrap_strndup(const char *s, size_t n) {
    const size_t len = strnlen(s, n);
    char *copy = __wrap_malloc(len + 1);
    if (!copy) return NULL;
    memcpy(copy, s, len);
    copy[len] = '\0';
    return copy;
}

char *__wrap_strdup(const char *s) { return __wrap_strndup(s, strlen(s)); }
