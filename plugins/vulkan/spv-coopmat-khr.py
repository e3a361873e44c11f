#!/usr/bin/env python3
"""spv-coopmat-khr.py [--nv2] IN.spv OUT.spv

Rewrites a SPIR-V module that glslc compiled from GL_NV_cooperative_matrix GLSL
into one on VK_KHR_cooperative_matrix instructions (SPV_KHR_cooperative_matrix),
for the shaders whose matrix shapes or scopes the NV extension cannot express
(workgroup scope, flexible sizes: VK_NV_cooperative_matrix2).  Debian 12's
glslang has no GLSL syntax for the KHR types, so the shaders are written with the
NV syntax and translated here:

  OpCapability CooperativeMatrixNV          -> CooperativeMatrixKHR
  OpExtension "SPV_NV_cooperative_matrix"   -> "SPV_KHR_cooperative_matrix" (+ "SPV_NV_cooperative_matrix2"
                                               with --nv2: flexible sizes, for devices that have them)
  OpTypeCooperativeMatrixNV T S R C         -> OpTypeCooperativeMatrixKHR T S R C Use
  OpCooperativeMatrixLoadNV  p stride colmaj -> OpCooperativeMatrixLoadKHR  p layout stride
  OpCooperativeMatrixStoreNV p o stride colmaj -> OpCooperativeMatrixStoreKHR p o layout stride
  OpCooperativeMatrixMulAddNV / LengthNV    -> the KHR opcodes, same operands

KHR types carry their use (A, B or accumulator), NV types do not: each type's use
comes from where its values meet OpCooperativeMatrixMulAddNV (and conversions of
them), so a shader must give A, B and accumulators types of their own (different
shapes or components).  Anything this cannot map fails the build.
"""
import struct
import sys

OP_EXTENSION, OP_CAPABILITY, OP_TYPE_INT, OP_CONSTANT = 10, 17, 21, 43
OP_CONSTANT_TRUE, OP_CONSTANT_FALSE, OP_FUNCTION, OP_FCONVERT = 41, 42, 54, 115
NV_CAP, KHR_CAP = 5357, 6022
NV_TYPE, NV_LOAD, NV_STORE, NV_MULADD, NV_LENGTH = 5358, 5359, 5360, 5361, 5362
KHR_TYPE, KHR_LOAD, KHR_STORE, KHR_MULADD, KHR_LENGTH = 4456, 4457, 4458, 4459, 4460
USE_A, USE_B, USE_ACC = 0, 1, 2
USE_NAMES = ("A", "B", "accumulator")
ROW_MAJOR, COLUMN_MAJOR = 0, 1


def fail(msg):
    sys.exit("spv-coopmat-khr.py: " + msg)


def string_words(s):
    b = s.encode() + b"\0"
    b += b"\0" * (-len(b) % 4)
    return list(struct.unpack("<%dI" % (len(b) // 4), b))


def decode_string(words):
    return struct.pack("<%dI" % len(words), *words).split(b"\0", 1)[0].decode()


def instructions(words):
    at = 5
    while at < len(words):
        count, op = words[at] >> 16, words[at] & 0xFFFF
        if count == 0 or at + count > len(words):
            fail("truncated instruction at word %d" % at)
        yield op, words[at + 1:at + count]
        at += count


def uses_of_types(insts):
    """Use of every NV matrix type, from the operands of the products and conversions."""
    type_of, uses, in_function = {}, {}, False
    converts = []

    def note(t, use):
        if uses.get(t, use) != use:
            fail("matrix type %%%d is used both as %s and %s (give A, B and accumulators types of their own)" %
                 (t, USE_NAMES[uses[t]], USE_NAMES[use]))
        uses[t] = use

    for op, ops in insts:
        in_function = in_function or op == OP_FUNCTION
        if in_function and len(ops) >= 2:
            type_of[ops[1]] = ops[0]  # value instructions: result type, result id, ...
        if op == NV_MULADD:
            result_type, _, a, b, c = ops[:5]
            if None in (type_of.get(a), type_of.get(b), type_of.get(c)):
                fail("a product's operand does not come from an instruction with a result type")
            note(type_of[a], USE_A)
            note(type_of[b], USE_B)
            note(type_of[c], USE_ACC)
            note(result_type, USE_ACC)
        elif op == OP_FCONVERT and in_function:
            converts.append((ops[0], type_of.get(ops[2])))
    for _ in range(len(converts)):  # a converted matrix keeps its use
        for result_type, source in converts:
            if source is not None and (result_type in uses) != (source in uses):
                note(source if result_type in uses else result_type, uses.get(result_type, uses.get(source)))
    return uses


def rewrite(words, nv2):
    insts = list(instructions(words))
    uses = uses_of_types(insts)
    bound = words[3]
    bools, uint_type = {}, None
    for op, ops in insts:
        if op == OP_CONSTANT_TRUE:
            bools[ops[1]] = True
        elif op == OP_CONSTANT_FALSE:
            bools[ops[1]] = False
        elif op == OP_TYPE_INT and ops[1:] == [32, 0]:
            uint_type = ops[0]
    if uint_type is None:
        fail("no 32-bit unsigned integer type to make the use and layout constants of")
    const_ids = {v: bound + v for v in range(3)}  # 0, 1, 2: uses and layouts
    bound += 3

    def layout(column_major_id):
        if column_major_id not in bools:
            fail("a load or store's column-major operand is not a constant")
        return const_ids[COLUMN_MAJOR if bools[column_major_id] else ROW_MAJOR]

    out, constants_placed, uint_seen = [], False, False

    def emit(op, ops):
        out.append(((len(ops) + 1) << 16) | op)
        out.extend(ops)

    for op, ops in insts:
        uint_seen = uint_seen or (op == OP_TYPE_INT and ops[0] == uint_type)
        if op == OP_CAPABILITY and ops[0] == NV_CAP:
            emit(op, [KHR_CAP])
        elif op == OP_EXTENSION and decode_string(ops) == "SPV_NV_cooperative_matrix":
            emit(op, string_words("SPV_KHR_cooperative_matrix"))
            if nv2:
                emit(op, string_words("SPV_NV_cooperative_matrix2"))
        elif op == NV_TYPE:
            if not constants_placed:
                if not uint_seen:
                    fail("the unsigned integer type comes after the first matrix type")
                for value, cid in const_ids.items():
                    emit(OP_CONSTANT, [uint_type, cid, value])
                constants_placed = True
            if ops[0] not in uses:
                fail("matrix type %%%d is never multiplied: its use is unknown" % ops[0])
            emit(KHR_TYPE, ops[:5] + [const_ids[uses[ops[0]]]])
        elif op == NV_LOAD:
            result_type, result, pointer, stride, column_major = ops[:5]
            emit(KHR_LOAD, [result_type, result, pointer, layout(column_major), stride] + ops[5:])
        elif op == NV_STORE:
            pointer, obj, stride, column_major = ops[:4]
            emit(KHR_STORE, [pointer, obj, layout(column_major), stride] + ops[4:])
        elif op == NV_MULADD:
            emit(KHR_MULADD, ops)
        elif op == NV_LENGTH:
            emit(KHR_LENGTH, ops)
        else:
            emit(op, ops)
    header = list(words[:5])
    header[3] = bound
    return header + out


def main():
    args = sys.argv[1:]
    nv2 = args[:1] == ["--nv2"]
    args = args[1:] if nv2 else args
    if len(args) != 2:
        sys.exit(__doc__)
    try:
        data = open(args[0], "rb").read()
    except OSError as e:
        fail("%s: %s" % (args[0], e.strerror))
    if len(data) % 4 or len(data) < 20:
        fail("%s is not a SPIR-V module" % args[0])
    words = list(struct.unpack("<%dI" % (len(data) // 4), data))
    if words[0] != 0x07230203:
        fail("%s is not a little-endian SPIR-V module" % args[0])
    out = rewrite(words, nv2)
    try:
        with open(args[1], "wb") as f:
            f.write(struct.pack("<%dI" % len(out), *out))
    except OSError as e:
        fail("%s: %s" % (args[1], e.strerror))


if __name__ == "__main__":
    main()
