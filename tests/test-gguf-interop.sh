#!/bin/sh
# test-gguf-interop.sh - GGUF interoperability with an independent parser (TAP):
# a file written by ggmlc (tests/gguf-sample) is parsed by the npm package
# @huggingface/gguf under Node.js, which must see the same key-value pairs
# (types and values) and tensor infos (names, shapes, types, aligned
# offsets); and a header written by that package is read by ggmlc-gguf.
# The package is installed into a temporary folder; without Node.js, npm or
# a reachable registry the test is skipped, visibly.

: "${GGMLC_BUILDDIR:?run through make check}"
sample="$GGMLC_BUILDDIR/tests/gguf-sample"
tool="$GGMLC_BUILDDIR/tools/ggmlc-gguf"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "1..0 # SKIP node or npm is not installed"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-gguf-interop.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

if ! (cd "$tmp" && timeout 180 npm install --no-audit --no-fund --silent --prefix "$tmp" @huggingface/gguf >"$tmp/npm.log" 2>&1); then
    echo "# npm install @huggingface/gguf failed:"
    sed 's/^/#   /' "$tmp/npm.log" | tail -n 5
    echo "1..0 # SKIP the npm registry cannot be reached (@huggingface/gguf not installed)"
    exit 0
fi

"$sample" "$tmp/sample.gguf" || { echo "Bail out! gguf-sample could not write a file"; exit 1; }

cat >"$tmp/check.mjs" <<'EOF'
import { gguf, serializeGgufMetadata, GGUFValueType } from "@huggingface/gguf";
import { writeFileSync } from "node:fs";

const file = process.argv[2];
let failed = false;
const ok = (cond, what) => { console.log(`${cond ? "ok" : "not ok"} - ${what}`); if (!cond) failed = true; };
const T = GGUFValueType;

const { metadata, tensorInfos, tensorDataOffset, typedMetadata } =
    await gguf(file, { allowLocalFile: true, typedMetadata: true });

ok(metadata.version === 3, `version 3 (got ${metadata.version})`);
ok(metadata.tensor_count === 8n, `8 tensors (got ${metadata.tensor_count})`);
ok(metadata.kv_count === 17n, `17 key-value pairs (got ${metadata.kv_count})`);

const expect = {
    "general.architecture": [T.STRING, "ggmlc-test"], "general.name": [T.STRING, "interop sample"],
    "test.u8": [T.UINT8, 250], "test.i8": [T.INT8, -7], "test.u16": [T.UINT16, 65000], "test.i16": [T.INT16, -1234],
    "test.u32": [T.UINT32, 3000000000], "test.i32": [T.INT32, -123456789], "test.f32": [T.FLOAT32, 0.15625],
    "test.bool": [T.BOOL, true], "test.u64": [T.UINT64, 12345678901234n], "test.i64": [T.INT64, -9876543210n],
    "test.f64": [T.FLOAT64, 2.718281828459045],
};
for (const [key, [type, value]] of Object.entries(expect)) {
    const got = typedMetadata[key];
    ok(got !== undefined && got.type === type && got.value === value,
       `${key}: ${JSON.stringify(String(value))} of type ${type} (got ${got ? `${String(got.value)} type ${got.type}` : "nothing"})`);
}
const arrays = {
    "test.arr_i32": [T.INT32, [3, -1, 4, -1]], "test.arr_f32": [T.FLOAT32, [0.5, -2.25, 1024]],
    "test.arr_bool": [T.BOOL, [true, false, true]], "test.arr_str": [T.STRING, ["alpha", "beta", "ünïcode"]],
};
for (const [key, [subType, values]] of Object.entries(arrays)) {
    const got = typedMetadata[key];
    ok(got && got.type === T.ARRAY && got.subType === subType && JSON.stringify(got.value) === JSON.stringify(values),
       `${key}: array of ${values.length} (got ${got ? JSON.stringify(got.value) : "nothing"})`);
}

// tensor infos: [name, ggml type id, shape, bytes]
const tensors = [
    ["token_embd.weight", 0, [64n, 10n], 64 * 10 * 4], ["output_norm.weight", 0, [64n], 64 * 4],
    ["blk.0.attn_q.weight", 1, [64n, 64n], 64 * 64 * 2], ["blk.0.attn_k.weight", 2, [64n, 32n], 2 * 32 * 18],
    ["blk.0.attn_v.weight", 8, [64n, 32n], 2 * 32 * 34], ["blk.0.ffn_up.weight", 12, [256n, 48n], 48 * 144],
    ["blk.0.ffn_down.weight", 14, [256n, 16n], 16 * 210], ["positions", 26, [7n], 28],
];
let offset = 0n;
tensors.forEach(([name, dtype, shape, bytes], i) => {
    const t = tensorInfos[i];
    ok(t && t.name === name && t.dtype === dtype && t.n_dims === shape.length &&
       JSON.stringify(t.shape.map(String)) === JSON.stringify(shape.map(String)) && t.offset === offset,
       `tensor ${i} ${name}: type ${dtype}, shape [${shape}], offset ${offset} (got ${t ? `${t.name} type ${t.dtype} [${t.shape}] at ${t.offset}` : "nothing"})`);
    offset += (BigInt(bytes) + 31n) / 32n * 32n;
});
ok(Number(tensorDataOffset) % 32 === 0, `tensor data starts at an aligned offset (${tensorDataOffset})`);

// the other direction: a header written by @huggingface/gguf, for ggmlc-gguf to read
const header = serializeGgufMetadata({
    version: { value: 3, type: T.UINT32 }, tensor_count: { value: 0n, type: T.UINT64 },
    kv_count: { value: 3n, type: T.UINT64 },
    "general.name": { value: "written by node", type: T.STRING },
    "hf.count": { value: 42, type: T.UINT32 },
    "hf.list": { value: [1.5, -2], type: T.ARRAY, subType: T.FLOAT32 },
}, { alignment: 32 });
writeFileSync(process.argv[3], header);
process.exit(failed ? 1 : 0);
EOF

out=$(cd "$tmp" && NODE_PATH="$tmp/node_modules" node "$tmp/check.mjs" "$tmp/sample.gguf" "$tmp/from-node.gguf" 2>"$tmp/node.err")
node_status=$?
echo "$out"
if [ -s "$tmp/node.err" ]; then sed 's/^/# node: /' "$tmp/node.err"; fi
n=$(echo "$out" | grep -c -E '^(ok|not ok)')
[ "$n" -gt 0 ] || { echo "not ok - the node script ran (status $node_status)"; n=1; node_status=1; }

"$tool" info "$tmp/from-node.gguf" >"$tmp/info.txt" 2>&1
st=$?
if [ $st -eq 0 ] && grep -q 'general.name.*"written by node"' "$tmp/info.txt" && grep -q 'hf.count.*42' "$tmp/info.txt" \
    && grep -q 'hf.list.*1.5, -2' "$tmp/info.txt"; then
    echo "ok - ggmlc-gguf reads the header written by @huggingface/gguf"
else
    echo "not ok - ggmlc-gguf reads the header written by @huggingface/gguf (status $st)"
    sed 's/^/# /' "$tmp/info.txt"
    node_status=1
fi
echo "1..$((n + 1))"
[ $node_status -eq 0 ]
