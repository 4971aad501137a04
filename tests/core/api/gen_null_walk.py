#!/usr/bin/env python3
# gen_null_walk.py - writes a GoogleTest source that calls every GN_API
# function of the public headers with NULL pointers, one at a time and all
# together, so that a function added to a header is walked without anyone
# having to remember it.  Usage: gen_null_walk.py <output.cpp> <header>...
import re
import sys

# Parameters whose NULL has a documented meaning (defaults, the current or
# default stream, "nothing to destroy"): a call with NULL there may succeed.
NULL_IS_VALID = {
    ("gn_runtime_create", "options"),      # NULL = default options
    ("gn_op_call_ex", "options"),          # NULL = default call options
    ("gn_stream_set_current", "s"),        # NULL = the device's default stream
    ("gn_event_record", "s"),              # NULL = current stream
    ("gn_stream_wait_event", "s"),         # NULL = current stream
    ("gn_stream_destroy", "s"),            # NULL = nothing to destroy
    ("gn_event_destroy", "e"),             # NULL = nothing to destroy
    ("gn_profiler_summary", "buf"),        # NULL = nothing written, only *needed
    ("gn_profiler_summary", "needed"),     # NULL = length not wanted
    ("gn_rng_get_state", "seed"),          # NULL = value not wanted
    ("gn_rng_get_state", "offset"),        # NULL = value not wanted
    ("gn_status_create", "msg"),           # NULL = ""
    ("gn_runtime_set_option", "value"),    # NULL = back to the default
}
# Every communicator call takes NULL for the current stream.
NULL_IS_VALID |= {(f"gn_comm_{f}", "stream") for f in (
    "all_reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all", "send", "recv", "barrier",
    "synchronize")}

# Functions that consume their argument: only ever called with NULL here.
CONSUMES = re.compile(r"_(destroy|release|free)$")

# A fresh handle of these types is made for each call and destroyed after.
FRESH = {
    "gn_stream*": ("gn_stream* {v} = nullptr; gn_status_free(gn_stream_create(rt_, cpu_, &{v}));",
                   "gn_status_free(gn_stream_set_current(rt_, cpu_, nullptr)); gn_status_free(gn_stream_destroy({v}));"),
    "gn_event*": ("gn_event* {v} = nullptr; gn_status_free(gn_event_create(rt_, cpu_, &{v}));",
                  "gn_status_free(gn_event_destroy({v}));"),
    "gn_generator*": ("gn_generator* {v} = nullptr; gn_status_free(gn_generator_create(rt_, 1, &{v}));",
                      "gn_generator_destroy({v});"),
    "DLManagedTensorVersioned*": ("DLManagedTensorVersioned* {v} = nullptr; gn_status_free(gn_tensor_to_dlpack(t_, &{v}));",
                                  ""),  # gn_tensor_from_dlpack takes ownership either way
    "gn_graph*": ("gn_graph* {v} = nullptr;", ""),  # no backend here captures graphs
    "gn_comm*": ("gn_comm* {v} = nullptr;", ""),  # no communicator plugin is loaded here
}

# Output slots: an array of 8 NULL handles, released after the call.
SLOTS = {
    "gn_tensor**": ("gn_tensor*", "gn_tensor_release({e});"),
    "gn_runtime**": ("gn_runtime*", "gn_runtime_destroy({e});"),
    "gn_op**": ("const gn_op*", ""),
    "gn_stream**": ("gn_stream*", "gn_status_free(gn_stream_destroy({e}));"),
    "gn_event**": ("gn_event*", "gn_status_free(gn_event_destroy({e}));"),
    "gn_graph**": ("gn_graph*", "gn_graph_destroy({e});"),
    "gn_generator**": ("gn_generator*", "gn_generator_destroy({e});"),
    "gn_comm**": ("gn_comm*", "gn_comm_destroy({e});"),
    "DLManagedTensorVersioned**": ("DLManagedTensorVersioned*", "if ({e} && {e}->deleter) {e}->deleter({e});"),
}

STRINGS = {"name": '"add"', "spec": '"cpu"', "type_name": '"cpu"', "path": '"/nonexistent/genesis-null-walk"'}


def declarations(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    for m in re.finditer(r"GN_API\s+([^;(]*?)\b(gn_\w+)\s*\(([^)]*)\)\s*;", text, flags=re.S):
        ret, name, params = " ".join(m.group(1).split()), m.group(2), " ".join(m.group(3).split())
        args = []
        if params and params != "void":
            for p in params.split(","):
                pm = re.match(r"(.*?)(\w+)$", p.strip())
                args.append((" ".join(pm.group(1).split()), pm.group(2)))
        yield ret, name, args


def norm(ctype):
    """Type without const qualifiers or spaces: 'gn_tensor*const*' -> 'gn_tensor*const*'."""
    t = ctype.replace(" ", "")
    return t[5:] if t.startswith("const") else t


def scalar(ctype, pname):
    t = norm(ctype)
    if t == "gn_device":
        return "cpu_"
    if t == "double":
        return "1.0"
    if t == "int32_t":
        return {"ndim": "2", "dtype": "GN_F32"}.get(pname, "0")
    if t == "int64_t":
        return {"step": "1", "stop": "2"}.get(pname, "0")
    if t == "size_t":
        return "0" if pname == "i" else "2"  # counts > 0: a NULL array beside them is unusable
    return "0"


def valid_pointer(fn, ctype, pname, setup, cleanup, k):
    """Expression for a usable (non-NULL) value of pointer parameter pname."""
    t = norm(ctype)
    if t in ("gn_runtime*",):
        return "rt_"
    if t in ("gn_op*",):
        return "op_"
    if t in ("gn_tensor*",):
        return "t_"
    if t == "gn_tensor*const*":
        return "ins_"
    if t == "gn_attr_value*":
        return "attrs_"
    if t == "int64_t*" and ctype.startswith("const"):
        return "i64s_"
    if t == "char*" and ctype.startswith("const"):
        return STRINGS.get(pname, '"cpu"')
    if t in SLOTS:
        elem, free = SLOTS[t]
        v = f"slot{k}"
        setup.append(f"{elem} {v}[8] = {{}};")
        if free:
            cleanup.append(f"for ({elem} e : {v}) {{ {free.format(e='e')} }}")
        return v
    if t in FRESH:
        make, free = FRESH[t]
        v = f"fresh{k}"
        setup.append(make.format(v=v))
        if free:
            cleanup.append(free.format(v=v))
        return v
    # Anything else (plain out-parameters, records, options, byte buffers):
    # zeroed scratch memory, large enough for any of them.
    v = f"scratch{k}"
    setup.append(f"alignas(16) unsigned char {v}[4096] = {{}};")
    return f"reinterpret_cast<{ctype}>({v})" if "void" not in t else v


def emit_call(fn, ret, args, null_set, label):
    setup, cleanup, exprs = [], [], []
    for k, (ctype, pname) in enumerate(args):
        if "*" not in ctype:
            exprs.append(scalar(ctype, pname))
        elif pname in null_set:
            exprs.append("nullptr")
        else:
            exprs.append(valid_pointer(fn, ctype, pname, setup, cleanup, k))
    call = f"{fn}({', '.join(exprs)})"
    needs_error = any(p in null_set and (fn, p) not in NULL_IS_VALID for _, p in args)
    lines = ["  {", f"    SCOPED_TRACE(\"{label}\");"]
    lines += [f"    {s}" for s in setup]
    if ret.replace(" ", "") == "gn_status*":
        if needs_error:
            named = [p for _, p in args if p in null_set and (fn, p) not in NULL_IS_VALID]
            lines.append(f"    expect_null_refused({call}, \"{fn}\", {{{', '.join(chr(34) + p + chr(34) for p in named)}}});")
        else:
            lines.append(f"    gn_status_free({call});")
    elif ret == "void":
        lines.append(f"    {call};")
    else:
        lines.append(f"    (void){call};")
    if fn == "gn_tensor_retain" and "t" not in null_set:
        lines.append("    gn_tensor_release(t_);")
    lines += [f"    {c}" for c in cleanup]
    lines.append("  }")
    return lines


def main():
    out, headers = sys.argv[1], sys.argv[2:]
    decls = []
    for h in sorted(headers):
        text = open(h).read()
        found = list(declarations(text))
        uses = len(re.findall(r"^\s*GN_API\b", re.sub(r"/\*.*?\*/", " ", text, flags=re.S), flags=re.M))
        if uses != len(found):  # a declaration this parser cannot read must not be skipped silently
            sys.exit(f"gen_null_walk.py: {h}: {uses} GN_API declarations, {len(found)} parsed")
        decls += found
    if not decls:
        sys.exit("gen_null_walk.py: no GN_API declarations found")
    body = [
        "// null_walk_test.cpp - generated by tests/core/api/gen_null_walk.py from the",
        "// public headers: every GN_API function called with NULL pointers.",
        '#include "null_walk_fixture.h"',
        "",
        "namespace {",
        "",
    ]
    for ret, fn, args in decls:
        pointers = [p for c, p in args if "*" in c]
        body.append(f"TEST_F(NullWalk, {fn}) {{")
        if CONSUMES.search(fn):
            body += emit_call(fn, ret, args, set(pointers), "all NULL")
        else:
            body += emit_call(fn, ret, args, set(pointers), "all NULL")
            for p in pointers:
                body += emit_call(fn, ret, args, {p}, f"{p} NULL")
        body.append("}")
        body.append("")
    body += ["", "}  // namespace", ""]
    open(out, "w").write("\n".join(body))


if __name__ == "__main__":
    main()
