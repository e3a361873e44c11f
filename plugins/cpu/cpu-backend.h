/*
 * cpu-backend.h - the CPU backend object (a stream on the CPU device) and
 * the ggml-cpu.h entry points built on the graph walker (cpu-backend.c).
 */
#ifndef GGMLC_CPU_BACKEND_H
#define GGMLC_CPU_BACKEND_H

#include "cpu-impl.h"
#include "ggmlc-plugin.h" /* the CPU-role contract */

/* Threads used when nobody asks for a number (the plugin's `threads` option). */
CPU_HIDDEN void cpu_set_default_threads(int n_threads);
CPU_HIDDEN int  cpu_default_threads(void);
/* Release the cached pool of ggml_graph_compute (at plugin unload). */
CPU_HIDDEN void cpu_backend_shutdown(void);

/* A new backend on dev (the device's init_backend). */
CPU_HIDDEN ggml_backend_t cpu_backend_new(ggml_backend_dev_t dev, const char *params);

/* The proc-address entry points (names and types: the CPU role of ggmlc-plugin.h). */
CPU_HIDDEN struct ggml_cplan cpu_proc_graph_plan(const struct ggml_cgraph *cgraph, int n_threads, struct ggml_threadpool *threadpool);
CPU_HIDDEN enum ggml_status cpu_proc_graph_compute(struct ggml_cgraph *cgraph, struct ggml_cplan *cplan);
CPU_HIDDEN struct ggml_threadpool *cpu_proc_threadpool_new(struct ggml_threadpool_params *params);
CPU_HIDDEN void cpu_proc_threadpool_free(struct ggml_threadpool *threadpool);
CPU_HIDDEN int  cpu_proc_threadpool_size(struct ggml_threadpool *threadpool);
CPU_HIDDEN void cpu_proc_threadpool_pause(struct ggml_threadpool *threadpool);
CPU_HIDDEN void cpu_proc_threadpool_resume(struct ggml_threadpool *threadpool);
CPU_HIDDEN void cpu_proc_set_threadpool(ggml_backend_t backend, ggml_threadpool_t threadpool);
CPU_HIDDEN void cpu_proc_set_n_threads(ggml_backend_t backend, int n_threads);
CPU_HIDDEN void cpu_proc_set_abort_callback(ggml_backend_t backend, ggml_abort_callback cb, void *data);

#endif /* GGMLC_CPU_BACKEND_H */
