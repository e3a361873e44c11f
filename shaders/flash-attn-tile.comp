#version 450
// flash_attn_ext for many query rows: one workgroup per tile of R rows of one K/V head group and
// batch (workgroup x: tile, y: K/V head, z: batch).  A tile's rows run over (query, head of the
// group), head fastest, so the rk2 query heads that share a K/V head share its K and V tiles.
// Keys are taken BC at a time: the mask tile first (slope * mask, -inf past the keys or rows);
// a tile whose mask is -inf for every row is skipped (causal prompts skip about half).  Then
// the K tile staged in shared memory, the scores S = Q K^T * scale (soft-capped, plus the mask),
// the online softmax (each row's running maximum and normaliser) and O += P V with the V tile
// staged where K was.  Eight threads (lanes) per row: lane l scores keys l, l + 8, ... and sums
// the vec4s of values l, l + 8, ...; f32 throughout.  d[:, head, query, batch] = softmax(scores) V; optional
// sinks join the normaliser only; a row without a finite score gives 0, as flash-attn.comp does.
// Head sizes up to DMAX; BC = 32 keys for heads up to 64, fewer for larger ones (shared memory
// stays under 32 KiB).  Bindings as flash-attn.comp's (the partials' one unused).
#include "types.glsl"

layout(local_size_x = 128) in;
layout(binding = 0) readonly buffer Q { float data_q[]; };
layout(binding = 1) readonly buffer K { STORAGE_T(K_TYPE) data_k[]; };
layout(binding = 2) readonly buffer V { STORAGE_T(K_TYPE) data_v[]; };
layout(binding = 3) readonly buffer M { STORAGE_T(M_TYPE) data_m[]; };
layout(binding = 4) readonly buffer S { float data_s[]; };
layout(binding = 5) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_flash_attn);
#include "fattn-kv.glsl"

// R rows of LANES threads; keys per tile at most KPT * LANES; head sizes up to DMAX (ATTN_TILE_*
// in ops-nn.c).  Rows of Q, K and V are held as vec4s (4-float shared loads: a quarter of the
// load instructions), padded with zeros to a multiple of 4 and one vec4 apart against bank
// conflicts; KV_VEC4 vec4s hold the K, then the V, tile.
const uint WG = 128, LANES = 8, R = WG / LANES, KPT = 4, BC_MAX = KPT * LANES, DMAX = 256;
const uint D4P_MAX = DMAX / 4 + 1, OPT = DMAX / 4 / LANES, KV_VEC4 = 640;
const float NEG_INF = -1.0 / 0.0;

shared vec4 qs[R * D4P_MAX];     // the tile's query rows
shared vec4 kvs[KV_VEC4];        // K, then V, of BC keys
shared float ss[R * BC_MAX];     // slope * mask, then the scores
shared float pw[R * BC_MAX];     // the softmax weights exp(s - running maximum)
shared float row_slope[R];
shared uint row_mask[R];         // the first word of each row's mask row
shared uint live;                // the last key tile with a finite mask value, plus one

// The row g of a K/V head group's rows: its query and head.
uvec2 row_query_head(uint g, uint kvh) { return uvec2(g / p.rk2, kvh * p.rk2 + g % p.rk2); }

void load_queries(uint g0, uint kvh, uint b, uint rows) {
    const uint t = gl_LocalInvocationID.x, dk4 = (p.DK + 3) / 4;
    for (uint e = t; e < R * dk4; e += WG) {
        const uint r = e / dk4, i = (e % dk4) * 4;
        const uvec2 qh = row_query_head(g0 + r, kvh);
        const uint q0 = p.off_q + qh.x * p.nbq1 + qh.y * p.nbq2 + b * p.nbq3 + i;
        vec4 x = vec4(0.0);
        if (g0 + r < rows)
            for (uint c = 0; c < 4 && i + c < p.DK; c++) x[c] = data_q[q0 + c];
        qs[r * (dk4 + 1) + e % dk4] = x;
    }
    if (t < R) {
        const uvec2 qh = row_query_head(g0 + t, kvh);
        row_slope[t] = alibi_slope(qh.y);
        row_mask[t] = p.off_m + ((b % p.mne3) * p.mne2 + qh.y % p.mne2) * p.mne1 * p.mne0 + qh.x * p.mne0;
    }
}

// This thread's values of slope * mask over keys j0 .. j0 + bc (-inf past the keys and the rows):
// value e = t + u * WG of the tile, row e / bc, in m[u].  The next tile's are fetched while this
// one is computed.
const uint MASK_PER_THREAD = R * BC_MAX / WG;
void fetch_mask(uint j0, uint bc, uint g0, uint rows, out float m[MASK_PER_THREAD]) {
    [[unroll]] for (uint u = 0; u < MASK_PER_THREAD; u++) {
        const uint e = gl_LocalInvocationID.x + u * WG, r = e / bc, j = j0 + e % bc;
        m[u] = NEG_INF;
        if (e < R * bc && g0 + r < rows && j < p.NKV)
            m[u] = (p.flags & 1u) != 0 ? row_slope[r] * TO_F32(M_TYPE, data_m[row_mask[r] + j]) : 0.0;
    }
}

// ss = the mask tile fetch_mask gave; live = tile + 1 where any value is finite
void store_mask(float m[MASK_PER_THREAD], uint bc, uint tile) {
    [[unroll]] for (uint u = 0; u < MASK_PER_THREAD; u++) {
        const uint e = gl_LocalInvocationID.x + u * WG;
        if (e >= R * bc) break;
        ss[(e / bc) * BC_MAX + e % bc] = m[u];
        if (m[u] != NEG_INF) live = tile + 1;
    }
}

// This thread's vec4s of rows j0 .. j0 + bc of K (v false) or V (0 past the keys and the head):
// vec4 e = t + u * WG of the tile in x[u].  Both tiles are fetched before either is stored, so
// that their reads from memory overlap.
const uint KV_PER_THREAD = (KV_VEC4 + WG - 1) / WG;
void fetch_kv(bool v, uint base, uint j0, uint bc, out vec4 x[KV_PER_THREAD]) {
    const uint n = v ? p.DV : p.DK, n4 = (n + 3) / 4, nb1 = v ? p.nbv1 : p.nbk1;
    [[unroll]] for (uint u = 0; u < KV_PER_THREAD; u++) {
        const uint e = gl_LocalInvocationID.x + u * WG, jj = e / n4, i = (e % n4) * 4, j = j0 + jj, row = base + j * nb1;
        x[u] = vec4(0.0);
        if (e < bc * n4 && j < p.NKV)
            for (uint c = 0; c < 4 && i + c < n; c++) x[u][c] = v ? KV_AT(data_v, row, i + c) : KV_AT(data_k, row, i + c);
    }
}

// kvs = the tile fetch_kv gave, rows d4p vec4s apart
void store_kv(vec4 x[KV_PER_THREAD], uint bc, uint d4p) {
    const uint n4 = d4p - 1;
    [[unroll]] for (uint u = 0; u < KV_PER_THREAD; u++) {
        const uint e = gl_LocalInvocationID.x + u * WG;
        if (e < bc * n4) kvs[(e / n4) * d4p + e % n4] = x[u];
    }
}

void main() {
    const uint t = gl_LocalInvocationID.x, r = t / LANES, l = t % LANES;
    // the last rows first: under a causal mask they see the most keys
    const uint kvh = gl_WorkGroupID.y, b = gl_WorkGroupID.z, rows = p.NQ * p.rk2, g0 = (gl_NumWorkGroups.x - 1 - gl_WorkGroupID.x) * R;
    const uint dk4 = (p.DK + 3) / 4, dv4 = (p.DV + 3) / 4, dk4p = dk4 + 1, dv4p = dv4 + 1;
    const uint bc = min(BC_MAX, (KV_VEC4 / (max(dk4, dv4) + 1)) & ~(LANES - 1u)), kpt = bc / LANES;
    const uint ncol = dv4 > l ? (dv4 - l + LANES - 1) / LANES : 0u; // this lane's vec4s of values: l, l + 8, ...
    const uint k0 = p.off_k + kvh * p.nbk2 + (b / p.rk3) * p.nbk3, v0 = p.off_v + kvh * p.nbv2 + (b / p.rk3) * p.nbv3;
    if (t == 0) live = 0;
    load_queries(g0, kvh, b, rows);
    float run_max = NEG_INF, run_sum = 0.0;
    vec4 o[OPT];
    [[unroll]] for (uint c = 0; c < OPT; c++) o[c] = vec4(0.0);
    barrier();
    float mx[MASK_PER_THREAD];
    fetch_mask(0, bc, g0, rows, mx);
    for (uint j0 = 0, tile = 0; j0 < p.NKV; j0 += bc, tile++) {
        store_mask(mx, bc, tile);
        barrier(); // the mask tile and live complete; the last tile's V read
        const bool masked = live != tile + 1; // every row masked for these keys
        fetch_mask(j0 + bc, bc, g0, rows, mx);
        if (masked) continue;
        vec4 kx[KV_PER_THREAD], vx[KV_PER_THREAD];
        fetch_kv(false, k0, j0, bc, kx);
        fetch_kv(true, v0, j0, bc, vx);
        store_kv(kx, bc, dk4p);
        barrier();
        vec4 s4[KPT] = vec4[KPT](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));
        for (uint i = 0; i < dk4; i++) {
            const vec4 q = qs[r * dk4p + i];
            [[unroll]] for (uint c = 0; c < KPT; c++) {
                if (c >= kpt) break;
                s4[c] = fma(q, kvs[(l + c * LANES) * dk4p + i], s4[c]);
            }
        }
        [[unroll]] for (uint c = 0; c < KPT; c++) {
            if (c >= kpt) break;
            const uint at = r * BC_MAX + l + c * LANES;
            const float m = ss[at];
            float x = (s4[c].x + s4[c].y + s4[c].z + s4[c].w) * p.scale;
            if (p.softcap != 0.0) x = p.softcap * tanh(clamp(x / p.softcap, -15.0, 15.0));
            ss[at] = m == NEG_INF ? NEG_INF : x + m;
        }
        barrier(); // the scores complete; K read
        float tile_max = NEG_INF;
        for (uint jj = 0; jj < bc; jj++) tile_max = max(tile_max, ss[r * BC_MAX + jj]);
        const float new_max = max(run_max, tile_max);
        const float shrink = run_max == NEG_INF ? 0.0 : exp(run_max - new_max);
        run_max = new_max;
        [[unroll]] for (uint c = 0; c < KPT; c++) {
            if (c >= kpt) break;
            const uint at = r * BC_MAX + l + c * LANES;
            pw[at] = ss[at] == NEG_INF ? 0.0 : exp(ss[at] - new_max);
        }
        store_kv(vx, bc, dv4p);
        barrier(); // the weights and the V tile complete
        [[unroll]] for (uint c = 0; c < OPT; c++) {
            if (c >= ncol) break;
            o[c] *= shrink;
        }
        float sum = 0.0;
        for (uint jj = 0; jj < bc; jj++) {
            const float w = pw[r * BC_MAX + jj];
            sum += w;
            [[unroll]] for (uint c = 0; c < OPT; c++) {
                if (c >= ncol) break;
                o[c] = fma(vec4(w), kvs[jj * dv4p + l + c * LANES], o[c]);
            }
        }
        run_sum = run_sum * shrink + sum;
    }
    if (g0 + r >= rows) return;
    const uvec2 qh = row_query_head(g0 + r, kvh);
    if ((p.flags & 2u) != 0) {
        const float sink = data_s[p.off_s + qh.y];
        const float new_max = max(run_max, sink);
        const float shrink = run_max == NEG_INF ? 0.0 : exp(run_max - new_max);
        run_sum = run_sum * shrink + exp(sink - new_max);
        [[unroll]] for (uint c = 0; c < OPT; c++) o[c] *= shrink;
    }
    const float inv = run_sum > 0.0 ? 1.0 / run_sum : 0.0;
    const uint d0 = p.off_d + ((b * p.NQ + qh.x) * p.H + qh.y) * p.DV;
    [[unroll]] for (uint c = 0; c < OPT; c++) {
        if (c >= ncol) break;
        const uint col = (l + c * LANES) * 4;
        for (uint e = 0; e < 4 && col + e < p.DV; e++) data_d[d0 + col + e] = o[c][e] * inv;
    }
}
