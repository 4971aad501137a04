#!/usr/bin/env python3
"""tests/llm/tokenizer/gen_oracle_families.py - the Llama 3, Gemma 3 and Llama 2 reference files from
Hugging Face's own tokenizers (the Rust library behind transformers' fast tokenizers).

gen_oracle_families.mjs writes tests/fixtures/tokenizer/<family>_expected.json with transformers.js; this
script computes the same cases with `transformers` (AutoTokenizer on the fixture folder, so the
tokenizer_config.json settings apply as they do for users) or, without transformers, with `tokenizers`
alone. It needs no network: the fixture folders hold the files.

    python3 tests/llm/tokenizer/gen_oracle_families.py --check    # compare with the committed files
    python3 tests/llm/tokenizer/gen_oracle_families.py            # rewrite them from tokenizers
"""
import argparse
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "tokenizer"
FAMILIES = ["llama3", "gemma3", "llama2", "llama2-metaspace"]


def variant(family, j):
    """llama2-metaspace: Llama 2's file with the Metaspace pre-tokenizer of legacy=false conversions."""
    if family == "llama2-metaspace":
        j = dict(j, normalizer=None, pre_tokenizer={"type": "Metaspace", "replacement": "\u2581",
                                                   "prepend_scheme": "first", "split": False, "add_prefix_space": True})
    return j


def parse_cases(text):
    """cases.txt escapes (see the top of that file) -> list of bytes, as gen_oracle.mjs reads them."""
    cases = []
    for line in text.split("\n"):
        if not line or line.startswith("#"):
            continue
        out = bytearray()
        i = 0
        while i < len(line):
            c = line[i]
            if c != "\\":
                out += c.encode("utf-8")
                i += 1
                continue
            e = line[i + 1]
            if e in "nrt\\":
                out += {"n": b"\n", "r": b"\r", "t": b"\t", "\\": b"\\"}[e]
                i += 2
            elif e == "E":
                i += 2
            elif e == "x":
                out.append(int(line[i + 2:i + 4], 16))
                i += 4
            elif e == "u":
                close = line.index("}", i)
                out += chr(int(line[i + 3:close], 16)).encode("utf-8", "surrogatepass")
                i = close + 1
            elif e == "R":
                m = re.match(r"\\R\{(\d+)\}\{([^}]*)\}", line[i:])
                out += (m.group(2) * int(m.group(1))).encode("utf-8")
                i += len(m.group(0))
            else:
                raise ValueError(f"unknown escape \\{e} in: {line}")
        cases.append(bytes(out))
    return cases


def load(family, backend):
    d = FIXTURES / family.replace("-metaspace", "")
    try:
        if backend == "tokenizers" or family != variant_base(family):
            raise ImportError("tokenizers asked for")
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(d))
        name = "transformers " + __import__("transformers").__version__

        def encode(text, special):
            return tok(text, add_special_tokens=special)["input_ids"]

        def decode(ids, skip):
            return tok.decode(ids, skip_special_tokens=skip)

        return encode, decode, name
    except ImportError:
        import tokenizers

        tok = tokenizers.Tokenizer.from_str(
            json.dumps(variant(family, json.loads((d / "tokenizer.json").read_text(encoding="utf-8")))))
        cfg = json.loads((d / "tokenizer_config.json").read_text(encoding="utf-8"))
        clean = cfg.get("clean_up_tokenization_spaces", False)

        def cleanup(s):
            for a, b in [(" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                         (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")]:
                s = s.replace(a, b)
            return s

        def encode(text, special):
            return tok.encode(text, add_special_tokens=special).ids

        def decode(ids, skip):
            s = tok.decode(ids, skip_special_tokens=skip)
            return cleanup(s) if clean else s

        return encode, decode, "tokenizers " + tokenizers.__version__


def variant_base(family):
    return family.replace("-metaspace", "")


def random_ids(vocab_size, added_ids, count):
    """The xorshift32 sequence of gen_oracle_families.mjs."""
    seed = 12345

    def rand():
        nonlocal seed
        seed ^= (seed << 13) & 0xFFFFFFFF
        seed ^= seed >> 17
        seed ^= (seed << 5) & 0xFFFFFFFF
        return seed / 4294967296

    out = []
    for _ in range(count):
        n = 1 + int(rand() * 40)
        ids = []
        for _ in range(n):
            r = rand()
            ids.append(int(rand() * 512) if r < 0.4 else int(rand() * vocab_size) if r < 0.85
                       else added_ids[int(rand() * len(added_ids))])
        out.append(ids)
    return out


def build(family, backend):
    encode, decode, name = load(family, backend)
    cases = parse_cases((FIXTURES / "cases.txt").read_text(encoding="utf-8"))
    cases += parse_cases((FIXTURES / "cases_families.txt").read_text(encoding="utf-8"))
    out = []
    for b in cases:
        text = b.decode("utf-8", errors="replace")  # one U+FFFD per maximal subpart, as TextDecoder
        ids, plain = encode(text, True), encode(text, False)
        out.append({"input_hex": b.hex(), "ids": ids, "ids_no_special": plain,
                    "decoded": decode(ids, False) if ids else "", "decoded_skip_special": decode(ids, True) if ids else ""})
    j = json.loads((FIXTURES / variant_base(family) / "tokenizer.json").read_text(encoding="utf-8"))
    vocab_size = max([t["id"] + 1 for t in j["added_tokens"]] + [i + 1 for i in j["model"]["vocab"].values()])
    added = [t["id"] for t in j["added_tokens"]]
    dec = [{"ids": ids, "decoded": decode(ids, False), "decoded_skip_special": decode(ids, True)}
           for ids in random_ids(vocab_size, added, 100)]
    return {"oracle": name, "tokenizer": family, "cases": out, "decode_cases": dec}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    ap.add_argument("--backend", choices=["transformers", "tokenizers"], default="transformers",
                    help="transformers' AutoTokenizer (the default; falls back to tokenizers) or tokenizers alone")
    ap.add_argument("families", nargs="*", default=FAMILIES)
    args = ap.parse_args()
    bad = 0
    for family in args.families:
        doc = build(family, args.backend)
        path = FIXTURES / f"{family}_expected.json"
        if args.check:
            old = json.loads(path.read_text(encoding="utf-8"))
            for kind in ("cases", "decode_cases"):
                for i, (a, b) in enumerate(zip(old[kind], doc[kind])):
                    for key in a:
                        if a[key] != b.get(key):
                            bad += 1
                            print(f"{family} {kind}[{i}].{key}: committed {a[key]!r:.200} != {doc['oracle']} {b.get(key)!r:.200}")
                if len(old[kind]) != len(doc[kind]):
                    bad += 1
                    print(f"{family}: {len(old[kind])} committed {kind}, {len(doc[kind])} now")
            print(f"{family}: checked {len(doc['cases'])} cases and {len(doc['decode_cases'])} decode cases with {doc['oracle']}")
        else:
            text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
            path.write_text(re.sub(r'\},\{"(input_hex|ids)"', r'},\n{"\1"', text) + "\n", encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)} with {doc['oracle']}")
    if args.check:
        print("all equal" if bad == 0 else f"{bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
