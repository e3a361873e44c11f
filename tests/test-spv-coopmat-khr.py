#!/usr/bin/env python3
"""test-spv-coopmat-khr.py - plugins/vulkan/spv-coopmat-khr.py (TAP).

The build rewrites the KHR coopmat shaders (16x16 fragments, flexible sizes) from NV into KHR
cooperative-matrix instructions; no SPIR-V validator on Debian 12 knows the KHR
ones, so this checks the rewritten modules' structure itself: no NV instruction
left, the KHR capability, each matrix type with the use its values meet in the
product (A: M x K, B: K x N, accumulator: M x N, the dimensions agreeing), loads
and stores with the layout the NV column-major flag had.  And bad input: a module
whose A and B share one type, a truncated module and a file that is not SPIR-V
are refused with one message and status 1, writing nothing.
"""
import os
import struct
import subprocess
import sys
import tempfile

from taplib import finish, ok

build = os.environ.get("GGMLC_BUILDDIR", ".")
src = os.path.join(os.environ.get("GGMLC_TEST_DATA", "tests"), "..")
tool = os.path.join(src, "plugins", "vulkan", "spv-coopmat-khr.py")
spv_dir = os.path.join(build, "plugins", "vulkan", "spv")

def words(path):
    data = open(path, "rb").read()
    return list(struct.unpack("<%dI" % (len(data) // 4), data))


def instructions(w):
    at = 5
    while at < len(w):
        count = w[at] >> 16
        yield w[at] & 0xFFFF, w[at + 1:at + count]
        at += count


def extensions(insts):
    return [struct.pack("<%dI" % len(o), *o).split(b"\0", 1)[0].decode() for op, o in insts if op == 10]


def check_rewritten(path, label, nv2):
    insts = list(instructions(words(path)))
    exts = extensions(insts)
    ok("SPV_KHR_cooperative_matrix" in exts and ("SPV_NV_cooperative_matrix2" in exts) == nv2 and "SPV_NV_cooperative_matrix" not in exts,
       "%s: declares SPV_KHR_cooperative_matrix%s (%s)" % (label, " and SPV_NV_cooperative_matrix2" if nv2 else " only", ", ".join(exts)))
    ops = [op for op, _ in insts]
    consts = {o[1]: o[2] for op, o in insts if op == 43 and len(o) == 3}
    dims = {o[1]: o[2] for op, o in insts if op in (43, 50) and len(o) == 3}  # constants and spec constants' defaults
    ok(not any(5357 <= op <= 5362 for op in ops), "%s: no NV cooperative-matrix instruction left" % label)
    ok([17, [6022]] in [[op, o] for op, o in insts], "%s: declares CooperativeMatrixKHR" % label)
    types = {o[0]: o[1:] for op, o in insts if op == 4456}
    uses = sorted(consts.get(t[4]) for t in types.values())
    ok(uses[:1] == [0] and 1 in uses and uses[-1:] == [2], "%s: matrix types of uses A, B and accumulator (%s)" % (label, uses))
    muladd = [o for op, o in insts if op == 4459]
    type_of = {o[1]: o[0] for op, o in insts if op in (4457, 61, 83, 245, 4459, 115) and len(o) >= 2}
    agree = bool(muladd)
    for o in muladd:
        a, b, c = (types.get(type_of.get(x)) for x in o[2:5])
        acc = types.get(o[0])
        agree = agree and None not in (a, b, acc) and dims[a[2]] == dims[acc[2]] and dims[b[3]] == dims[acc[3]] and dims[a[3]] == dims[b[2]]
        agree = agree and consts.get(a[4]) == 0 and consts.get(b[4]) == 1 and consts.get(acc[4]) == 2
    ok(agree, "%s: each product takes an M x K A, a K x N B and an M x N accumulator" % label)
    loads = [(types[o[0]], consts.get(o[3])) for op, o in insts if op == 4457 and o[0] in types]
    ok(loads and all(layout == (1 if consts.get(t[4]) == 1 else 0) for t, layout in loads),
       "%s: A loaded row-major, B column-major (as the NV flags said)" % label)
    stores = [consts.get(o[2]) for op, o in insts if op == 4458]
    ok(stores and all(layout == 1 for layout in stores), "%s: the accumulator stored column-major (%d stores)" % (label, len(stores)))


def refused(data, label):
    with tempfile.TemporaryDirectory() as tmp:
        src_path, out_path = os.path.join(tmp, "in.spv"), os.path.join(tmp, "out.spv")
        open(src_path, "wb").write(data)
        r = subprocess.run([sys.executable, tool, src_path, out_path], capture_output=True, text=True)
        lines = r.stderr.strip().splitlines()
        ok(r.returncode == 1 and len(lines) == 1 and lines[0].startswith("spv-coopmat-khr.py: ") and not os.path.exists(out_path),
           "%s is refused with one message (%s)" % (label, lines[0] if lines else "none"))


flex16 = os.path.join(spv_dir, "mm_coopmat_flex_f16_f16.spv")
if not os.path.exists(flex16):
    print("1..0 # SKIP this build has no flexible-size coopmat shaders (glslc without GL_NV_cooperative_matrix, or no python3)")
    sys.exit(0)
check_rewritten(flex16, "flexible f16 x f16", True)
check_rewritten(os.path.join(spv_dir, "mm_coopmat_flex_f16_f32.spv"), "flexible f16 x f32 (b converted)", True)
check_rewritten(os.path.join(spv_dir, "mm_coopmat_khr_f16_f16.spv"), "16x16 fragments f16 x f16", False)
check_rewritten(os.path.join(spv_dir, "mm_coopmat_khr_f16_f32.spv"), "16x16 fragments f16 x f32", False)
refused(open(os.path.join(spv_dir, "mm_coopmat_nv_f16_f16.spv"), "rb").read(), "a module whose A and B share a type")
nv = open(os.path.join(spv_dir, "mm_coopmat_nv_f16_f16.spv"), "rb").read()
w, at = words(os.path.join(spv_dir, "mm_coopmat_nv_f16_f16.spv")), 5
while at < len(w) and (at < len(w) // 2 or w[at] >> 16 < 3):  # an instruction of 3 words or more past the middle
    at += w[at] >> 16
refused(nv[: 4 * (at + 2)], "a module cut inside an instruction")
refused(b"#version 450\nvoid main() {}\n", "a file that is not SPIR-V")
r = subprocess.run([sys.executable, tool, os.path.join(spv_dir, "no-such-module.spv"), os.devnull], capture_output=True, text=True)
ok(r.returncode == 1 and r.stderr.startswith("spv-coopmat-khr.py: ") and "No such file" in r.stderr,
   "a missing module is refused with one message (%s)" % r.stderr.strip())
finish()
