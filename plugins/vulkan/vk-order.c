/*
 * vk-order.c - where the barriers of a segment go, and which dispatches share them.
 *
 * Dispatches run concurrently unless a barrier separates them, and on a large GPU each barrier
 * costs a few microseconds however little the dispatches on either side compute (4-5 us on an
 * H200): a decode graph of 171 dispatches had 160 of them.  A barrier is needed between two
 * dispatches only when they conflict: the later one reads or writes bytes the earlier one
 * writes (RAW, WAW), or writes bytes it reads (WAR: the allocator reuses the memory of dead
 * tensors).  Taken in graph order, a dispatch that conflicts with anything since the last
 * barrier puts a barrier before itself, and everything after it waits behind that barrier too,
 * even nodes that need nothing of it (a layer's Q rope stands between the Q and the K
 * products).
 *
 * So dispatches are held in a window instead, each with a level: 0 when it conflicts with
 * nothing since the last barrier recorded, else one more than the highest level of what it
 * conflicts with (1 for what was recorded before the window).  When the window is flushed (a
 * part submitted, a barrier of the segment's own, its end, every VK_ORDER_WINDOW dispatches)
 * the levels go to the log in order, a barrier between two levels, each level's dispatches in
 * graph order.  Two conflicting dispatches keep their order (the later one's level is higher)
 * and have a barrier between them; dispatches that do not conflict may swap, which changes
 * nothing they compute: every byte a dispatch touches is one of its bindings.  The number of
 * barriers is the longest chain of conflicts in the window, the least any order of it needs.
 *
 * GGMLC_VK_REORDER=0 flushes after every dispatch: graph order, a barrier before each dispatch
 * that conflicts with one since the last barrier.  With GGMLC_DEBUG=vulkan-ops (a timestamp
 * after each dispatch) it is flushed after each dispatch as well.
 */
#include <stdlib.h>
#include <string.h>

#include "vk-impl.h"

/* Dispatches held at most before they are flushed (bounds the host's work per dispatch). */
#define VK_ORDER_WINDOW 128

struct range_list {
    struct vk_range *r;
    int n, cap;
};

/* A dispatch held in the window: its command and the bytes it touches. */
struct held_dispatch {
    VkPipeline pipeline;
    int n_bind;
    VkDescriptorBufferInfo info[VK_MAX_BINDINGS];
    uint32_t push[VK_PUSH_BYTES / 4];
    uint32_t groups[3];
    struct vk_range ranges[VK_MAX_BINDINGS]; /* the bindings that are not index-check slots */
    bool written[VK_MAX_BINDINGS];
    int n_ranges;
    int level, next; /* next: the next held dispatch of its level, -1: none */
    bool after_write; /* its level follows from a RAW or WAW conflict, not only from a WAR one */
};

struct vk_hazards {
    struct range_list written, read; /* recorded since the last barrier in the log */
    struct held_dispatch *held;      /* the window, in graph order */
    int n_held, cap_held, top_level;
    /* each level's held dispatches, chained in graph order (levels never pass the window's size) */
    int first[VK_ORDER_WINDOW + 1], last[VK_ORDER_WINDOW + 1];
    bool after_write[VK_ORDER_WINDOW + 1]; /* a dispatch of the level comes after a write */
};

static void clear_levels(struct vk_hazards *hz) {
    for (int l = 0; l <= hz->top_level; l++) hz->first[l] = -1, hz->after_write[l] = false;
    hz->n_held = 0;
    hz->top_level = 0;
}

struct vk_hazards *vk_hazards_new(void) {
    struct vk_hazards *hz = calloc(1, sizeof(struct vk_hazards));
    if (hz) {
        hz->top_level = VK_ORDER_WINDOW;
        clear_levels(hz);
    }
    return hz;
}

void vk_hazards_free(struct vk_hazards *hz) {
    if (!hz) return;
    free(hz->written.r);
    free(hz->read.r);
    free(hz->held);
    free(hz);
}

static bool ranges_meet(const struct vk_range *a, const struct vk_range *b) {
    return a->buf == b->buf && a->begin < b->end && b->begin < a->end;
}

static bool overlaps(const struct range_list *l, const struct vk_range *x) {
    for (int i = 0; i < l->n; i++)
        if (ranges_meet(&l->r[i], x)) return true;
    return false;
}

static bool add_range(struct range_list *l, const struct vk_range *x) {
    if (l->n == l->cap) {
        const int cap = l->cap ? 2 * l->cap : 16;
        struct vk_range *grown = realloc(l->r, (size_t)cap * sizeof *grown);
        if (!grown) return false;
        l->r = grown;
        l->cap = cap;
    }
    l->r[l->n++] = *x;
    return true;
}

static void log_barrier(struct vk_rec *rec) {
    vk_log_barrier(&rec->d->log, VK_CMD_BARRIER);
    rec->hz->written.n = 0;
    rec->hz->read.n = 0;
    rec->n_barriers++;
}

/* Log a held dispatch and note the bytes it touches as touched since the last barrier. */
static bool log_held(struct vk_rec *rec, const struct held_dispatch *h) {
    for (int i = 0; i < h->n_ranges; i++)
        if (!add_range(h->written[i] ? &rec->hz->written : &rec->hz->read, &h->ranges[i])) return false;
    vk_log_dispatch(&rec->d->log, h->pipeline, h->n_bind, h->info, h->push, h->groups);
    return true;
}

enum ggml_status vk_order_flush(struct vk_rec *rec) {
    struct vk_hazards *hz = rec->hz;
    enum ggml_status st = GGML_STATUS_SUCCESS;
    for (int level = 0; level <= hz->top_level && hz->n_held; level++) {
        if (level > 0) {
            rec->n_war_barriers += !hz->after_write[level]; /* memory a dispatch before it still reads, reused */
            log_barrier(rec);
        }
        for (int k = hz->first[level]; k >= 0; k = hz->held[k].next)
            if (!log_held(rec, &hz->held[k])) st = GGML_STATUS_ALLOC_FAILED;
    }
    clear_levels(hz);
    if (st != GGML_STATUS_SUCCESS) ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan: out of host memory while recording");
    return st;
}

enum ggml_status vk_order_barrier(struct vk_rec *rec) {
    const enum ggml_status st = vk_order_flush(rec);
    log_barrier(rec);
    return st;
}

/* The level of h (see the top of the file): after what it conflicts with. */
static void place(const struct vk_hazards *hz, struct held_dispatch *h) {
    int after_write = 0, over_read = 0; /* the least level each kind of conflict allows */
    for (int i = 0; i < h->n_ranges; i++) {
        if (overlaps(&hz->written, &h->ranges[i])) after_write = 1;
        if (h->written[i] && overlaps(&hz->read, &h->ranges[i])) over_read = 1;
    }
    for (int k = hz->n_held - 1; k >= 0; k--) {
        const struct held_dispatch *e = &hz->held[k];
        if (e->level + 1 <= after_write && e->level + 1 <= over_read) continue; /* raises neither */
        for (int i = 0; i < h->n_ranges; i++)
            for (int j = 0; j < e->n_ranges; j++) {
                if (!ranges_meet(&h->ranges[i], &e->ranges[j])) continue;
                if (e->written[j] && e->level + 1 > after_write) after_write = e->level + 1;
                else if (h->written[i] && e->level + 1 > over_read) over_read = e->level + 1;
            }
    }
    h->level = after_write > over_read ? after_write : over_read;
    h->after_write = after_write == h->level;
}

enum ggml_status vk_order_dispatch(struct vk_rec *rec, const struct vk_dispatch *ds, VkPipeline pipeline,
                                   const VkDescriptorBufferInfo *info, const struct vk_range *ranges) {
    struct vk_hazards *hz = rec->hz;
    if (hz->n_held == hz->cap_held) {
        const int cap = hz->cap_held ? 2 * hz->cap_held : 32;
        struct held_dispatch *grown = realloc(hz->held, (size_t)cap * sizeof *grown);
        if (!grown) {
            ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan: out of host memory while recording");
            return GGML_STATUS_ALLOC_FAILED;
        }
        hz->held = grown;
        hz->cap_held = cap;
    }
    struct held_dispatch *h = &hz->held[hz->n_held];
    h->pipeline = pipeline;
    h->n_bind = ds->n_bind;
    memcpy(h->info, info, (size_t)ds->n_bind * sizeof *info);
    memcpy(h->push, ds->push, sizeof h->push);
    memcpy(h->groups, ds->groups, sizeof h->groups);
    h->n_ranges = 0;
    for (int i = 0; i < ds->n_bind; i++) {
        if (ds->bind[i].check) continue; /* the check slots need no barriers: a node's dispatches only ever set its slot */
        h->ranges[h->n_ranges] = ranges[i];
        h->written[h->n_ranges++] = ds->bind[i].written;
    }
    place(hz, h);
    const int k = hz->n_held++;
    if (h->level > hz->top_level) {
        for (int l = hz->top_level + 1; l <= h->level; l++) hz->first[l] = -1, hz->after_write[l] = false;
        hz->top_level = h->level;
    }
    h->next = -1;
    if (hz->first[h->level] < 0) hz->first[h->level] = k;
    else hz->held[hz->last[h->level]].next = k;
    hz->last[h->level] = k;
    hz->after_write[h->level] |= h->after_write;
    const bool in_order = vk_tuning()->reorder_off || rec->d->profile_dispatches;
    return in_order || hz->n_held >= VK_ORDER_WINDOW ? vk_order_flush(rec) : GGML_STATUS_SUCCESS;
}
