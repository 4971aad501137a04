#!/usr/bin/env python3
"""Offline throughput of transformers' own continuous batching on the request list of bench_serving_offline.

    build/bin/bench_serving_offline --device cuda --preset qwen2.5-0.5b --requests-json /tmp/requests.json --json
    python3 bench/serving/compare_hf.py /tmp/requests.json            # --dtype bfloat16 --device cuda

The request list holds the model config (config.json fields), each request's prompt token ids and its output
length. The model gets random weights of that shape (torch.manual_seed(seed), transformers' own initialisation),
greedy, eos never stops a request (eos_token_id=-1), and each request asks for exactly its output length through
ContinuousBatchingManager.add_request(max_new_tokens=...). Every request is queued at once; the time runs from the
first add_request to the last result, after the manager's own warm-up. Prints output tok/s (and --json: one JSON
object). Where the installed transformers has no continuous batching (ContinuousBatchingManager /
init_continuous_batching), it says so and exits 0.
"""

import argparse
import json
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("requests", help="request list written by bench_serving_offline --requests-json")
    ap.add_argument("--device", default="cuda", help="torch device (default cuda)")
    ap.add_argument("--dtype", default="bfloat16", help="bfloat16, float16 or float32 (default bfloat16)")
    ap.add_argument("--attn", default=None, help="attn_implementation for from_config (default: transformers' choice)")
    ap.add_argument("--max-batch-tokens", type=int, default=None, help="ContinuousBatchingConfig.max_batch_tokens")
    ap.add_argument("--limit", type=int, default=0, help="use only the first N requests (0 = all)")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = ap.parse_args()

    with open(args.requests) as f:
        spec = json.load(f)
    reqs = spec["requests"][: args.limit or None]
    prompts = [r["prompt"] for r in reqs]
    outs = [int(r["output_len"]) for r in reqs]

    try:
        import torch
        import transformers
    except ImportError as e:
        msg = f"transformers' continuous batching cannot run here: {e}"
        print(json.dumps({"absent": msg}) if args.json else msg)
        return 0

    version = transformers.__version__
    from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

    cfg = dict(spec["config"])
    model_type = cfg.pop("model_type")
    for k in ("architectures", "transformers_version", "torch_dtype", "dtype"):
        cfg.pop(k, None)
    config = AutoConfig.for_model(model_type, **cfg)
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(int(spec.get("seed", 0)))
    kw = {"attn_implementation": args.attn} if args.attn else {}
    try:
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, **kw)
    except TypeError:  # transformers 4.x spells it torch_dtype
        model = AutoModelForCausalLM.from_config(config, torch_dtype=dtype, **kw)
    model = model.to(args.device).eval()

    if not (hasattr(model, "init_continuous_batching") or hasattr(model, "continuous_batching_context_manager")):
        msg = f"transformers {version} has no continuous batching (init_continuous_batching / generate_batch)"
        print(json.dumps({"transformers": version, "absent": msg}) if args.json else msg)
        return 0

    gen = GenerationConfig(max_new_tokens=max(outs), do_sample=False, eos_token_id=-1, pad_token_id=0)
    cb_kwargs = {}
    if args.max_batch_tokens:
        from transformers.generation import ContinuousBatchingConfig

        cb_kwargs["continuous_batching_config"] = ContinuousBatchingConfig(max_batch_tokens=args.max_batch_tokens)

    def run(manager):
        t0 = time.perf_counter()
        for i, (p, n) in enumerate(zip(prompts, outs)):
            manager.add_request(input_ids=p, request_id=f"r{i}", max_new_tokens=n, eos_token_id=-1)
        got, tokens, last_report = 0, 0, t0
        while got < len(prompts):
            r = manager.get_result(timeout=1.0)
            if r is None:
                if not manager.is_running():
                    raise RuntimeError("the continuous batching manager stopped before every request finished")
                continue
            if not r.is_finished():
                continue
            got += 1
            tokens += len(r.generated_tokens)
            now = time.perf_counter()
            if now - last_report > 5:
                last_report = now
                print(f"  [transformers] {got}/{len(prompts)} requests, {tokens} tokens, {tokens / (now - t0):.1f} tok/s",
                      file=sys.stderr)
        return time.perf_counter() - t0, tokens

    print(f"transformers {version}, torch {torch.__version__}: {len(prompts)} requests on {args.device}, "
          f"{args.dtype} ...", file=sys.stderr)
    # no_grad, not inference_mode: the manager's own thread updates tensors it allocated in this one in place, which
    # PyTorch refuses for inference tensors outside inference mode.
    with torch.no_grad():
        if hasattr(model, "continuous_batching_context_manager"):
            with model.continuous_batching_context_manager(generation_config=gen, **cb_kwargs) as manager:
                seconds, tokens = run(manager)
        else:  # older releases: init, start, stop
            manager = model.init_continuous_batching(generation_config=gen, **cb_kwargs)
            manager.start()
            try:
                seconds, tokens = run(manager)
            finally:
                manager.stop(block=True)

    expected = sum(outs)
    if tokens != expected:
        print(f"transformers' continuous batching produced {tokens} output tokens, not {expected}: its generation "
              "loop failed (see its log above)", file=sys.stderr)
    res = {
        "transformers": version,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device,
        "dtype": args.dtype,
        "requests": len(prompts),
        "output_tokens": tokens,
        "expected_output_tokens": expected,
        "seconds": seconds,
        "output_tok_s": tokens / seconds,
    }
    res["complete"] = tokens == expected
    if args.json:
        print(json.dumps(res))
    else:
        print(f"transformers {version} continuous batching: {len(prompts)} requests, {tokens} output tokens "
              f"(expected {expected}) in {seconds:.2f} s: {tokens / seconds:.1f} output tok/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
