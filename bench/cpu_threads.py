#!/usr/bin/python3
"""bench/cpu_threads.py - the CPU backend on a quiet and on a busy machine.

Times two small workloads in fresh processes, each with the default thread count and with one
thread, first on a quiet machine and then while `--hogs` other processes (default: one per core)
spin on every core:

  mlp     one training step of a 784-512-256-10 MLP (ReLU, cross-entropy, Adam), batch 64:
          milliseconds per step, the median of --steps steps after 5 warm-up steps
  decode  greedy decoding with the tiny Qwen2 checkpoint of the test fixtures: tokens/s of
          --new-tokens tokens after an 8-token prompt, the best of 3 runs

and prints, per workload and machine state, default / one-thread (the acceptance asks for at most
1.5 on the busy machine).  A build directory other than ./build is given as the first argument;
--baseline DIR measures another build (an older commit) in the same run, alternating with the
first; --repeats N runs each configuration in N fresh processes, interleaved (default, one thread,
default, ...), and reports the median (a busy 2-core machine's scheduling makes single runs bimodal);
--json prints the figures as one JSON object.

    /usr/bin/python3 bench/cpu_threads.py [build dir] [--baseline DIR] [--steps 40] [--new-tokens 64] [--hogs N]
                                          [--repeats 1]
"""
import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)

WORKER = r"""
import json, statistics, sys, time
import genesis
import genesis.nn as nn
import genesis.optim
kind, steps, new_tokens, model_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
genesis.manual_seed(0)
threads = getattr(genesis, "get_num_threads", lambda: 0)  # 0: a build without it
if kind == "mlp":
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = genesis.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    x = genesis.randn(64, 784)
    y = genesis.randint(0, 10, (64,))
    times = []
    for i in range(steps + 5):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        loss.item()
        if i >= 5:
            times.append(time.perf_counter() - t0)
    print(json.dumps({"ms_per_step": 1e3 * statistics.median(times), "threads": threads()}))
else:
    from genesis.models import QwenForCausalLM
    model = QwenForCausalLM.from_pretrained(model_dir)
    prompt = [1, 2, 3, 4, 5, 6, 7, 8]
    model.generate([prompt], max_new_tokens=4, ignore_eos=True)
    best = 0.0
    for _ in range(3):
        t0 = time.perf_counter()
        out = model.generate([prompt], max_new_tokens=new_tokens, ignore_eos=True)
        dt = time.perf_counter() - t0
        best = max(best, len(out[0]) / dt)
    print(json.dumps({"tokens_per_s": best, "threads": threads()}))
"""


def hog():
    while True:
        pass


def run(build, kind, threads, args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(build, "python")
    env.pop("OMP_NUM_THREADS", None)
    env.pop("GENESIS_NUM_THREADS", None)
    if threads:
        env["GENESIS_NUM_THREADS"] = str(threads)
    model = os.path.join(SOURCE, "tests", "fixtures", "qwen", "qwen2-tiny")
    out = subprocess.run([sys.executable, "-c", WORKER, kind, str(args.steps), str(args.new_tokens), model], env=env,
                         capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        sys.exit(f"{kind} with threads={threads or 'default'} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(builds, args):
    r = {name: {} for name in builds}
    for kind in ("mlp", "decode"):
        key = "ms_per_step" if kind == "mlp" else "tokens_per_s"
        runs = {(name, label): [] for name in builds for label in ("default", "one")}
        for _ in range(args.repeats):
            for label, threads in (("default", 0), ("one", 1)):
                for name, build in builds.items():
                    runs[(name, label)].append(run(build, kind, threads, args))
        for (name, label), rs in runs.items():
            values = [x[key] for x in rs]
            r[name][f"{kind}_{label}"] = {key: statistics.median(values), "runs": values, "threads": rs[0]["threads"]}
    for m in r.values():
        m["mlp_ratio"] = m["mlp_default"]["ms_per_step"] / m["mlp_one"]["ms_per_step"]
        m["decode_ratio"] = m["decode_one"]["tokens_per_s"] / m["decode_default"]["tokens_per_s"]
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("build", nargs="?", default=os.path.join(SOURCE, "build"))
    p.add_argument("--baseline", help="a second build directory to measure in the same run")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--hogs", type=int, default=os.cpu_count())
    p.add_argument("--repeats", type=int, default=1, help="fresh processes per configuration (median reported)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()

    builds = {"build": args.build}
    if args.baseline:
        builds["baseline"] = args.baseline
    results = {"cores": os.cpu_count(), "hogs": args.hogs, "builds": builds}
    results["quiet"] = measure(builds, args)
    hogs = [multiprocessing.Process(target=hog, daemon=True) for _ in range(args.hogs)]
    for h in hogs:
        h.start()
    time.sleep(1.0)
    try:
        results["busy"] = measure(builds, args)
    finally:
        for h in hogs:
            h.terminate()
    if args.json:
        print(json.dumps(results, indent=1))
        return
    print(f"{results['cores']} cores; busy = {args.hogs} spinning processes")
    print(f"{'build':9} {'state':6} {'workload':8} {'default':>14} {'one thread':>14} {'default/one':>12}  (time ratio)")
    for name in builds:
        for state in ("quiet", "busy"):
            m = results[state][name]
            print(f"{name:9} {state:6} {'mlp':8} {m['mlp_default']['ms_per_step']:11.2f} ms "
                  f"{m['mlp_one']['ms_per_step']:11.2f} ms {m['mlp_ratio']:12.2f}")
            print(f"{name:9} {state:6} {'decode':8} {m['decode_default']['tokens_per_s']:10.0f} t/s "
                  f"{m['decode_one']['tokens_per_s']:10.0f} t/s {m['decode_ratio']:12.2f}")

if __name__ == "__main__":
    main()
