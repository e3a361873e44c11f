/*
 * vk-record.c - recording nodes into the device's command buffer.
 *
 * A graph (segment) becomes one command buffer and one submit.  Dispatches
 * run concurrently unless separated by a barrier, so a barrier goes in only
 * where a dispatch touches memory in conflict with one before it: it reads or
 * writes what was written (RAW, WAW), or writes what was read (WAR: the
 * allocator reuses memory of dead tensors); vk-order.c places the barriers and
 * lets dispatches that do not conflict share them.
 * The commands go to the device's log first; vk-replay.c records them, or
 * submits the command buffer of an earlier segment with the same commands.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vk-impl.h"

void vk_groups_1d(const struct vk_device *d, uint64_t n, uint32_t group_size, uint32_t groups[3]) {
    uint64_t total = (n + group_size - 1) / group_size;
    if (total == 0) total = 1;
    const uint64_t max_x = d->props.limits.maxComputeWorkGroupCount[0] < 65535 ? d->props.limits.maxComputeWorkGroupCount[0] : 65535;
    groups[0] = (uint32_t)(total < max_x ? total : max_x);
    groups[1] = (uint32_t)((total + groups[0] - 1) / groups[0]);
    groups[2] = 1;
}

void vk_dispatch_init(struct vk_dispatch *ds, enum vk_shader_id shader) {
    memset(ds, 0, sizeof *ds);
    ds->shader = shader;
    for (int i = 0; i < VK_MAX_BINDINGS; i++) ds->offset_word[i] = -1;
    ds->groups[0] = ds->groups[1] = ds->groups[2] = 1;
}

int vk_dispatch_bind(struct vk_dispatch *ds, const struct ggml_tensor *t, bool written, uint32_t elem_size, int offset_word) {
    const int i = ds->n_bind++;
    ds->bind[i] = (struct vk_binding){.t = t, .written = written};
    ds->elem_size[i] = elem_size;
    ds->offset_word[i] = offset_word;
    return i;
}

int vk_dispatch_bind_scratch(struct vk_dispatch *ds, VkDeviceSize at, VkDeviceSize size, bool written) {
    const int i = ds->n_bind++;
    ds->bind[i] = (struct vk_binding){.t = NULL, .written = written, .at = at, .size = size};
    ds->elem_size[i] = 1;
    ds->offset_word[i] = -1;
    return i;
}

bool vk_scratch_transient(struct vk_rec *rec, VkDeviceSize size, VkDeviceSize *at) {
    if (rec->transient_node < 0 && rec->transient_slots > 0) {
        rec->transient_node = rec->transient_next;
        rec->transient_next = (rec->transient_next + 1) % rec->transient_slots;
    }
    const int slot = rec->transient_node < 0 ? 0 : rec->transient_node;
    *at = rec->transient_at + (VkDeviceSize)slot * rec->transient_size;
    return size && size <= rec->transient_size;
}

bool vk_scratch_take(struct vk_rec *rec, VkDeviceSize size, VkDeviceSize *at) {
    const VkDeviceSize begin = vk_scratch_round(rec->scratch_used);
    if (begin + size > rec->scratch_size) return false; /* scratch_size is 0 without a reserve */
    *at = begin;
    rec->scratch_used = begin + size;
    return true;
}

/* The bytes of tensor t, which lies in buffer b. */
static struct vk_range tensor_range(const struct vk_buffer *b, const struct ggml_tensor *t) {
    const VkDeviceSize at = vk_tensor_offset(b, t);
    return (struct vk_range){.buf = b->alloc.buf, .begin = at, .end = at + ggml_nbytes(t)};
}

/* The bytes of a binding: its VkBuffer, where the tensor (or scratch range) starts, its size. */
static bool binding_place(const struct vk_device *d, const struct vk_binding *bind, VkBuffer *buf, VkDeviceSize *at,
                          VkDeviceSize *nbytes, VkDeviceSize *end) {
    if (bind->check) {
        *buf = d->checks.buf;
        *at = d->checks.offset + bind->at;
        *nbytes = 16;
        *end = d->checks.offset + d->checks.size;
        return true;
    }
    if (!bind->t) {
        *buf = d->scratch.buf;
        *at = d->scratch.offset + bind->at;
        *nbytes = bind->size;
        *end = d->scratch.offset + d->scratch.size;
        return true;
    }
    const struct vk_buffer *b = vk_tensor_buffer(d, bind->t);
    if (!b) {
        ggmlc_set_error(GGMLC_ERR_BACKEND, "vulkan %s: tensor '%s' (%s) is not in a buffer of this device", d->name, bind->t->name,
                        ggml_op_desc(bind->t));
        return false;
    }
    const struct vk_range r = tensor_range(b, bind->t);
    *buf = r.buf;
    *at = r.begin;
    *nbytes = r.end - r.begin;
    *end = b->alloc.offset + b->alloc.size;
    return true;
}

/* ---------------------------------------------------------- derived forms */

static bool same_tensor(const struct vk_derived *e, const struct ggml_tensor *t, const struct vk_range *r) {
    return e->src.buf == r->buf && e->src.begin == r->begin && e->src.end == r->end && e->type == t->type &&
           memcmp(e->ne, t->ne, sizeof e->ne) == 0 && memcmp(e->nb, t->nb, sizeof e->nb) == 0;
}

bool vk_derived_find(const struct vk_rec *rec, const struct ggml_tensor *t, enum vk_shader_id by, VkDeviceSize *at) {
    const struct vk_buffer *b = vk_tensor_buffer(rec->d, t);
    if (!b) return false;
    const struct vk_range r = tensor_range(b, t);
    for (int i = 0; i < rec->n_derived; i++)
        if (rec->derived[i].by == by && same_tensor(&rec->derived[i], t, &r)) {
            *at = rec->derived[i].at;
            return true;
        }
    return false;
}

void vk_derived_note(struct vk_rec *rec, const struct ggml_tensor *t, enum vk_shader_id by, VkDeviceSize at) {
    const struct vk_buffer *b = vk_tensor_buffer(rec->d, t);
    if (!b || rec->n_derived == VK_MAX_DERIVED) return;
    struct vk_derived *e = &rec->derived[rec->n_derived++];
    *e = (struct vk_derived){.src = tensor_range(b, t), .type = t->type, .by = by, .at = at};
    memcpy(e->ne, t->ne, sizeof e->ne);
    memcpy(e->nb, t->nb, sizeof e->nb);
}

/* A dispatch writes r: what was derived from those bytes is stale. */
static void forget_derived(struct vk_rec *rec, const struct vk_range *r) {
    for (int i = 0; i < rec->n_derived;) {
        const struct vk_range *s = &rec->derived[i].src;
        if (s->buf == r->buf && s->begin < r->end && r->begin < s->end) rec->derived[i] = rec->derived[--rec->n_derived];
        else i++;
    }
}

/* ------------------------------------------------------- index checks
 *
 * Indices are usually made on the device (by argsort, top_k, the previous step of a model), so
 * the host cannot check them before a dispatch without a round trip per node: the kernels check
 * them as they read them (shaders/index-check.glsl), and report a bad one in their slot of the
 * segment's check memory, a 16-byte slot per node at offsets the device can bind.  The slots are
 * zeroed at the start of the segment and copied to the staging buffer at its end; the host
 * reads them once the segment is done.  The cost: a fill, a copy and two barriers per segment
 * with such nodes, and a compare per index read. */

/* The index operand of node and the range [0, *limit) of its values, or NULL for nodes without. */
static const struct ggml_tensor *index_operand(const struct ggml_tensor *node, int64_t *limit) {
    switch (node->op) {
    case GGML_OP_GET_ROWS: *limit = node->src[0]->ne[1]; return node->src[1];
    case GGML_OP_GET_ROWS_BACK: *limit = node->ne[1]; return node->src[1];
    case GGML_OP_SET_ROWS: *limit = node->ne[1]; return node->src[1];
    case GGML_OP_MUL_MAT_ID: *limit = node->src[0]->ne[2]; return node->src[2];
    case GGML_OP_ADD_ID: *limit = node->src[1]->ne[1]; return node->src[2];
    case GGML_OP_SSM_SCAN: *limit = node->src[0]->ne[3]; return node->src[6];
    default: return NULL;
    }
}

/* Bytes between two slots: 16, or the device's binding offset alignment. */
static VkDeviceSize check_stride(const struct vk_device *d) {
    const VkDeviceSize align = d->props.limits.minStorageBufferOffsetAlignment;
    return align > 16 ? align : 16;
}

int vk_dispatch_bind_check(struct vk_rec *rec, struct vk_dispatch *ds, const struct ggml_tensor *node) {
    const bool same_node = rec->n_checked > 0 && rec->checked[rec->n_checked - 1] == node;
    if (!same_node && rec->n_checked == rec->max_checked) {
        ggmlc_set_error(GGMLC_ERR_INTERNAL, "vulkan %s: no index-check slot for node '%s' (%s)", rec->d->name,
                        node->name, ggml_op_desc(node));
        return -1;
    }
    if (!same_node) rec->checked[rec->n_checked++] = node;
    const int i = ds->n_bind++;
    const VkDeviceSize at = (VkDeviceSize)(rec->n_checked - 1) * check_stride(rec->d);
    ds->bind[i] = (struct vk_binding){.check = true, .written = true, .at = at};
    ds->elem_size[i] = 4;
    ds->offset_word[i] = -1;
    return i;
}

/* ------------------------------------------- outputs read back with the segment
 *
 * A decode step reads its logits as soon as its graph is done; a transfer of their own would
 * be a second submit and a second fence wait per token.  So the results of a segment marked as
 * outputs (ggml_set_output), the first VK_READBACK_MAX of them within VK_READBACK_BYTES, are
 * copied into the staging buffer at the end of its command buffer, after the index-check slots;
 * a tensor_get of bytes inside one of them waits for the segment (if nothing has yet) and copies
 * from there.  Anything submitted or written after the segment forgets them (d->n_readback). */

/* The outputs among nodes [i, n), and their staging bytes. */
static void outputs_plan(struct vk_rec *rec, struct ggml_tensor **nodes, int i, int n) {
    for (; i < n && rec->n_outputs < VK_READBACK_MAX; i++) {
        const struct ggml_tensor *t = nodes[i];
        const VkDeviceSize bytes = (ggml_nbytes(t) + 15) & ~(VkDeviceSize)15;
        if (!(t->flags & GGML_TENSOR_FLAG_OUTPUT) || ggml_is_empty(t) || rec->outputs_bytes + bytes > VK_READBACK_BYTES ||
            !vk_tensor_buffer(rec->d, t) || vk_tensor_buffer(rec->d, t)->host)
            continue;
        rec->output_node[rec->n_outputs] = i;
        rec->outputs[rec->n_outputs++] = t;
        rec->outputs_bytes += bytes;
    }
}

/* Record the copies of the outputs computed (nodes before computed_to) into staging. */
static void outputs_end(struct vk_rec *rec, int computed_to) {
    struct vk_device *d = rec->d;
    VkDeviceSize at = rec->outputs_at;
    for (int k = 0; k < rec->n_outputs && rec->output_node[k] < computed_to; k++) {
        const struct vk_buffer *b = vk_tensor_buffer(d, rec->outputs[k]);
        const struct vk_range r = tensor_range(b, rec->outputs[k]);
        vk_log_copy(&d->log, r.buf, d->staging.buf, r.begin, at, r.end - r.begin);
        d->readback[d->n_readback++] = (struct vk_readback){.buf = r.buf, .begin = r.begin, .end = r.end, .at = at};
        at += (r.end - r.begin + 15) & ~(VkDeviceSize)15;
    }
}

bool vk_readback_get(struct vk_device *d, VkBuffer buf, VkDeviceSize off, void *host, size_t n, enum ggmlc_status *st) {
    for (int k = 0; k < d->n_readback; k++) {
        const struct vk_readback *e = &d->readback[k];
        if (e->buf != buf || off < e->begin || off + n > e->end) continue;
        *st = vk_cmd_wait(d);
        if (*st == GGMLC_OK) memcpy(host, (const char *)d->staging.map + e->at + (off - e->begin), n);
        return true;
    }
    return false;
}

/* Slots for the index-taking nodes among [i, n), zeroed by the command buffer before any of them
 * runs, and staging memory to read them back through (and the outputs after them); false (the
 * error recorded) without. */
static bool checks_begin(struct vk_rec *rec, struct ggml_tensor **nodes, int i, int n) {
    int64_t limit;
    for (int k = i; k < n; k++) rec->max_checked += index_operand(nodes[k], &limit) != NULL;
    struct vk_device *d = rec->d;
    const VkDeviceSize bytes = (VkDeviceSize)rec->max_checked * check_stride(d);
    outputs_plan(rec, nodes, i, n);
    rec->outputs_at = bytes;
    if (rec->n_outputs && vk_staging_reserve(d, bytes + rec->outputs_bytes) != GGMLC_OK) {
        rec->n_outputs = 0; /* read by transfers of their own */
        ggmlc_clear_error();
    }
    if (!rec->max_checked) return true;
    rec->checked = malloc((size_t)rec->max_checked * sizeof *rec->checked);
    if (!rec->checked || !vk_checks_reserve(d, bytes) || vk_staging_reserve(d, bytes) != GGMLC_OK) {
        if (ggmlc_last_status() == GGMLC_OK)
            ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan %s: out of memory for the index checks of %d nodes", d->name,
                            rec->max_checked);
        return false;
    }
    vk_log_fill(&d->log, d->checks.buf, d->checks.offset, bytes, 0);
    return vk_order_barrier(rec) == GGML_STATUS_SUCCESS; /* nothing held yet: it cannot fail */
}

/* Record the copies of the slots taken and of the outputs computed (nodes before computed_to)
 * into the staging buffer, visible to the host after the submit. */
static void checks_end(struct vk_rec *rec, int computed_to) {
    const bool outputs = rec->n_outputs && rec->output_node[0] < computed_to;
    if (!rec->n_checked && !outputs) return;
    struct vk_device *d = rec->d;
    vk_order_barrier(rec); /* the caller flushed the window: nothing held, nothing to fail */
    if (rec->n_checked)
        vk_log_copy(&d->log, d->checks.buf, d->staging.buf, d->checks.offset, 0,
                    (VkDeviceSize)rec->n_checked * check_stride(d));
    outputs_end(rec, computed_to);
    vk_log_barrier(&d->log, VK_CMD_HOST_BARRIER);
}

/* After the segment: the first node whose kernel reported an index, as the error; false then. */
static bool checks_passed(const struct vk_rec *rec) {
    for (int k = 0; k < rec->n_checked; k++) {
        const uint32_t *slot = (const uint32_t *)((const char *)rec->d->staging.map + (size_t)k * check_stride(rec->d));
        if (!slot[0]) continue;
        const struct ggml_tensor *node = rec->checked[k];
        int64_t limit = 0;
        const struct ggml_tensor *idx = index_operand(node, &limit);
        const int64_t at = slot[1], value = (int64_t)((uint64_t)slot[3] << 32 | slot[2]);
        const int64_t i0 = at % idx->ne[0], i1 = at / idx->ne[0] % idx->ne[1], i2 = at / (idx->ne[0] * idx->ne[1]);
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                        "%s (node '%s'): index %lld at [%lld, %lld, %lld] of '%s' is out of range [0, %lld)",
                        ggml_op_desc(node), node->name, (long long)value, (long long)i0, (long long)i1,
                        (long long)i2, idx->name, (long long)limit);
        return false;
    }
    return true;
}

/* ---------------------------------------------------------- dispatch */

enum ggml_status vk_record_dispatch(struct vk_rec *rec, struct vk_dispatch *ds) {
    struct vk_device *d = rec->d;
    if (ds->shader >= VK_SHADER_COUNT) {
        ggmlc_set_error(GGMLC_ERR_INTERNAL, "vulkan: no shader variant for this node");
        return GGML_STATUS_FAILED;
    }
    const int n_bind = vk_shader_bindings(ds->shader);
    if (n_bind != ds->n_bind) {
        ggmlc_set_error(GGMLC_ERR_INTERNAL, "vulkan: shader %s takes %d bindings, %d given", vk_shader_blobs[ds->shader].name, n_bind,
                        ds->n_bind);
        return GGML_STATUS_FAILED;
    }
    VkDescriptorBufferInfo info[VK_MAX_BINDINGS];
    struct vk_range ranges[VK_MAX_BINDINGS];
    const VkDeviceSize align = d->props.limits.minStorageBufferOffsetAlignment;
    for (int i = 0; i < n_bind; i++) {
        VkBuffer buf;
        VkDeviceSize at, nbytes, end;
        if (!binding_place(d, &ds->bind[i], &buf, &at, &nbytes, &end)) return GGML_STATUS_FAILED;
        const VkDeviceSize bound = at - at % align;
        /* whole 16-byte words where the allocation has them (it is 256-byte granular): shaders
         * reading 16 bytes at a time may load the word that holds a tensor's last byte */
        VkDeviceSize range = (at - bound + nbytes + 15) & ~(VkDeviceSize)15;
        if (bound + range > end) range = (at - bound + nbytes + 3) & ~(VkDeviceSize)3;
        if (range == 0) range = 4;
        if (range > d->props.limits.maxStorageBufferRange || (at - bound) % ds->elem_size[i] != 0) {
            ggmlc_set_error(GGMLC_ERR_BACKEND, "vulkan %s: %s '%s' cannot be bound (%llu bytes)", d->name,
                            ds->bind[i].t ? "tensor" : "scratch for", ds->bind[i].t ? ds->bind[i].t->name : "a kernel",
                            (unsigned long long)range);
            return GGML_STATUS_FAILED;
        }
        info[i] = (VkDescriptorBufferInfo){.buffer = buf, .offset = bound, .range = range};
        ranges[i] = (struct vk_range){.buf = buf, .begin = at, .end = at + nbytes};
        if (ds->offset_word[i] >= 0) ds->push[ds->offset_word[i]] = (uint32_t)((at - bound) / ds->elem_size[i]);
    }
    VkPipeline pipeline = vk_pipeline_get(d, ds->shader, ds->spec, ds->n_spec, ds->has_fallback);
    if (!pipeline) {
        rec->pipeline_failed = !d->lost;
        return GGML_STATUS_FAILED;
    }

    for (int i = 0; i < n_bind; i++)
        if (!ds->bind[i].check && ds->bind[i].written) forget_derived(rec, &ranges[i]);
    const enum ggml_status st = vk_order_dispatch(rec, ds, pipeline, info, ranges);
    if (st != GGML_STATUS_SUCCESS) return st;
    rec->n_dispatches++;
    if (d->profile_dispatches && rec->n_profiled < VK_PROFILE_MAX) { /* when this and everything before it is done (flushed) */
        vk_log_timestamp(&d->log, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 2 + (uint32_t)rec->n_profiled);
        rec->profiled[rec->n_profiled++] = ds->shader;
    }
    return GGML_STATUS_SUCCESS;
}

enum ggml_status vk_record_dispatch_chunks(struct vk_rec *rec, struct vk_dispatch *ds, uint32_t n, uint32_t chunk,
                                           int begin_word) {
    for (uint32_t begin = 0; begin < n; begin += chunk) {
        ds->push[begin_word] = begin;
        ds->push[begin_word + 1] = n - begin < chunk ? n : begin + chunk;
        const enum ggml_status st = vk_record_dispatch(rec, ds);
        if (st != GGML_STATUS_SUCCESS) return st;
    }
    return GGML_STATUS_SUCCESS;
}

/* ------------------------------------------------------------- graphs */

/* With GGMLC_DEBUG=vulkan: log the GPU time between the two timestamps of a graph; with
 * vulkan-ops also each dispatch's, from the end of the one before (or the graph's start) to its
 * own end: its run time where a barrier separates them, what it added where they overlap. */
static void log_gpu_time(struct vk_device *d, const struct vk_rec *rec, int n_nodes, double host_us) {
    uint64_t ts[2 + VK_PROFILE_MAX];
    const uint32_t n = 2 + (uint32_t)rec->n_profiled;
    if (vkGetQueryPoolResults(d->dev, d->timestamps, 0, n, n * sizeof ts[0], ts, sizeof ts[0], VK_QUERY_RESULT_64_BIT) != VK_SUCCESS) return;
    const double period_us = d->props.limits.timestampPeriod * 1e-3;
    ggmlc_log(GGML_LOG_LEVEL_INFO, "vulkan %s: graph of %d nodes: %d dispatches, %d barriers (%d only before a write over what was read), "
              "%.2f us on the GPU, %.2f us from its recording's start to its fence\n",
              d->name, n_nodes, rec->n_dispatches, rec->n_barriers, rec->n_war_barriers, (double)(ts[1] - ts[0]) * period_us, host_us);
    for (int i = 0; i < rec->n_profiled; i++) {
        const uint64_t from = i ? ts[2 + i - 1] : ts[0];
        ggmlc_log(GGML_LOG_LEVEL_INFO, "vulkan %s:   dispatch %d %s: %.2f us\n", d->name, i, vk_shader_blobs[rec->profiled[i]].name,
                  (double)(ts[2 + i] - from) * period_us);
    }
}

bool vk_uses_host_memory(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct vk_buffer *b = vk_tensor_buffer(d, node);
    if (b && b->host) return true;
    for (int i = 0; i < GGML_MAX_SRC; i++)
        if (node->src[i] && (b = vk_tensor_buffer(d, node->src[i])) && b->host) return true;
    return false;
}

/* ---------------------------------------- host phase times (GGMLC_DEBUG=vulkan-time)
 *
 * What a graph costs the host around the GPU's work: each segment's phases, and between two
 * segments the waits, transfers and the time spent outside the plugin (the core's scheduler,
 * the application).  Summed over VK_TIME_EVERY segments, then logged as means per segment. */
enum { VK_TIME_EVERY = 100 };

int64_t vk_time_mark(const struct vk_device *d) {
    if (!d->host_time.on) return 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void vk_time_add(struct vk_device *d, enum vk_time_phase phase, int64_t *mark) {
    struct vk_host_time *t = &d->host_time;
    if (!t->on) return;
    const int64_t now = vk_time_mark(d);
    t->ns[phase] += now - *mark;
    if (phase == VK_TIME_WAIT || phase == VK_TIME_SET || phase == VK_TIME_GET) t->between += now - *mark;
    *mark = now;
}

/* A segment starts at start: the time since the last one ended, less the transfers and waits
 * timed meanwhile, was spent outside the plugin. */
static void time_segment_start(struct vk_device *d, int64_t start) {
    struct vk_host_time *t = &d->host_time;
    if (!t->on) return;
    if (t->last_end) t->ns[VK_TIME_OUTSIDE] += start - t->last_end - t->between;
    t->between = 0;
}

static void time_log(struct vk_device *d) {
    struct vk_host_time *t = &d->host_time;
    static const char *const names[VK_TIME_COUNT] = {"begin", "prepare", "record", "parts", "submit",
                                                     "wait",  "set",     "get",    "outside"};
    char line[512];
    int at = 0;
    double total = 0;
    for (int p = 0; p < VK_TIME_COUNT; p++) {
        const double us = 1e-3 * (double)t->ns[p] / t->segments;
        total += us;
        at += snprintf(line + at, sizeof line - (size_t)at, "  %s %.1f", names[p], us);
    }
    ggmlc_log(GGML_LOG_LEVEL_INFO,
              "vulkan %s: host us per segment (mean of %d; %d replayed whole, %d parts replayed):%s  total %.1f\n",
              d->name, t->segments, t->whole, t->replayed, line, total);
    memset(t->ns, 0, sizeof t->ns);
    t->segments = t->replayed = t->whole = 0;
}

/* The segment ended (its last part submitted). */
static void time_segment_end(struct vk_device *d) {
    struct vk_host_time *t = &d->host_time;
    if (!t->on) return;
    t->last_end = vk_time_mark(d);
    if (++t->segments == VK_TIME_EVERY) time_log(d);
}

/* ------------------------------------------------------ submitting in parts
 *
 * The GPU has nothing to do until the segment's first submit, and recording a decode graph's
 * few hundred dispatches takes the host a good part of a token's time: so every
 * GGMLC_VK_SUBMIT_EVERY dispatches (DEFAULT_SUBMIT_EVERY; 0: never) the commands logged so far
 * are submitted as a part of the segment (ggml-vulkan submits every 100 nodes or so), and the
 * GPU runs them while the host records the rest.  A part is a command buffer of its own, kept
 * and replayed as whole segments are (the split falls at the same dispatches every time the
 * same graph comes).  A part begins with no barrier of its own: a barrier's scope, like a
 * fence's, takes in every command submitted to the queue before it, so the barriers go where a
 * dispatch conflicts with one since the last barrier, whichever part that one was in, and the
 * last part's fence, the one waited for, covers the whole segment.
 * A segment splits only while two replay slots are left to it (its parts are in flight).
 * A decode graph is replayed whole from its second token on, its parts in one submit, where
 * each part's command buffer only adds a boundary: in llama.cpp's decoding on an H200 (session
 * 22, three rounds, 100M and 1.1B llama models in F16, Q8_0 and Q4_0) parts of 128 took 1-3.5%
 * less time a token than parts of 64 in 16 of 18 pairs; 256 was no better than 128. */
#define DEFAULT_SUBMIT_EVERY 128

static uint32_t submit_every(void) {
    const struct vk_env_value *e = &vk_tuning()->submit_every;
    return e->set && e->n == 1 ? e->v[0] : DEFAULT_SUBMIT_EVERY;
}

/* Submit the log as a part of the segment once it holds enough dispatches (see above). */
static enum ggml_status submit_part(struct vk_rec *rec) {
    struct vk_device *d = rec->d;
    const uint32_t every = submit_every();
    if (!every || (uint32_t)(rec->n_dispatches - rec->part_start) < every || vk_replay_slots_left(d) < 2)
        return GGML_STATUS_SUCCESS;
    const bool first = rec->n_parts == 0;
    vk_time_add(d, VK_TIME_RECORD, &rec->time_mark);
    const enum ggml_status flushed = vk_order_flush(rec);
    if (flushed != GGML_STATUS_SUCCESS) return flushed;
    if (vk_replay_submit(d, &d->log, first, false, false) != GGMLC_OK) {
        rec->closed = true; /* it ended the device's command buffer, or fenced the parts before */
        return GGML_STATUS_FAILED;
    }
    rec->n_parts++;
    rec->part_start = rec->n_dispatches;
    d->log.n = 0; /* what the dispatches since the last barrier touch stays noted */
    vk_time_add(d, VK_TIME_PARTS, &rec->time_mark);
    return GGML_STATUS_SUCCESS;
}

/* Record nodes [i, n) until one needs the CPU (its index in *cpu_at, else n); caller holds d->lock. */
static enum ggml_status record_nodes(struct vk_rec *rec, struct ggml_tensor **nodes, int i, int n, int *cpu_at) {
    const struct vk_op_kernel *table = vk_op_table();
    *cpu_at = n;
    for (; i < n; i++) {
        struct ggml_tensor *node = nodes[i];
        if (ggmlc_op_is_view(node->op) || ggml_is_empty(node)) continue;
        if (!table[node->op].record) {
            ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "vulkan %s: no kernel for %s (node '%s')", rec->d->name, ggml_op_desc(node),
                            node->name);
            return GGML_STATUS_FAILED;
        }
        if (vk_uses_host_memory(rec->d, node)) {
            *cpu_at = i;
            return GGML_STATUS_SUCCESS;
        }
        rec->pipeline_failed = false;
        rec->transient_node = -1;
        rec->rest = nodes + i + 1, rec->n_rest = n - i - 1;
        enum ggml_status s;
        const int fused_to = vk_fuse_record(rec, nodes, i, n, &s);
        if (fused_to > i) {
            i = fused_to;
        } else {
            s = table[node->op].record(rec, node);
            if (s != GGML_STATUS_SUCCESS && rec->pipeline_failed) { /* from now on the op is declined; this node goes to the CPU */
                rec->d->op_broken[node->op] = true;
                *cpu_at = i;
                return GGML_STATUS_SUCCESS;
            }
        }
        if (s == GGML_STATUS_SUCCESS) s = submit_part(rec);
        if (s != GGML_STATUS_SUCCESS) return s;
    }
    return GGML_STATUS_SUCCESS;
}

/* Transient regions in the ring (GGMLC_VK_TRANSIENT_SLOTS=N: at most N; 1: one region that every
 * node reuses), and the ring's bytes at most.  A node's transient region holds what its own
 * dispatches pass on (weights dequantized into f16 for the next dispatch, split-k partial
 * results for their sum).  With one region, each such node had to wait for the previous one to
 * finish reading it (a WAR conflict, vk-order.c) and the next node's dequantization, which needs
 * nothing of the graph's results, could not run ahead beside earlier dispatches; with a ring,
 * nodes in turn take regions of their own, so those dispatches share barriers with the work
 * before them. */
#define VK_TRANSIENT_SLOTS    8
#define VK_TRANSIENT_RING_MAX (256u << 20)

static int transient_slots(VkDeviceSize transient) {
    const struct vk_env_value *asked = &vk_tuning()->transient_slots;
    if (asked->set && asked->n > 0 && asked->v[0] > 0)
        return asked->v[0] < VK_TRANSIENT_SLOTS ? (int)asked->v[0] : VK_TRANSIENT_SLOTS;
    const VkDeviceSize fit = transient ? VK_TRANSIENT_RING_MAX / transient : 1;
    return fit < 1 ? 1 : fit > VK_TRANSIENT_SLOTS ? VK_TRANSIENT_SLOTS : (int)fit;
}

/* Reserve the scratch memory nodes [i, n) may take (none when it cannot be had: their kernels
 * then do without): the shared part, then the transient ring, with fewer regions (at least
 * one) where the device has not the memory for all. */
static void reserve_scratch(struct vk_rec *rec, struct ggml_tensor **nodes, int i, int n) {
    struct vk_scratch_need need = {0};
    for (; i < n; i++) vk_node_scratch(rec->d, nodes[i], &need);
    if (need.optional > VK_SCRATCH_OPTIONAL_MAX) need.optional = VK_SCRATCH_OPTIONAL_MAX;
    const VkDeviceSize shared = vk_scratch_round(need.needed + need.optional),
                       region = vk_scratch_round(need.transient);
    int slots = need.transient ? transient_slots(region) : 0;
    bool reserved =
        shared + region && vk_scratch_reserve(rec->d, shared + (VkDeviceSize)slots * region);
    if (!reserved && slots > 1) { /* one region, as before the ring */
        slots = 1;
        reserved = vk_scratch_reserve(rec->d, shared + region);
    }
    if (!reserved && slots) { /* without the transient region, rather than without any */
        slots = 0;
        reserved = shared && vk_scratch_reserve(rec->d, shared);
    }
    rec->scratch_size = reserved ? shared : 0;
    rec->optional_left = reserved ? need.optional : 0;
    rec->transient_at = shared;
    rec->transient_size = reserved && slots ? region : 0;
    rec->transient_slots = reserved ? slots : 0;
    rec->transient_next = 0;
    rec->transient_node = -1;
}

/* The test hook of a device lost at a graph's submit (vk-fault.c): the command buffers begun
 * are ended (the parts in flight fenced) and the device marked lost. */
static bool fault_lost(struct vk_device *d, int n_parts) {
    if (!vk_fault_graph_lost()) return false;
    if (n_parts) vk_cmd_submit_part(d, VK_NULL_HANDLE, false, true);
    else vkEndCommandBuffer(d->cmd);
    vk_check(d, VK_ERROR_DEVICE_LOST, "vkQueueSubmit");
    return true;
}

/* Log nodes [i, n) up to the first one that needs the CPU (in *cpu_at) and submit them, after
 * the device's command buffer begun; a segment done whole is kept (vk_segment_keep).  Caller
 * holds d->lock; start: when the segment began (GGMLC_DEBUG=vulkan). */
static enum ggml_status record_segment(struct vk_rec *rec, struct ggml_tensor **nodes, int i, int n, int *cpu_at,
                                       int64_t start) {
    struct vk_device *d = rec->d;
    rec->hz = vk_hazards_new();
    if (!rec->hz) {
        vkEndCommandBuffer(d->cmd); /* discarded: reset at the next begin */
        ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan %s: out of host memory while recording", d->name);
        return GGML_STATUS_ALLOC_FAILED;
    }
    d->log.n = 0;
    d->log.failed = false;
    reserve_scratch(rec, nodes, i, n);
    if (d->timestamps) {
        vk_log_reset_queries(&d->log, d->profile_dispatches ? 2 + VK_PROFILE_MAX : 2);
        vk_log_timestamp(&d->log, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0);
    }
    const bool checks = checks_begin(rec, nodes, i, n);
    vk_time_add(d, VK_TIME_PREPARE, &rec->time_mark);
    enum ggml_status s = checks ? record_nodes(rec, nodes, i, n, cpu_at) : GGML_STATUS_FAILED;
    vk_time_add(d, VK_TIME_RECORD, &rec->time_mark);
    if (s == GGML_STATUS_SUCCESS) s = vk_order_flush(rec); /* the dispatches still held (vk-order.c) */
    if (s == GGML_STATUS_SUCCESS && fault_lost(d, rec->n_parts)) return GGML_STATUS_FAILED; /* tests */
    if (s != GGML_STATUS_SUCCESS) {
        if (!rec->closed && rec->n_parts) vk_cmd_submit_part(d, VK_NULL_HANDLE, false, true); /* the fence after the parts in flight */
        else if (!rec->closed) vkEndCommandBuffer(d->cmd); /* discarded: reset at the next begin */
        return s;
    }
    checks_end(rec, *cpu_at);
    if (d->timestamps) vk_log_timestamp(&d->log, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 1);
    const bool read_back = rec->n_checked || d->timestamps; /* read right after: wait */
    const enum ggmlc_status st = vk_replay_submit(d, &d->log, rec->n_parts == 0, true, read_back);
    if (st != GGMLC_OK) d->n_readback = 0;
    if (st != GGMLC_OK || !checks_passed(rec)) return GGML_STATUS_FAILED;
    if (d->timestamps) log_gpu_time(d, rec, *cpu_at - i, (double)(ggml_time_us() - start));
    if (*cpu_at == n) vk_segment_keep(d, nodes, i, n, rec->checked, rec->n_checked);
    return GGML_STATUS_SUCCESS;
}

/* Submit the kept segment e again (nodes [i, n) are equal to it) after the device's command
 * buffer begun, and check its index reports.  Caller holds d->lock. */
static enum ggml_status replay_whole(struct vk_rec *rec, const struct vk_segment_entry *e) {
    struct vk_device *d = rec->d;
    if (fault_lost(d, 0)) return GGML_STATUS_FAILED; /* tests */
    if (e->n_checked) {
        rec->checked = malloc((size_t)e->n_checked * sizeof *rec->checked);
        if (!rec->checked) {
            vkEndCommandBuffer(d->cmd); /* discarded: reset at the next begin */
            ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan %s: out of host memory", d->name);
            return GGML_STATUS_ALLOC_FAILED;
        }
        memcpy(rec->checked, e->checked, (size_t)e->n_checked * sizeof *rec->checked);
        rec->n_checked = e->n_checked;
    }
    const enum ggmlc_status st = vk_segment_submit(d, e, rec->n_checked > 0);
    if (st != GGMLC_OK) d->n_readback = 0;
    return st == GGMLC_OK && checks_passed(rec) ? GGML_STATUS_SUCCESS : GGML_STATUS_FAILED;
}

/* Record and submit nodes [i, n) up to the first one that needs the CPU (in *cpu_at), or
 * submit the kept segment they equal. */
static enum ggml_status run_segment(struct vk_device *d, struct ggml_tensor **nodes, int i, int n, int *cpu_at) {
    struct vk_rec rec = {.d = d};
    const int64_t start = d->timestamps ? ggml_time_us() : 0;
    rec.time_mark = vk_time_mark(d);
    pthread_mutex_lock(&d->lock);
    time_segment_start(d, rec.time_mark);
    enum ggml_status s = GGML_STATUS_FAILED;
    if (vk_device_open(d) == GGMLC_OK && vk_cmd_begin(d) == GGMLC_OK) {
        vk_time_add(d, VK_TIME_BEGIN, &rec.time_mark);
        d->segment_clock = d->replay_clock;
        const struct vk_segment_entry *kept = vk_segment_find(d, nodes, i, n);
        vk_time_add(d, VK_TIME_PREPARE, &rec.time_mark);
        s = kept ? replay_whole(&rec, kept) : record_segment(&rec, nodes, i, n, cpu_at, start);
        if (s == GGML_STATUS_SUCCESS) {
            vk_time_add(d, VK_TIME_SUBMIT, &rec.time_mark);
            time_segment_end(d);
        }
    }
    pthread_mutex_unlock(&d->lock);
    vk_hazards_free(rec.hz);
    free(rec.checked);
    return s;
}

enum ggml_status vk_compute_from(struct vk_device *d, struct ggml_tensor **nodes, int first, int n,
                                 int *stopped_at) {
    *stopped_at = n;
    return first < n ? run_segment(d, nodes, first, n, stopped_at) : GGML_STATUS_SUCCESS;
}
