/*
 * vk-impl.h - what the files of the Vulkan plugin share.
 *
 *   vk-instance.c  instance, physical-device discovery, capabilities
 *   vk-device.c    logical device, queues, command buffers, submission
 *   vk-memory.c    device-local memory blocks with sub-allocation, staging
 *   vk-buffer.c    the ggml buffer type and buffers (set/get/memset/copy)
 *   vk-pipeline.c  pipelines from the embedded SPIR-V, the on-disk cache
 *   vk-record.c    recording a graph into one command buffer with barriers
 *   vk-replay.c    ... through a log, and equal segments' command buffers kept and resubmitted
 *   vk-plugin.c    the plugin descriptor, registry, devices and backends
 *   vk-tuning.c    the options and GGMLC_VK_* variables, read once at init
 *   ops-*.c        one file per op family: supports() and record() per op
 *                  (elementwise, reduce, matmul, index, nn (rope), train, conv)
 *
 * Tensor data of a Vulkan buffer is addressed through a fake base pointer:
 * tensor->data - base is the byte offset inside the buffer.
 */
#ifndef GGMLC_VK_IMPL_H
#define GGMLC_VK_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <vulkan/vulkan.h>

#include "ggml.h"
#include "ggml-backend.h"
#include "ggmlc.h"
#include "ggmlc-plugin.h"
#include "vk-shaders.h"
#include "push-constants.h"

#define VK_HIDDEN __attribute__((visibility("hidden")))

#define VK_MAX_BINDINGS   9  /* ssm_scan's 8 tensors and its index check */
#define VK_PUSH_BYTES     128  /* the minimum every Vulkan device guarantees */
#define VK_MAX_SPEC       12
#define VK_FAKE_BASE      ((uintptr_t)0x1000)
#define VK_BLOCK_SIZE     ((VkDeviceSize)64 << 20) /* memory block shared by small buffers */
/* Loop iterations one invocation may run, all its loops together: lavapipe (llvmpipe) ends an
 * invocation's loops silently after 65535 iterations in all, so kernels whose invocations loop
 * long (ssm_scan over tokens, top_k's selection rounds) split the work into dispatches of at
 * most this many iterations each. */
#define VK_LOOP_BUDGET    32768

/* What a physical device offers (filled at discovery, before a VkDevice exists). */
struct vk_caps {
    uint32_t subgroup_size;
    bool fp16;         /* shaderFloat16 */
    bool storage16;    /* storageBuffer16BitAccess */
    bool int8;         /* shaderInt8 + storageBuffer8BitAccess */
    bool bf16;         /* VK_KHR_shader_bfloat16 */
    bool coopmat_nv;   /* VK_NV_cooperative_matrix with a 16x16x16 f16 -> f32 shape */
    bool coopmat_khr;  /* VK_KHR_cooperative_matrix */
    bool coopmat_khr_frag; /* ... with the cooperativeMatrix feature and an f16 -> f32 subgroup shape the kernel takes: */
    uint32_t coopmat_khr_shape[3]; /* its M, N, K, each 8 or 16 (16x16x16 where offered; lavapipe has 8x8x8) */
    bool memory_budget;
    bool push_descriptor;
    bool subgroup_arith; /* subgroup arithmetic in compute shaders */
    bool subgroup_shuffle; /* subgroup shuffles in compute shaders */
    bool int_dot;      /* VK_KHR_shader_integer_dot_product (shaderIntegerDotProduct) */
    bool int_dot_fast; /* ... and signed 4x8-bit packed dot products run on dedicated instructions */
    bool memory_model; /* vulkanMemoryModel (the cooperative-matrix shaders declare it) */
    /* VK_KHR_pipeline_executable_properties, enabled only under GGMLC_DEBUG=vulkan: each pipeline
     * built is logged with the driver's statistics (registers, spills, shared memory) */
    bool exec_stats;
    /* subgroup-scope f16 x f16 -> f32 cooperative matrices of flexible size (VK_KHR_cooperative_matrix
     * with VK_NV_cooperative_matrix2): the granularity of M, N and K, the largest dimension */
    bool coopmat_flex;
    uint32_t coopmat_flex_gran[3], coopmat_flex_max_dim;
    /* streaming multiprocessors (VK_NV_shader_sm_builtins) or compute units
     * (VK_AMD_shader_core_properties); 0 where the device does not say */
    uint32_t compute_units;
};

/* VK_KHR_cooperative_matrix and VK_NV_cooperative_matrix2 are newer than Debian 12's Vulkan
 * headers: the structures and values the plugin uses, as the specification defines them. */
struct vk_coopmat_khr_features {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix, cooperativeMatrixRobustBufferAccess;
};
struct vk_coopmat2_features {
    VkStructureType sType;
    void *pNext;
    VkBool32 workgroupScope, flexibleDimensions, reductions, conversions, perElementOperations, tensorAddressing, blockLoads;
};
struct vk_coopmat2_properties {
    VkStructureType sType;
    void *pNext;
    uint32_t workgroupScopeMaxWorkgroupSize, flexibleDimensionsMaxDimension, workgroupScopeReservedSharedMemory;
};
struct vk_coopmat_khr_properties {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    int32_t AType, BType, CType, ResultType; /* VkComponentTypeKHR: 0 f16, 1 f32 */
    VkBool32 saturatingAccumulation;
    int32_t scope;                           /* VkScopeKHR: 3 subgroup */
};
struct vk_coopmat_flexible_properties {
    VkStructureType sType;
    void *pNext;
    uint32_t MGranularity, NGranularity, KGranularity;
    int32_t AType, BType, CType, ResultType; /* VkComponentTypeKHR: 0 f16, 1 f32 */
    VkBool32 saturatingAccumulation;
    int32_t scope;                           /* VkScopeKHR: 2 workgroup, 3 subgroup */
    uint32_t workgroupInvocations;
};
#define VK_STYPE_COOPMAT_KHR_FEATURES ((VkStructureType)1000506000)
#define VK_STYPE_COOPMAT_KHR_PROPERTIES ((VkStructureType)1000506001)
#define VK_STYPE_COOPMAT2_FEATURES ((VkStructureType)1000593000)
#define VK_STYPE_COOPMAT_FLEXIBLE_PROPERTIES ((VkStructureType)1000593001)
#define VK_STYPE_COOPMAT2_PROPERTIES ((VkStructureType)1000593002)

struct vk_block;
struct vk_pipeline_set;

/* A sub-allocation of device-local memory (vk-memory.c). */
struct vk_alloc {
    struct vk_block *block;
    VkBuffer buf;          /* the block's buffer */
    VkDeviceSize offset;   /* of this allocation inside buf */
    VkDeviceSize size;
};

struct vk_staging {
    VkBuffer buf;
    VkDeviceMemory mem;
    void *map;
    VkDeviceSize size;
};

/* Optional kernel paths that a failed pipeline disables for the device's lifetime; each is
 * then replaced by the path its comment names.  One bit each in vk_device.disabled_paths. */
enum vk_path {
    VK_PATH_COOPMAT_FLEX,  /* flexible-size coopmat pipelines: the 16x16 fragments instead */
    VK_PATH_COOPMAT_KHR,   /* KHR coopmat pipelines: the NV fragments (or no coopmat) */
    VK_PATH_COOPMAT_NV,    /* NV coopmat pipelines: the tiled GEMM */
    VK_PATH_ATTN_SPLIT,    /* fattn_combine: unsplit flash attention */
    VK_PATH_COOPMAT_SPLIT, /* mm_split_sum: unsplit products (coopmat and tiled) */
    VK_PATH_QUANTIZE_Q8,   /* quantize_q8: float-activation mat-vecs */
    VK_PATH_MVQ_DOT,       /* integer-dot mat-vecs: float-activation mat-vecs */
    VK_PATH_PACK_F16,      /* pack_f16: coopmat products read f32 activations */
    VK_PATH_DEQUANT_F16,   /* dequant_*_f16: block-format weights on the tiled GEMM */
    VK_PATH_ATTN_TILE,     /* fattn_tile_*: flash attention one workgroup per query row */
    VK_PATH_ATTN_CM,       /* fattn_cm_*: flash attention on the tiled kernel */
    VK_PATH_FUSE,          /* fused kernels (vk-fuse.c): each node its own dispatch */
    VK_PATH_LOSS_ROWS,     /* cross_entropy_rows/_sum: the loss by one workgroup */
    VK_PATH_ATTN_VEC,      /* fattn_vec_*: flash attention one workgroup per query row */
    VK_PATH_COOPMAT_BLOCKS, /* mm_coopmat_*_<block format>_*: the weights dequantized into f16 first */
    VK_PATH_Q8_RESULT,     /* rows_mul_q8_f32, glu_q8_f32, fattn_vec_*_q8: the products quantize b */
    VK_PATH_COUNT
};
_Static_assert(VK_PATH_COUNT <= 32, "vk_device.disabled_paths holds one bit per path");

/* An output of the last segment, bytes [begin, end) of buf, copied by its command buffer to
 * staging offset at (vk-record.c, "outputs read back with the segment"). */
struct vk_readback {
    VkBuffer buf;
    VkDeviceSize begin, end, at;
};
#define VK_READBACK_MAX   8
#define VK_READBACK_BYTES ((VkDeviceSize)1 << 20)

/* Small writes waiting for the next command buffer (vk-deferred.c). */
struct vk_deferred {
    struct vk_deferred_write *writes;
    int n, cap;
    unsigned char *data; /* the bytes of the small writes, one after the other */
    size_t bytes;
    struct vk_staging upload; /* the bytes of the larger ones (copied from there) */
    VkDeviceSize upload_used;
    bool upload_busy; /* a command buffer submitted (or being recorded) copies from upload */
};

/* A command of a segment, written down before it is recorded (vk-replay.c).  Entries are
 * zeroed before they are filled, padding included: logs are compared byte for byte. */
enum vk_cmd_kind {
    VK_CMD_DISPATCH,      /* bind pipeline, push descriptors and constants, dispatch */
    VK_CMD_BARRIER,       /* shaders and transfers after shaders and transfers */
    VK_CMD_HOST_BARRIER,  /* transfers visible to the host */
    VK_CMD_FILL,
    VK_CMD_COPY,
    VK_CMD_TIMESTAMP,     /* GGMLC_DEBUG=vulkan: into the device's query pool */
    VK_CMD_RESET_QUERIES,
};
struct vk_cmd_dispatch {
    VkPipeline pipeline;
    uint32_t n_bind; /* also the pipeline layout's binding count */
    VkDescriptorBufferInfo info[VK_MAX_BINDINGS];
    uint32_t push[VK_PUSH_BYTES / 4];
    uint32_t groups[3];
};
struct vk_cmd_fill {
    VkBuffer buf;
    VkDeviceSize off, size;
    uint32_t value;
};
struct vk_cmd_copy {
    VkBuffer src, dst;
    VkDeviceSize src_off, dst_off, size;
};
struct vk_cmd_timestamp {
    VkPipelineStageFlagBits stage;
    uint32_t first, count;
};
struct vk_cmd {
    enum vk_cmd_kind kind;
    union {
        struct vk_cmd_dispatch dispatch;
        struct vk_cmd_fill fill;
        struct vk_cmd_copy copy;
        struct vk_cmd_timestamp timestamp;
    } u;
};
struct vk_cmd_log {
    struct vk_cmd *cmds;
    int n, cap;
    bool failed; /* out of host memory: the segment fails */
};
/* A command buffer recorded from a log, kept with a copy of the log (n 0: matches none). */
struct vk_replay_slot {
    VkCommandBuffer cmd;
    struct vk_cmd *cmds;
    int n, cap;
    uint64_t last_use;
    uint64_t gen; /* bumped each time it is recorded anew (a segment kept whole names it, vk-replay.c) */
};

#define VK_REPLAY_SLOTS 16 /* a segment's parts take one each (vk-record.c) */

/* Bytes [begin, end) of a VkBuffer. */
struct vk_range {
    VkBuffer buf;
    VkDeviceSize begin, end;
};

/* One tensor of a segment as its commands depend on it (vk-replay.c): its address, type, and
 * its bytes from `buffer` through `data` (buffer, shape, strides, op, op parameters, flags,
 * sources, view source and offset, data address: contiguous in struct ggml_tensor). */
#define VK_SEGMENT_FIELDS (offsetof(struct ggml_tensor, data) + sizeof(void *) - offsetof(struct ggml_tensor, buffer))
struct vk_segment_tensor {
    const struct ggml_tensor *t;
    int64_t type;
    unsigned char fields[VK_SEGMENT_FIELDS];
};

/* A buffer a kept segment's tensors lie in, and where its memory was then. */
struct vk_segment_buffer {
    const struct ggml_backend_buffer *buffer;
    VkBuffer buf;       /* VK_NULL_HANDLE: not a buffer of the device */
    VkDeviceSize offset;
    const void *host;
};
#define VK_SEGMENT_BUFFERS 16

/* A segment submitted whole before, kept with what it depends on, so that the same segment
 * again is submitted without recording (vk-replay.c). */
struct vk_segment_entry {
    bool valid;
    uint64_t last_use;
    int n_nodes;
    struct vk_segment_tensor *tensors;
    int n_tensors, cap_tensors;
    struct vk_segment_buffer buffers[VK_SEGMENT_BUFFERS];
    int n_buffers;
    int parts[VK_REPLAY_SLOTS]; /* the replay slots of its parts, in order */
    uint64_t part_gen[VK_REPLAY_SLOTS];
    int n_parts;
    struct vk_readback readback[VK_READBACK_MAX];
    int n_readback;
    const struct ggml_tensor **checked; /* its index-checked nodes, in slot order */
    int n_checked, cap_checked;
    /* the device's memory and state its commands name or were chosen by */
    VkBuffer scratch_buf, checks_buf, staging_buf;
    VkDeviceSize scratch_offset, checks_offset;
    uint32_t disabled_paths;
    bool op_broken[GGML_OP_COUNT];
};
#define VK_SEGMENT_CACHE 4

/* The host phases GGMLC_DEBUG=vulkan-time times (vk-record.c): per segment, and the transfers
 * and waits between segments. */
enum vk_time_phase {
    VK_TIME_BEGIN,   /* the segment's command buffer begun: lock, reset, deferred writes */
    VK_TIME_PREPARE, /* scratch reserved, index checks and outputs planned */
    VK_TIME_RECORD,  /* the nodes' commands logged (support, fusion, kernels, hazards) */
    VK_TIME_PARTS,   /* parts of the segment submitted while recording */
    VK_TIME_SUBMIT,  /* the last part: flush, compare with the kept logs, submit */
    VK_TIME_WAIT,    /* synchronize: waiting for the segment's fence */
    VK_TIME_SET,     /* tensor_set (a large one's waits included) */
    VK_TIME_GET,     /* tensor_get (the wait for a segment not yet waited for included) */
    VK_TIME_OUTSIDE, /* between the end of one segment and the start of the next, minus the above */
    VK_TIME_COUNT
};

struct vk_host_time {
    bool on;                      /* GGMLC_DEBUG=vulkan-time */
    int64_t ns[VK_TIME_COUNT];
    int64_t last_end;             /* when the last segment ended (0: none yet) */
    int64_t between;              /* the wait, set and get time since then */
    int segments, replayed, whole;
};

struct vk_device {
    int index;                       /* position among the physical devices */
    char name[32];                   /* "Vulkan0" */
    char description[256];           /* the driver's device name */
    char caps_str[384];
    VkPhysicalDevice phys;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memprops;
    struct vk_caps caps;
    uint32_t queue_family;
    bool use_f16;                    /* F16/BF16 tensors handled (16-bit storage; option f16 = auto|off) */
    bool use_coopmat;                /* tensor-core kernels (option coopmat = auto|off, $GGMLC_VK_COOPMAT=0) */

    /* created on first use (vk_device_open) */
    pthread_mutex_t lock;            /* guards everything below */
    bool opened;
    bool lost;                       /* VK_ERROR_DEVICE_LOST seen: every call fails */
    VkDevice dev;
    VkQueue queue;
    VkCommandPool cmd_pool;
    VkCommandBuffer cmd;
    VkFence fence;
    bool in_flight;                  /* cmd submitted, not yet waited for (async compute) */
    struct vk_readback readback[VK_READBACK_MAX]; /* the last segment's outputs in staging (vk-record.c) */
    int n_readback;                  /* 0 once anything else was submitted or written */
    PFN_vkCmdPushDescriptorSetKHR push_descriptor_set;
    VkDescriptorSetLayout set_layout[VK_MAX_BINDINGS + 1]; /* by binding count */
    VkPipelineLayout pipe_layout[VK_MAX_BINDINGS + 1];
    VkPipelineCache pipeline_cache;
    VkQueryPool timestamps;          /* only with GGMLC_DEBUG=vulkan: GPU time per graph (queries 0, 1) */
    bool profile_dispatches;         /* GGMLC_DEBUG=vulkan-ops: and per dispatch (queries 2 ...) */
    int n_new_pipelines;             /* built since the cache was loaded: save it at close */
    struct vk_pipeline_set *pipelines; /* one per shader id */
    struct vk_staging staging;
    struct vk_block *blocks;
    struct vk_alloc scratch;         /* device memory for what a segment's kernels pass each other (block NULL: none) */
    struct vk_alloc checks;          /* the segment's index-check slots (vk-record.c; block NULL: none) */
    ggml_backend_buffer_type_t buft;
    ggml_backend_buffer_type_t host_buft; /* plain host memory, for the CPU's share (vk-buffer.c) */
    char host_name[40];                   /* "Vulkan0_Host" */
    /* faults: each warned about once (the node then goes to the core's CPU fallback) */
    bool warned_host_memory;         /* a buffer fell back to host memory */
    bool warned_pipeline;            /* a pipeline failed to compile */
    bool op_broken[GGML_OP_COUNT];   /* a pipeline of this op failed to build: declined from then on */
    uint32_t disabled_paths; /* bit (1u << enum vk_path) set: that path failed, taken no more */
    struct vk_deferred deferred; /* small writes recorded at the next command buffer's start */
    struct vk_cmd_log log;       /* the segment being recorded (vk-replay.c) */
    struct vk_replay_slot replay[VK_REPLAY_SLOTS]; /* command buffers kept for equal segments */
    uint64_t replay_clock;       /* segments submitted: the slots' last_use */
    uint64_t segment_clock;      /* replay_clock when the segment being recorded began */
    bool replay_keep;            /* keep them (GGMLC_VK_REPLAY is not 0) */
    bool replay_debug;           /* GGMLC_DEBUG=vulkan-replay: log each segment recorded or replayed */
    bool reverse_writes;         /* GGMLC_DEBUG=vulkan-reorder: deferred writes recorded in reverse
                                  * between their barriers (an order the device may run them in) */
    struct vk_host_time host_time; /* GGMLC_DEBUG=vulkan-time (vk-record.c) */
    struct vk_segment_entry segments[VK_SEGMENT_CACHE]; /* segments kept whole (vk-replay.c) */
    uint64_t segments_clock;
    int seg_parts[VK_REPLAY_SLOTS]; /* the slots the segment being submitted took, in order */
    int n_seg_parts;
};

/* Whether path p was disabled on d (caller holds d->lock). */
static inline bool vk_path_disabled(const struct vk_device *d, enum vk_path p) {
    return (d->disabled_paths >> p) & 1u;
}
/* Disable path p on d from now on (caller holds d->lock). */
static inline void vk_path_disable(struct vk_device *d, enum vk_path p) {
    d->disabled_paths |= 1u << p;
}

/* ---------------------------------------------------------- instance */

/* The shared instance (created once; NULL with ggmlc_set_error when Vulkan is unusable). */
VK_HIDDEN VkInstance vk_instance_get(void);
/* Destroy the instance (at plugin fini, after every device was closed). */
VK_HIDDEN void vk_instance_release(void);
/* Discover the physical devices with a compute queue into a new array (count in *n). */
VK_HIDDEN enum ggmlc_status vk_discover_devices(struct vk_device **out, int *n);

/* ------------------------------------------------------------ device */

/* Create the VkDevice and its queue, command buffer and layouts (idempotent). */
VK_HIDDEN enum ggmlc_status vk_device_open(struct vk_device *d);
/* Destroy everything vk_device_open and later calls created. */
VK_HIDDEN void vk_device_close(struct vk_device *d);
/* Turn a VkResult into a recorded error (device loss is remembered); returns the status. */
VK_HIDDEN enum ggmlc_status vk_check(struct vk_device *d, VkResult r, const char *what);
/* A primary command buffer from the device's pool (freed with it). */
VK_HIDDEN enum ggmlc_status vk_cmd_alloc(struct vk_device *d, VkCommandBuffer *cmd);
/* A full memory barrier between shader and transfer accesses. */
VK_HIDDEN void vk_barrier_full(VkCommandBuffer cmd);
/* A barrier making transfer writes visible to the host (before reading mapped memory). */
VK_HIDDEN void vk_barrier_to_host(VkCommandBuffer cmd);
/* Begin the device's command buffer, first waiting for its last submission, and record a
 * barrier after everything submitted before and the pending deferred writes (caller holds
 * d->lock). */
VK_HIDDEN enum ggmlc_status vk_cmd_begin(struct vk_device *d);
/* End and submit the command buffer without waiting: d->in_flight until vk_cmd_wait (caller
 * holds d->lock). */
VK_HIDDEN enum ggmlc_status vk_cmd_submit(struct vk_device *d);
/* Wait for the submission in flight, if any (caller holds d->lock). */
VK_HIDDEN enum ggmlc_status vk_cmd_wait(struct vk_device *d);
/* End, submit and wait for the command buffer (caller holds d->lock). */
VK_HIDDEN enum ggmlc_status vk_cmd_submit_wait(struct vk_device *d);

/* The same, with cmd (a command buffer recorded elsewhere) submitted after the device's own in
 * one batch. */
VK_HIDDEN enum ggmlc_status vk_cmd_submit_with(struct vk_device *d, VkCommandBuffer cmd);
/* Submit cmd (VK_NULL_HANDLE: none) as one part of the work of a segment: after the device's own
 * command buffer (ended now) when first; with the fence when last (d->in_flight then). */
VK_HIDDEN enum ggmlc_status vk_cmd_submit_part(struct vk_device *d, VkCommandBuffer cmd, bool first, bool last);

/* ------------------------------------------------------------ replay */

/* Append a command to the log (vk-replay.c); out of memory: log->failed. */
VK_HIDDEN void vk_log_dispatch(struct vk_cmd_log *log, VkPipeline pipeline, int n_bind,
                               const VkDescriptorBufferInfo *info, const uint32_t *push,
                               const uint32_t groups[3]);
/* kind: VK_CMD_BARRIER or VK_CMD_HOST_BARRIER. */
VK_HIDDEN void vk_log_barrier(struct vk_cmd_log *log, enum vk_cmd_kind kind);
VK_HIDDEN void vk_log_fill(struct vk_cmd_log *log, VkBuffer buf, VkDeviceSize off, VkDeviceSize size,
                           uint32_t value);
VK_HIDDEN void vk_log_copy(struct vk_cmd_log *log, VkBuffer src, VkBuffer dst, VkDeviceSize src_off,
                           VkDeviceSize dst_off, VkDeviceSize size);
VK_HIDDEN void vk_log_timestamp(struct vk_cmd_log *log, VkPipelineStageFlagBits stage, uint32_t query);
/* Reset queries [0, count) of the device's query pool. */
VK_HIDDEN void vk_log_reset_queries(struct vk_cmd_log *log, uint32_t count);
/* Submit the commands of log as a part of the segment: a kept command buffer of an equal log
 * that the segment has not used yet, else one recorded now (and kept); after the device's own
 * command buffer (begun by vk_cmd_begin: the pending writes) when first; with the fence when
 * last, waiting for it when wait.  Caller holds d->lock.  On failure the device's command
 * buffer is ended and not submitted when first, and the fence submitted when not (parts before
 * are in flight). */
VK_HIDDEN enum ggmlc_status vk_replay_submit(struct vk_device *d, const struct vk_cmd_log *log, bool first, bool last,
                                             bool wait);
/* Replay slots the segment being recorded has not used. */
VK_HIDDEN int vk_replay_slots_left(const struct vk_device *d);
/* Keep no command buffer from now on: a VkBuffer is being destroyed (caller holds d->lock). */
VK_HIDDEN void vk_replay_forget(struct vk_device *d);
/* Free the logs kept (device close; the command buffers go with the pool). */
VK_HIDDEN void vk_replay_release(struct vk_device *d);

/* Segments kept whole: a segment equal to one submitted before (the same nodes at the same
 * addresses with the same types, shapes, strides, parameters and flags, the same sources, in
 * the same buffers at the same places in device memory, the device's scratch and check memory where they were, no path
 * disabled since, and the command buffers of its parts still kept) is submitted again without
 * its commands being logged at all.  Caller holds d->lock. */
/* The kept segment equal to nodes [i, n), or NULL. */
VK_HIDDEN const struct vk_segment_entry *vk_segment_find(struct vk_device *d, struct ggml_tensor *const *nodes, int i,
                                                         int n);
/* Keep the segment of nodes [i, n) just submitted whole (its parts in d->seg_parts, its
 * outputs in d->readback, its index-checked nodes checked[0..n_checked)); without memory
 * it is simply not kept. */
VK_HIDDEN void vk_segment_keep(struct vk_device *d, struct ggml_tensor *const *nodes, int i, int n,
                               const struct ggml_tensor *const *checked, int n_checked);
/* Submit the kept segment e again after the device's command buffer (begun by vk_cmd_begin),
 * all its parts in one submit with the fence, waiting for it when wait; its outputs are read
 * back as they were. */
VK_HIDDEN enum ggmlc_status vk_segment_submit(struct vk_device *d, const struct vk_segment_entry *e, bool wait);
/* Free the kept segments (device close). */
VK_HIDDEN void vk_segment_release(struct vk_device *d);

/* ---------------------------------------------------------- deferred */

/* Keep a write of n bytes at off in buf (a copy of data) for the start of the next command
 * buffer; false when it must be done now (too large, unaligned, no memory).  Caller holds
 * d->lock. */
VK_HIDDEN bool vk_defer_write(struct vk_device *d, VkBuffer buf, VkDeviceSize off,
                              const void *data, size_t n);
/* The same for a fill of n bytes with a 32-bit pattern. */
VK_HIDDEN bool vk_defer_fill(struct vk_device *d, VkBuffer buf, VkDeviceSize off, size_t n,
                             uint32_t pattern);
/* Record the pending writes, then a barrier, into the command buffer just begun. */
VK_HIDDEN void vk_deferred_record(struct vk_device *d);
/* Forget the pending writes inside [off, off + size) of buf (that memory is being freed). */
VK_HIDDEN void vk_deferred_drop(struct vk_device *d, VkBuffer buf, VkDeviceSize off,
                                VkDeviceSize size);
/* Free what the pending writes hold (device closed). */
VK_HIDDEN void vk_deferred_release(struct vk_device *d);

/* ------------------------------------------------------------ memory */

/* Sub-allocate size bytes of device-local memory (caller holds d->lock).  Out of device
 * memory: GGMLC_ERR_NOMEM with no error recorded (the caller falls back or records one). */
VK_HIDDEN enum ggmlc_status vk_mem_alloc(struct vk_device *d, VkDeviceSize size, struct vk_alloc *out);
/* Return an allocation to its block; empty blocks are released (caller holds d->lock). */
VK_HIDDEN void vk_mem_free(struct vk_device *d, struct vk_alloc *a);
/* Release every block (device close). */
VK_HIDDEN void vk_mem_release_all(struct vk_device *d);
/* n rounded up to the 256 bytes that scratch ranges (and binding offsets) are aligned to. */
static inline VkDeviceSize vk_scratch_round(VkDeviceSize n) { return (n + 255) & ~(VkDeviceSize)255; }
/* Scratch memory of at least size bytes (caller holds d->lock; no command buffer in flight: the
 * previous one may be freed).  Out of device memory: false, nothing recorded (callers fall back). */
VK_HIDDEN bool vk_scratch_reserve(struct vk_device *d, VkDeviceSize size);
VK_HIDDEN void vk_scratch_release(struct vk_device *d);
/* The same for the index-check slots (d->checks). */
VK_HIDDEN bool vk_checks_reserve(struct vk_device *d, VkDeviceSize size);
VK_HIDDEN void vk_checks_release(struct vk_device *d);
/* A host-visible staging buffer of at least size bytes (caller holds d->lock). */
VK_HIDDEN enum ggmlc_status vk_staging_reserve(struct vk_device *d, VkDeviceSize size);
VK_HIDDEN void vk_staging_release(struct vk_device *d);
/* Host-visible memory in *s (vk-deferred.c's upload buffer) of at least size bytes: kept when it
 * holds them, else made anew (its contents lost); and freed. */
VK_HIDDEN enum ggmlc_status vk_upload_reserve(struct vk_device *d, struct vk_staging *s,
                                              VkDeviceSize size);
VK_HIDDEN void vk_upload_release(struct vk_device *d, struct vk_staging *s);
/* Memory type with the required bits and preferred properties, or UINT32_MAX. */
VK_HIDDEN uint32_t vk_find_memory_type(const struct vk_device *d, uint32_t type_bits, VkMemoryPropertyFlags required,
                                        VkMemoryPropertyFlags preferred);

/* ------------------------------------------------------------ buffers */

struct vk_buffer {
    struct vk_device *dev;
    struct vk_alloc alloc;
    void *host;        /* not NULL: device memory ran out, the buffer lives here (nodes using it run on the CPU) */
    size_t host_size;
};

/* The device's buffer type. */
VK_HIDDEN ggml_backend_buffer_type_t vk_buffer_type_new(struct vk_device *d, ggml_backend_dev_t gdev);
/* The device's host buffer type (get_host_buffer_type): host memory the CPU computes on. */
VK_HIDDEN ggml_backend_buffer_type_t vk_host_buffer_type_new(struct vk_device *d, ggml_backend_dev_t gdev);
/* The Vulkan buffer holding tensor's storage on device d, or NULL. */
VK_HIDDEN struct vk_buffer *vk_tensor_buffer(const struct vk_device *d, const struct ggml_tensor *t);
/* Byte offset of tensor data inside its VkBuffer (allocation offset included). */
VK_HIDDEN VkDeviceSize vk_tensor_offset(const struct vk_buffer *b, const struct ggml_tensor *t);

/* ---------------------------------------------------------- pipelines */

/* The pipeline of shader id with spec constants spec[0..n_spec) (caller holds d->lock);
 * VK_NULL_HANDLE when it cannot be built (a warning is logged once per device, the error
 * recorded only when the device was lost) and on every later call: the caller computes
 * the node on the CPU instead.  has_fallback: the caller takes another kernel instead, so
 * the failure is recorded as the error, not logged. */
VK_HIDDEN VkPipeline vk_pipeline_get(struct vk_device *d, enum vk_shader_id id, const uint32_t *spec, int n_spec, bool has_fallback);
/* Whether the pipeline of a kernel that a path can do without builds (spec constants spec[0..n_spec),
 * spec NULL for none): when the driver fails to compile it, path is disabled and "<the error>;
 * <instead> instead" logged once as a warning, and the caller takes the path without it from then
 * on (false at once while path is disabled). */
VK_HIDDEN bool vk_optional_pipeline(struct vk_device *d, enum vk_shader_id id, const uint32_t *spec,
                                    int n_spec, enum vk_path path, const char *instead);
/* Number of storage-buffer bindings the shader declares. */
VK_HIDDEN int vk_shader_bindings(enum vk_shader_id id);
/* Prepare the pipeline table and load the on-disk pipeline cache. */
VK_HIDDEN enum ggmlc_status vk_pipelines_init(struct vk_device *d);
/* Write the pipeline cache to disk (temp file + rename; failures only logged). */
VK_HIDDEN void vk_pipeline_cache_save(struct vk_device *d);
VK_HIDDEN void vk_pipelines_release(struct vk_device *d);

/* ---------------------------------------------------------- recording */

struct vk_hazards; /* memory read and written since the last barrier, and the dispatches held (vk-order.c) */

/* Scratch memory holding a tensor's contents in another form, made by one kernel earlier in
 * the segment (b quantized for the integer-dot mat-vec): products that share their
 * activations, as a layer's q, k and v projections do, quantize them once. */
struct vk_derived {
    struct vk_range src;          /* the tensor's bytes: a dispatch writing them forgets the entry */
    enum ggml_type type;
    int64_t ne[GGML_MAX_DIMS];
    size_t nb[GGML_MAX_DIMS];
    enum vk_shader_id by;         /* the kernel that made it */
    VkDeviceSize at;              /* where it starts in scratch memory */
};
#define VK_MAX_DERIVED 16

/* State while recording nodes into the device's command buffer. */
#define VK_PROFILE_MAX 512 /* dispatches timed per segment with GGMLC_DEBUG=vulkan-ops */

struct vk_rec {
    struct vk_device *d;
    struct vk_hazards *hz;
    int n_dispatches, n_barriers;
    int n_war_barriers; /* of them, barriers only for a write over what was read (GGMLC_DEBUG=vulkan) */
    bool pipeline_failed; /* the last dispatch failed for want of its pipeline (compute the node on the CPU) */
    VkDeviceSize scratch_size, scratch_used; /* scratch memory reserved for this segment, and taken */
    VkDeviceSize optional_left; /* what of it optional forms (vk_node_scratch) may still take */
    /* the transient part of it (vk_scratch_transient): transient_slots regions of transient_size bytes
     * from transient_at, which nodes take in turn (transient_next); transient_node: the one the node
     * being recorded took, -1 before it asks */
    VkDeviceSize transient_at, transient_size;
    int transient_slots, transient_next, transient_node;
    struct vk_derived derived[VK_MAX_DERIVED];
    int n_derived;
    struct ggml_tensor *const *rest; /* the segment's nodes after the one being recorded (vk_q8_result_plan) */
    int n_rest;
    enum vk_shader_id profiled[VK_PROFILE_MAX]; /* GGMLC_DEBUG=vulkan-ops: the dispatches timed, in order */
    int n_profiled;
    const struct ggml_tensor **checked; /* index checks: the node of each slot taken (vk_dispatch_bind_check) */
    int n_checked, max_checked;
    const struct ggml_tensor *outputs[VK_READBACK_MAX]; /* read back with the segment, at staging offset */
    int output_node[VK_READBACK_MAX];                   /* ... their node indices */
    int n_outputs;
    VkDeviceSize outputs_at, outputs_bytes;
    int n_parts, part_start; /* parts of the segment submitted, and the dispatch the next one starts at */
    bool closed;             /* a part failed: the device's command buffer ended, or the parts fenced */
    int64_t time_mark;       /* GGMLC_DEBUG=vulkan-time: the recording's clock (vk_time_add) */
};

/* A tensor (or, when t is NULL, bytes [at, at + size) of the device's scratch memory, or with
 * check, its index-check slot at byte at) bound to one shader binding. */
struct vk_binding {
    const struct ggml_tensor *t;
    bool written, check;
    VkDeviceSize at, size;
};

/* Record one dispatch of shader id (spec constants, bindings in declaration order,
 * push constants) over groups[3] workgroups, with a barrier first when a binding
 * overlaps memory written since the last barrier.  Each binding's element offset
 * (in units of elem_size[i]) is stored into push words at push_offsets[i] when
 * push_offsets is not NULL. */
struct vk_dispatch {
    enum vk_shader_id shader;
    uint32_t spec[VK_MAX_SPEC];
    int n_spec;
    struct vk_binding bind[VK_MAX_BINDINGS];
    int n_bind;
    uint32_t push[VK_PUSH_BYTES / 4];
    int push_words;
    int offset_word[VK_MAX_BINDINGS];  /* push word receiving binding i's element offset, -1: none */
    uint32_t elem_size[VK_MAX_BINDINGS];
    uint32_t groups[3];
    bool has_fallback; /* the caller takes another kernel if this pipeline fails: that is no warning */
};
VK_HIDDEN void vk_dispatch_init(struct vk_dispatch *ds, enum vk_shader_id shader);
/* Push constants are filled as the struct of their shader family (shaders/push-constants.h,
 * shared with the GLSL), then copied into ds: vk_dispatch_push(&ds, pc).  A binding's element
 * offset goes to the member VK_PUSH_WORD(struct name, member) names (vk_dispatch_bind). */
#define VK_PUSH_WORD(type, member) ((int)(offsetof(struct type, member) / 4))
#define vk_dispatch_push(ds, pc)   vk_dispatch_push_bytes((ds), &(pc), sizeof(pc))
static inline void vk_dispatch_push_bytes(struct vk_dispatch *ds, const void *pc, size_t size) {
    memcpy(ds->push, pc, size);
}
/* Every push struct fits the bytes every device guarantees, in whole 4-byte words. */
#define VK_PUSH_FITS(type)                                                               \
    _Static_assert(sizeof(struct type) <= VK_PUSH_BYTES && sizeof(struct type) % 4 == 0, \
                   #type " fits")
VK_PUSH_FITS(vk_pc_binary);
VK_PUSH_FITS(vk_pc_unary);
VK_PUSH_FITS(vk_pc_mm);
VK_PUSH_FITS(vk_pc_mm_id);
VK_PUSH_FITS(vk_pc_glu);
VK_PUSH_FITS(vk_pc_getrows);
VK_PUSH_FITS(vk_pc_get_rows_back);
VK_PUSH_FITS(vk_pc_cpy_words);
VK_PUSH_FITS(vk_pc_cpy_dequant);
VK_PUSH_FITS(vk_pc_cpy_quant);
VK_PUSH_FITS(vk_pc_setrows);
VK_PUSH_FITS(vk_pc_concat);
VK_PUSH_FITS(vk_pc_pad);
VK_PUSH_FITS(vk_pc_topk_select);
VK_PUSH_FITS(vk_pc_argsort);
VK_PUSH_FITS(vk_pc_im2col);
VK_PUSH_FITS(vk_pc_pool);
VK_PUSH_FITS(vk_pc_upscale);
VK_PUSH_FITS(vk_pc_conv_transpose_2d);
VK_PUSH_FITS(vk_pc_conv2d);
VK_PUSH_FITS(vk_pc_im2col_back);
VK_PUSH_FITS(vk_pc_pool_back);
VK_PUSH_FITS(vk_pc_conv_transpose_1d);
VK_PUSH_FITS(vk_pc_ssm_conv);
VK_PUSH_FITS(vk_pc_im2col3d);
VK_PUSH_FITS(vk_pc_conv3d);
VK_PUSH_FITS(vk_pc_rope);
VK_PUSH_FITS(vk_pc_flash_attn);
VK_PUSH_FITS(vk_pc_fattn_combine);
VK_PUSH_FITS(vk_pc_timestep);
VK_PUSH_FITS(vk_pc_recurrence);
VK_PUSH_FITS(vk_pc_ssm_scan);
VK_PUSH_FITS(vk_pc_solve_tri);
VK_PUSH_FITS(vk_pc_cross_entropy);
VK_PUSH_FITS(vk_pc_optstep);
VK_PUSH_FITS(vk_pc_window);
VK_PUSH_FITS(vk_pc_add_rel_pos);
VK_PUSH_FITS(vk_pc_repeat_back);
VK_PUSH_FITS(vk_pc_rows);
VK_PUSH_FITS(vk_pc_count_equal);
VK_PUSH_FITS(vk_pc_group_norm);
VK_PUSH_FITS(vk_pc_softmax);
VK_PUSH_FITS(vk_pc_rows_back);
VK_PUSH_FITS(vk_pc_pack_f16);
VK_PUSH_FITS(vk_pc_split_sum);
VK_PUSH_FITS(vk_pc_quantize_q8);
VK_PUSH_FITS(vk_pc_unary_back);
VK_PUSH_FITS(vk_pc_add_id);
VK_PUSH_FITS(vk_pc_acc);
/* Append a binding; returns its index. */
VK_HIDDEN int vk_dispatch_bind(struct vk_dispatch *ds, const struct ggml_tensor *t, bool written, uint32_t elem_size, int offset_word);
/* Append a binding of scratch bytes [at, at + size) (from vk_scratch_take); returns its index. */
VK_HIDDEN int vk_dispatch_bind_scratch(struct vk_dispatch *ds, VkDeviceSize at, VkDeviceSize size, bool written);
/* Index checks: a kernel that addresses memory with indices read on the device (get_rows,
 * set_rows, get_rows_back, mul_mat_id, add_id, ssm_scan) binds, last, node's slot of the
 * segment's check memory (shaders/index-check.glsl), where it reports an index out of range
 * instead of using it; after the segment the host reads the slots back and fails the graph
 * with GGMLC_ERR_INVALID_ARG naming the first node that reported one.  Returns the binding's
 * index, or -1 (recorded as the error) when the segment has no slot left for node. */
VK_HIDDEN int vk_dispatch_bind_check(struct vk_rec *rec, struct vk_dispatch *ds, const struct ggml_tensor *node);
/* Take size bytes of the segment's scratch memory (256-byte aligned) at *at; false when the
 * reserve does not hold them (the caller records another kernel). */
VK_HIDDEN bool vk_scratch_take(struct vk_rec *rec, VkDeviceSize size, VkDeviceSize *at);
/* Where (*at) kernel `by` left its form of t in scratch memory earlier in this segment; false
 * when it did not, or a dispatch has written t's memory since. */
VK_HIDDEN bool vk_derived_find(const struct vk_rec *rec, const struct ggml_tensor *t, enum vk_shader_id by, VkDeviceSize *at);
/* Note that kernel `by`, just recorded, made its form of t at scratch offset at (not noted when
 * the table is full: later users make it again). */
VK_HIDDEN void vk_derived_note(struct vk_rec *rec, const struct ggml_tensor *t, enum vk_shader_id by, VkDeviceSize at);
/* Scratch memory a node may take while recorded, reserved before recording: needed (its kernel
 * takes another path without it, as after a failed reserve), optional (it computes without it,
 * only slower: all nodes' optional bytes share a part of the reserve capped at
 * VK_SCRATCH_OPTIONAL_MAX, so that a graph of many products does not reserve memory for each) and
 * transient (consumed by the node's own later dispatches: a region as large as the largest
 * node's, at most VK_SCRATCH_TRANSIENT_MAX; vk-record.c reserves a ring of several such regions
 * that nodes take in turn). */
struct vk_scratch_need {
    VkDeviceSize needed, optional, transient;
};
#define VK_SCRATCH_OPTIONAL_MAX (256u << 20)
#define VK_SCRATCH_TRANSIENT_MAX (512u << 20)
/* Adds node's needs to *need (needed and optional summed, transient the largest): its op's
 * scratch slot (struct vk_op_kernel) tells them. */
VK_HIDDEN void vk_node_scratch(const struct vk_device *d, const struct ggml_tensor *node,
                               struct vk_scratch_need *need);
/* The transient region of the node being recorded (*at) when it holds size bytes: the same region
 * for every call while one node is recorded, the ring's next one for the next node that asks. */
VK_HIDDEN bool vk_scratch_transient(struct vk_rec *rec, VkDeviceSize size, VkDeviceSize *at);
VK_HIDDEN enum ggml_status vk_record_dispatch(struct vk_rec *rec, struct vk_dispatch *ds);

/* Barriers and the order of dispatches (vk-order.c).  A segment's hazard state (NULL without
 * memory), and freed. */
VK_HIDDEN struct vk_hazards *vk_hazards_new(void);
VK_HIDDEN void vk_hazards_free(struct vk_hazards *hz);
/* Hold a dispatch (pipeline, descriptors info[], the bytes ranges[] of each binding) until the
 * next flush, which logs it after every dispatch it conflicts with and a barrier. */
VK_HIDDEN enum ggml_status vk_order_dispatch(struct vk_rec *rec, const struct vk_dispatch *ds, VkPipeline pipeline,
                                             const VkDescriptorBufferInfo *info, const struct vk_range *ranges);
/* Log the dispatches held, fewest barriers between them; vk_order_barrier adds a barrier after
 * them (before a transfer, a submitted part's successor). */
VK_HIDDEN enum ggml_status vk_order_flush(struct vk_rec *rec);
VK_HIDDEN enum ggml_status vk_order_barrier(struct vk_rec *rec);
/* Put a scheduler's split in an order whose dispatches share barriers, before it is placed
 * (vk-reorder.c; ggmlc_backend_iface.order_nodes). */
VK_HIDDEN void vk_order_nodes(ggml_backend_t backend, struct ggml_tensor **nodes, int n_nodes);
/* Record ds once for each chunk of [0, n), chunk items at a time (chunk > 0), the chunk's
 * [begin, end) in push words begin_word and begin_word + 1: work one invocation would loop
 * over for longer than VK_LOOP_BUDGET allows.  The barriers between them come by themselves. */
VK_HIDDEN enum ggml_status vk_record_dispatch_chunks(struct vk_rec *rec, struct vk_dispatch *ds, uint32_t n, uint32_t chunk,
                                                     int begin_word);
/* Workgroup counts covering n items of group_size each, split over x and y. */
VK_HIDDEN void vk_groups_1d(const struct vk_device *d, uint64_t n, uint32_t group_size, uint32_t groups[3]);

/* Copy n bytes at off of buf into host when the last segment read them back with its results
 * (waiting for it first: its one wait); true then, with the wait's status in *st.  Caller
 * holds d->lock. */
VK_HIDDEN bool vk_readback_get(struct vk_device *d, VkBuffer buf, VkDeviceSize off, void *host, size_t n,
                               enum ggmlc_status *st);

/* GGMLC_DEBUG=vulkan-time: monotonic nanoseconds when d's host phases are timed, else 0
 * (no clock read); vk_time_add adds the time since *mark to phase and moves *mark to now. */
VK_HIDDEN int64_t vk_time_mark(const struct vk_device *d);
VK_HIDDEN void vk_time_add(struct vk_device *d, enum vk_time_phase phase, int64_t *mark);

/* Compute nodes [first, n) on d in one command buffer, up to the first node the GPU cannot
 * run after all (a failed pipeline, an operand in host memory): its index in *stopped_at, n
 * when none (the core's CPU fallback computes it; see ggmlc-plugin.h).  The command buffer
 * is submitted without waiting unless the segment reads results back (index checks,
 * profiling): vk_cmd_wait, under d->lock, waits for it. */
VK_HIDDEN enum ggml_status vk_compute_from(struct vk_device *d, struct ggml_tensor **nodes,
                                           int first, int n, int *stopped_at);

/* ---------------------------------------------------------------- ops */

struct vk_op_kernel {
    /* Types, shapes and device limits check beyond the generic ones (NULL: none). */
    bool (*supports)(const struct vk_device *d, const struct ggml_tensor *node);
    enum ggml_status (*record)(struct vk_rec *rec, const struct ggml_tensor *node);
    /* The scratch memory the kernel takes when recording node, added to *need as
     * vk_node_scratch says (NULL: none; the record function may then take none). */
    void (*scratch)(const struct vk_device *d, const struct ggml_tensor *node,
                    struct vk_scratch_need *need);
};

/* One registration function per family, filling its ops' entries. */
VK_HIDDEN void vk_ops_elementwise_register(struct vk_op_kernel *table);
VK_HIDDEN void vk_ops_reduce_register(struct vk_op_kernel *table);
VK_HIDDEN void vk_ops_matmul_register(struct vk_op_kernel *table);
VK_HIDDEN void vk_ops_index_register(struct vk_op_kernel *table);
VK_HIDDEN void vk_ops_nn_register(struct vk_op_kernel *table);
VK_HIDDEN void vk_ops_train_register(struct vk_op_kernel *table);
VK_HIDDEN void vk_ops_conv_register(struct vk_op_kernel *table);
VK_HIDDEN void vk_ops_conv3d_register(struct vk_op_kernel *table); /* called by vk_ops_conv_register */
VK_HIDDEN void vk_ops_seq_register(struct vk_op_kernel *table);    /* called by vk_ops_nn_register */
VK_HIDDEN void vk_ops_window_register(struct vk_op_kernel *table); /* called by vk_ops_index_register */
VK_HIDDEN void vk_ops_matmul_id_register(struct vk_op_kernel *table);

/* Fusions (vk-fuse.c): a node and the next one that computes, recorded as one dispatch.  Each
 * pair has a check (whether the fused kernel takes first and second: ops, types, shapes) and a
 * record function, which returns false, recording nothing, when the fused kernel's pipeline is
 * not to be had (the nodes are then recorded one by one), else records it with its status in
 * *st.  The fused kernels still write first's result, which other nodes may read.
 *   norm, rms_norm or l2_norm, then mul by a broadcast f32 row (ops-reduce.c, rows_mul_f32; with
 *   the result quantized for the products after it, rows_mul_q8_f32: vk_q8_result_plan);
 *   a float mat-vec product, then add of a tensor of its shape (ops-matmul.c, mv_*_add);
 *   an f32 rope (normal or NeoX), then set_rows of its rows (a reshape of it) into an f32 or f16
 *   cache, as a llama layer stores its K (ops-nn.c, rope_f32_set_rows_*). */
VK_HIDDEN bool vk_norm_mul_fits(const struct vk_device *d, const struct ggml_tensor *norm, const struct ggml_tensor *mul);
VK_HIDDEN bool vk_norm_mul_record(struct vk_rec *rec, const struct ggml_tensor *norm, const struct ggml_tensor *mul,
                                  enum ggml_status *st);
VK_HIDDEN bool vk_mul_mat_add_fits(const struct vk_device *d, const struct ggml_tensor *node, const struct ggml_tensor *add);
VK_HIDDEN bool vk_mul_mat_add_record(struct vk_rec *rec, const struct ggml_tensor *node, const struct ggml_tensor *add,
                                     enum ggml_status *st);
VK_HIDDEN bool vk_rope_set_rows_fits(const struct vk_device *d, const struct ggml_tensor *rope, const struct ggml_tensor *set_rows);
VK_HIDDEN bool vk_rope_set_rows_record(struct vk_rec *rec, const struct ggml_tensor *rope, const struct ggml_tensor *set_rows,
                                       enum ggml_status *st);
/* Results quantized by the kernel that makes them (ops-matmul-dot.c): where a later product of
 * the segment (rec->rest) reads t (or a contiguous reshape of it, q->as) quantized to Q8_0 in
 * scratch memory (the integer-dot kernels), vk_q8_result_plan takes that scratch (true) and the
 * kernel making t writes the quants and the pairs (q8-lanes.glsl) at q->at, from pair
 * q->scales_at / 8 on, as quantize-q8.comp lays out q->as; once it is recorded,
 * vk_q8_result_note tells the products where to find them.  False when no product wants them,
 * fusion is off (GGMLC_VK_FUSE=0), such a kernel failed before, or the scratch is short. */
struct vk_q8_result {
    const struct ggml_tensor *as;
    VkDeviceSize at, bytes, scales_at;
};
VK_HIDDEN bool vk_q8_result_plan(struct vk_rec *rec, const struct ggml_tensor *t, struct vk_q8_result *q);
VK_HIDDEN void vk_q8_result_note(struct vk_rec *rec, const struct vk_q8_result *q);
/* Record nodes[i] fused with the next node that computes when a fusion takes them: that node's
 * index, the status in *st; else i, nothing recorded (GGMLC_VK_FUSE=0: always). */
VK_HIDDEN int vk_fuse_record(struct vk_rec *rec, struct ggml_tensor **nodes, int i, int n, enum ggml_status *st);
/* Whether a fused kernel takes first and second (shapes and types only; fusion not turned off). */
VK_HIDDEN bool vk_fuse_fits(const struct vk_device *d, const struct ggml_tensor *first, const struct ggml_tensor *second);
/* Whether node touches a buffer that fell back to host memory: the GPU cannot bind it. */
VK_HIDDEN bool vk_uses_host_memory(const struct vk_device *d, const struct ggml_tensor *node);

/* cpy/dup/cont of F32 into Q4_0, Q4_1, Q5_0, Q5_1 or Q8_0 (ops-index.c; cpy-quant.comp),
 * quantized as the CPU reference quantizer does; of any block format into one of its shape
 * and type (cpy-words.comp). */
VK_HIDDEN bool vk_cpy_quant_supports(const struct vk_device *d, const struct ggml_tensor *node);
VK_HIDDEN enum ggml_status vk_cpy_quant_record(struct vk_rec *rec, const struct ggml_tensor *node);
/* Block-format a dequantized into contiguous f16 at scratch offset at (cpy-dequant.comp,
 * dequant_<type>_f16): vk_f16_bytes(a) bytes. */
VK_HIDDEN enum ggml_status vk_dequant_f16_record(struct vk_rec *rec, const struct ggml_tensor *a, VkDeviceSize at);
/* The bytes of t's values as contiguous f16. */
static inline VkDeviceSize vk_f16_bytes(const struct ggml_tensor *t) { return (VkDeviceSize)ggml_nelements(t) * 2; }

/* The filled table (indexed by enum ggml_op). */
VK_HIDDEN const struct vk_op_kernel *vk_op_table(void);
/* Exact support check used by the device's supports_op. */
VK_HIDDEN bool vk_supports_node(const struct vk_device *d, const struct ggml_tensor *node);

/* Shader type code of a tensor type: 0 f32, 1 f16, 2 bf16; -1 other. */
VK_HIDDEN int vk_float_code(enum ggml_type type);
/* Quantized types the shaders dequantize (shaders/quant.glsl): Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0, IQ4_NL, MXFP4 (32-value blocks), Q2_K..Q6_K and IQ4_XS (256-value super-blocks). */
VK_HIDDEN bool vk_is_block_quant(enum ggml_type t);
/* The unit, in bytes, that the shaders address tensors of type t in: the element for the
 * other types; for block formats (QUNIT_T, shaders/types.glsl) 2 (16-bit words), or 1 for
 * MXFP4, whose 17-byte blocks start on odd bytes. */
VK_HIDDEN size_t vk_addr_unit(enum ggml_type t);
/* Whether quant.glsl's decoders can read block-format tensor t on device d: a type of
 * vk_is_block_quant the device can load (16-bit storage, and bytes for MXFP4), whole blocks
 * per row at unit block stride, and strides and size in whole units within 32 bits. */
VK_HIDDEN bool vk_quant_readable(const struct vk_device *d, const struct ggml_tensor *t);
/* True when the device can read and write tensors of this float type. */
VK_HIDDEN bool vk_type_ok(const struct vk_device *d, enum ggml_type type);

/* Shader id by printf-style name ("unary_f32_f16"), or VK_SHADER_COUNT when absent. */
VK_HIDDEN enum vk_shader_id vk_shader_find(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether id names a shader compiled into this build. */
static inline bool vk_shader_present(enum vk_shader_id id) { return id < VK_SHADER_COUNT && vk_shader_blobs[id].code != NULL; }

/* t's ne[0..3] and nb[0..3] in elements of t's type (vk_shape_fits: they fit). */
struct vk_shape {
    uint32_t ne[4], nb[4];
};
VK_HIDDEN struct vk_shape vk_shape_of(const struct ggml_tensor *t);
/* Store t's shape into the members ne<x>0..ne<x>3, nb<x>0..nb<x>3 of push struct pc (x: 0 for
 * ne00.., 1 for ne10.., empty for ne0..). */
#define VK_PUSH_SHAPE(pc, x, t)                                     \
    do {                                                            \
        const struct vk_shape shape_ = vk_shape_of(t);              \
        (pc).ne##x##0 = shape_.ne[0], (pc).ne##x##1 = shape_.ne[1]; \
        (pc).ne##x##2 = shape_.ne[2], (pc).ne##x##3 = shape_.ne[3]; \
        (pc).nb##x##0 = shape_.nb[0], (pc).nb##x##1 = shape_.nb[1]; \
        (pc).nb##x##2 = shape_.nb[2], (pc).nb##x##3 = shape_.nb[3]; \
    } while (0)
/* True when every stride and the size of t are whole elements and fit in 32 bits. */
VK_HIDDEN bool vk_shape_fits(const struct ggml_tensor *t);

/* ------------------------------------------------------------- tuning */

/* One GGMLC_VK_* variable as read at init: set when it is, its text (cut at 63 bytes), and that
 * text read as up to 7 comma-separated numbers ("WG,ROWS,..."; n is sscanf's count, 0 or less
 * when it does not start with one) and as one number (strtoll's reading). */
struct vk_env_value {
    bool set;
    char text[64];
    int n;
    uint32_t v[7];
    long long number;
};

/* What $GGMLC_VK_MVQ_KERNEL asks of the quantized matrix-vector products (ops-matmul*.c). */
enum vk_mvq_kernel { VK_MVQ_AUTO, VK_MVQ_DOT, VK_MVQ_STAGED, VK_MVQ_GROUP, VK_MVQ_OTHER };

/* The plugin's tuning, read once when it initialises (vk-tuning.c) from the [backend.vulkan]
 * options and the GGMLC_VK_* variables; the variables through ggmlc_getenv, so a set-uid
 * program sees none of them.  Each value's meaning and default is told where it is used. */
struct vk_tuning {
    char device[256];            /* which devices: $GGMLC_VK_DEVICE, else option device (vk-plugin.c) */
    bool f16_off;                /* option f16 = off */
    bool coopmat_off;            /* $GGMLC_VK_COOPMAT, else option coopmat: off (or 0) */
    struct vk_env_value mm_tile; /* GGMLC_VK_MM_TILE (ops-matmul.c) */
    struct vk_env_value mv, mvq, mvql, mvqg; /* GGMLC_VK_MV, _MVQ, _MVQL, _MVQG (ops-matmul.c) */
    struct vk_env_value mvqd;    /* GGMLC_VK_MVQD (ops-matmul-dot.c) */
    struct vk_env_value mvq_self; /* GGMLC_VK_MVQ_SELF (ops-matmul-dot.c) */
    enum vk_mvq_kernel mvq_kernel; /* GGMLC_VK_MVQ_KERNEL */
    /* GGMLC_VK_COOPMAT_TILE, _DEQUANT, _FLEX, _PACK, _SPLIT, _BLOCKS, _MID (ops-matmul-coopmat.c) */
    struct vk_env_value coopmat_tile, coopmat_dequant, coopmat_flex, coopmat_pack, coopmat_split, coopmat_blocks, coopmat_mid;
    bool coopmat_khr_off;        /* GGMLC_VK_COOPMAT_KHR=0 (ops-matmul-coopmat.c) */
    struct vk_env_value fa_split; /* GGMLC_VK_FA_SPLIT (ops-nn.c) */
    struct vk_env_value fa_tile;  /* GGMLC_VK_FA_TILE (ops-nn.c) */
    struct vk_env_value fa_cm;    /* GGMLC_VK_FA_CM (ops-nn.c) */
    struct vk_env_value fa_vec;   /* GGMLC_VK_FA_VEC (ops-nn.c) */
    struct vk_env_value conv_cm;  /* GGMLC_VK_CONV_CM (ops-conv.c) */
    struct vk_env_value mm_split; /* GGMLC_VK_MM_SPLIT (ops-matmul.c) */
    bool replay_off;             /* GGMLC_VK_REPLAY=0: record every segment anew (vk-replay.c) */
    bool fuse_off;               /* GGMLC_VK_FUSE=0: every node its own dispatches (vk-fuse.c) */
    bool reorder_off;            /* GGMLC_VK_REORDER=0: dispatches in graph order (vk-order.c) */
    struct vk_env_value submit_every; /* GGMLC_VK_SUBMIT_EVERY (vk-record.c) */
    struct vk_env_value transient_slots; /* GGMLC_VK_TRANSIENT_SLOTS (vk-record.c) */
    struct vk_env_value wait_spin;    /* GGMLC_VK_WAIT_SPIN: microseconds (vk-device.c) */
};

/* Read the tuning (plugin init; logged with GGMLC_DEBUG=vulkan). */
VK_HIDDEN void vk_tuning_read(const struct ggmlc_plugin_options *opts);
/* The tuning read last. */
VK_HIDDEN const struct vk_tuning *vk_tuning(void);

/* ------------------------------------------------------------- faults */

/* Read $GGMLC_VK_FAULT (see vk-fault.c) and reset the fault counters (plugin init). */
VK_HIDDEN void vk_fault_init(void);
/* True when this device-local memory allocation must fail as out of device memory. */
VK_HIDDEN bool vk_fault_device_alloc(void);
/* True when the pipeline of this shader must fail to compile. */
VK_HIDDEN bool vk_fault_pipeline(const char *shader_name);
/* True when this graph submission must report the device lost. */
VK_HIDDEN bool vk_fault_graph_lost(void);

#endif /* GGMLC_VK_IMPL_H */
