/*
 * ggmlc-plugin.h - the ABI between libggmlc and backend plugins.
 *
 * A backend plugin is a shared object that exports one data symbol,
 *
 *     GGMLC_PLUGIN_EXPORT const struct ggmlc_plugin_desc ggmlc_plugin_entry_v1 = {
 *         GGMLC_PLUGIN_DESC_HEADER, "name", "1.0", "what it is", probe, init, fini
 *     };
 *
 * Loading, in order:
 *  1. The file is opened only if no user other than root and the program's
 *     own could have replaced it: it, every folder and every link on its
 *     path as configured must be owned by one of them, and no folder may be
 *     writable by group or others unless sticky (allow_insecure_plugins in
 *     the main configuration switches this off).  The dynamic linker then
 *     loads exactly the file checked (through /proc/self/fd).
 *  2. dlopen(RTLD_NOW | RTLD_LOCAL) and dlsym(GGMLC_PLUGIN_ENTRY_NAME).
 *  3. The entry symbol must be a data object inside a readable segment of
 *     this plugin, at least as large as the descriptor (an absolute or tiny
 *     symbol is refused); then the descriptor's magic, ABI version and
 *     struct_size are checked, and its strings and functions must point
 *     into the plugin itself.
 *  4. Only then probe() says whether the plugin can run on this machine and
 *     init() registers its devices with the constructors below.
 * Guaranteed: no function the descriptor names (probe, init, fini) runs
 * before every check of step 3 passed, and a file failing step 1 is never
 * given to the dynamic linker.  Not guaranteed: code the dynamic linker runs
 * by itself inside step 2 (ELF constructors, IFUNC resolvers, the
 * constructors of the plugin's own dependencies) runs before any check; keep
 * a plugin's constructors empty.  The entry is data, not code, precisely so
 * that an incompatible plugin is refused before the loader calls into it.
 * A plugin loaded through /proc/self/fd sees "/proc/self/fd" as its $ORIGIN:
 * find dependencies through the installed library paths, not $ORIGIN.
 * Plugins link against libggmlc and may call every public function of it.
 *
 * Compatibility: structures here only ever grow at their end; a plugin
 * built for ABI major M and minor m loads into a libggmlc of major M and
 * minor >= m.  The op vtable is indexed by enum ggml_op, which only grows
 * at its end too; a plugin states how many entries its table has.
 *
 * Objects (registries, devices, buffer types, buffers, backends) are
 * allocated and freed by the core; each carries a plugin-owned context
 * pointer.  The core calls the iface's free hook, then frees the object.
 */
#ifndef GGMLC_PLUGIN_H
#define GGMLC_PLUGIN_H

#include <string.h>

#include "ggml.h"
#include "ggml-backend.h"
#include "ggmlc.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GGMLC_PLUGIN_MAGIC     0x504c4d47u /* "GMLP" little-endian */
#define GGMLC_PLUGIN_ABI_MAJOR 2
#define GGMLC_PLUGIN_ABI_MINOR 2
#define GGMLC_PLUGIN_ENTRY_NAME "ggmlc_plugin_entry_v1"

#if defined(__GNUC__)
#    define GGMLC_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#    define GGMLC_PLUGIN_EXPORT
#endif

/* The options of the plugin's [backend.NAME] section, and where it was configured. */
struct ggmlc_plugin_options {
    const char *name;          /* the backend's configured name */
    const char *config_dir;    /* folder of the config file that named it */
    size_t      n;
    const char *const *keys;
    const char *const *values;
};

/* Value of an option, or def when absent. */
GGML_API const char *ggmlc_plugin_option(const struct ggmlc_plugin_options *opts, const char *key, const char *def);

/* Log through ggml's log callback (the plugin's name is not added). */
GGML_API void ggmlc_log(enum ggml_log_level level, const char *fmt, ...) GGML_ATTRIBUTE_FORMAT(2, 3);

/* The value of environment variable name, or NULL.  Plugins read every variable through it:
 * in a set-uid or set-gid program it is NULL for all names (secure_getenv's rule), so that
 * whoever starts such a program cannot steer it through the environment. */
GGML_API const char *ggmlc_getenv(const char *name);

struct ggmlc_plugin_desc {
    uint32_t magic;       /* GGMLC_PLUGIN_MAGIC */
    uint32_t struct_size; /* sizeof(struct ggmlc_plugin_desc) as the plugin was built */
    uint16_t abi_major;   /* GGMLC_PLUGIN_ABI_MAJOR as the plugin was built */
    uint16_t abi_minor;   /* GGMLC_PLUGIN_ABI_MINOR as the plugin was built */
    const char *name;
    const char *version;
    const char *description;
    /* Nonzero when the plugin can run here (its hardware and libraries exist). */
    int (*probe)(void);
    /* Create the registry and its devices; on failure return an error status
     * (ggmlc_set_error gives the reason) and leave nothing registered. */
    enum ggmlc_status (*init)(const struct ggmlc_plugin_options *opts, ggml_backend_reg_t *reg_out);
    /* Called once before the plugin is unloaded, after its objects were freed. */
    void (*fini)(void);
};

#define GGMLC_PLUGIN_DESC_HEADER \
    GGMLC_PLUGIN_MAGIC, (uint32_t)sizeof(struct ggmlc_plugin_desc), GGMLC_PLUGIN_ABI_MAJOR, GGMLC_PLUGIN_ABI_MINOR

/* ---------------------------------------------------------------- ops */

/* One call of an operator kernel.  A node is split into nth tasks; task ith
 * computes its share.  wdata is scratch memory shared by the node's tasks. */
struct ggmlc_op_call {
    int    ith;
    int    nth;
    void  *wdata;
    size_t wsize;
    void  *backend_ctx;   /* the calling backend's context */
    /* Wait until every task of this node reached the barrier (no-op when nth == 1). */
    void (*barrier)(const struct ggmlc_op_call *call);
    void  *impl;          /* private to the caller */
};

/* Compute dst (all of it when nth == 1). */
typedef enum ggml_status (*ggmlc_op_fn)(const struct ggmlc_op_call *call, struct ggml_tensor *dst);

/* -------------------------------------------------------- interfaces */

struct ggmlc_reg_iface {
    uint32_t struct_size;
    /* Plugin-specific entry points by name (optional). */
    void *(*get_proc_address)(ggml_backend_reg_t reg, const char *name);
    /* Release the registry's context (optional). */
    void (*free)(ggml_backend_reg_t reg);
};

struct ggmlc_device_iface {
    uint32_t struct_size;
    const char *(*get_name)(ggml_backend_dev_t dev);
    const char *(*get_description)(ggml_backend_dev_t dev);
    void (*get_memory)(ggml_backend_dev_t dev, size_t *free, size_t *total);
    enum ggml_backend_dev_type (*get_type)(ggml_backend_dev_t dev);
    /* Capabilities for ggmlc-info, e.g. "fp16 int8 subgroup=32" (optional). */
    const char *(*get_caps)(ggml_backend_dev_t dev);
    ggml_backend_t (*init_backend)(ggml_backend_dev_t dev, const char *params);
    ggml_backend_buffer_type_t (*get_buffer_type)(ggml_backend_dev_t dev);
    ggml_backend_buffer_type_t (*get_host_buffer_type)(ggml_backend_dev_t dev);        /* optional */
    ggml_backend_buffer_t (*buffer_from_host_ptr)(ggml_backend_dev_t dev, void *ptr,
                                                  size_t size, size_t max_tensor_size); /* optional */
    /* The op vtable: ops[op] computes op, NULL = unsupported; n_ops entries. */
    const ggmlc_op_fn *ops;
    int n_ops;
    /* Finer check of types and shapes for a node whose ops[] entry is set (optional). */
    bool (*supports_op)(ggml_backend_dev_t dev, const struct ggml_tensor *op);
    /* Whether the device's backends can use buffers of buft (optional: its own type only). */
    bool (*supports_buft)(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft);
    /* Whether to take an op over from the CPU although its weights are in host memory (optional). */
    bool (*offload_op)(ggml_backend_dev_t dev, const struct ggml_tensor *op);
    /* Release the device's context (optional). */
    void (*free)(ggml_backend_dev_t dev);
    /* Whether the device may be chosen without being named (ggml_backend_init_best, the model
     * API's default) ahead of the CPU backend, with a short reason in *why for ggmlc-info.
     * A software device (lavapipe) answers no unless the configuration names it.  Optional:
     * GPU-type devices then answer yes, others no. */
    bool (*is_default_choice)(ggml_backend_dev_t dev, const char **why);
};

struct ggmlc_buft_iface {
    uint32_t struct_size;
    const char *(*get_name)(ggml_backend_buffer_type_t buft);
    /* A new buffer (via ggmlc_buffer_new) or NULL with ggmlc_set_error. */
    ggml_backend_buffer_t (*alloc_buffer)(ggml_backend_buffer_type_t buft, size_t size);
    size_t (*get_alignment)(ggml_backend_buffer_type_t buft);
    size_t (*get_max_size)(ggml_backend_buffer_type_t buft);                                   /* optional: SIZE_MAX */
    size_t (*get_alloc_size)(ggml_backend_buffer_type_t buft, const struct ggml_tensor *tensor); /* optional: ggml_nbytes */
    bool   (*is_host)(ggml_backend_buffer_type_t buft);                                        /* optional: false */
    void   (*free)(ggml_backend_buffer_type_t buft);                                           /* optional */
};

struct ggmlc_buffer_iface {
    uint32_t struct_size;
    void  (*free_buffer)(ggml_backend_buffer_t buffer);
    void *(*get_base)(ggml_backend_buffer_t buffer);
    enum ggml_status (*init_tensor)(ggml_backend_buffer_t buffer, struct ggml_tensor *tensor); /* optional */
    enum ggml_status (*memset_tensor)(ggml_backend_buffer_t buffer, struct ggml_tensor *tensor, uint8_t value, size_t offset, size_t size);
    enum ggml_status (*set_tensor)(ggml_backend_buffer_t buffer, struct ggml_tensor *tensor, const void *data, size_t offset, size_t size);
    enum ggml_status (*get_tensor)(ggml_backend_buffer_t buffer, const struct ggml_tensor *tensor, void *data, size_t offset, size_t size);
    /* Copy src (in any buffer) into dst (in this buffer); false when it cannot (optional). */
    bool  (*cpy_tensor)(ggml_backend_buffer_t buffer, const struct ggml_tensor *src, struct ggml_tensor *dst);
    void  (*clear)(ggml_backend_buffer_t buffer, uint8_t value);
    void  (*reset)(ggml_backend_buffer_t buffer); /* optional */
};

struct ggmlc_backend_iface {
    uint32_t struct_size;
    const char *(*get_name)(ggml_backend_t backend);
    void (*free)(ggml_backend_t backend);
    /* Asynchronous transfers (optional: the buffer's synchronous ones are used). */
    enum ggml_status (*set_tensor_async)(ggml_backend_t backend, struct ggml_tensor *tensor, const void *data, size_t offset, size_t size);
    enum ggml_status (*get_tensor_async)(ggml_backend_t backend, const struct ggml_tensor *tensor, void *data, size_t offset, size_t size);
    bool (*cpy_tensor_async)(ggml_backend_t backend_src, ggml_backend_t backend_dst, const struct ggml_tensor *src, struct ggml_tensor *dst);
    void (*synchronize)(ggml_backend_t backend); /* optional */
    /* Compute a graph whose nodes this device supports (optional: the core then
     * calls the device's ops[] for each node with one task). */
    enum ggml_status (*graph_compute)(ggml_backend_t backend, struct ggml_cgraph *cgraph);
    /* Plugin-specific knobs (optional). */
    void (*set_n_threads)(ggml_backend_t backend, int n_threads);
    void (*set_abort_callback)(ggml_backend_t backend, ggml_abort_callback cb, void *data);
    /* Since ABI 1.1 (optional; used instead of graph_compute when set): compute from a node
     * on, stopping at one the device cannot run after all.  See "Stopping for the CPU". */
    enum ggml_status (*graph_compute_from)(ggml_backend_t backend, struct ggml_cgraph *cgraph,
                                           int first, int *stopped_at);
    /* Since ABI 2.1 (optional; older cores ignore it): reorder nodes[0, n_nodes), a split
     * that ggml_backend_sched gives this backend, before the graph allocator places them.  The
     * new order must compute the same: every node after the nodes it reads (its sources, the
     * nodes whose memory it reads or overwrites through views), no node that writes memory
     * moved across another that reads or writes the same bytes.  A device that runs
     * independent nodes together uses it to put them next to each other (once placed, the
     * allocator's reuse of memory would chain them). */
    void (*order_nodes)(ggml_backend_t backend, struct ggml_tensor **nodes, int n_nodes);
};

/* ------------------------------------------------------ constructors */

/* A registry named name; the core owns it and frees it when the plugin is unloaded. */
GGML_API ggml_backend_reg_t ggmlc_reg_new(const char *name, const struct ggmlc_reg_iface *iface, void *context);
/* A device appended to reg's device list. */
GGML_API ggml_backend_dev_t ggmlc_device_new(ggml_backend_reg_t reg, const struct ggmlc_device_iface *iface, void *context);
/* A buffer type of dev (dev may be NULL for host types); freed with its device. */
GGML_API ggml_backend_buffer_type_t ggmlc_buft_new(ggml_backend_dev_t dev, const struct ggmlc_buft_iface *iface, void *context);
/* A buffer of size bytes of type buft; freed by ggml_backend_buffer_free. */
GGML_API ggml_backend_buffer_t ggmlc_buffer_new(ggml_backend_buffer_type_t buft, const struct ggmlc_buffer_iface *iface, void *context, size_t size);
/* A buffer of size bytes of plain host memory (aligned as ggml_backend_cpu_buffer_type()'s),
 * typed buft: how a plugin offers a host buffer type of its own (get_host_buffer_type), whose
 * tensors the CPU backend computes in place.  buft's is_host must answer true.  ABI 2.2. */
GGML_API ggml_backend_buffer_t ggmlc_host_buffer_new(ggml_backend_buffer_type_t buft, size_t size);
/* A backend (stream) on dev; freed by ggml_backend_free. */
GGML_API ggml_backend_t ggmlc_backend_new(ggml_backend_dev_t dev, const struct ggmlc_backend_iface *iface, void *context);

/* The plugin-owned context pointers given to the constructors. */
GGML_API void *ggmlc_reg_context(ggml_backend_reg_t reg);
GGML_API void *ggmlc_device_context(ggml_backend_dev_t dev);
GGML_API void *ggmlc_buft_context(ggml_backend_buffer_type_t buft);
GGML_API void *ggmlc_buffer_context(ggml_backend_buffer_t buffer);
GGML_API void *ggmlc_backend_context(ggml_backend_t backend);

/* The op vtable lookup the core uses: the kernel for node on dev, or NULL. */
GGML_API ggmlc_op_fn ggmlc_device_op(ggml_backend_dev_t dev, const struct ggml_tensor *node);
/* Whether dev's op vtable has an entry for op at all (types, shapes and sub-ops not checked). */
GGML_API bool ggmlc_device_has_op(ggml_backend_dev_t dev, enum ggml_op op);

/* True for nodes that compute nothing (views, reshapes, permutes, NONE). */
GGML_API bool ggmlc_op_is_view(enum ggml_op op);

/* ------------------------------------------------------ op metadata
 * The core's table of operators, for backends that need it. */
struct ggmlc_op_info {
    const char *name;        /* "MUL_MAT" */
    const char *symbol;      /* "X" */
    int  n_src;              /* operands it uses at most (-1: variable) */
    bool inplace_ok;         /* the result may overwrite src[0] */
    bool differentiable;     /* a backward rule exists */
};
GGML_API const struct ggmlc_op_info *ggmlc_op_get_info(enum ggml_op op);

/* ------------------------------------------------- operator parameters
 * Layouts of op_params that hold more than one value, as ggml's constructors write them.
 * Plugins read them through these structs and readers, never by slot index. */

/* GGML_OP_MAP_CUSTOM1/2/3 and GGML_OP_CUSTOM: the user's function, its task count
 * (GGML_N_TASKS_MAX: one per thread) and its user data. */
struct ggml_map_custom1_op_params {
    ggml_custom1_op_t fun;
    int n_tasks;
    void *userdata;
};
struct ggml_map_custom2_op_params {
    ggml_custom2_op_t fun;
    int n_tasks;
    void *userdata;
};
struct ggml_map_custom3_op_params {
    ggml_custom3_op_t fun;
    int n_tasks;
    void *userdata;
};
struct ggml_custom_op_params {
    ggml_custom_op_t fun;
    int n_tasks;
    void *userdata;
};
/* The layouts above as the node holds them (the four share the offsets of fun, n_tasks and
 * userdata, so ggmlc_custom_op_params_of reads n_tasks and whether fun is set for any). */
static inline struct ggml_map_custom1_op_params ggmlc_map_custom1_params_of(
    const struct ggml_tensor *node) {
    struct ggml_map_custom1_op_params p;
    memcpy(&p, node->op_params, sizeof p);
    return p;
}
static inline struct ggml_map_custom2_op_params ggmlc_map_custom2_params_of(
    const struct ggml_tensor *node) {
    struct ggml_map_custom2_op_params p;
    memcpy(&p, node->op_params, sizeof p);
    return p;
}
static inline struct ggml_map_custom3_op_params ggmlc_map_custom3_params_of(
    const struct ggml_tensor *node) {
    struct ggml_map_custom3_op_params p;
    memcpy(&p, node->op_params, sizeof p);
    return p;
}
static inline struct ggml_custom_op_params ggmlc_custom_op_params_of(
    const struct ggml_tensor *node) {
    struct ggml_custom_op_params p;
    memcpy(&p, node->op_params, sizeof p);
    return p;
}

/* Slot i of op_params read as a float (the constructors store floats bit for bit). */
static inline float ggmlc_op_param_f32(const struct ggml_tensor *node, int i) {
    float f;
    memcpy(&f, &node->op_params[i], sizeof f);
    return f;
}

/* GGML_OP_SSM_SCAN: how many state slots the result holds (op_params[0], ggml's K; at least 1). */
static inline int64_t ggmlc_ssm_scan_slots_of(const struct ggml_tensor *node) {
    return node->op_params[0] > 1 ? node->op_params[0] : 1;
}

/* GGML_OP_ROPE and GGML_OP_ROPE_BACK (slots: i32 [1] n_dims [2] mode [4] n_ctx_orig,
 * f32 [5..10] freq_base .. beta_slow, i32 [11..14] sections; [0] and [3] are unused). */
struct ggmlc_rope_params {
    int32_t n_dims;     /* leading dimensions rotated */
    int32_t mode;       /* GGML_ROPE_TYPE_* */
    int32_t n_ctx_orig; /* the context length trained for (YaRN) */
    float freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;
    int32_t sections[GGML_MROPE_SECTIONS]; /* multi-section modes only, else zeros */
    int32_t n_offs;     /* first rotated dimension (ggml_rope_set_offset), else 0 */
};
static inline struct ggmlc_rope_params ggmlc_rope_params_of(const struct ggml_tensor *node) {
    struct ggmlc_rope_params p;
    p.n_dims = node->op_params[1];
    p.mode = node->op_params[2];
    p.n_ctx_orig = node->op_params[4];
    p.freq_base = ggmlc_op_param_f32(node, 5);
    p.freq_scale = ggmlc_op_param_f32(node, 6);
    p.ext_factor = ggmlc_op_param_f32(node, 7);
    p.attn_factor = ggmlc_op_param_f32(node, 8);
    p.beta_fast = ggmlc_op_param_f32(node, 9);
    p.beta_slow = ggmlc_op_param_f32(node, 10);
    memcpy(p.sections, &node->op_params[11], sizeof p.sections);
    p.n_offs = node->op_params[15];
    return p;
}

/* GGML_OP_FLASH_ATTN_EXT (slots: f32 [0] scale [1] max_bias [2] logit_softcap, i32 [3] prec). */
struct ggmlc_flash_attn_params {
    float scale;         /* applied to q.k before the mask */
    float max_bias;      /* ALiBi slopes when > 0 */
    float logit_softcap; /* softcap * tanh(x / softcap) when > 0 */
    int32_t prec;        /* enum ggml_prec */
};
static inline struct ggmlc_flash_attn_params ggmlc_flash_attn_params_of(
    const struct ggml_tensor *node) {
    struct ggmlc_flash_attn_params p;
    p.scale = ggmlc_op_param_f32(node, 0);
    p.max_bias = ggmlc_op_param_f32(node, 1);
    p.logit_softcap = ggmlc_op_param_f32(node, 2);
    p.prec = node->op_params[3];
    return p;
}

/* GGML_OP_SOFT_MAX and GGML_OP_SOFT_MAX_BACK (slots: f32 [0] scale [1] max_bias). */
struct ggmlc_soft_max_params {
    float scale;    /* applied to the logits before the mask */
    float max_bias; /* ALiBi slopes when > 0 */
};
static inline struct ggmlc_soft_max_params ggmlc_soft_max_params_of(
    const struct ggml_tensor *node) {
    struct ggmlc_soft_max_params p;
    p.scale = ggmlc_op_param_f32(node, 0);
    p.max_bias = ggmlc_op_param_f32(node, 1);
    return p;
}

/* The 2-D window geometry of GGML_OP_IM2COL, GGML_OP_IM2COL_BACK, GGML_OP_CONV_2D and
 * GGML_OP_CONV_2D_DW (slots: i32 [0] s0 [1] s1 [2] p0 [3] p1 [4] d0 [5] d1, and for
 * the im2col pair [6] is_2d; 0 for the convolutions, which are always 2-D).  Index 0 is
 * the horizontal (ne[0]) axis. */
struct ggmlc_conv2d_params {
    int32_t s0, s1; /* strides */
    int32_t p0, p1; /* paddings */
    int32_t d0, d1; /* dilations */
    int32_t is_2d;  /* im2col: 0 = 1-D (the vertical values unused) */
};
static inline struct ggmlc_conv2d_params ggmlc_conv2d_params_of(const struct ggml_tensor *node) {
    struct ggmlc_conv2d_params p;
    p.s0 = node->op_params[0];
    p.s1 = node->op_params[1];
    p.p0 = node->op_params[2];
    p.p1 = node->op_params[3];
    p.d0 = node->op_params[4];
    p.d1 = node->op_params[5];
    p.is_2d = node->op_params[6];
    return p;
}

/* Slot i of op_params read as an int32: for the ops whose op_params hold one value, or one
 * value before others that no reader below gathers (GGML_OP_CONCAT's dim, GGML_OP_ARGSORT's
 * order, GGML_OP_TOP_K's k, GGML_OP_DIAG_MASK_*'s n_past, GGML_OP_TRI's type, ...). */
static inline int32_t ggmlc_op_param_i32(const struct ggml_tensor *node, int i) {
    return node->op_params[i];
}

/* GGML_OP_POOL_1D (slots: i32 [0] op [1] k0 [2] s0 [3] p0) and GGML_OP_POOL_2D,
 * GGML_OP_POOL_2D_BACK (slots: i32 [0] op [1] k0 [2] k1 [3] s0 [4] s1 [5] p0 [6] p1).  A 1-D
 * pool reads as a 2-D one with a 1x1 window along ne[1]: k1 = s1 = 1, p1 = 0. */
struct ggmlc_pool_params {
    int32_t op;     /* enum ggml_op_pool */
    int32_t k0, k1; /* window */
    int32_t s0, s1; /* strides */
    int32_t p0, p1; /* paddings */
};
static inline struct ggmlc_pool_params ggmlc_pool_1d_params_of(const struct ggml_tensor *node) {
    const int32_t *s = node->op_params;
    struct ggmlc_pool_params p = {s[0], s[1], 1, s[2], 1, s[3], 0};
    return p;
}
static inline struct ggmlc_pool_params ggmlc_pool_2d_params_of(const struct ggml_tensor *node) {
    const int32_t *s = node->op_params;
    struct ggmlc_pool_params p = {s[0], s[1], s[2], s[3], s[4], s[5], s[6]};
    return p;
}

/* The 1-D window geometry of GGML_OP_CONV_TRANSPOSE_1D (slots: i32 [0] s0 [1] p0 [2] d0) and
 * GGML_OP_COL2IM_1D (slots: i32 [0] s0 [1] oc [2] p0; d0 reads 1, oc is 0 for the former). */
struct ggmlc_conv1d_params {
    int32_t s0, p0, d0; /* stride, padding, dilation */
    int32_t oc;         /* col2im_1d: output channels */
};
static inline struct ggmlc_conv1d_params ggmlc_conv_transpose_1d_params_of(
    const struct ggml_tensor *node) {
    const int32_t *s = node->op_params;
    struct ggmlc_conv1d_params p = {s[0], s[1], s[2], 0};
    return p;
}
static inline struct ggmlc_conv1d_params ggmlc_col2im_1d_params_of(const struct ggml_tensor *node) {
    const int32_t *s = node->op_params;
    struct ggmlc_conv1d_params p = {s[0], s[2], 1, s[1]};
    return p;
}

/* The 3-D window geometry of GGML_OP_CONV_3D (slots: i32 [0..2] s [3..5] p [6..8] d, [9] ic
 * [10] n [11] oc) and GGML_OP_IM2COL_3D (slots: i32 [0] ic, [1..3] s [4..6] p [7..9] d; n and
 * oc read 0).  Index 0 of s, p and d is the ne[0] axis. */
struct ggmlc_conv3d_params {
    int32_t s[3], p[3], d[3]; /* strides, paddings, dilations */
    int32_t ic, n, oc;        /* input channels, batch, output channels */
};
static inline struct ggmlc_conv3d_params ggmlc_conv_3d_params_of(const struct ggml_tensor *node) {
    struct ggmlc_conv3d_params p;
    memcpy(p.s, &node->op_params[0], 9 * sizeof(int32_t));
    p.ic = node->op_params[9];
    p.n = node->op_params[10];
    p.oc = node->op_params[11];
    return p;
}
static inline struct ggmlc_conv3d_params ggmlc_im2col_3d_params_of(
    const struct ggml_tensor *node) {
    struct ggmlc_conv3d_params p;
    memcpy(p.s, &node->op_params[1], 9 * sizeof(int32_t));
    p.ic = node->op_params[0];
    p.n = 0;
    p.oc = 0;
    return p;
}

/* GGML_OP_GROUP_NORM (slots: i32 [0] n_groups, f32 [1] eps). */
struct ggmlc_group_norm_params {
    int32_t n_groups;
    float eps;
};
static inline struct ggmlc_group_norm_params ggmlc_group_norm_params_of(
    const struct ggml_tensor *node) {
    struct ggmlc_group_norm_params p = {node->op_params[0], ggmlc_op_param_f32(node, 1)};
    return p;
}

/* GGML_OP_GLU (slots: i32 [0] op [1] swapped, f32 [2] alpha [3] limit: swiglu_oai only). */
struct ggmlc_glu_params {
    int32_t op;      /* enum ggml_glu_op */
    int32_t swapped; /* one operand: the gate is the first half, not the second */
    float alpha, limit;
};
static inline struct ggmlc_glu_params ggmlc_glu_params_of(const struct ggml_tensor *node) {
    struct ggmlc_glu_params p = {node->op_params[0], node->op_params[1],
                                 ggmlc_op_param_f32(node, 2), ggmlc_op_param_f32(node, 3)};
    return p;
}

/* GGML_OP_UNARY and its backward node (slots: i32 [0] op, f32 [1..4] the function's values:
 * xielu's alpha_n, alpha_p, beta, eps; zeros for the others). */
struct ggmlc_unary_params {
    int32_t op; /* enum ggml_unary_op */
    float p[4];
};
static inline struct ggmlc_unary_params ggmlc_unary_params_of(const struct ggml_tensor *node) {
    struct ggmlc_unary_params u;
    u.op = node->op_params[0];
    memcpy(u.p, &node->op_params[1], sizeof u.p);
    return u;
}

/* GGML_OP_SCALE (slots: f32 [0] s [1] b: the result is x*s + b). */
struct ggmlc_scale_params {
    float s, b;
};
static inline struct ggmlc_scale_params ggmlc_scale_params_of(const struct ggml_tensor *node) {
    struct ggmlc_scale_params p = {ggmlc_op_param_f32(node, 0), ggmlc_op_param_f32(node, 1)};
    return p;
}

/* GGML_OP_CLAMP (slots: f32 [0] min [1] max).  GGML_OP_LEAKY_RELU's slope and GGML_OP_FILL's
 * value are single floats: ggmlc_op_param_f32(node, 0). */
struct ggmlc_clamp_params {
    float min, max;
};
static inline struct ggmlc_clamp_params ggmlc_clamp_params_of(const struct ggml_tensor *node) {
    struct ggmlc_clamp_params p = {ggmlc_op_param_f32(node, 0), ggmlc_op_param_f32(node, 1)};
    return p;
}

/* GGML_OP_ARANGE (slots: f32 [0] start [1] stop [2] step). */
struct ggmlc_arange_params {
    float start, stop, step;
};
static inline struct ggmlc_arange_params ggmlc_arange_params_of(const struct ggml_tensor *node) {
    struct ggmlc_arange_params p = {ggmlc_op_param_f32(node, 0), ggmlc_op_param_f32(node, 1),
                                    ggmlc_op_param_f32(node, 2)};
    return p;
}

/* GGML_OP_TIMESTEP_EMBEDDING (slots: i32 [0] dim [1] max_period). */
struct ggmlc_timestep_params {
    int32_t dim, max_period;
};
static inline struct ggmlc_timestep_params ggmlc_timestep_params_of(
    const struct ggml_tensor *node) {
    struct ggmlc_timestep_params p = {node->op_params[0], node->op_params[1]};
    return p;
}

/* GGML_OP_WIN_PART (slots: i32 [0] npx [1] npy [2] w) and GGML_OP_WIN_UNPART (slots: i32
 * [0] w; npx and npy read 0: the windows' count follows from the shapes). */
struct ggmlc_window_params {
    int32_t npx, npy; /* windows along ne[1] and ne[2] */
    int32_t w;        /* window side */
};
static inline struct ggmlc_window_params ggmlc_win_part_params_of(
    const struct ggml_tensor *node) {
    const int32_t *s = node->op_params;
    struct ggmlc_window_params p = {s[0], s[1], s[2]};
    return p;
}
static inline struct ggmlc_window_params ggmlc_win_unpart_params_of(
    const struct ggml_tensor *node) {
    struct ggmlc_window_params p = {0, 0, node->op_params[0]};
    return p;
}

/* GGML_OP_SOLVE_TRI (slots: i32 [0] left [1] lower [2] uni: a unit diagonal). */
struct ggmlc_solve_tri_params {
    bool left, lower, unit_diag;
};
static inline struct ggmlc_solve_tri_params ggmlc_solve_tri_params_of(
    const struct ggml_tensor *node) {
    const int32_t *s = node->op_params;
    struct ggmlc_solve_tri_params p = {s[0] != 0, s[1] != 0, s[2] != 0};
    return p;
}

/* GGML_OP_PAD (slots: i32 [2i] lp_i [2i+1] rp_i for dimension i = 0..3, [8] circular: the
 * padding wraps around instead of being zeros) and GGML_OP_PAD_REFLECT_1D (slots: i32 [0] p0
 * [1] p1, read as lp[0] and rp[0]; the rest zeros). */
struct ggmlc_pad_params {
    int32_t lp[4], rp[4]; /* before and after, per dimension */
    bool circular;
};
static inline struct ggmlc_pad_params ggmlc_pad_params_of(const struct ggml_tensor *node) {
    struct ggmlc_pad_params p;
    for (int i = 0; i < 4; i++) {
        p.lp[i] = node->op_params[2 * i];
        p.rp[i] = node->op_params[2 * i + 1];
    }
    p.circular = node->op_params[8] != 0;
    return p;
}
static inline struct ggmlc_pad_params ggmlc_pad_reflect_1d_params_of(
    const struct ggml_tensor *node) {
    struct ggmlc_pad_params p = {{node->op_params[0], 0, 0, 0}, {node->op_params[1], 0, 0, 0},
                                 false};
    return p;
}

/* GGML_OP_ROLL (slots: i32 [0..3] the shift along each dimension). */
struct ggmlc_roll_params {
    int32_t shift[4];
};
static inline struct ggmlc_roll_params ggmlc_roll_params_of(const struct ggml_tensor *node) {
    struct ggmlc_roll_params p;
    memcpy(p.shift, node->op_params, sizeof p.shift);
    return p;
}

/* GGML_OP_SET and GGML_OP_ACC (slots: i32 [0] nb1 [1] nb2 [2] nb3 [3] offset, in bytes, of
 * the view of dst that b goes to, [4] inplace). */
struct ggmlc_set_params {
    size_t nb1, nb2, nb3, offset;
    bool inplace;
};
static inline struct ggmlc_set_params ggmlc_set_params_of(const struct ggml_tensor *node) {
    const int32_t *s = node->op_params;
    struct ggmlc_set_params p = {(size_t)s[0], (size_t)s[1], (size_t)s[2], (size_t)s[3], s[4] != 0};
    return p;
}

/* GGML_OP_GET_REL_POS (slots: i32 [0] qh [1] kh). */
struct ggmlc_rel_pos_params {
    int32_t qh, kh;
};
static inline struct ggmlc_rel_pos_params ggmlc_rel_pos_params_of(const struct ggml_tensor *node) {
    struct ggmlc_rel_pos_params p = {node->op_params[0], node->op_params[1]};
    return p;
}

/* GGML_OP_OPT_STEP_ADAMW and GGML_OP_OPT_STEP_SGD take their hyper-parameters from an f32
 * tensor, not op_params (src[4], GGMLC_ADAMW_N_PARAMS values; src[2], GGMLC_SGD_N_PARAMS
 * values), so that a schedule changes them without rebuilding the graph.  Their order: */
enum ggmlc_adamw_param {
    GGMLC_ADAMW_ALPHA,
    GGMLC_ADAMW_BETA1,
    GGMLC_ADAMW_BETA2,
    GGMLC_ADAMW_EPS,
    GGMLC_ADAMW_WD,
    GGMLC_ADAMW_BETA1H, /* 1 / (1 - beta1^t): the bias corrections of step t */
    GGMLC_ADAMW_BETA2H, /* 1 / (1 - beta2^t) */
    GGMLC_ADAMW_N_PARAMS
};
enum ggmlc_sgd_param { GGMLC_SGD_ALPHA, GGMLC_SGD_WD, GGMLC_SGD_N_PARAMS };
struct ggmlc_adamw_params {
    float alpha, beta1, beta2, eps, wd, beta1h, beta2h;
};
struct ggmlc_sgd_params {
    float alpha, wd;
};
/* The values of hp, the GGMLC_ADAMW_N_PARAMS floats of an AdamW step's src[4] (host copy). */
static inline struct ggmlc_adamw_params ggmlc_adamw_params_read(const float *hp) {
    struct ggmlc_adamw_params p = {
        hp[GGMLC_ADAMW_ALPHA], hp[GGMLC_ADAMW_BETA1],  hp[GGMLC_ADAMW_BETA2], hp[GGMLC_ADAMW_EPS],
        hp[GGMLC_ADAMW_WD],    hp[GGMLC_ADAMW_BETA1H], hp[GGMLC_ADAMW_BETA2H]};
    return p;
}
/* The values of hp, the GGMLC_SGD_N_PARAMS floats of an SGD step's src[2] (host copy). */
static inline struct ggmlc_sgd_params ggmlc_sgd_params_read(const float *hp) {
    struct ggmlc_sgd_params p = {hp[GGMLC_SGD_ALPHA], hp[GGMLC_SGD_WD]};
    return p;
}

/* ------------------------------------------------------- the CPU role
 * libggmlc implements ggml-cpu.h (ggml_graph_plan, ggml_graph_compute, the thread pools,
 * ggml_get_type_traits_cpu, ...) on top of whichever plugin registers the registry named
 * GGMLC_CPU_ROLE_REG_NAME, through that registry's get_proc_address.  Any plugin may take
 * the role: it must answer GGMLC_CPU_PROC_ROLE_VERSION with the address of a const uint32_t
 * holding GGMLC_CPU_ROLE_VERSION, and each name below with a function of the matching type.
 * The core refuses a plugin of another version (the ggml-cpu.h calls then fail with
 * GGMLC_ERR_PLUGIN) and one lacking an entry point (only the calls needing it fail).
 * The version grows whenever a name, a type or the meaning of an entry point changes. */
#define GGMLC_CPU_ROLE_VERSION  1u
#define GGMLC_CPU_ROLE_REG_NAME "cpu"

#define GGMLC_CPU_PROC_ROLE_VERSION "ggmlc_cpu_role_version"
/* ggml_graph_plan() and ggml_graph_compute(): plan and run a graph on the calling thread
 * plus the pool's workers (a NULL pool: a temporary one of n_threads). */
#define GGMLC_CPU_PROC_GRAPH_PLAN    "ggmlc_cpu_graph_plan"
#define GGMLC_CPU_PROC_GRAPH_COMPUTE "ggmlc_cpu_graph_compute"
/* ggml_threadpool_new(), _free(), _get_n_threads(), _pause(), _resume(). */
#define GGMLC_CPU_PROC_THREADPOOL_NEW    "ggmlc_cpu_threadpool_new"
#define GGMLC_CPU_PROC_THREADPOOL_FREE   "ggmlc_cpu_threadpool_free"
#define GGMLC_CPU_PROC_THREADPOOL_SIZE   "ggmlc_cpu_threadpool_get_n_threads"
#define GGMLC_CPU_PROC_THREADPOOL_PAUSE  "ggmlc_cpu_threadpool_pause"
#define GGMLC_CPU_PROC_THREADPOOL_RESUME "ggmlc_cpu_threadpool_resume"
/* ggml_backend_cpu_set_threadpool(): the pool a backend of the role computes with. */
#define GGMLC_CPU_PROC_SET_THREADPOOL "ggml_backend_cpu_set_threadpool"
/* ggml_get_type_traits_cpu(): the plugin's vec_dot and from_float of a type. */
#define GGMLC_CPU_PROC_TYPE_TRAITS "ggmlc_cpu_get_type_traits"
/* ggml's own names, for programs that look them up themselves (ggml-backend.h's types). */
#define GGMLC_CPU_PROC_SET_N_THREADS "ggml_backend_set_n_threads"
#define GGMLC_CPU_PROC_SET_ABORT     "ggml_backend_set_abort_callback"
#define GGMLC_CPU_PROC_GET_FEATURES  "ggml_backend_get_features"

struct ggml_cplan;
struct ggml_threadpool;
struct ggml_threadpool_params;
struct ggml_type_traits_cpu;
typedef struct ggml_cplan (*ggmlc_cpu_graph_plan_t)(const struct ggml_cgraph *cgraph, int n_threads,
                                                    struct ggml_threadpool *threadpool);
typedef enum ggml_status (*ggmlc_cpu_graph_compute_t)(struct ggml_cgraph *cgraph,
                                                      struct ggml_cplan *cplan);
typedef struct ggml_threadpool *(*ggmlc_cpu_threadpool_new_t)(
    struct ggml_threadpool_params *params);
typedef void (*ggmlc_cpu_threadpool_fn_t)(struct ggml_threadpool *threadpool);
typedef int (*ggmlc_cpu_threadpool_size_t)(struct ggml_threadpool *threadpool);
typedef void (*ggmlc_cpu_set_threadpool_t)(ggml_backend_t backend,
                                           struct ggml_threadpool *threadpool);
typedef const struct ggml_type_traits_cpu *(*ggmlc_cpu_type_traits_t)(enum ggml_type type);

/* ------------------------------------------------------ pinned numbering
 * Op vtables (ggmlc_device_iface.ops, n_ops) are indexed by enum ggml_op; graphs and files
 * store ggml_type and the unary and GLU sub-op values.  These values are therefore ABI: the
 * assertions make a reordering fail to compile in the core and in every plugin.  Appending
 * an operator or a type moves only the *_COUNT value (update it here: a plugin with a
 * shorter table simply lacks the new entries). */
#ifdef __cplusplus
#    define GGMLC_PLUGIN_ASSERT(cond, msg) static_assert(cond, msg)
#else
#    define GGMLC_PLUGIN_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
GGMLC_PLUGIN_ASSERT(GGML_OP_NONE == 0 && GGML_OP_ADD == 2 && GGML_OP_MUL_MAT == 29 &&
                        GGML_OP_CPY == 34,
                    "enum ggml_op was reordered: the plugin op vtables index by it");
GGMLC_PLUGIN_ASSERT(GGML_OP_SOFT_MAX == 46 && GGML_OP_ROPE == 48 && GGML_OP_FLASH_ATTN_EXT == 72,
                    "enum ggml_op was reordered: the plugin op vtables index by it");
GGMLC_PLUGIN_ASSERT(GGML_OP_UNARY == 84 && GGML_OP_CUSTOM == 88 && GGML_OP_OPT_STEP_ADAMW == 91,
                    "enum ggml_op was reordered: the plugin op vtables index by it");
GGMLC_PLUGIN_ASSERT(GGML_OP_GLU == 93 && GGML_OP_TOP_K == 94 && GGML_OP_UNARY_BACK == 96 &&
                        GGML_OP_COUNT == 103,
                    "enum ggml_op changed: operators are appended before GGML_OP_COUNT only");
GGMLC_PLUGIN_ASSERT(GGML_TYPE_F32 == 0 && GGML_TYPE_F16 == 1 && GGML_TYPE_Q4_0 == 2 &&
                        GGML_TYPE_Q8_0 == 8,
                    "enum ggml_type was renumbered: GGUF files store these values");
GGMLC_PLUGIN_ASSERT(GGML_TYPE_Q4_K == 12 && GGML_TYPE_BF16 == 30 && GGML_TYPE_MXFP4 == 39 &&
                        GGML_TYPE_COUNT == 43,
                    "enum ggml_type was renumbered: GGUF files store these values");
GGMLC_PLUGIN_ASSERT(GGML_UNARY_OP_COUNT == 22 && GGML_GLU_OP_COUNT == 6,
                    "the unary or GLU sub-op numbering changed");

/* ------------------------------------- stopping for the CPU (ABI 1.1)
 * A backend's graph_compute_from(backend, cgraph, first, &stopped_at) computes nodes
 * [first, n) of cgraph in order (n = ggml_graph_n_nodes) and sets *stopped_at:
 *  - to n when it computed them all;
 *  - to i (first <= i < n) when nodes [first, i) are computed (or queued, for an
 *    asynchronous backend) and node i, although supports_op claimed it, cannot run on the
 *    device after all (a kernel that failed to build, an operand in memory the device
 *    cannot bind).  Nodes from i on are untouched.  The plugin logs why, once, if the user
 *    should know; the status it returns is then GGML_STATUS_SUCCESS.
 * The core then computes node i on the CPU (its operands read with get_tensor, its result
 * and any operand the op updates in place written back with set_tensor, so the plugin's
 * transfers must wait for work it queued) and calls graph_compute_from again from i + 1.
 * Any status other than GGML_STATUS_SUCCESS ends the graph with that status.
 * Nodes supports_op declines never reach the plugin: the core splits such graphs between
 * the backend and the CPU with a scheduler.  Each backend keeps one CPU backend and one
 * scheduler for both cases, made on first need and freed with the backend. */

/* Counters of ggmlc_counters_get (ggmlc.h) that only a plugin sees: add n to one. */
enum ggmlc_counter {
    GGMLC_COUNTER_SUBMITS,
    GGMLC_COUNTER_WAITS,
    GGMLC_COUNTER_WRITES_TO_DEVICE,
    GGMLC_COUNTER_BYTES_TO_DEVICE,
    GGMLC_COUNTER_READS_FROM_DEVICE,
    GGMLC_COUNTER_BYTES_FROM_DEVICE,
    GGMLC_COUNTER_FALLBACK_NODES,
    GGMLC_COUNTER_COUNT
};
GGML_API void ggmlc_counter_add(enum ggmlc_counter which, uint64_t n);

#ifdef __cplusplus
}
#endif

#endif /* GGMLC_PLUGIN_H */
