/*
 * buffer.c - buffer types, buffers, tensor data transfer, and the host
 * buffer type that CPU-addressable memory uses.
 */
#include <pthread.h>
#include <stdlib.h>

#include "backend-impl.h"
#include "fault-inject.h"

/* ------------------------------------------------------- buffer types */

ggml_backend_buffer_type_t ggmlc_buft_new(ggml_backend_dev_t dev, const struct ggmlc_buft_iface *iface, void *context) {
    struct ggml_backend_buffer_type *buft = calloc(1, sizeof *buft);
    if (!buft) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_buft_new: out of memory");
        return NULL;
    }
    GGMLC_COPY_IFACE(buft->iface, iface);
    buft->device = dev;
    buft->context = context;
    if (dev) {
        buft->next = dev->bufts;
        dev->bufts = buft;
    }
    return buft;
}

void *ggmlc_buft_context(ggml_backend_buffer_type_t buft) { return buft->context; }

const char *ggml_backend_buft_name(ggml_backend_buffer_type_t buft) { return buft->iface.get_name(buft); }

ggml_backend_buffer_t ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
    if (!buft) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_buft_alloc_buffer: NULL buffer type");
        return NULL;
    }
    const bool empty = size == 0;
    if (empty) size = 1; /* a valid, empty buffer rather than NULL (its byte is never used) */
    const size_t max = ggml_backend_buft_get_max_size(buft);
    if (size > max) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: a buffer of %zu bytes exceeds the maximum of %zu", ggml_backend_buft_name(buft),
                        size, max);
        return NULL;
    }
    if (ggmlc_fault_should_fail()) { /* test hook, see fault-inject.h */
        ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: cannot allocate %zu bytes (injected failure)", ggml_backend_buft_name(buft), size);
        return NULL;
    }
    ggml_backend_buffer_t buf = buft->iface.alloc_buffer(buft, size);
    if (buf && empty) buf->size = 0; /* as ggml's dummy buffer: size 0, no base (get_base) */
    return buf;
}

size_t ggml_backend_buft_get_alignment(ggml_backend_buffer_type_t buft) { return buft->iface.get_alignment(buft); }

size_t ggml_backend_buft_get_max_size(ggml_backend_buffer_type_t buft) {
    return buft->iface.get_max_size ? buft->iface.get_max_size(buft) : SIZE_MAX;
}

size_t ggml_backend_buft_get_alloc_size(ggml_backend_buffer_type_t buft, const struct ggml_tensor *tensor) {
    return buft->iface.get_alloc_size ? buft->iface.get_alloc_size(buft, tensor) : ggml_nbytes(tensor);
}

bool ggml_backend_buft_is_host(ggml_backend_buffer_type_t buft) { return buft->iface.is_host && buft->iface.is_host(buft); }

ggml_backend_dev_t ggml_backend_buft_get_device(ggml_backend_buffer_type_t buft) { return buft->device; }

/* ------------------------------------------------------------ buffers */

ggml_backend_buffer_t ggmlc_buffer_new(ggml_backend_buffer_type_t buft, const struct ggmlc_buffer_iface *iface, void *context,
                                       size_t size) {
    struct ggml_backend_buffer *buffer = calloc(1, sizeof *buffer);
    if (!buffer) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_buffer_new: out of memory");
        return NULL;
    }
    GGMLC_COPY_IFACE(buffer->iface, iface);
    buffer->buft = buft;
    buffer->context = context;
    buffer->size = size;
    buffer->usage = GGML_BACKEND_BUFFER_USAGE_ANY;
    return buffer;
}

void *ggmlc_buffer_context(ggml_backend_buffer_t buffer) { return buffer->context; }

const char *ggml_backend_buffer_name(ggml_backend_buffer_t buffer) { return ggml_backend_buft_name(buffer->buft); }

/* Freed buffers' structs, kept so that a tensor still pointing at one is recognised (a clear
 * error at set/get/compute time instead of a plugin reading freed memory); the oldest is
 * released when the ring is full, which bounds the memory kept to a few tens of KiB. */
enum { RETIRED_BUFFERS = 256 };
static struct {
    pthread_mutex_t lock;
    ggml_backend_buffer_t ring[RETIRED_BUFFERS];
    size_t next;
} retired = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void retire_buffer(ggml_backend_buffer_t buffer) {
    memset(&buffer->iface, 0, sizeof buffer->iface); /* nothing may reach the plugin any more */
    buffer->context = NULL;
    buffer->size = 0;
    buffer->freed = true;
    pthread_mutex_lock(&retired.lock);
    free(retired.ring[retired.next]);
    retired.ring[retired.next] = buffer;
    retired.next = (retired.next + 1) % RETIRED_BUFFERS;
    pthread_mutex_unlock(&retired.lock);
}

void ggml_backend_buffer_free(ggml_backend_buffer_t buffer) {
    if (!buffer || buffer->freed) return;
    if (buffer->iface.free_buffer) buffer->iface.free_buffer(buffer);
    retire_buffer(buffer);
}

/* A zero-sized buffer has no base, as in ggml (llama.cpp's no_alloc model load asserts it). */
void *ggml_backend_buffer_get_base(ggml_backend_buffer_t buffer) {
    return buffer->size == 0 ? NULL : buffer->iface.get_base(buffer);
}
size_t ggml_backend_buffer_get_size(ggml_backend_buffer_t buffer) { return buffer->size; }

enum ggml_status ggml_backend_buffer_init_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor *tensor) {
    return buffer->iface.init_tensor ? buffer->iface.init_tensor(buffer, tensor) : GGML_STATUS_SUCCESS;
}

size_t ggml_backend_buffer_get_alignment(ggml_backend_buffer_t buffer) { return ggml_backend_buft_get_alignment(buffer->buft); }
size_t ggml_backend_buffer_get_max_size(ggml_backend_buffer_t buffer) { return ggml_backend_buft_get_max_size(buffer->buft); }

size_t ggml_backend_buffer_get_alloc_size(ggml_backend_buffer_t buffer, const struct ggml_tensor *tensor) {
    return ggml_backend_buft_get_alloc_size(buffer->buft, tensor);
}

void ggml_backend_buffer_clear(ggml_backend_buffer_t buffer, uint8_t value) {
    if (buffer->size > 0) buffer->iface.clear(buffer, value);
}

bool ggml_backend_buffer_is_host(ggml_backend_buffer_t buffer) { return ggml_backend_buft_is_host(buffer->buft); }

void ggml_backend_buffer_set_usage(ggml_backend_buffer_t buffer, enum ggml_backend_buffer_usage usage) { buffer->usage = usage; }
enum ggml_backend_buffer_usage ggml_backend_buffer_get_usage(ggml_backend_buffer_t buffer) { return buffer->usage; }
ggml_backend_buffer_type_t ggml_backend_buffer_get_type(ggml_backend_buffer_t buffer) { return buffer->buft; }

void ggml_backend_buffer_reset(ggml_backend_buffer_t buffer) {
    if (buffer->iface.reset) buffer->iface.reset(buffer);
}

/* ------------------------------------------------------ tensor data I/O */

static ggml_backend_buffer_t storage_buffer(const struct ggml_tensor *tensor) {
    return tensor->view_src ? tensor->view_src->buffer : tensor->buffer;
}

bool ggmlc__tensor_buffer_live(const char *func, const struct ggml_tensor *tensor) {
    const ggml_backend_buffer_t buf = tensor ? storage_buffer(tensor) : NULL;
    if (!buf || !buf->freed) return true;
    ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                    "%s: tensor '%s' is in a buffer that was freed (ggml_backend_buffer_free); "
                    "allocate its context's tensors again",
                    func, tensor->name);
    return false;
}

bool ggmlc__check_tensor_range(const char *func, const struct ggml_tensor *tensor, size_t offset, size_t size) {
    if (!tensor) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: NULL tensor", func);
        return false;
    }
    if (!ggmlc__tensor_buffer_live(func, tensor)) return false;
    if (!tensor->data) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: tensor '%s' is not allocated", func, tensor->name);
        return false;
    }
    const size_t nbytes = ggml_nbytes(tensor);
    if (offset > nbytes || size > nbytes - offset) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: bytes [%zu, %zu) are outside tensor '%s' (%zu bytes)", func, offset,
                        offset + size, tensor->name, nbytes);
        return false;
    }
    return true;
}

/* A transfer between host memory and a device buffer for ggmlc_counters_get: the call, then
 * its bytes (the counter after `calls`). */
static void count_transfer(ggml_backend_buffer_t buf, enum ggmlc_counter calls, size_t size) {
    if (ggml_backend_buffer_is_host(buf)) return;
    ggmlc_counter_add(calls, 1);
    ggmlc_counter_add(calls + 1, size);
}

void ggml_backend_tensor_set(struct ggml_tensor *tensor, const void *data, size_t offset, size_t size) {
    if (!ggmlc__check_tensor_range(__func__, tensor, offset, size) || size == 0) return;
    ggml_backend_buffer_t buf = storage_buffer(tensor);
    if (!buf) { /* a tensor in a context's own memory */
        memcpy((char *)tensor->data + offset, data, size);
        return;
    }
    count_transfer(buf, GGMLC_COUNTER_WRITES_TO_DEVICE, size);
    if (buf->iface.set_tensor(buf, tensor, data, offset, size) != GGML_STATUS_SUCCESS)
        ggmlc_set_error(GGMLC_ERR_BACKEND, "ggml_backend_tensor_set: %s failed to write tensor '%s'", ggml_backend_buffer_name(buf),
                        tensor->name);
}

void ggml_backend_tensor_get(const struct ggml_tensor *tensor, void *data, size_t offset, size_t size) {
    if (!ggmlc__check_tensor_range(__func__, tensor, offset, size) || size == 0) return;
    ggml_backend_buffer_t buf = storage_buffer(tensor);
    if (!buf) {
        memcpy(data, (const char *)tensor->data + offset, size);
        return;
    }
    count_transfer(buf, GGMLC_COUNTER_READS_FROM_DEVICE, size);
    if (buf->iface.get_tensor(buf, tensor, data, offset, size) != GGML_STATUS_SUCCESS)
        ggmlc_set_error(GGMLC_ERR_BACKEND, "ggml_backend_tensor_get: %s failed to read tensor '%s'", ggml_backend_buffer_name(buf),
                        tensor->name);
}

void ggml_backend_tensor_set_2d(struct ggml_tensor *tensor, const void *data, size_t offset, size_t size, size_t n_copies,
                                size_t stride_tensor, size_t stride_data) {
    for (size_t i = 0; i < n_copies; i++)
        ggml_backend_tensor_set(tensor, (const char *)data + i * stride_data, offset + i * stride_tensor, size);
}

void ggml_backend_tensor_get_2d(const struct ggml_tensor *tensor, void *data, size_t offset, size_t size, size_t n_copies,
                                size_t stride_tensor, size_t stride_data) {
    for (size_t i = 0; i < n_copies; i++)
        ggml_backend_tensor_get(tensor, (char *)data + i * stride_data, offset + i * stride_tensor, size);
}

void ggml_backend_tensor_memset(struct ggml_tensor *tensor, uint8_t value, size_t offset, size_t size) {
    if (!ggmlc__check_tensor_range(__func__, tensor, offset, size) || size == 0) return;
    ggml_backend_buffer_t buf = storage_buffer(tensor);
    if (!buf) {
        memset((char *)tensor->data + offset, value, size);
        return;
    }
    if (buf->iface.memset_tensor(buf, tensor, value, offset, size) != GGML_STATUS_SUCCESS)
        ggmlc_set_error(GGMLC_ERR_BACKEND, "ggml_backend_tensor_memset: %s failed on tensor '%s'", ggml_backend_buffer_name(buf),
                        tensor->name);
}

struct ggml_tensor *ggml_set_zero(struct ggml_tensor *tensor) {
    if (tensor && tensor->data && !ggml_is_empty(tensor)) ggml_backend_tensor_memset(tensor, 0, 0, ggml_nbytes(tensor));
    return tensor;
}

void ggml_backend_tensor_copy(const struct ggml_tensor *src, struct ggml_tensor *dst) {
    if (!src || !dst || !ggml_are_same_shape(src, dst) || src->type != dst->type) {
        ggmlc_set_error(GGMLC_ERR_SHAPE, "ggml_backend_tensor_copy: source and destination differ in shape or type");
        return;
    }
    if (src == dst) return;
    const size_t n = ggml_nbytes(src);
    ggml_backend_buffer_t sbuf = storage_buffer(src), dbuf = storage_buffer(dst);
    const bool src_host = !sbuf || ggml_backend_buffer_is_host(sbuf), dst_host = !dbuf || ggml_backend_buffer_is_host(dbuf);
    if (src_host) {
        ggml_backend_tensor_set(dst, src->data, 0, n);
    } else if (dst_host) {
        ggml_backend_tensor_get(src, dst->data, 0, n);
    } else if (!(dbuf->iface.cpy_tensor && dbuf->iface.cpy_tensor(dbuf, src, dst))) {
        void *tmp = malloc(n);
        if (!tmp) {
            ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_backend_tensor_copy: cannot stage %zu bytes", n);
            return;
        }
        ggml_backend_tensor_get(src, tmp, 0, n);
        ggml_backend_tensor_set(dst, tmp, 0, n);
        free(tmp);
    }
}

/* ------------------------------------------------------- host buffers */

#define HOST_ALIGNMENT 64 /* a cache line, enough for any SIMD load */

static void host_buffer_free(ggml_backend_buffer_t buffer) { free(buffer->context); }
static void *host_buffer_base(ggml_backend_buffer_t buffer) { return buffer->context; }

static enum ggml_status host_memset_tensor(ggml_backend_buffer_t b, struct ggml_tensor *t, uint8_t v, size_t off, size_t n) {
    memset((char *)t->data + off, v, n);
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status host_set_tensor(ggml_backend_buffer_t b, struct ggml_tensor *t, const void *d, size_t off, size_t n) {
    memcpy((char *)t->data + off, d, n);
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status host_get_tensor(ggml_backend_buffer_t b, const struct ggml_tensor *t, void *d, size_t off, size_t n) {
    memcpy(d, (const char *)t->data + off, n);
    return GGML_STATUS_SUCCESS;
}

static bool host_cpy_tensor(ggml_backend_buffer_t b, const struct ggml_tensor *src, struct ggml_tensor *dst) {
    ggml_backend_buffer_t sbuf = storage_buffer(src);
    if (sbuf && !ggml_backend_buffer_is_host(sbuf)) return false;
    memcpy(dst->data, src->data, ggml_nbytes(src));
    return true;
}

static void host_clear(ggml_backend_buffer_t buffer, uint8_t value) { memset(buffer->context, value, buffer->size); }

static const struct ggmlc_buffer_iface host_buffer_iface = {
    .struct_size = sizeof(struct ggmlc_buffer_iface),
    .free_buffer = host_buffer_free,
    .get_base = host_buffer_base,
    .memset_tensor = host_memset_tensor,
    .set_tensor = host_set_tensor,
    .get_tensor = host_get_tensor,
    .cpy_tensor = host_cpy_tensor,
    .clear = host_clear,
};

/* Same as the owning iface but the memory belongs to the caller. */
static const struct ggmlc_buffer_iface host_ptr_buffer_iface = {
    .struct_size = sizeof(struct ggmlc_buffer_iface),
    .free_buffer = NULL,
    .get_base = host_buffer_base,
    .memset_tensor = host_memset_tensor,
    .set_tensor = host_set_tensor,
    .get_tensor = host_get_tensor,
    .cpy_tensor = host_cpy_tensor,
    .clear = host_clear,
};

static const char *host_buft_name(ggml_backend_buffer_type_t buft) { return "CPU"; }
static size_t host_buft_alignment(ggml_backend_buffer_type_t buft) { return HOST_ALIGNMENT; }
static bool host_buft_is_host(ggml_backend_buffer_type_t buft) { return true; }

ggml_backend_buffer_t ggmlc_host_buffer_new(ggml_backend_buffer_type_t buft, size_t size) {
    void *mem = aligned_alloc(HOST_ALIGNMENT, GGML_PAD(size, HOST_ALIGNMENT));
    if (!mem) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "%s buffer: cannot allocate %zu bytes of host memory", ggml_backend_buft_name(buft), size);
        return NULL;
    }
    ggml_backend_buffer_t buffer = ggmlc_buffer_new(buft, &host_buffer_iface, mem, size);
    if (!buffer) free(mem);
    return buffer;
}

static ggml_backend_buffer_t host_buft_alloc(ggml_backend_buffer_type_t buft, size_t size) {
    return ggmlc_host_buffer_new(buft, size);
}

/* Initialised statically, so that threads asking for it at once race on nothing. */
static struct ggml_backend_buffer_type host_buft = {
    .iface = {
        .struct_size = sizeof(struct ggmlc_buft_iface),
        .get_name = host_buft_name,
        .alloc_buffer = host_buft_alloc,
        .get_alignment = host_buft_alignment,
        .is_host = host_buft_is_host,
    },
};

ggml_backend_buffer_type_t ggml_backend_cpu_buffer_type(void) { return &host_buft; }

ggml_backend_buffer_t ggml_backend_cpu_buffer_from_ptr(void *ptr, size_t size) {
    if (!ptr || ((uintptr_t)ptr % GGML_MEM_ALIGN) != 0) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_cpu_buffer_from_ptr: pointer must be non-NULL and %d-byte aligned",
                        GGML_MEM_ALIGN);
        return NULL;
    }
    return ggmlc_buffer_new(ggml_backend_cpu_buffer_type(), &host_ptr_buffer_iface, ptr, size);
}

/* ------------------------------------------------- allocation records */

static bool in_compute_buffer(const struct ggml_tensor *t) {
    const ggml_backend_buffer_t buf = storage_buffer(t);
    return buf && buf->usage == GGML_BACKEND_BUFFER_USAGE_COMPUTE;
}

bool ggmlc__alloc_record_reserve(struct ggmlc_alloc_record *r, const struct ggml_cgraph *graph) {
    const int need = graph->n_nodes + graph->n_leafs;
    if (need <= r->cap) return true;
    struct ggml_tensor **grown = realloc(r->tensors, sizeof *grown * (size_t)need);
    if (!grown) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "cannot record the places of %d tensors", need);
        return false;
    }
    r->tensors = grown;
    r->cap = need;
    return true;
}

void ggmlc__alloc_record_take(struct ggmlc_alloc_record *r, struct ggml_cgraph *graph) {
    r->n = 0;
    GGML_ASSERT(graph->n_nodes + graph->n_leafs <= r->cap); /* ggmlc__alloc_record_reserve came first */
    for (int i = 0; i < graph->n_leafs; i++) {
        if (in_compute_buffer(graph->leafs[i])) r->tensors[r->n++] = graph->leafs[i];
    }
    for (int i = 0; i < graph->n_nodes; i++) {
        if (in_compute_buffer(graph->nodes[i])) r->tensors[r->n++] = graph->nodes[i];
    }
}

void ggmlc__alloc_record_forget(struct ggmlc_alloc_record *r) {
    for (int pass = 0; pass < 2; pass++) { /* views first: their sources tell where they live */
        for (int i = 0; i < r->n; i++) {
            struct ggml_tensor *t = r->tensors[i];
            if ((t->view_src != NULL) != (pass == 0)) continue;
            t->data = NULL;
            t->buffer = NULL;
        }
    }
    r->n = 0;
}

void ggmlc__alloc_record_free(struct ggmlc_alloc_record *r) {
    free(r->tensors);
    *r = (struct ggmlc_alloc_record){0};
}
