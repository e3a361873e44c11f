#version 450
// Matrix-vector product (N <= 8 columns of b) with q4_0 or q8_0 weights on
// 8-bit integer dot products (SPV_KHR_integer_dot_product, one instruction
// per 4 weights).  Each workgroup first quantizes the b columns of its batch
// into shared memory the way ggml's CPU backend does (blocks of 32 values,
// d = max |x| / 127, q = round(x / d), d rounded to f16), then walks row chunks
// of RW rows: thread t takes blocks t, t + WG, ... of every row of the chunk,
// so a subgroup reads consecutive blocks of a row (a contiguous run of the
// row) and each thread's b block, read once from shared memory, serves RW rows.
// A block starts on any halfword: a thread loads the 16-byte words that
// hold it and shifts its halfwords into place with selects (no dynamic
// register indexing).  Workgroups are few and loop over several chunks
// (p.chunks), so b is quantized once per many rows; see main for the order
// of loads.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_spirv_intrinsics : require
#include "types.glsl"
#define MM_PUSH_EXTRA uint chunks; // row chunks per workgroup
#include "mm-push.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint RW = 8;    // rows per chunk
layout(constant_id = 2) const uint NC = 1;    // columns of b = N (1..8)
layout(constant_id = 3) const uint BVEC = 0;  // 1: b's offset and strides are multiples of 4 floats
layout(constant_id = 4) const uint SQ = 1024; // words of quantized b in shared memory (>= NC * K / 4)
layout(local_size_x_id = 0) in;

#if QTYPE == 2
#define BLOCK_HALVES 9u  // the f16 scale, then 16 bytes of nibbles
#define WINDOW 2         // 16-byte words holding a block at any halfword offset
#elif QTYPE == 8
#define BLOCK_HALVES 17u // the scale, then 32 signed bytes
#define WINDOW 3
#else
#error "mvq-dot.comp: q4_0 (2) or q8_0 (8) only"
#endif
#define WWORDS (4 * WINDOW)
#define QWORDS (BLOCK_HALVES / 2) // 32-bit words of quants per block

// OpSDot on two 32-bit words of four signed bytes each (PackedVectorFormat4x8Bit = 0)
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int dot4x8(uint a, uint b, spirv_literal int packed_format);

layout(binding = 0) readonly buffer A { uvec4 data_a[]; }; // offsets and strides in halfwords
layout(binding = 1) readonly buffer B { float data_b[]; };
layout(binding = 1) readonly buffer B4 { vec4 data_b4[]; };  // the same, 16 bytes at a time
layout(binding = 2) writeonly buffer D { float data_d[]; };

// b quantized: for column j and block k, plane 0 (values 0-15) and plane 1 (16-31)
// of 4 words each, at ((j * 2 + plane) * blocks + k) * 4, so that neighbouring
// threads read neighbouring 16-byte words; per block the scale and the quant sum.
shared uint bq[SQ];
shared vec2 bs[SQ / 8];
shared float red[(WG / 8) * RW * NC]; // per subgroup (8 lanes or more), row and column

vec4 load_b4(uint at) {
    if (BVEC == 1) return data_b4[at / 4];
    return vec4(data_b[at], data_b[at + 1], data_b[at + 2], data_b[at + 3]);
}

// The maximum (or sum) over the 8 neighbouring lanes holding one block of b.
float max8(float v) {
    v = max(v, subgroupShuffleXor(v, 1));
    v = max(v, subgroupShuffleXor(v, 2));
    return max(v, subgroupShuffleXor(v, 4));
}
int sum8(int v) {
    v += subgroupShuffleXor(v, 1);
    v += subgroupShuffleXor(v, 2);
    return v + subgroupShuffleXor(v, 4);
}

// Quantize columns 0..NC of b (base index b_base, column stride p.nb11) into bq/bs: a lane
// per 4 values, 8 lanes per block, QU loads issued before any is used (b comes from L2; one
// round trip per QU * WG items).  Item bounds and strides are multiples of 8, so the 8 lanes
// of a block are active together (lanes are consecutive invocations of a subgroup).
const uint QU = 4;
void quantize_b(uint b_base, uint blocks) {
    const uint per_col = p.K / 4, items = NC * per_col;
    for (uint i0 = gl_LocalInvocationID.x; i0 < items; i0 += WG * QU) {
        vec4 x[QU];
        [[unroll]] for (uint u = 0; u < QU; u++) {
            const uint i = min(i0 + u * WG, items - 1), j = i / per_col, r = i % per_col;
            x[u] = load_b4(b_base + j * p.nb11 + 4 * r);
        }
        [[unroll]] for (uint u = 0; u < QU; u++) {
            const uint i = i0 + u * WG, j = i / per_col, r = i % per_col, k = r / 8, s = r % 8;
            if (i >= items) break; // the same for all 8 lanes of a block
            const vec4 v = x[u];
            const float amax = max8(max(max(abs(v.x), abs(v.y)), max(abs(v.z), abs(v.w))));
            const float d = amax / 127.0, id = d != 0.0 ? 1.0 / d : 0.0;
            const ivec4 q = ivec4(trunc(v * id + sign(v) * 0.5)); // round half away from zero, as roundf
            const int sum = sum8(q.x + q.y + q.z + q.w);
            bq[((j * 2 + s / 4) * blocks + k) * 4 + s % 4] =
                uint(q.x & 0xff) | uint(q.y & 0xff) << 8 | uint(q.z & 0xff) << 16 | uint(q.w) << 24;
            if (s == 0) bs[j * blocks + k] = vec2(unpackHalf2x16(packHalf2x16(vec2(d, 0.0))).x, float(sum));
        }
    }
}

// The 16-byte words holding the block that starts at halfword x of a.
struct window { uvec4 v[WINDOW]; };
window load_window(uint x) {
    window w;
    [[unroll]] for (uint v = 0; v < WINDOW; v++) w.v[v] = data_a[(x >> 3) + v];
    return w;
}

// The scale (low 16 bits) and quant words of that block (x as given to load_window).
void block_words(const window win, uint x, out uint scale, out uint q[QWORDS]) {
    uint w[WWORDS];
    [[unroll]] for (uint v = 0; v < WINDOW; v++) {
        w[4 * v] = win.v[v].x; w[4 * v + 1] = win.v[v].y; w[4 * v + 2] = win.v[v].z; w[4 * v + 3] = win.v[v].w;
    }
    const uint h = x & 7u;
    // shift the window down by h halfwords: 2 words, 1 word, then 16 bits
    uint t[QWORDS + 2], u[QWORDS + 1];
    [[unroll]] for (uint i = 0; i < QWORDS + 2; i++) t[i] = (h & 4u) != 0 ? w[i + 2] : w[i];
    [[unroll]] for (uint i = 0; i < QWORDS + 1; i++) u[i] = (h & 2u) != 0 ? t[i + 1] : t[i];
    const bool odd = (h & 1u) != 0;
    scale = odd ? u[0] >> 16 : u[0] & 0xffffu;
    [[unroll]] for (uint i = 0; i < QWORDS; i++) q[i] = odd ? u[i + 1] : (u[i] >> 16) | (u[i + 1] << 16);
}

// The integer dot product of a block's quants with b's block (planes lo and hi).
int block_dot(const uint q[QWORDS], const uvec4 lo, const uvec4 hi) {
    int s = 0;
#if QTYPE == 2
    [[unroll]] for (uint i = 0; i < 4; i++) {
        s += dot4x8(q[i] & 0x0f0f0f0fu, lo[i], 0);
        s += dot4x8((q[i] >> 4) & 0x0f0f0f0fu, hi[i], 0);
    }
#else
    [[unroll]] for (uint i = 0; i < 4; i++) {
        s += dot4x8(q[i], lo[i], 0);
        s += dot4x8(q[i + 4], hi[i], 0);
    }
#endif
    return s;
}

// Sum acc over the workgroup and store the chunk's rows m0.. (caller: all threads).
void store_chunk(const float acc[RW][NC], uint m0, uint d_base) {
    const uint sg = gl_SubgroupID, per = RW * NC;
    [[unroll]] for (uint r = 0; r < RW; r++)
        [[unroll]] for (uint j = 0; j < NC; j++) {
            const float v = subgroupAdd(acc[r][j]);
            if (subgroupElect()) red[sg * per + r * NC + j] = v;
        }
    barrier();
    const uint tid = gl_LocalInvocationID.x;
    if (tid < per) {
        const uint r = tid / NC, j = tid % NC;
        float total = 0.0;
        for (uint s = 0; s < gl_NumSubgroups; s++) total += red[s * per + tid];
        if (m0 + r < p.M) data_d[d_base + j * p.nb1 + m0 + r] = total;
    }
    barrier(); // red is reused by the next chunk
}

// Halfword index in a of block k of row m (k and m clamped by the caller).
uint block_at(uint a_base, uint m, uint k) { return a_base + m * p.nb01 + k * BLOCK_HALVES; }

// The work is a sequence of steps (chunk c, k-slice ks): rows c * RW.. times blocks ks * WG +
// thread.  The windows of the next step are loaded before the current one is computed, and
// those of the first step before b is quantized, so loads are in flight most of the time.
void main() {
    const uint b2 = gl_WorkGroupID.z % p.ne12, b3 = gl_WorkGroupID.z / p.ne12;
    const uint blocks = p.K / 32, slices = (blocks + WG - 1) / WG, tid = gl_LocalInvocationID.x;
    const uint a_base = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03;
    const uint d_base = p.off_d + b2 * p.nb2 + b3 * p.nb3;
    const uint chunk0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * p.chunks;
    const uint rows_left = p.M > chunk0 * RW ? p.M - chunk0 * RW : 0;
    const uint steps = min(p.chunks, (rows_left + RW - 1) / RW) * slices; // the same for the whole workgroup

    // rows past the end re-read the last one and blocks past the end the last one: not added
    window cur[RW], nxt[RW];
    [[unroll]] for (uint r = 0; r < RW; r++)
        cur[r] = load_window(block_at(a_base, min(chunk0 * RW + r, p.M - 1), min(tid, blocks - 1)));
    quantize_b(p.off_b + b2 * p.nb12 + b3 * p.nb13, blocks);
    barrier();

    float acc[RW][NC];
    [[unroll]] for (uint r = 0; r < RW; r++)
        [[unroll]] for (uint j = 0; j < NC; j++) acc[r][j] = 0.0;
    for (uint s = 0; s < steps; s++) {
        const uint m0 = (chunk0 + s / slices) * RW, k = (s % slices) * WG + tid;
        const uint sn = min(s + 1, steps - 1), mn = (chunk0 + sn / slices) * RW, kn = min((sn % slices) * WG + tid, blocks - 1);
        [[unroll]] for (uint r = 0; r < RW; r++) nxt[r] = load_window(block_at(a_base, min(mn + r, p.M - 1), kn));
        if (k < blocks) {
            uint scale[RW], q[RW][QWORDS];
            [[unroll]] for (uint r = 0; r < RW; r++) block_words(cur[r], block_at(a_base, min(m0 + r, p.M - 1), k), scale[r], q[r]);
            [[unroll]] for (uint j = 0; j < NC; j++) {
                const uint at = (j * 2 * blocks + k) * 4, at_hi = at + blocks * 4;
                const uvec4 lo = uvec4(bq[at], bq[at + 1], bq[at + 2], bq[at + 3]);
                const uvec4 hi = uvec4(bq[at_hi], bq[at_hi + 1], bq[at_hi + 2], bq[at_hi + 3]);
                const vec2 sb = bs[j * blocks + k];
                [[unroll]] for (uint r = 0; r < RW; r++) {
#if QTYPE == 2
                    const int dot = block_dot(q[r], lo, hi) - 8 * int(sb.y); // nibbles are quants + 8
#else
                    const int dot = block_dot(q[r], lo, hi);
#endif
                    acc[r][j] = fma(unpackHalf2x16(scale[r]).x * sb.x, float(dot), acc[r][j]);
                }
            }
        }
        if (s % slices == slices - 1) {
            store_chunk(acc, m0, d_base);
            [[unroll]] for (uint r = 0; r < RW; r++)
                [[unroll]] for (uint j = 0; j < NC; j++) acc[r][j] = 0.0;
        }
        [[unroll]] for (uint r = 0; r < RW; r++) cur[r] = nxt[r];
    }
}
