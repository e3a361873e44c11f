/*
 * ggml-backend.h - devices, buffers, backends and the multi-backend scheduler.
 *
 * In ggmlc every backend comes from a plugin listed in the ini configuration
 * (see ggmlc.h): a registry (reg) per plugin, devices per registry, and a
 * backend (an execution stream) per initialised device.  Tensor data lives
 * in backend buffers; ggml_backend_tensor_set/get move bytes in and out.
 */
#ifndef GGML_BACKEND_H
#define GGML_BACKEND_H

#include "ggml.h"
#include "ggml-alloc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ggml_backend_buffer_type *ggml_backend_buffer_type_t;
typedef struct ggml_backend_buffer *ggml_backend_buffer_t;
typedef struct ggml_backend_event *ggml_backend_event_t;
typedef struct ggml_backend *ggml_backend_t;
typedef void *ggml_backend_graph_plan_t;
typedef struct ggml_backend_reg *ggml_backend_reg_t;
typedef struct ggml_backend_device *ggml_backend_dev_t;

/* ------------------------------------------------------- buffer types */

GGML_API const char *ggml_backend_buft_name(ggml_backend_buffer_type_t buft);
/* A new buffer of at least size bytes, or NULL (error logged) when memory is short. */
GGML_API ggml_backend_buffer_t ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size);
GGML_API size_t ggml_backend_buft_get_alignment(ggml_backend_buffer_type_t buft);
/* Largest single buffer the type can allocate. */
GGML_API size_t ggml_backend_buft_get_max_size(ggml_backend_buffer_type_t buft);
/* Bytes a tensor needs in this type (at least ggml_nbytes). */
GGML_API size_t ggml_backend_buft_get_alloc_size(ggml_backend_buffer_type_t buft, const struct ggml_tensor *tensor);
/* True when the buffer's memory is host memory the CPU can address. */
GGML_API bool ggml_backend_buft_is_host(ggml_backend_buffer_type_t buft);
GGML_API ggml_backend_dev_t ggml_backend_buft_get_device(ggml_backend_buffer_type_t buft);

/* ------------------------------------------------------------ buffers */

enum ggml_backend_buffer_usage {
    GGML_BACKEND_BUFFER_USAGE_ANY     = 0,
    GGML_BACKEND_BUFFER_USAGE_WEIGHTS = 1,
    GGML_BACKEND_BUFFER_USAGE_COMPUTE = 2,
};

GGML_API const char *ggml_backend_buffer_name(ggml_backend_buffer_t buffer);
/* Free a buffer (NULL is ignored); its tensors must not be used afterwards. */
GGML_API void   ggml_backend_buffer_free(ggml_backend_buffer_t buffer);
/* Base address of the buffer (for device buffers an opaque, non-NULL address). */
GGML_API void  *ggml_backend_buffer_get_base(ggml_backend_buffer_t buffer);
GGML_API size_t ggml_backend_buffer_get_size(ggml_backend_buffer_t buffer);
/* Let the buffer's backend prepare a tensor placed in it (views included). */
GGML_API enum ggml_status ggml_backend_buffer_init_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor *tensor);
GGML_API size_t ggml_backend_buffer_get_alignment(ggml_backend_buffer_t buffer);
GGML_API size_t ggml_backend_buffer_get_max_size(ggml_backend_buffer_t buffer);
GGML_API size_t ggml_backend_buffer_get_alloc_size(ggml_backend_buffer_t buffer, const struct ggml_tensor *tensor);
/* Fill the whole buffer with a byte value. */
GGML_API void   ggml_backend_buffer_clear(ggml_backend_buffer_t buffer, uint8_t value);
GGML_API bool   ggml_backend_buffer_is_host(ggml_backend_buffer_t buffer);
GGML_API void   ggml_backend_buffer_set_usage(ggml_backend_buffer_t buffer, enum ggml_backend_buffer_usage usage);
GGML_API enum ggml_backend_buffer_usage ggml_backend_buffer_get_usage(ggml_backend_buffer_t buffer);
GGML_API ggml_backend_buffer_type_t ggml_backend_buffer_get_type(ggml_backend_buffer_t buffer);
/* Forget backend-side state of the buffer's tensors. */
GGML_API void   ggml_backend_buffer_reset(ggml_backend_buffer_t buffer);

/* Copy src's data into dst (same shape and type), across backends if needed. */
GGML_API void ggml_backend_tensor_copy(const struct ggml_tensor *src, struct ggml_tensor *dst);

/* ------------------------------------------------------------ backends */

GGML_API ggml_guid_t ggml_backend_guid(ggml_backend_t backend);
GGML_API const char *ggml_backend_name(ggml_backend_t backend);
/* Free a backend (NULL is ignored). */
GGML_API void        ggml_backend_free(ggml_backend_t backend);

GGML_API ggml_backend_buffer_type_t ggml_backend_get_default_buffer_type(ggml_backend_t backend);
GGML_API ggml_backend_buffer_t      ggml_backend_alloc_buffer(ggml_backend_t backend, size_t size);
GGML_API size_t                     ggml_backend_get_alignment(ggml_backend_t backend);
GGML_API size_t                     ggml_backend_get_max_size(ggml_backend_t backend);

/* Queue a copy into / out of a tensor on the backend's stream (completes by synchronize). */
GGML_API void ggml_backend_tensor_set_async(ggml_backend_t backend, struct ggml_tensor *tensor, const void *data, size_t offset, size_t size);
GGML_API void ggml_backend_tensor_get_async(ggml_backend_t backend, const struct ggml_tensor *tensor, void *data, size_t offset, size_t size);
/* Strided forms: n_copies chunks of size bytes, chunk i at offset + i*stride_tensor in the
 * tensor and at i*stride_data in data (the _async ones queue on the backend's stream). */
GGML_API void ggml_backend_tensor_set_2d_async(ggml_backend_t backend, struct ggml_tensor *tensor, const void *data, size_t offset,
        size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data);
GGML_API void ggml_backend_tensor_get_2d_async(ggml_backend_t backend, const struct ggml_tensor *tensor, void *data, size_t offset,
        size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data);

/* Copy bytes into / out of a tensor's data at a byte offset; out-of-range requests are
 * reported and ignored. */
GGML_API void ggml_backend_tensor_set(struct ggml_tensor *tensor, const void *data, size_t offset, size_t size);
GGML_API void ggml_backend_tensor_get(const struct ggml_tensor *tensor, void *data, size_t offset, size_t size);
GGML_API void ggml_backend_tensor_set_2d(struct ggml_tensor *tensor, const void *data, size_t offset, size_t size,
        size_t n_copies, size_t stride_tensor, size_t stride_data);
GGML_API void ggml_backend_tensor_get_2d(const struct ggml_tensor *tensor, void *data, size_t offset, size_t size,
        size_t n_copies, size_t stride_tensor, size_t stride_data);
GGML_API void ggml_backend_tensor_memset(struct ggml_tensor *tensor, uint8_t value, size_t offset, size_t size);

/* Wait until everything queued on the backend has finished. */
GGML_API void ggml_backend_synchronize(ggml_backend_t backend);

/* Prepared graphs (backends without plan support compute the graph directly). */
GGML_API ggml_backend_graph_plan_t ggml_backend_graph_plan_create(ggml_backend_t backend, struct ggml_cgraph *cgraph);
GGML_API void ggml_backend_graph_plan_free(ggml_backend_t backend, ggml_backend_graph_plan_t plan);
GGML_API enum ggml_status ggml_backend_graph_plan_compute(ggml_backend_t backend, ggml_backend_graph_plan_t plan);

/* Compute a graph whose tensors are all allocated.  Nodes the backend cannot
 * compute run on the CPU backend instead (see ggmlc.h). */
GGML_API enum ggml_status ggml_backend_graph_compute(ggml_backend_t backend, struct ggml_cgraph *cgraph);
GGML_API enum ggml_status ggml_backend_graph_compute_async(ggml_backend_t backend, struct ggml_cgraph *cgraph);

/* Whether the backend computes op / uses buffers of buft / wants to take over op from the CPU. */
GGML_API bool ggml_backend_supports_op(ggml_backend_t backend, const struct ggml_tensor *op);
GGML_API bool ggml_backend_supports_buft(ggml_backend_t backend, ggml_backend_buffer_type_t buft);
GGML_API bool ggml_backend_offload_op(ggml_backend_t backend, const struct ggml_tensor *op);

/* Copy between backends after the work queued on backend_src. */
GGML_API void ggml_backend_tensor_copy_async(ggml_backend_t backend_src, ggml_backend_t backend_dst, const struct ggml_tensor *src, struct ggml_tensor *dst);

GGML_API ggml_backend_dev_t ggml_backend_get_device(ggml_backend_t backend);

/* -------------------------------------------------------------- events */

GGML_API ggml_backend_event_t ggml_backend_event_new(ggml_backend_dev_t device);
GGML_API void ggml_backend_event_free(ggml_backend_event_t event);
/* Mark the current point of backend's stream; wait on the host or on another backend. */
GGML_API void ggml_backend_event_record(ggml_backend_event_t event, ggml_backend_t backend);
GGML_API void ggml_backend_event_synchronize(ggml_backend_event_t event);
GGML_API void ggml_backend_event_wait(ggml_backend_t backend, ggml_backend_event_t event);

/* ------------------------------------------------------------- devices */

enum ggml_backend_dev_type {
    GGML_BACKEND_DEVICE_TYPE_CPU,
    GGML_BACKEND_DEVICE_TYPE_GPU,
    GGML_BACKEND_DEVICE_TYPE_IGPU,
    GGML_BACKEND_DEVICE_TYPE_ACCEL,
    GGML_BACKEND_DEVICE_TYPE_META, /* several devices as one, for tensor parallelism (see below) */
};

struct ggml_backend_dev_caps {
    bool async;
    bool host_buffer;
    bool buffer_from_host_ptr;
    bool events;
};

struct ggml_backend_dev_props {
    const char *name;
    const char *description;
    size_t memory_free;
    size_t memory_total;
    enum ggml_backend_dev_type type;
    const char *device_id; /* PCI bus id or NULL */
    struct ggml_backend_dev_caps caps;
};

GGML_API const char *ggml_backend_dev_name(ggml_backend_dev_t device);
GGML_API const char *ggml_backend_dev_description(ggml_backend_dev_t device);
GGML_API void ggml_backend_dev_memory(ggml_backend_dev_t device, size_t *free, size_t *total);
GGML_API enum ggml_backend_dev_type ggml_backend_dev_type(ggml_backend_dev_t device);
GGML_API void ggml_backend_dev_get_props(ggml_backend_dev_t device, struct ggml_backend_dev_props *props);
GGML_API ggml_backend_reg_t ggml_backend_dev_backend_reg(ggml_backend_dev_t device);
/* A new backend (stream) on the device; params is a plugin-specific option string or NULL. */
GGML_API ggml_backend_t ggml_backend_dev_init(ggml_backend_dev_t device, const char *params);
GGML_API ggml_backend_buffer_type_t ggml_backend_dev_buffer_type(ggml_backend_dev_t device);
GGML_API ggml_backend_buffer_type_t ggml_backend_dev_host_buffer_type(ggml_backend_dev_t device);
GGML_API ggml_backend_buffer_t ggml_backend_dev_buffer_from_host_ptr(ggml_backend_dev_t device, void *ptr, size_t size, size_t max_tensor_size);
/* Exact: a device that says yes computes the node correctly. */
GGML_API bool ggml_backend_dev_supports_op(ggml_backend_dev_t device, const struct ggml_tensor *op);
GGML_API bool ggml_backend_dev_supports_buft(ggml_backend_dev_t device, ggml_backend_buffer_type_t buft);
GGML_API bool ggml_backend_dev_offload_op(ggml_backend_dev_t device, const struct ggml_tensor *op);

/* ---------------------------------------------------------- registries */

GGML_API const char *ggml_backend_reg_name(ggml_backend_reg_t reg);
GGML_API size_t ggml_backend_reg_dev_count(ggml_backend_reg_t reg);
GGML_API ggml_backend_dev_t ggml_backend_reg_dev_get(ggml_backend_reg_t reg, size_t index);
/* Plugin-specific functions by name (e.g. "ggml_backend_set_n_threads"), or NULL. */
GGML_API void *ggml_backend_reg_get_proc_address(ggml_backend_reg_t reg, const char *name);

/* Collective communication between backends (a plugin's proc addresses; ggmlc's have none). */
typedef void *(*ggml_backend_comm_init_t)(ggml_backend_t *backends, size_t n_backends);
typedef void (*ggml_backend_comm_free_t)(void *comm_ctx);
typedef bool (*ggml_backend_comm_allreduce_tensor_t)(void *comm_ctx, struct ggml_tensor **tensors);
typedef ggml_backend_buffer_type_t (*ggml_backend_split_buffer_type_t)(int main_device, const float *tensor_split);
typedef void (*ggml_backend_set_n_threads_t)(ggml_backend_t backend, int n_threads);
typedef ggml_backend_buffer_type_t *(*ggml_backend_dev_get_extra_bufts_t)(ggml_backend_dev_t device);
typedef void (*ggml_backend_set_abort_callback_t)(ggml_backend_t backend, ggml_abort_callback abort_callback, void *abort_callback_data);
struct ggml_backend_feature {
    const char *name;
    const char *value;
};
typedef struct ggml_backend_feature *(*ggml_backend_get_features_t)(ggml_backend_reg_t reg);

/* Add a registry or device created in-process (not from the configuration). */
GGML_API void ggml_backend_register(ggml_backend_reg_t reg);
GGML_API void ggml_backend_device_register(ggml_backend_dev_t device);

/* Registries and devices, in the configured preference order (loads the configuration on first use). */
GGML_API size_t ggml_backend_reg_count(void);
GGML_API ggml_backend_reg_t ggml_backend_reg_get(size_t index);
GGML_API ggml_backend_reg_t ggml_backend_reg_by_name(const char *name);
GGML_API size_t ggml_backend_dev_count(void);
GGML_API ggml_backend_dev_t ggml_backend_dev_get(size_t index);
GGML_API ggml_backend_dev_t ggml_backend_dev_by_name(const char *name);
GGML_API ggml_backend_dev_t ggml_backend_dev_by_type(enum ggml_backend_dev_type type);

/* Init the named device (or registry's first device), the first of a type, or the
 * best device: the first GPU in preference order, else the CPU. */
GGML_API ggml_backend_t ggml_backend_init_by_name(const char *name, const char *params);
GGML_API ggml_backend_t ggml_backend_init_by_type(enum ggml_backend_dev_type type, const char *params);
GGML_API ggml_backend_t ggml_backend_init_best(void);

/* Load a plugin file and register its backend (NULL on failure, reason logged).
 * path is absolute, or a bare file name looked up in the plugin folder; never
 * relative to the current directory. */
GGML_API ggml_backend_reg_t ggml_backend_load(const char *path);
GGML_API void ggml_backend_unload(ggml_backend_reg_t reg);
/* Load every backend the configuration lists; _from_path also loads every plugin in
 * dir_path, an absolute path, whose file is named NAME.so (NAME: letters, digits, '_'
 * and '-', at most 64) and carries the entry symbol, each file at most once. */
GGML_API void ggml_backend_load_all(void);
GGML_API void ggml_backend_load_all_from_path(const char *dir_path);

/* ----------------------------------------------------------- scheduler
 * Runs one graph across several backends: each node goes to the first backend
 * (lowest index) that supports it and can reach its weights, the graph is cut
 * into splits per backend, and inputs crossing backends are copied. */

typedef struct ggml_backend_sched *ggml_backend_sched_t;

/* Called for every node when ask == false (observe it; return false to stop);
 * with ask == true the scheduler asks whether the user wants to observe t. */
typedef bool (*ggml_backend_sched_eval_callback)(struct ggml_tensor *t, bool ask, void *user_data);

/* The last backend must be the CPU.  bufts may be NULL (defaults). */
GGML_API ggml_backend_sched_t ggml_backend_sched_new(ggml_backend_t *backends, ggml_backend_buffer_type_t *bufts, int n_backends,
                                                     size_t graph_size, bool parallel, bool op_offload);
GGML_API void ggml_backend_sched_free(ggml_backend_sched_t sched);
/* Size the compute buffers for the largest graph to come. */
GGML_API bool ggml_backend_sched_reserve(ggml_backend_sched_t sched, struct ggml_cgraph *measure_graph);
/* The compute buffer bytes per backend (sizes[n_backends]) that reserving measure_graph
 * would need, without allocating anything; zeros on failure. */
GGML_API void ggml_backend_sched_reserve_size(ggml_backend_sched_t sched, struct ggml_cgraph *measure_graph, size_t *sizes);
GGML_API int  ggml_backend_sched_get_n_backends(ggml_backend_sched_t sched);
GGML_API ggml_backend_t ggml_backend_sched_get_backend(ggml_backend_sched_t sched, int i);
/* Splits and copies of the last graph. */
GGML_API int  ggml_backend_sched_get_n_splits(ggml_backend_sched_t sched);
GGML_API int  ggml_backend_sched_get_n_copies(ggml_backend_sched_t sched);
GGML_API ggml_backend_buffer_type_t ggml_backend_sched_get_buffer_type(ggml_backend_sched_t sched, ggml_backend_t backend);
GGML_API size_t ggml_backend_sched_get_buffer_size(ggml_backend_sched_t sched, ggml_backend_t backend);
/* Pin a node to a backend before the graph is split. */
GGML_API void ggml_backend_sched_set_tensor_backend(ggml_backend_sched_t sched, struct ggml_tensor *node, ggml_backend_t backend);
GGML_API ggml_backend_t ggml_backend_sched_get_tensor_backend(ggml_backend_sched_t sched, struct ggml_tensor *node);
GGML_API void ggml_backend_sched_split_graph(ggml_backend_sched_t sched, struct ggml_cgraph *graph);
GGML_API bool ggml_backend_sched_alloc_graph(ggml_backend_sched_t sched, struct ggml_cgraph *graph);
GGML_API enum ggml_status ggml_backend_sched_graph_compute(ggml_backend_sched_t sched, struct ggml_cgraph *graph);
GGML_API enum ggml_status ggml_backend_sched_graph_compute_async(ggml_backend_sched_t sched, struct ggml_cgraph *graph);
GGML_API void ggml_backend_sched_synchronize(ggml_backend_sched_t sched);
/* Drop all assignments and allocations (tensors of the previous graph become invalid). */
GGML_API void ggml_backend_sched_reset(ggml_backend_sched_t sched);
GGML_API void ggml_backend_sched_set_eval_callback(ggml_backend_sched_t sched, ggml_backend_sched_eval_callback callback, void *user_data);

/* --------------------------------------------------------------- utils */

struct ggml_backend_graph_copy {
    ggml_backend_buffer_t buffer;
    struct ggml_context  *ctx_allocated;
    struct ggml_context  *ctx_unallocated;
    struct ggml_cgraph   *graph;
};

/* Copy a graph and its data to another backend. */
GGML_API struct ggml_backend_graph_copy ggml_backend_graph_copy(ggml_backend_t backend, struct ggml_cgraph *graph);
GGML_API void ggml_backend_graph_copy_free(struct ggml_backend_graph_copy copy);

typedef bool (*ggml_backend_eval_callback)(int node_index, struct ggml_tensor *t1, struct ggml_tensor *t2, void *user_data);
/* Run graph on both backends node by node, calling callback with both results of each node. */
/* Run graph on both backends node by node, calling callback with both results of each node;
 * with test_nodes (num_test_nodes of them), only those nodes are compared and the run stops
 * after the last of them. */
GGML_API bool ggml_backend_compare_graph_backend(ggml_backend_t backend1, ggml_backend_t backend2, struct ggml_cgraph *graph,
        ggml_backend_eval_callback callback, void *user_data, struct ggml_tensor const *const *test_nodes, size_t num_test_nodes);

/* ------------------------------------------ meta device (tensor parallelism)
 * ggml splits each weight across several devices along an axis.  ggmlc has no
 * collective communication yet: ggml_backend_meta_device over one device returns that
 * device (every split is then the whole tensor, which is exact); over several it
 * returns NULL with GGMLC_ERR_UNSUPPORTED. */
#define GGML_BACKEND_META_MAX_DEVICES 16

enum ggml_backend_meta_split_axis {
    GGML_BACKEND_SPLIT_AXIS_0 = 0, /* a slice along dimension 0 .. 3 on each device */
    GGML_BACKEND_SPLIT_AXIS_1 = 1,
    GGML_BACKEND_SPLIT_AXIS_2 = 2,
    GGML_BACKEND_SPLIT_AXIS_3 = 3,
    GGML_BACKEND_SPLIT_AXIS_MIRRORED = 10, /* the whole tensor on every device */
    GGML_BACKEND_SPLIT_AXIS_PARTIAL  = 11, /* a partial sum on every device */
    GGML_BACKEND_SPLIT_AXIS_NONE    = 98,  /* bookkeeping */
    GGML_BACKEND_SPLIT_AXIS_UNKNOWN = 99,
};
/* "0".."3", "MIRRORED", "PARTIAL", "NONE", "UNKNOWN"; "INVALID" for other values. */
GGML_API const char *ggml_backend_meta_split_axis_name(enum ggml_backend_meta_split_axis split_axis);

/* How a tensor is split: along axis, in n_segments segments (segment s repeats nr[s]
 * times), ne[s * n_devices + d] elements of segment s on device d. */
struct ggml_backend_meta_split_state {
    enum ggml_backend_meta_split_axis axis;
    int64_t  ne[16 * GGML_BACKEND_META_MAX_DEVICES];
    uint32_t nr[16];
    uint32_t n_segments;
};

typedef struct ggml_backend_meta_split_state (*ggml_backend_meta_get_split_state_t)(const struct ggml_tensor *tensor, void *userdata);
/* A device standing for devs[0..n_devs) (see above for what ggmlc supports). */
GGML_API ggml_backend_dev_t ggml_backend_meta_device(ggml_backend_dev_t *devs, size_t n_devs,
        ggml_backend_meta_get_split_state_t get_split_state, void *get_split_state_ud);

/* Place a tensor at addr inside buffer; initialise a view from its view_src. */
GGML_API enum ggml_status ggml_backend_tensor_alloc(ggml_backend_buffer_t buffer, struct ggml_tensor *tensor, void *addr);
GGML_API enum ggml_status ggml_backend_view_init(struct ggml_tensor *tensor);

/* Host buffers, always available. */
GGML_API ggml_backend_buffer_t ggml_backend_cpu_buffer_from_ptr(void *ptr, size_t size);
GGML_API ggml_backend_buffer_type_t ggml_backend_cpu_buffer_type(void);

#ifdef __cplusplus
}
#endif

#endif /* GGML_BACKEND_H */
