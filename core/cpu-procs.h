/*
 * cpu-procs.h - the private entry points that the CPU plugin offers through
 * ggml_backend_reg_get_proc_address, so that libggmlc can implement
 * ggml-cpu.h (core/cpu-api.c) on top of whichever CPU plugin is loaded.
 * Both sides include this file; names and types must stay in step.
 * It also fixes the op_params layout of the custom operators, which the
 * core's constructors write and the plugin's kernels read.
 */
#ifndef GGMLC_CPU_PROCS_H
#define GGMLC_CPU_PROCS_H

#include "ggml.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

#define GGMLC_CPU_PROC_GRAPH_PLAN       "ggmlc_cpu_graph_plan"
#define GGMLC_CPU_PROC_GRAPH_COMPUTE    "ggmlc_cpu_graph_compute"
#define GGMLC_CPU_PROC_THREADPOOL_NEW   "ggmlc_cpu_threadpool_new"
#define GGMLC_CPU_PROC_THREADPOOL_FREE  "ggmlc_cpu_threadpool_free"
#define GGMLC_CPU_PROC_THREADPOOL_SIZE  "ggmlc_cpu_threadpool_get_n_threads"
#define GGMLC_CPU_PROC_THREADPOOL_PAUSE "ggmlc_cpu_threadpool_pause"
#define GGMLC_CPU_PROC_THREADPOOL_RESUME "ggmlc_cpu_threadpool_resume"
#define GGMLC_CPU_PROC_SET_THREADPOOL   "ggml_backend_cpu_set_threadpool"
#define GGMLC_CPU_PROC_TYPE_TRAITS      "ggmlc_cpu_get_type_traits"
/* ggml's own names, for programs that look them up themselves */
#define GGMLC_CPU_PROC_SET_N_THREADS    "ggml_backend_set_n_threads"
#define GGMLC_CPU_PROC_SET_ABORT        "ggml_backend_set_abort_callback"
#define GGMLC_CPU_PROC_GET_FEATURES     "ggml_backend_get_features"

typedef struct ggml_cplan (*ggmlc_cpu_graph_plan_t)(const struct ggml_cgraph *cgraph, int n_threads, struct ggml_threadpool *threadpool);
typedef enum ggml_status (*ggmlc_cpu_graph_compute_t)(struct ggml_cgraph *cgraph, struct ggml_cplan *cplan);
typedef struct ggml_threadpool *(*ggmlc_cpu_threadpool_new_t)(struct ggml_threadpool_params *params);
typedef void (*ggmlc_cpu_threadpool_fn_t)(struct ggml_threadpool *threadpool);
typedef int (*ggmlc_cpu_threadpool_size_t)(struct ggml_threadpool *threadpool);
typedef void (*ggmlc_cpu_set_threadpool_t)(ggml_backend_t backend, ggml_threadpool_t threadpool);
typedef const struct ggml_type_traits_cpu *(*ggmlc_cpu_type_traits_t)(enum ggml_type type);

/* op_params of GGML_OP_MAP_CUSTOM1/2/3 and GGML_OP_CUSTOM (the layout ggml uses). */
struct ggml_map_custom1_op_params { ggml_custom1_op_t fun; int n_tasks; void *userdata; };
struct ggml_map_custom2_op_params { ggml_custom2_op_t fun; int n_tasks; void *userdata; };
struct ggml_map_custom3_op_params { ggml_custom3_op_t fun; int n_tasks; void *userdata; };
struct ggml_custom_op_params { ggml_custom_op_t fun; int n_tasks; void *userdata; };

#endif /* GGMLC_CPU_PROCS_H */
