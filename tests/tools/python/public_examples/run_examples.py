#!/usr/bin/env python3
"""Runs well-known PyTorch example programs (pytorch/examples, see README.md) with only their imports changed
to genesis, briefly, on the CPU, and reports which run and, for the others, the first failure and every
genesis name they use that is missing.

    PYTHONPATH=build/python /usr/bin/python3 tests/tools/python/public_examples/run_examples.py
    ... run_examples.py --framework torch      # the control: the original programs under PyTorch
    ... run_examples.py mnist vae --verbose    # some of them, with their output
    ... run_examples.py --json                 # the results for other tools

Each program runs in a temporary directory with the torchvision and matplotlib stand-ins of stubs/ first on
its path; programs that read text get a small generated corpus.  The exit status is 0 when every program
selected ran."""
import argparse
import ast
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from imports import to_torch  # noqa: E402

# name, folder, commands (each a script and its arguments; {data} and {out} are temporary folders)
EXAMPLES = [
    ("mnist", "mnist", [["main.py", "--no-cuda", "--no-mps", "--dry-run", "--epochs", "1"]]),
    ("mnist_rnn", "mnist_rnn", [["main.py", "--no-cuda", "--dry-run", "--epochs", "1"]]),
    ("vae", "vae", [["main.py", "--no-cuda", "--no-mps", "--epochs", "1", "--batch-size", "64"]]),
    ("regression", "regression", [["main.py"]]),
    ("time_sequence_prediction", "time_sequence_prediction",
     [["generate_sine_wave.py"], ["train.py", "--steps", "1"]]),
    ("word_language_model (LSTM)", "word_language_model",
     [["main.py", "--data", "{data}", "--epochs", "1", "--dry-run", "--emsize", "32", "--nhid", "32", "--bptt",
       "10", "--save", "{out}/model.pt"]]),
    ("word_language_model (Transformer)", "word_language_model",
     [["main.py", "--data", "{data}", "--epochs", "1", "--dry-run", "--emsize", "32", "--nhid", "32", "--bptt",
       "10", "--model", "Transformer", "--nhead", "2", "--save", "{out}/model.pt"]]),
    ("siamese_network", "siamese_network",
     [["main.py", "--no-cuda", "--no-mps", "--dry-run", "--epochs", "1", "--batch-size", "16",
       "--test-batch-size", "64"]]),
    ("dcgan", "dcgan",
     [["main.py", "--dataset", "fake", "--niter", "1", "--dry-run", "--batchSize", "8", "--workers", "0",
       "--ngf", "16", "--ndf", "16", "--manualSeed", "1", "--outf", "{out}"]]),
    ("mnist_hogwild", "mnist_hogwild", [["main.py", "--dry-run", "--epochs", "1", "--num-processes", "2"]]),
]


def write_corpus(folder):
    """train/valid/test.txt of a small made-up language (the word_language_model reads wikitext-2's layout)."""
    import random
    rng = random.Random(0)
    words = ["w%d" % i for i in range(60)]
    os.makedirs(folder, exist_ok=True)
    for name, lines in (("train.txt", 120), ("valid.txt", 30), ("test.txt", 30)):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            for _ in range(lines):
                f.write(" " + " ".join(rng.choice(words) for _ in range(rng.randint(5, 15))) + " \n")


def copy_example(folder, dest, framework):
    """The example's sources in dest; for torch, with the import change undone."""
    shutil.copytree(os.path.join(HERE, folder), dest)
    if framework == "torch":
        for root, _, files in os.walk(dest):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(root, name)
                    with open(path, encoding="utf-8") as f:
                        source = f.read()
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(to_torch(source))


def first_failure(output, workdir):
    """(exception line, innermost frame in the example or the stand-ins) of the last traceback in output."""
    lines = output.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    if not starts:
        tail = [line for line in lines if line.strip()]
        return (tail[-1] if tail else "no output"), ""
    block = lines[starts[-1]:]
    exc = next((line for line in block[1:] if line and not line.startswith(" ")), block[-1])
    frame = ""
    for i, line in enumerate(block):
        m = re.match(r'\s+File "([^"]+)", line (\d+), in (.*)', line)
        if not m:
            continue
        path = m.group(1)
        src = block[i + 1].strip() if i + 1 < len(block) and block[i + 1].startswith("    ") else ""
        if path.startswith(workdir):
            frame = "%s:%s: `%s`" % (os.path.relpath(path, workdir).split(os.sep, 1)[-1], m.group(2), src)
        elif os.sep + "stubs" + os.sep in path:
            frame = "stand-in %s:%s: `%s`" % (path.split(os.sep + "stubs" + os.sep, 1)[1], m.group(2), src)
    return exc, frame


def program_uses(source, framework):
    """The framework imports and attribute chains a program's source uses.

    Returns (imports, chains, methods): imports as (module, name or None, alias, bound to module itself, line);
    chains as (alias, [attribute, ...], line) for attribute chains rooted at an imported name; methods as
    (attribute, line) for every other attribute read (the receiver's type unknown)."""
    tree = ast.parse(source)
    imports, chains, methods = [], [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == framework:
                    imports.append((a.name, None, a.asname or a.name.split(".")[0], a.asname is not None,
                                    node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == framework:
            for a in node.names:
                imports.append((node.module, a.name, a.asname or a.name, True, node.lineno))
    aliases = {alias for _, _, alias, _, _ in imports}
    # receivers known not to be tensors or modules: other imported modules (np, random, ...) and argparse results
    others = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            others |= {a.asname or a.name.split(".")[0] for a in node.names} - aliases
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "parse_args":
            others |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        chain, cur = [], node
        while isinstance(cur, ast.Attribute):
            chain.append(cur.attr)
            cur = cur.value
        if not chain:
            continue
        if not isinstance(cur, ast.Name) or cur.id not in aliases:
            receiver = node.value
            if isinstance(node.ctx, ast.Load) and not (isinstance(receiver, ast.Name) and receiver.id in others):
                methods.append((node.attr, node.lineno))
            continue
        chain = chain[::-1]
        if isinstance(node.ctx, ast.Store):
            chain = chain[:-1]  # a program setting an attribute needs only its owner
        chains.append((cur.id, chain, node.lineno))
    return imports, chains, methods


def resolve_uses(request):
    """In a fresh interpreter: which of a program's imports fail and where its attribute chains break, the way
    the program itself would see them (a submodule counts only once something imports it)."""
    imports, chains, methods = request
    bound, paths, results = {}, {}, []
    for module, name, alias, as_alias, line in sorted(imports, key=lambda i: i[4]):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            results.append((module, line))
            continue
        if name is None:
            bound[alias] = mod if as_alias else importlib.import_module(module.split(".")[0])
            paths[alias] = module if as_alias else module.split(".")[0]
            continue
        try:
            bound[alias] = getattr(mod, name) if hasattr(mod, name) else importlib.import_module(module + "." + name)
            paths[alias] = module + "." + name
        except ImportError:
            results.append((module + "." + name, line))
    for alias, chain, line in chains:
        if alias not in bound:
            continue
        obj = bound[alias]
        for k, attr in enumerate(chain):
            if not hasattr(obj, attr):
                results.append((".".join([paths[alias]] + chain[:k + 1]), line))
                break
            obj = getattr(obj, attr)
    framework = importlib.import_module(imports[0][0].split(".")[0]) if imports else None
    if framework is not None and framework.__name__ != "torch":
        # methods by name: a Tensor method of PyTorch's that the framework's Tensor lacks, or an nn.Module-only
        # one that its Module lacks
        import torch
        for attr, line in methods:
            if attr.startswith("_"):
                continue
            if hasattr(torch.Tensor, attr):
                if not hasattr(framework.Tensor, attr):
                    results.append(("%s.Tensor.%s" % (framework.__name__, attr), line))
            elif hasattr(torch.nn.Module, attr) and not hasattr(framework.nn.Module, attr):
                results.append(("%s.nn.Module.%s" % (framework.__name__, attr), line))
    return results


def missing_names(folder, framework, env):
    """Framework names the example's sources use that its framework lacks: [(name, file:line, source)]."""
    found = {}
    root_dir = os.path.join(HERE, folder)
    for name in sorted(os.listdir(root_dir)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(root_dir, name), encoding="utf-8") as f:
            source = f.read()
        if framework == "torch":
            source = to_torch(source)
        lines = source.splitlines()
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--resolve"], env=env, capture_output=True,
                           text=True, input=json.dumps(program_uses(source, framework)), timeout=120)
        if r.returncode != 0:
            raise RuntimeError("resolving the names of %s/%s failed:\n%s" % (folder, name, r.stderr))
        for dotted, line in sorted(json.loads(r.stdout), key=lambda u: u[1]):
            found.setdefault(dotted, ("%s:%d" % (name, line), lines[line - 1].strip()))
    return [(n, where, src) for n, (where, src) in found.items()]


def run_example(name, folder, commands, framework, timeout, verbose):
    """Runs one example; returns its result row."""
    work = tempfile.mkdtemp(prefix="example-")
    try:
        data, out = os.path.join(work, "data"), os.path.join(work, "out")
        os.makedirs(out)
        write_corpus(data)
        dest = os.path.join(work, folder)
        copy_example(folder, dest, framework)
        env = dict(os.environ, PUBLIC_EXAMPLES_FRAMEWORK=framework, PYTHONUNBUFFERED="1",
                   PYTHONPATH=os.pathsep.join([os.path.join(HERE, "stubs")] +
                                              [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        row = {"program": name, "runs": True, "failure": "", "where": "", "seconds": 0.0}
        start = time.time()
        for cmd in commands:
            argv = [sys.executable] + [a.format(data=data, out=out) for a in cmd]
            try:
                r = subprocess.run(argv, cwd=dest, env=env, capture_output=True, text=True, timeout=timeout)
                output, rc = r.stdout + r.stderr, r.returncode
            except subprocess.TimeoutExpired as e:
                output = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
                rc = "timeout"
            if verbose:
                print("---- %s: %s (exit %s)\n%s" % (name, " ".join(cmd), rc, output))
            if rc != 0:
                row["runs"] = False
                if rc == "timeout":
                    row["failure"] = "no result within %d s" % timeout
                else:
                    row["failure"], row["where"] = first_failure(output, work)
                break
        row["seconds"] = round(time.time() - start, 1)
        row["missing"] = missing_names(folder, framework, env)
        return row
    finally:
        shutil.rmtree(work, ignore_errors=True)


def markdown(rows, framework):
    out = ["| program | runs | first failure | where | %s names it uses that are missing |" % framework,
           "|---|---|---|---|---|"]
    for r in rows:
        missing = ", ".join("`%s` (%s)" % (n, where) for n, where, _ in r["missing"]) or "none"
        out.append("| %s | %s | %s | %s | %s |" % (r["program"], "yes" if r["runs"] else "no",
                                                  r["failure"].replace("|", "\\|") or "-",
                                                  r["where"].replace("|", "\\|") or "-", missing))
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("programs", nargs="*", help="names (or prefixes) of the examples to run; all by default")
    ap.add_argument("--framework", default="genesis", choices=["genesis", "torch"],
                    help="genesis (the copies here) or torch (the original programs, as a control)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per command")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--verbose", action="store_true", help="print each program's output")
    ap.add_argument("--resolve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.resolve:
        print(json.dumps(resolve_uses(json.load(sys.stdin))))
        return 0
    chosen = [e for e in EXAMPLES if not args.programs or any(e[0].startswith(p) for p in args.programs)]
    if not chosen:
        ap.error("no example matches %s" % " ".join(args.programs))
    probe = subprocess.run([sys.executable, "-c", "import " + args.framework], capture_output=True, text=True)
    if probe.returncode != 0:
        print("`import %s` fails, so no program can run:\n%s" % (args.framework, probe.stderr), file=sys.stderr)
        return 2
    rows = []
    for name, folder, commands in chosen:
        rows.append(run_example(name, folder, commands, args.framework, args.timeout, args.verbose))
        if not args.json:
            r = rows[-1]
            print("%-34s %s (%.1f s)%s" % (r["program"], "runs" if r["runs"] else "FAILS", r["seconds"],
                                           "" if r["runs"] else ": " + r["failure"]), flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print()
        print(markdown(rows, args.framework))
    return 0 if all(r["runs"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
