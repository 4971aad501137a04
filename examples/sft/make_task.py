#!/usr/bin/env python3
"""Writes the chat task of the main job as chat JSONL (train.jsonl and test.jsonl).

Tasks, each phrased a few ways as a user turn with the bare answer as the assistant turn:

  digits      (default) reverse or sort the digits of a 3- to 6-digit string:
              "Reverse 38172." -> "27183", "Sort the digits of 38172." -> "12378"
  arithmetic  sums and differences of two whole numbers below 10**--digits:
              "What is 47 + 85?" -> "132"

The held-out conversations ask questions that never occur in train.jsonl.  The output is a pure
function of the arguments, so every run trains on the same data.

  make_task.py OUT_DIR [--task digits|arithmetic] [--train 20000] [--test 500] [--digits 2] [--seed 0]
"""
import argparse
import json
import os
import random

PHRASES = {
    "reverse": ["Reverse {s}.", "Write {s} backwards.", "What is {s} reversed?", "Reverse the digits of {s}."],
    "sort": ["Sort the digits of {s}.", "Sort {s} in ascending order.", "Put the digits of {s} in order.",
             "What is {s} with its digits sorted?"],
    "+": ["What is {a} + {b}?", "Compute {a} + {b}.", "Add {a} and {b}.", "What is the sum of {a} and {b}?"],
    "-": ["What is {a} - {b}?", "Compute {a} - {b}.", "Subtract {b} from {a}.", "What is {a} minus {b}?"],
}


def digits_task(rng, _):
    kind = rng.choice(["reverse", "sort"])
    s = "".join(rng.choice("0123456789") for _ in range(rng.randrange(3, 7)))
    answer = s[::-1] if kind == "reverse" else "".join(sorted(s))
    return (kind, s), rng.choice(PHRASES[kind]).format(s=s), answer


def arithmetic_task(rng, digits):
    op = rng.choice("+-")
    a, b = rng.randrange(10 ** digits), rng.randrange(10 ** digits)
    if op == "-" and a < b:
        a, b = b, a
    return (a, op, b), rng.choice(PHRASES[op]).format(a=a, b=b), str(a + b if op == "+" else a - b)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--task", choices=["digits", "arithmetic"], default="digits")
    p.add_argument("--train", type=int, default=20000)
    p.add_argument("--test", type=int, default=500)
    p.add_argument("--digits", type=int, default=2, help="arithmetic: operands below 10**digits")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if args.train < 1 or args.test < 1 or not 1 <= args.digits <= 9:
        p.error("--train and --test must be positive and --digits in 1..9")
    make = digits_task if args.task == "digits" else arithmetic_task
    rng = random.Random(args.seed)

    def conversation():
        key, question, answer = make(rng, args.digits)
        return key, {"messages": [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]}

    test, test_keys = [], set()
    while len(test) < args.test:
        key, conv = conversation()
        if key not in test_keys:
            test_keys.add(key)
            test.append(conv)
    train = []
    while len(train) < args.train:
        key, conv = conversation()
        if key not in test_keys:
            train.append(conv)
    os.makedirs(args.out_dir, exist_ok=True)
    for name, rows in (("train.jsonl", train), ("test.jsonl", test)):
        tmp = os.path.join(args.out_dir, name + ".tmp")
        with open(tmp, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        os.replace(tmp, os.path.join(args.out_dir, name))
    print(f"{args.task}: {len(train)} training and {len(test)} held-out conversations in {args.out_dir}")


if __name__ == "__main__":
    main()
