"""The main job in Python: a chat model trained from nothing on the digit task (reverse or sort
the digits of a number), with its own tokenizer, then asked held-out questions.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/sft_chat.py [--max-steps 600] [--out build/sft-py]

1. examples/sft/make_task.py writes train.jsonl and test.jsonl (chat JSONL);
2. genesis.models.train_tokenizer learns a 512-id byte-level BPE tokenizer on them;
3. genesis.models.train_sft trains examples/sft/tiny-qwen3.json (a 0.8M-parameter Qwen3) with
   the loss on the answers only (the SFT recipe of `genesis train-sft`);
4. greedy answers to held-out questions, the first one streamed token by token (chat_qwen).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import genesis
import genesis.models as M

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def main(argv=None):
    p = argparse.ArgumentParser(description="train a tiny chat model on the digit task, then ask it questions")
    p.add_argument("--out", default=os.path.join(ROOT, "build", "sft-py"))
    p.add_argument("--max-steps", type=int, default=600)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--train", type=int, default=20000, help="training conversations")
    p.add_argument("--questions", type=int, default=20, help="held-out questions to ask")
    p.add_argument("--device", default=None)
    args = p.parse_args(argv)
    device = args.device or ("cuda" if genesis.cuda.is_available() else "cpu")
    data, tok_dir = os.path.join(args.out, "data"), os.path.join(args.out, "tokenizer")

    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "sft", "make_task.py"), data,
                    "--train", str(args.train), "--test", str(max(args.questions, 1))], check=True)
    r = M.train_tokenizer([os.path.join(data, "train.jsonl")], tok_dir, vocab_size=512)
    tok = M.Tokenizer.from_pretrained(tok_dir)
    print(f"tokenizer: {r['vocab_size']} ids, {r['merges']} merges")

    config = M.QwenConfig.from_file(os.path.join(ROOT, "examples", "sft", "tiny-qwen3.json"))
    config.vocab_size = tok.vocab_size
    config.eos_token_ids = [tok.eos_token_id]
    genesis.manual_seed(0)
    model = M.QwenForCausalLM(config, device=device)
    print(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters on {device}")

    t = time.perf_counter()
    res = M.train_sft(model, tok, train_file=os.path.join(data, "train.jsonl"), output_dir=os.path.join(args.out, "run"),
                      max_steps=args.max_steps, batch_size=args.batch_size, lr=3e-3, weight_decay=0.01,
                      warmup_ratio=0.03, save_final=False,
                      on_step=lambda s: s % max(1, args.max_steps // 6) == 0 and print(f"  step {s}", flush=True))
    print(f"trained {res['steps']} steps in {time.perf_counter() - t:.1f} s: loss {res['losses'][0]:.3f} -> "
          f"{res['losses'][-1]:.3f}")

    model.eval()
    chats = [json.loads(line)["messages"] for line in open(os.path.join(data, "test.jsonl"))][:args.questions]
    correct = 0
    for i, chat in enumerate(chats):
        prompt = tok.apply_chat_template(chat[:-1], add_generation_prompt=True, tokenize=True)
        if i == 0:  # stream the first answer as it is generated
            dec = M.StreamDecoder(tok, skip_special_tokens=True)
            print(f"> {chat[-2]['content']}\n", end="", flush=True)
            out = model.generate([prompt], max_new_tokens=12, stop_ids=[tok.eos_token_id],
                                 streamer=lambda row, token: print(dec.put(token), end="", flush=True))[0]
            print(dec.flush())
        else:
            out = model.generate([prompt], max_new_tokens=12, stop_ids=[tok.eos_token_id])[0]
        answer = tok.decode(out, skip_special_tokens=True).strip()
        correct += answer == chat[-1]["content"].strip()
    print(f"exact match on {len(chats)} held-out questions: {100.0 * correct / max(1, len(chats)):.1f}%")
    return res, correct / max(1, len(chats))


if __name__ == "__main__":
    main()
