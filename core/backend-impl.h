/*
 * backend-impl.h - the core's side of the plugin objects: registries,
 * devices, buffer types, buffers and backends, each wrapping a plugin's
 * iface and context.
 */
#ifndef GGMLC_BACKEND_IMPL_H
#define GGMLC_BACKEND_IMPL_H

#include "ggml-impl.h"
#include "ggmlc-internal.h"

struct ggml_backend_buffer_type {
    struct ggmlc_buft_iface iface;  /* copied, so that a shorter (older) plugin struct is safe */
    ggml_backend_dev_t device;
    void *context;
    struct ggml_backend_buffer_type *next; /* the device's list of types */
};

struct ggml_backend_buffer {
    struct ggmlc_buffer_iface iface;
    ggml_backend_buffer_type_t buft;
    void *context;
    size_t size;
    enum ggml_backend_buffer_usage usage;
    bool freed; /* ggml_backend_buffer_free ran: the struct is kept for a while (buffer.c) */
};

struct ggml_backend_device {
    struct ggmlc_device_iface iface;
    ggml_backend_reg_t reg;
    void *context;
    struct ggml_backend_buffer_type *bufts; /* types created for this device, freed with it */
    struct ggml_backend_device *next;       /* the registry's list */
};

struct ggml_backend_reg {
    struct ggmlc_reg_iface iface;
    char name[64];
    void *context;
    struct ggml_backend_device *devices;
    size_t n_devices;
    void *dl_handle;                        /* the plugin's dlopen handle, NULL for built-in registries */
    const struct ggmlc_plugin_desc *desc;   /* the plugin's descriptor, NULL for built-in ones */
};

struct ggml_backend {
    ggml_guid guid;
    struct ggmlc_backend_iface iface;
    ggml_backend_dev_t device;
    void *context;
    /* the CPU fallback (backend-fallback.c): NULL until first needed */
    ggml_backend_t fallback_cpu;
    ggml_backend_sched_t fallback_sched;
    size_t fallback_sched_size; /* the graph size fallback_sched was made for */
};

/* Copy a plugin's iface struct of struct_size bytes into dst (zero-filling fields it lacks). */
#define GGMLC_COPY_IFACE(dst, src)                                                              \
    do {                                                                                        \
        memset(&(dst), 0, sizeof(dst));                                                         \
        size_t n_ = (src)->struct_size ? (src)->struct_size : sizeof(dst);                      \
        memcpy(&(dst), (src), n_ < sizeof(dst) ? n_ : sizeof(dst));                             \
    } while (0)

/* Validate that [offset, offset+size) lies inside tensor's data; logs and records the error. */
GGMLC_HIDDEN bool ggmlc__check_tensor_range(const char *func, const struct ggml_tensor *tensor, size_t offset, size_t size);

/* The CPU fallback of a backend (backend-fallback.c); one CPU backend and one scheduler per
 * backend, made on first need and freed with it.
 * Compute cgraph on backend, running the nodes it declines (unsupported is the first) on the
 * CPU through the scheduler over {backend, CPU}. */
GGMLC_HIDDEN enum ggml_status ggmlc__fallback_compute_graph(ggml_backend_t backend,
                                                           struct ggml_cgraph *cgraph,
                                                           const struct ggml_tensor *unsupported);
/* Compute node, which backend's graph_compute_from stopped at, on the CPU: its operands are
 * read into host copies, the CPU computes it, and what it wrote goes back. */
GGMLC_HIDDEN enum ggml_status ggmlc__fallback_compute_node(ggml_backend_t backend,
                                                          struct ggml_tensor *node);
/* ggml_backend_graph_compute_async without its checks: for a graph already checked whole whose
 * nodes all passed backend's supports_op (the scheduler's splits; backend-graph.c). */
GGMLC_HIDDEN enum ggml_status ggmlc__graph_compute_async_assigned(ggml_backend_t backend,
                                                                 struct ggml_cgraph *cgraph);
/* Release backend's CPU backend and scheduler (ggml_backend_free). */
GGMLC_HIDDEN void ggmlc__fallback_free(ggml_backend_t backend);

/* The entry points ggml's CPU registry answers by name that libggmlc implements itself
 * (ggml_threadpool_new, ggml_backend_cpu_numa_init, ...; cpu-api.c), or NULL: what
 * ggml_backend_reg_get_proc_address adds for the CPU registry where its plugin has no answer. */
GGMLC_HIDDEN void *ggmlc__cpu_reg_proc(const char *name);

/* Whether sched still holds its allocation of graph: graph was the last one it allocated, and
 * it was neither reset nor given another graph since (sched.c).  A caller that computes the
 * same graph again may then skip the reset and the allocation. */
GGMLC_HIDDEN bool ggmlc__sched_holds(ggml_backend_sched_t sched, struct ggml_cgraph *graph);

/* The allocation record (ggmlc_alloc_record_*) is declared in ggmlc-internal.h, for nn/ too. */

#endif /* GGMLC_BACKEND_IMPL_H */
