/*
 * vk-replay.c - a segment's commands written down before they are recorded, and the command
 * buffers recorded from them kept for the next segment that writes down the same commands.
 *
 * A decode loop or a training loop builds a new graph each step, but the graph is the same
 * each time: the same nodes, at the same addresses, with the same parameters.  Recording its
 * command buffer again costs the driver a call per bind, descriptor push, push-constant write
 * and dispatch, and resetting the old one as much again (on lavapipe that was most of the
 * host's time per graph).  So vk-record.c does not record into a command buffer: it appends
 * each command to the device's log (struct vk_cmd_log), and at the end of the segment the log
 * is compared, byte for byte, with the logs of the command buffers kept from earlier segments.
 * An equal log means an equal command buffer: it is submitted again as it is; otherwise the
 * least recently used one is recorded anew from the log.  Whatever differs — a tensor's
 * address, a shape, an op parameter (a push constant), the graph, the kernel chosen — differs
 * in the log, so no graph is ever computed with another graph's commands.
 *
 * The writes that change from step to step (inputs, vk-deferred.c) stay in the device's own
 * command buffer, submitted first in the same batch.  A kept command buffer names VkBuffers
 * and pipelines by handle: when a VkBuffer is destroyed (a memory block emptied, the staging
 * buffer grown) every kept one is forgotten, since a new buffer may get the old handle.
 * GGMLC_VK_REPLAY=0 turns the keeping off (each segment recorded from its log, once).
 * A long segment is submitted in parts (vk-record.c): each part is such a log and command
 * buffer, and none is reused before the segment's fence (used_by_segment).
 */
#include <stdlib.h>
#include <string.h>

#include "vk-impl.h"

/* Room for one more entry, zeroed (padding included: logs are compared with memcmp). */
static struct vk_cmd *log_append(struct vk_cmd_log *log, enum vk_cmd_kind kind) {
    if (log->n == log->cap) {
        const int cap = log->cap ? 2 * log->cap : 256;
        struct vk_cmd *grown = realloc(log->cmds, (size_t)cap * sizeof *grown);
        if (!grown) {
            log->failed = true;
            return NULL;
        }
        log->cmds = grown;
        log->cap = cap;
    }
    struct vk_cmd *c = &log->cmds[log->n++];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    return c;
}

void vk_log_dispatch(struct vk_cmd_log *log, VkPipeline pipeline, int n_bind, const VkDescriptorBufferInfo *info,
                     const uint32_t *push, const uint32_t groups[3]) {
    struct vk_cmd *c = log_append(log, VK_CMD_DISPATCH);
    if (!c) return;
    c->u.dispatch.pipeline = pipeline;
    c->u.dispatch.n_bind = (uint32_t)n_bind;
    memcpy(c->u.dispatch.info, info, (size_t)n_bind * sizeof *info);
    memcpy(c->u.dispatch.push, push, VK_PUSH_BYTES);
    memcpy(c->u.dispatch.groups, groups, sizeof c->u.dispatch.groups);
}

void vk_log_barrier(struct vk_cmd_log *log, enum vk_cmd_kind kind) { log_append(log, kind); }

void vk_log_fill(struct vk_cmd_log *log, VkBuffer buf, VkDeviceSize off, VkDeviceSize size, uint32_t value) {
    struct vk_cmd *c = log_append(log, VK_CMD_FILL);
    if (!c) return;
    c->u.fill.buf = buf; /* member by member: a struct literal's padding is not zero */
    c->u.fill.off = off;
    c->u.fill.size = size;
    c->u.fill.value = value;
}

void vk_log_copy(struct vk_cmd_log *log, VkBuffer src, VkBuffer dst, VkDeviceSize src_off, VkDeviceSize dst_off,
                 VkDeviceSize size) {
    struct vk_cmd *c = log_append(log, VK_CMD_COPY);
    if (!c) return;
    c->u.copy.src = src;
    c->u.copy.dst = dst;
    c->u.copy.src_off = src_off;
    c->u.copy.dst_off = dst_off;
    c->u.copy.size = size;
}

void vk_log_timestamp(struct vk_cmd_log *log, VkPipelineStageFlagBits stage, uint32_t query) {
    struct vk_cmd *c = log_append(log, VK_CMD_TIMESTAMP);
    if (!c) return;
    c->u.timestamp.stage = stage;
    c->u.timestamp.first = query;
}

void vk_log_reset_queries(struct vk_cmd_log *log, uint32_t count) {
    struct vk_cmd *c = log_append(log, VK_CMD_RESET_QUERIES);
    if (c) c->u.timestamp.count = count; /* from query 0 */
}

/* ------------------------------------------------------------ recording */

static void record_dispatch(const struct vk_device *d, VkCommandBuffer cmd, const struct vk_cmd_dispatch *ds) {
    VkWriteDescriptorSet writes[VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < ds->n_bind; i++)
        writes[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &ds->info[i],
        };
    VkPipelineLayout layout = d->pipe_layout[ds->n_bind];
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, ds->pipeline);
    d->push_descriptor_set(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, ds->n_bind, writes);
    vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, VK_PUSH_BYTES, ds->push);
    vkCmdDispatch(cmd, ds->groups[0], ds->groups[1], ds->groups[2]);
}

static void record_cmd(const struct vk_device *d, VkCommandBuffer cmd, const struct vk_cmd *c) {
    switch (c->kind) {
    case VK_CMD_DISPATCH: record_dispatch(d, cmd, &c->u.dispatch); break;
    case VK_CMD_BARRIER: vk_barrier_full(cmd); break;
    case VK_CMD_HOST_BARRIER: vk_barrier_to_host(cmd); break;
    case VK_CMD_FILL: vkCmdFillBuffer(cmd, c->u.fill.buf, c->u.fill.off, c->u.fill.size, c->u.fill.value); break;
    case VK_CMD_COPY: {
        const VkBufferCopy region = {.srcOffset = c->u.copy.src_off, .dstOffset = c->u.copy.dst_off, .size = c->u.copy.size};
        vkCmdCopyBuffer(cmd, c->u.copy.src, c->u.copy.dst, 1, &region);
        break;
    }
    case VK_CMD_TIMESTAMP: vkCmdWriteTimestamp(cmd, c->u.timestamp.stage, d->timestamps, c->u.timestamp.first); break;
    case VK_CMD_RESET_QUERIES: vkCmdResetQueryPool(cmd, d->timestamps, c->u.timestamp.first, c->u.timestamp.count); break;
    }
}

/* Record the log into slot's command buffer (allocated on first use) and keep a copy of it. */
static enum ggmlc_status record_slot(struct vk_device *d, struct vk_replay_slot *slot, const struct vk_cmd_log *log) {
    enum ggmlc_status st;
    if (!slot->cmd) st = vk_cmd_alloc(d, &slot->cmd);
    else st = vk_check(d, vkResetCommandBuffer(slot->cmd, 0), "vkResetCommandBuffer");
    slot->n = 0; /* matches no log until recorded in full */
    const VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    if (st == GGMLC_OK) st = vk_check(d, vkBeginCommandBuffer(slot->cmd, &begin), "vkBeginCommandBuffer");
    if (st != GGMLC_OK) return st;
    slot->gen++;
    for (int i = 0; i < log->n; i++) record_cmd(d, slot->cmd, &log->cmds[i]);
    st = vk_check(d, vkEndCommandBuffer(slot->cmd), "vkEndCommandBuffer");
    if (st != GGMLC_OK || !d->replay_keep) return st;
    if (slot->cap < log->n) {
        struct vk_cmd *grown = realloc(slot->cmds, (size_t)log->n * sizeof *grown);
        if (!grown) return GGMLC_OK; /* recorded, only not kept */
        slot->cmds = grown;
        slot->cap = log->n;
    }
    memcpy(slot->cmds, log->cmds, (size_t)log->n * sizeof *log->cmds);
    slot->n = log->n;
    return GGMLC_OK;
}

/* Whether slot holds a part of the segment being recorded (in flight: not to be submitted or
 * recorded again before the segment's fence). */
static bool used_by_segment(const struct vk_device *d, const struct vk_replay_slot *s) {
    return s->last_use > d->segment_clock;
}

int vk_replay_slots_left(const struct vk_device *d) {
    int n = 0;
    for (int i = 0; i < VK_REPLAY_SLOTS; i++) n += !used_by_segment(d, &d->replay[i]);
    return n;
}

/* The kept command buffer of an equal log, or NULL. */
static struct vk_replay_slot *find_slot(struct vk_device *d, const struct vk_cmd_log *log) {
    for (int i = 0; i < VK_REPLAY_SLOTS; i++) {
        struct vk_replay_slot *s = &d->replay[i];
        if (s->n == log->n && s->n > 0 && !used_by_segment(d, s) &&
            memcmp(s->cmds, log->cmds, (size_t)log->n * sizeof *log->cmds) == 0)
            return s;
    }
    return NULL;
}

/* The slot to record into: an unused one, else the least recently used (never one of the segment's:
 * vk-record.c splits a segment only while two are left). */
static struct vk_replay_slot *victim_slot(struct vk_device *d) {
    struct vk_replay_slot *v = &d->replay[0];
    for (int i = 1; i < VK_REPLAY_SLOTS; i++)
        if (d->replay[i].last_use < v->last_use) v = &d->replay[i];
    return v;
}

enum ggmlc_status vk_replay_submit(struct vk_device *d, const struct vk_cmd_log *log, bool first, bool last,
                                   bool wait) {
    struct vk_replay_slot *slot = log->failed ? NULL : find_slot(d, log);
    const bool replayed = slot != NULL;
    enum ggmlc_status st = log->failed ? ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan %s: out of host memory while recording", d->name)
                                       : GGMLC_OK;
    if (!slot && st == GGMLC_OK) st = record_slot(d, slot = victim_slot(d), log);
    if (st != GGMLC_OK) {
        if (first) vkEndCommandBuffer(d->cmd); /* discarded: reset at the next begin */
        else vk_cmd_submit_part(d, VK_NULL_HANDLE, false, true); /* the fence after the parts in flight */
        return st;
    }
    slot->last_use = ++d->replay_clock;
    d->host_time.replayed += replayed;
    if (first) d->n_seg_parts = 0;
    d->seg_parts[d->n_seg_parts++] = (int)(slot - d->replay); /* distinct slots: at most all of them */
    if (d->replay_debug)
        ggmlc_log(GGML_LOG_LEVEL_INFO, "vulkan %s: segment of %d commands %s\n", d->name, log->n,
                  replayed ? "replayed" : "recorded");
    st = vk_cmd_submit_part(d, slot->cmd, first, last);
    return st == GGMLC_OK && last && wait ? vk_cmd_wait(d) : st;
}

void vk_replay_forget(struct vk_device *d) {
    for (int i = 0; i < VK_REPLAY_SLOTS; i++) d->replay[i].n = 0;
}

/* ---------------------------------------------------------- segments kept whole
 *
 * Logging a segment's commands is most of the host's work per graph: every node's support,
 * fusion and kernel choice, every binding's place, the hazards between dispatches.  When the
 * segment is the one submitted before, all of that comes out the same and the log equals the
 * kept one; so the kept command buffers are submitted straight away.  What the log depends on
 * is compared instead: each node and each of its sources (address, op, type, flags, op
 * parameters, shape, strides, sources, view, buffer and data address), where each buffer lies
 * in device memory, the device's scratch,
 * check and staging memory, the paths disabled, and the parts' command buffers being the ones
 * recorded then (a slot recorded anew or forgotten since does not match). */

static void segment_tensor(const struct ggml_tensor *t, struct vk_segment_tensor *out) {
    out->t = t;
    out->type = t->type;
    memcpy(out->fields, (const char *)t + offsetof(struct ggml_tensor, buffer), sizeof out->fields);
}

/* Visit each node of [i, n) and then its sources, as segment tensors: visit returns false to stop. */
typedef bool (*segment_visit)(void *arg, const struct vk_segment_tensor *t);

static bool each_segment_tensor(struct ggml_tensor *const *nodes, int i, int n, segment_visit visit, void *arg) {
    struct vk_segment_tensor now;
    for (; i < n; i++) {
        segment_tensor(nodes[i], &now);
        if (!visit(arg, &now)) return false;
        for (int s = 0; s < GGML_MAX_SRC; s++) {
            if (!nodes[i]->src[s]) continue;
            segment_tensor(nodes[i]->src[s], &now);
            if (!visit(arg, &now)) return false;
        }
    }
    return true;
}

struct segment_walk {
    struct vk_segment_entry *e;
    int n;
};

static bool tensor_equal(void *arg, const struct vk_segment_tensor *t) {
    struct segment_walk *w = arg;
    return w->n < w->e->n_tensors && memcmp(t, &w->e->tensors[w->n++], sizeof *t) == 0;
}

/* Where buffer's memory is now (the tensors' bytes: their data addresses are relative to it). */
static struct vk_segment_buffer segment_buffer(const struct vk_device *d, const struct ggml_backend_buffer *buffer) {
    struct vk_segment_buffer sb = {.buffer = buffer};
    if (!buffer || ggml_backend_buffer_get_type((ggml_backend_buffer_t)buffer) != d->buft) return sb;
    const struct vk_buffer *b = ggmlc_buffer_context((ggml_backend_buffer_t)buffer);
    sb.buf = b->alloc.buf;
    sb.offset = b->alloc.offset;
    sb.host = b->host;
    return sb;
}

/* Note t's buffer among e's (false when there are too many to keep). */
static bool keep_buffer(const struct vk_device *d, struct vk_segment_entry *e, const struct ggml_tensor *t) {
    const struct ggml_backend_buffer *buffer = t->view_src ? t->view_src->buffer : t->buffer;
    for (int k = 0; k < e->n_buffers; k++)
        if (e->buffers[k].buffer == buffer) return true;
    if (e->n_buffers == VK_SEGMENT_BUFFERS) return false;
    e->buffers[e->n_buffers++] = segment_buffer(d, buffer);
    return true;
}

struct keep_walk {
    struct segment_walk w;
    const struct vk_device *d;
};

static bool tensor_keep(void *arg, const struct vk_segment_tensor *t) {
    struct keep_walk *k = arg;
    struct vk_segment_entry *e = k->w.e;
    if (!keep_buffer(k->d, e, t->t)) return false;
    if (e->n_tensors == e->cap_tensors) {
        const int cap = e->cap_tensors ? 2 * e->cap_tensors : 1024;
        struct vk_segment_tensor *grown = realloc(e->tensors, (size_t)cap * sizeof *grown);
        if (!grown) return false;
        e->tensors = grown;
        e->cap_tensors = cap;
    }
    e->tensors[e->n_tensors++] = *t;
    return true;
}

/* e's buffers are where they were (a buffer freed and another made at its address is not). */
static bool buffers_unmoved(const struct vk_device *d, const struct vk_segment_entry *e) {
    for (int k = 0; k < e->n_buffers; k++) {
        const struct vk_segment_buffer now = segment_buffer(d, e->buffers[k].buffer);
        if (memcmp(&now, &e->buffers[k], sizeof now) != 0) return false;
    }
    return true;
}

/* The device's state that e's commands were chosen by and name is unchanged, and its parts'
 * command buffers are the ones recorded for it. */
static bool segment_state_holds(const struct vk_device *d, const struct vk_segment_entry *e) {
    if (e->scratch_buf != d->scratch.buf || e->scratch_offset != d->scratch.offset || e->checks_buf != d->checks.buf ||
        e->checks_offset != d->checks.offset || e->staging_buf != d->staging.buf ||
        e->disabled_paths != d->disabled_paths || memcmp(e->op_broken, d->op_broken, sizeof e->op_broken) != 0)
        return false;
    for (int k = 0; k < e->n_parts; k++) {
        const struct vk_replay_slot *slot = &d->replay[e->parts[k]];
        if (slot->n == 0 || slot->gen != e->part_gen[k]) return false;
    }
    return true;
}

const struct vk_segment_entry *vk_segment_find(struct vk_device *d, struct ggml_tensor *const *nodes, int i, int n) {
    if (!d->replay_keep || d->timestamps) return NULL;
    for (int k = 0; k < VK_SEGMENT_CACHE; k++) {
        struct vk_segment_entry *e = &d->segments[k];
        if (!e->valid || e->n_nodes != n - i || !segment_state_holds(d, e)) continue;
        struct segment_walk w = {e, 0};
        if (each_segment_tensor(nodes, i, n, tensor_equal, &w) && w.n == e->n_tensors && buffers_unmoved(d, e)) {
            e->last_use = ++d->segments_clock;
            return e;
        }
    }
    return NULL;
}

/* The entry to keep a new segment in: an unused one, else the least recently used. */
static struct vk_segment_entry *segment_victim(struct vk_device *d) {
    struct vk_segment_entry *v = &d->segments[0];
    for (int k = 0; k < VK_SEGMENT_CACHE && v->valid; k++)
        if (!d->segments[k].valid || d->segments[k].last_use < v->last_use) v = &d->segments[k];
    return v;
}

static bool keep_checked(struct vk_segment_entry *e, const struct ggml_tensor *const *checked, int n_checked) {
    if (n_checked > e->cap_checked) {
        const struct ggml_tensor **grown = realloc(e->checked, (size_t)n_checked * sizeof *grown);
        if (!grown) return false;
        e->checked = grown;
        e->cap_checked = n_checked;
    }
    if (n_checked) memcpy(e->checked, checked, (size_t)n_checked * sizeof *checked);
    e->n_checked = n_checked;
    return true;
}

void vk_segment_keep(struct vk_device *d, struct ggml_tensor *const *nodes, int i, int n,
                     const struct ggml_tensor *const *checked, int n_checked) {
    if (!d->replay_keep || d->timestamps || d->n_seg_parts == 0) return;
    struct vk_segment_entry *e = segment_victim(d);
    e->valid = false;
    e->n_tensors = e->n_buffers = 0;
    struct keep_walk k = {{e, 0}, d};
    if (!each_segment_tensor(nodes, i, n, tensor_keep, &k) || !keep_checked(e, checked, n_checked)) return;
    e->n_nodes = n - i;
    e->n_parts = d->n_seg_parts;
    for (int k = 0; k < e->n_parts; k++) {
        e->parts[k] = d->seg_parts[k];
        e->part_gen[k] = d->replay[d->seg_parts[k]].gen;
    }
    memcpy(e->readback, d->readback, sizeof e->readback);
    e->n_readback = d->n_readback;
    e->scratch_buf = d->scratch.buf;
    e->scratch_offset = d->scratch.offset;
    e->checks_buf = d->checks.buf;
    e->checks_offset = d->checks.offset;
    e->staging_buf = d->staging.buf;
    e->disabled_paths = d->disabled_paths;
    memcpy(e->op_broken, d->op_broken, sizeof e->op_broken);
    e->last_use = ++d->segments_clock;
    e->valid = true;
}

/* The device's command buffer (the pending writes) and the kept parts of e, in one submit with
 * the fence: they were recorded already, so nothing is gained by submitting them apart. */
static enum ggmlc_status submit_all_parts(struct vk_device *d, const struct vk_segment_entry *e) {
    VkCommandBuffer cmds[1 + VK_REPLAY_SLOTS];
    cmds[0] = d->cmd;
    for (int k = 0; k < e->n_parts; k++) {
        struct vk_replay_slot *slot = &d->replay[e->parts[k]];
        slot->last_use = ++d->replay_clock;
        cmds[1 + k] = slot->cmd;
    }
    enum ggmlc_status st = vk_check(d, vkEndCommandBuffer(d->cmd), "vkEndCommandBuffer");
    if (st == GGMLC_OK) st = vk_check(d, vkResetFences(d->dev, 1, &d->fence), "vkResetFences");
    const VkSubmitInfo batch = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                                .commandBufferCount = (uint32_t)(1 + e->n_parts),
                                .pCommandBuffers = cmds};
    if (st == GGMLC_OK) st = vk_check(d, vkQueueSubmit(d->queue, 1, &batch, d->fence), "vkQueueSubmit");
    ggmlc_counter_add(GGMLC_COUNTER_SUBMITS, 1);
    d->in_flight = st == GGMLC_OK;
    return st;
}

enum ggmlc_status vk_segment_submit(struct vk_device *d, const struct vk_segment_entry *e, bool wait) {
    d->segment_clock = d->replay_clock;
    const enum ggmlc_status st = submit_all_parts(d, e);
    if (st != GGMLC_OK) return st;
    memcpy(d->readback, e->readback, sizeof d->readback);
    d->n_readback = e->n_readback;
    d->host_time.replayed += e->n_parts;
    d->host_time.whole++;
    if (d->replay_debug)
        ggmlc_log(GGML_LOG_LEVEL_INFO, "vulkan %s: segment of %d nodes replayed whole (%d parts, one submit): its commands replayed without logging them\n", d->name,
                  e->n_nodes, e->n_parts);
    return wait ? vk_cmd_wait(d) : st;
}

void vk_segment_release(struct vk_device *d) {
    for (int k = 0; k < VK_SEGMENT_CACHE; k++) {
        free(d->segments[k].tensors);
        free(d->segments[k].checked);
        d->segments[k] = (struct vk_segment_entry){0};
    }
}

void vk_replay_release(struct vk_device *d) {
    for (int i = 0; i < VK_REPLAY_SLOTS; i++) {
        free(d->replay[i].cmds);
        d->replay[i] = (struct vk_replay_slot){0}; /* command buffers: freed with the pool */
    }
    free(d->log.cmds);
    d->log = (struct vk_cmd_log){0};
    vk_segment_release(d);
}
