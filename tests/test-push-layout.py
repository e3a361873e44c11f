#!/usr/bin/env python3
"""test-push-layout.py - the Vulkan shaders' push constants against shaders/push-constants.h (TAP).

The plugin fills each shader's push constants as a C struct of push-constants.h and the shader
reads the same struct through VK_PUSH_BLOCK.  This reads every compiled shader of the build
(plugins/vulkan/spv/*.spv) and checks that its push block holds exactly one struct, laid out as
C lays out the header's struct its source names: the same members (uint, int, float, arrays
of them) in order, each 4 bytes after the last.  A shader declaring its own push block, or a
member type whose GLSL layout differs from C's, fails here.
"""
import os
import re
import struct

from taplib import finish, ok

build = os.environ.get("GGMLC_BUILDDIR", ".")
src = os.path.join(os.environ.get("GGMLC_TEST_DATA", "tests"), "..")
shaders = os.path.join(src, "shaders")
spv_dir = os.path.join(build, "plugins", "vulkan", "spv")


def header_structs():
    """{name: [(type, count)]} of push-constants.h, an array member counted by its length."""
    text = open(os.path.join(shaders, "push-constants.h")).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    structs = {}
    for name, body in re.findall(r"struct\s+(vk_pc_\w+)\s*\{(.*?)\};", text, flags=re.S):
        members = []
        for decl in filter(None, (d.strip() for d in body.split(";"))):
            typ, rest = decl.split(None, 1)
            for m in rest.split(","):
                arr = re.search(r"\[(\d+)\]", m)
                members.append((typ, int(arr.group(1)) if arr else 1))
        structs[name] = members
    return structs


def blocks_named(path, seen):
    """The structs VK_PUSH_BLOCK names in a shader source and the files it includes."""
    if path in seen or not os.path.exists(path):
        return set()
    seen.add(path)
    text = open(path).read()
    names = set(re.findall(r"VK_PUSH_BLOCK\((vk_pc_\w+)\)", text))
    for inc in re.findall(r'#include\s+"([^"]+)"', text):
        names |= blocks_named(os.path.join(shaders, inc), seen)
    return names


def push_layout(path):
    """A module's push block members as [(type, count, offset)], or a string saying why not."""
    words = open(path, "rb").read()
    words = struct.unpack("<%dI" % (len(words) // 4), words)
    types, consts, offsets, variables = {}, {}, {}, []
    i = 5
    while i < len(words):
        count, op = words[i] >> 16, words[i] & 0xFFFF
        ins = words[i + 1:i + count]
        if op == 21:  # OpTypeInt
            types[ins[0]] = ("int" if ins[2] else "uint", ins[1])
        elif op == 22:  # OpTypeFloat
            types[ins[0]] = ("float", ins[1])
        elif op == 28:  # OpTypeArray
            types[ins[0]] = ("array", ins[1], ins[2])
        elif op == 30:  # OpTypeStruct
            types[ins[0]] = ("struct", list(ins[1:]))
        elif op == 32:  # OpTypePointer
            types[ins[0]] = ("pointer", ins[1], ins[2])
        elif op == 43:  # OpConstant
            consts[ins[1]] = ins[2]
        elif op == 59 and ins[2] == 9:  # OpVariable, storage class PushConstant
            variables.append(ins[0])
        elif op == 72 and ins[2] == 35:  # OpMemberDecorate Offset
            offsets[(ins[0], ins[1])] = ins[3]
        i += max(count, 1)
    if len(variables) != 1:
        return "%d push-constant variables" % len(variables)
    block = types[types[variables[0]][2]]
    if block[0] != "struct" or len(block[1]) != 1 or types.get(block[1][0], ("",))[0] != "struct":
        return "its push block is not one struct"
    inner = block[1][0]
    layout = []
    for m, tid in enumerate(types[inner][1]):
        t = types[tid]
        elem, length = (types[t[1]], consts[t[2]]) if t[0] == "array" else (t, 1)
        if elem[0] not in ("uint", "int", "float") or elem[1] != 32:
            return "member %d is not a 32-bit scalar or an array of them" % m
        layout.append((elem[0], length, offsets.get((inner, m))))
    return layout


def c_layout(members):
    """Where C puts each member of a struct of 4-byte scalars and arrays of them."""
    layout, at = [], 0
    for typ, count in members:
        layout.append((typ, count, at))
        at += 4 * count
    return layout


structs = header_structs()
ok(len(structs) > 0, "push-constants.h declares push structs (%d)" % len(structs))
checked = absent = 0
for line in open(os.path.join(shaders, "shaders.list")):
    fields = line.split()
    if not fields or fields[0].startswith("#"):
        continue
    name, source = fields[0], fields[1]
    spv = os.path.join(spv_dir, name + ".spv")
    if not os.path.exists(spv):  # a variant of a feature the compiler lacks: not built
        absent += 1
        continue
    candidates = blocks_named(os.path.join(shaders, source), set())
    got = push_layout(spv)
    if isinstance(got, str):
        ok(False, "%s: %s" % (name, got))
        continue
    matches = [c for c in sorted(candidates) if c in structs and c_layout(structs[c]) == got]
    ok(len(matches) == 1, "%s: its push block is struct %s, laid out as in C" %
       (name, matches[0] if matches else "(none of %s)" % ", ".join(sorted(candidates)) or "?"))
    checked += 1
ok(checked > 0, "%d compiled shaders checked (%d variants not built)" % (checked, absent))

# the checker itself: a layout with a gap or another type is refused
ok(c_layout([("uint", 2), ("float", 1)]) == [("uint", 2, 0), ("float", 1, 8)],
   "C layout of uint[2], float")
ok(c_layout([("uint", 1)]) != [("uint", 1, 4)], "a member at another offset does not match")
finish()
