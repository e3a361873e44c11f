#version 450
// Matrix-vector product (N <= 8 columns of b) with 32-value quantized blocks
// (q4_0, q4_1, q5_0, q5_1, q8_0).  Memory-bound, so a is read with coalesced
// 32-bit loads: a block is 18-34 bytes, and a lane reading its own block
// straight from memory would touch a different cache line than its
// neighbours on every load.  So a workgroup copies R rows x WG blocks of a
// into shared memory word by word; then thread t dots one block per row,
// decoded from shared memory by quant-words.glsl, with the 32 values of b it
// multiplies held in registers for all R rows.  Sums: per subgroup, then
// across subgroups.  Workgroups loop over row groups (a grid of at most
// `groups`), so when K fits one chunk and N = 1, a thread loads its part of b
// once; the next tile of a is loaded into registers while the current one is
// multiplied.  Shared memory is kept small (a only): occupancy hides latency.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "types.glsl"
#include "mm-push.glsl"

layout(constant_id = 0) const uint WG = 128;  // threads = blocks per chunk (even)
layout(constant_id = 1) const uint R = 4;     // rows per row group
layout(constant_id = 2) const uint NC = 1;    // columns of b = N (1..8)
layout(constant_id = 3) const uint CONVERT = 0; // quants to floats: 0 bit tricks, 1 int-to-float (quant-words.glsl)
layout(constant_id = 4) const uint BVEC = 0;    // 1: b's offset and strides are multiples of 4 floats
layout(local_size_x_id = 0) in;

#if QTYPE == 2
#define QWORDS 9
#elif QTYPE == 3
#define QWORDS 10
#elif QTYPE == 6
#define QWORDS 11
#elif QTYPE == 7
#define QWORDS 12
#else
#define QWORDS 17
#endif
#define HAS_MIN (QTYPE == 3 || QTYPE == 7)

layout(binding = 0) readonly buffer A { uint data_a[]; };  // offsets and strides in halfwords
layout(binding = 1) readonly buffer B { float data_b[]; };
layout(binding = 1) readonly buffer B4 { vec4 data_b4[]; };  // the same, 16 bytes at a time
layout(binding = 2) writeonly buffer D { float data_d[]; };

const uint RS = WG * QWORDS / 2 + 2;   // shared words per staged row
shared uint sa[R * RS];
shared float red[32 * R * NC];         // [subgroup][row * NC + column], at most 32 subgroups
float xb[32];
#include "quant-words.glsl"

// The block thread t works on.  With an odd number of halfwords per block,
// consecutive blocks alternate between starting on a word boundary or not;
// even blocks go to the first half of the workgroup and odd ones to the
// second, so the alignment is the same across a subgroup (no divergence) and
// neighbouring lanes read words QWORDS apart (different banks).
uint block_of(uint t) { return QWORDS % 2 == 1 ? 2 * (t % (WG / 2)) + t / (WG / 2) : t; }

// xb = b[b_at + kt * 32 ...], thread t's block of one column (zeros past nb blocks)
// (a lane's 32 values are a cache line of their own: 16-byte loads take 4x fewer of them)
void load_x(uint b_at, uint kt, uint nb) {
    if (BVEC == 1) {
        [[unroll]] for (uint v = 0; v < 8; v++) {
            const vec4 q = kt < nb ? data_b4[(b_at + kt * 32) / 4 + v] : vec4(0.0);
            xb[4 * v] = q.x; xb[4 * v + 1] = q.y; xb[4 * v + 2] = q.z; xb[4 * v + 3] = q.w;
        }
        return;
    }
    [[unroll]] for (uint e = 0; e < 32; e++) xb[e] = kt < nb ? data_b[b_at + kt * 32 + e] : 0.0;
}

// The next tile of a (R rows x one chunk of blocks) is loaded into registers
// while the current one is multiplied, then stored into sa.
const uint PER = (RS + WG - 1) / WG;   // words per thread and row
uint ra[R * PER];

// halfwords [h0, h0 + len) of each row of group g, chunk c, from the word holding h0;
// rows past the end read the last row again (not used)
void fetch_a(uint a_base, uint g, uint c, uint nblocks) {
    const uint kb0 = c * WG, len = min(WG, nblocks - kb0) * QWORDS;
    [[unroll]] for (uint r = 0; r < R; r++) {
        const uint h0 = a_base + min(g * R + r, p.M - 1) * p.nb01 + kb0 * QWORDS;
        const uint first = h0 >> 1, count = ((h0 + len - 1) >> 1) - first + 1;
        [[unroll]] for (uint j = 0; j < PER; j++) {
            const uint i = gl_LocalInvocationID.x + j * WG;
            ra[r * PER + j] = i < count ? data_a[first + i] : 0u;
        }
    }
}

void stash_a() {
    [[unroll]] for (uint r = 0; r < R; r++)
        [[unroll]] for (uint j = 0; j < PER; j++) {
            const uint i = gl_LocalInvocationID.x + j * WG;
            if (i < RS) sa[r * RS + i] = ra[r * PER + j];
        }
}

float acc[R * NC];

// acc[r][j] += the dot of thread t's block in staged row r with column j of b (in xb)
void add_column(uint j, uint rows, uint row_parity) {
    const uint kt = block_of(gl_LocalInvocationID.x);
    float xsum = 0.0;
#if HAS_MIN
    [[unroll]] for (uint e = 0; e < 32; e++) xsum += xb[e];
#endif
    [[unroll]] for (uint r = 0; r < R; r++) {
        if (r >= rows) break;
        const uint h = ((row_parity >> r) & 1u) + kt * QWORDS; // halfword in the staged row
        const uint i0 = r * RS + (h >> 1);
        acc[r * NC + j] += (h & 1u) == 0u ? block_dot(i0, 0, xsum) : block_dot(i0, 1, xsum);
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint b2 = gl_WorkGroupID.z % p.ne12, b3 = gl_WorkGroupID.z / p.ne12;
    const uint a_base = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03;
    const uint b_base = p.off_b + b2 * p.nb12 + b3 * p.nb13;
    const uint d_base = p.off_d + b2 * p.nb2 + b3 * p.nb3;
    const uint nblocks = p.K / 32, nchunks = (nblocks + WG - 1) / WG, groups = (p.M + R - 1) / R;
    const uint g0 = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x, step = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    // this workgroup's tiles: row groups g0, g0 + step, ..., each in nchunks chunks
    const uint tiles = g0 < groups ? ((groups - 1 - g0) / step + 1) * nchunks : 0;
    const bool b_fixed = NC == 1 && nchunks == 1;
    const uint kt = block_of(tid);
    if (b_fixed) load_x(b_base, kt, nblocks);
    if (tiles > 0) fetch_a(a_base, g0, 0, nblocks);
    for (uint s = 0; s < tiles; s++) {
        const uint g = g0 + (s / nchunks) * step, c = s % nchunks;
        const uint m0 = g * R, rows = min(R, p.M - m0), kb0 = c * WG, nb = min(WG, nblocks - kb0);
        uint row_parity = 0; // bit r: row r starts in the middle of a word
        [[unroll]] for (uint r = 0; r < R; r++) row_parity |= ((a_base + (m0 + r) * p.nb01) & 1u) << r;
        if (c == 0) [[unroll]] for (uint i = 0; i < R * NC; i++) acc[i] = 0.0;
        barrier(); // the previous tile is no longer read from sa
        stash_a();
        barrier();
        if (s + 1 < tiles) fetch_a(a_base, g0 + ((s + 1) / nchunks) * step, (s + 1) % nchunks, nblocks);
        [[unroll]] for (uint j = 0; j < NC; j++) {
            if (!b_fixed) load_x(b_base + j * p.nb11 + kb0 * 32, kt, nb);
            if (kt < nb) add_column(j, rows, row_parity);
        }
        if (c + 1 < nchunks) continue;
        [[unroll]] for (uint i = 0; i < R * NC; i++) {
            const float v = subgroupAdd(acc[i]);
            if (subgroupElect()) red[gl_SubgroupID * R * NC + i] = v;
        }
        barrier();
        if (tid < R * NC && tid / NC < rows) {
            float total = 0.0;
            for (uint sg = 0; sg < gl_NumSubgroups; sg++) total += red[sg * R * NC + tid];
            data_d[d_base + (tid % NC) * p.nb1 + m0 + tid / NC] = total;
        }
    }
}
