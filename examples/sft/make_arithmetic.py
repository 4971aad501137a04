#!/usr/bin/env python3
"""Writes the arithmetic chat task of the main job as chat JSONL.

Each conversation asks for the sum or difference of two whole numbers in one of a few phrasings
and answers with the number alone, e.g.

  {"messages": [{"role": "user", "content": "What is 347 + 589?"},
                {"role": "assistant", "content": "936"}]}

The split is by operand pair: no (a, op, b) of test.jsonl occurs in train.jsonl.  The output is
a pure function of --seed and the sizes, so every run trains on the same data.

  make_arithmetic.py OUT_DIR [--train 20000] [--test 500] [--digits 3] [--seed 0]
"""
import argparse
import json
import os
import random

PHRASES = {
    "+": ["What is {a} + {b}?", "Compute {a} + {b}.", "Add {a} and {b}.", "What is the sum of {a} and {b}?"],
    "-": ["What is {a} - {b}?", "Compute {a} - {b}.", "Subtract {b} from {a}.", "What is {a} minus {b}?"],
}


def conversation(rng, digits):
    op = rng.choice("+-")
    a, b = rng.randrange(10 ** digits), rng.randrange(10 ** digits)
    if op == "-" and a < b:
        a, b = b, a
    question = rng.choice(PHRASES[op]).format(a=a, b=b)
    answer = str(a + b if op == "+" else a - b)
    return (a, op, b), {"messages": [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--train", type=int, default=20000)
    p.add_argument("--test", type=int, default=500)
    p.add_argument("--digits", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if args.train < 1 or args.test < 1 or not 1 <= args.digits <= 9:
        p.error("--train and --test must be positive and --digits in 1..9")
    rng = random.Random(args.seed)
    test, test_keys = [], set()
    while len(test) < args.test:
        key, conv = conversation(rng, args.digits)
        if key not in test_keys:
            test_keys.add(key)
            test.append(conv)
    train = []
    while len(train) < args.train:
        key, conv = conversation(rng, args.digits)
        if key not in test_keys:
            train.append(conv)
    os.makedirs(args.out_dir, exist_ok=True)
    for name, rows in (("train.jsonl", train), ("test.jsonl", test)):
        tmp = os.path.join(args.out_dir, name + ".tmp")
        with open(tmp, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        os.replace(tmp, os.path.join(args.out_dir, name))
    print(f"wrote {len(train)} training and {len(test)} held-out conversations to {args.out_dir}")


if __name__ == "__main__":
    main()
