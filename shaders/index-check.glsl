// index-check.glsl - reporting an index that lies outside what it addresses, for the kernels
// that address memory with indices read on the device (get_rows, set_rows, get_rows_back,
// mul_mat_id, add_id, ssm_scan).  Such a kernel checks every index before it uses it; a bad
// one is reported here and what it would address is skipped (or written as zeros), so no
// access leaves its tensor.  The includer defines INDEX_CHECK_BINDING, its last binding: the
// dispatch's 16-byte slot of the segment's check memory, zeroed before the segment and read
// back after it by the host, which then fails the graph with a message naming the node, the
// index and its position (plugins/vulkan/vk-record.c, "index checks").
layout(binding = INDEX_CHECK_BINDING) buffer IndexCheck {
    uint reported;       // 1 once an index was reported
    uint at;             // its position: its element number in the index tensor, in logical order
    uint value_lo, value_hi; // its value, as two 32-bit halves
} index_check;

// Report index (lo, hi) at position at; the dispatch's first report is kept.
void index_report(uint at, uint lo, uint hi) {
    if (atomicCompSwap(index_check.reported, 0u, 1u) == 0u) {
        index_check.at = at;
        index_check.value_lo = lo;
        index_check.value_hi = hi;
    }
}

// Whether i32 index v at position at lies in [0, n); reported otherwise.
bool index_in_range(uint at, int v, uint n) {
    if (v >= 0 && uint(v) < n) return true;
    index_report(at, uint(v), v < 0 ? 0xffffffffu : 0u);
    return false;
}

// The same for an i64 index given as its halves.
bool index64_in_range(uint at, uint lo, uint hi, uint n) {
    if (hi == 0u && lo < n) return true;
    index_report(at, lo, hi);
    return false;
}
