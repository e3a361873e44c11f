/*
 * ggml-cpp.h - C++ ownership helpers for the ggml handles (C++11 and later).
 *
 * Each handle type that a ggml function creates and another function frees
 * gets a std::unique_ptr alias whose deleter calls that free function, so a
 * C++ program can hold contexts, buffers, backends and schedulers without
 * freeing them by hand on every return path:
 *
 *     ggml_context_ptr ctx(ggml_init(params));
 *     ggml_backend_buffer_ptr buf(ggml_backend_alloc_ctx_tensors(ctx.get(), backend));
 *
 * The names are the ones ggml's own header uses, so programs written for ggml
 * build unchanged.  Every deleter accepts NULL (std::unique_ptr never calls it
 * with NULL anyway).
 */
#ifndef GGML_CPP_H
#define GGML_CPP_H

#ifndef __cplusplus
#error "ggml-cpp.h is a C++ header; C programs use ggml.h and friends directly"
#endif

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "gguf.h"

#include <memory>

/* Core: a tensor context (ggml_init) and a GGUF file context (gguf_init_*). */
struct ggml_context_deleter {
    void operator()(ggml_context * ctx) const { ggml_free(ctx); }
};
struct gguf_context_deleter {
    void operator()(gguf_context * ctx) const { gguf_free(ctx); }
};
typedef std::unique_ptr<ggml_context, ggml_context_deleter> ggml_context_ptr;
typedef std::unique_ptr<gguf_context, gguf_context_deleter> gguf_context_ptr;

/* Graph allocator (ggml_gallocr_new). */
struct ggml_gallocr_deleter {
    void operator()(ggml_gallocr_t galloc) const { ggml_gallocr_free(galloc); }
};
typedef std::unique_ptr<struct ggml_gallocr, ggml_gallocr_deleter> ggml_gallocr_ptr;

/* Backends, their buffers, events and the multi-backend scheduler. */
struct ggml_backend_deleter {
    void operator()(ggml_backend_t backend) const { ggml_backend_free(backend); }
};
struct ggml_backend_buffer_deleter {
    void operator()(ggml_backend_buffer_t buffer) const { ggml_backend_buffer_free(buffer); }
};
struct ggml_backend_event_deleter {
    void operator()(ggml_backend_event_t event) const { ggml_backend_event_free(event); }
};
struct ggml_backend_sched_deleter {
    void operator()(ggml_backend_sched_t sched) const { ggml_backend_sched_free(sched); }
};
typedef std::unique_ptr<struct ggml_backend,        ggml_backend_deleter>        ggml_backend_ptr;
typedef std::unique_ptr<struct ggml_backend_buffer, ggml_backend_buffer_deleter> ggml_backend_buffer_ptr;
typedef std::unique_ptr<struct ggml_backend_event,  ggml_backend_event_deleter>  ggml_backend_event_ptr;
typedef std::unique_ptr<struct ggml_backend_sched,  ggml_backend_sched_deleter>  ggml_backend_sched_ptr;

#endif /* GGML_CPP_H */
