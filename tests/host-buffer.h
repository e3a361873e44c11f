/*
 * host-buffer.h - backend buffers of plain host memory, for the test backends
 * that tests/test-alloc.c and tests/test-sched.c build on the plugin SDK.
 */
#ifndef GGMLC_TESTS_HOST_BUFFER_H
#define GGMLC_TESTS_HOST_BUFFER_H

#include <stdlib.h>
#include <string.h>

#include "ggmlc-plugin.h"

static void host_buffer_free(ggml_backend_buffer_t b) { free(ggmlc_buffer_context(b)); }
static void *host_buffer_base(ggml_backend_buffer_t b) { return ggmlc_buffer_context(b); }
static enum ggml_status host_buffer_memset(ggml_backend_buffer_t b, struct ggml_tensor *t, uint8_t v, size_t off, size_t n) {
    (void)b;
    memset((char *)t->data + off, v, n);
    return GGML_STATUS_SUCCESS;
}
static enum ggml_status host_buffer_set(ggml_backend_buffer_t b, struct ggml_tensor *t, const void *d, size_t off, size_t n) {
    (void)b;
    memcpy((char *)t->data + off, d, n);
    return GGML_STATUS_SUCCESS;
}
static enum ggml_status host_buffer_get(ggml_backend_buffer_t b, const struct ggml_tensor *t, void *d, size_t off, size_t n) {
    (void)b;
    memcpy(d, (const char *)t->data + off, n);
    return GGML_STATUS_SUCCESS;
}
static void host_buffer_clear(ggml_backend_buffer_t b, uint8_t v) { memset(ggmlc_buffer_context(b), v, ggml_backend_buffer_get_size(b)); }

/* A buffer of buft holding size bytes of memory aligned to align (a power of two), every
 * byte set to poison first when poison >= 0 (0xff: reading unwritten floats gives NaN). */
static ggml_backend_buffer_t host_buffer_new(ggml_backend_buffer_type_t buft, size_t size, size_t align, int poison) {
    static const struct ggmlc_buffer_iface iface = {
        .struct_size = sizeof iface, .free_buffer = host_buffer_free, .get_base = host_buffer_base,
        .memset_tensor = host_buffer_memset, .set_tensor = host_buffer_set, .get_tensor = host_buffer_get,
        .clear = host_buffer_clear,
    };
    const size_t rounded = (size + align - 1) / align * align;
    void *mem = aligned_alloc(align, rounded ? rounded : align);
    if (!mem) return NULL;
    if (poison >= 0) memset(mem, poison, rounded);
    ggml_backend_buffer_t buf = ggmlc_buffer_new(buft, &iface, mem, size);
    if (!buf) free(mem);
    return buf;
}

#endif
