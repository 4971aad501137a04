#!/usr/bin/env python3
"""llm_api_hf_reference.py - what transformers does with the calls test_llm_api.py makes, for comparison:

    OUT=tests/tools/python python3 tests/tools/python/llm_api_hf_reference.py   # writes llm_api_hf.json

Needs transformers (5.x) and torch; runs on the CPU in float64 from the repository root, with the fixtures'
Qwen3 tokenizer and tiny Qwen2/Qwen3 checkpoints: tokenizer padding/truncation, chat templates, special
tokens, greedy generation of a left-padded batch (with and without an eos id), generate()'s default length,
the logits of a left-padded row, TextStreamer's printed text and print(model).
"""
import contextlib
import io
import json
import os

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer, TextStreamer


def main():
    tok = AutoTokenizer.from_pretrained("tests/fixtures/tokenizer/qwen3")
    res = {"transformers": transformers.__version__, "torch": torch.__version__}
    texts = ["Hello world", "The quick brown fox jumps over the lazy dog.", "a"]
    res["texts"] = texts
    res["pad_right"] = dict(tok(texts, padding=True))
    res["pad_left"] = dict(tok(texts, padding=True, padding_side="left"))
    res["trunc"] = dict(tok(texts, truncation=True, max_length=3))
    res["maxlen_only"] = dict(tok(texts, max_length=3))
    res["pad_max"] = dict(tok(texts, padding="max_length", max_length=15))
    res["multiple"] = dict(tok(texts, padding=True, pad_to_multiple_of=8))
    msgs = [{"role": "user", "content": "Hi there"}]
    res["msgs"] = msgs
    res["chat"] = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    res["chat_noprompt"] = tok.apply_chat_template(msgs, tokenize=False)
    res["chat_ids"] = tok.apply_chat_template(msgs, add_generation_prompt=True, return_dict=False)
    res["chat_dict"] = dict(tok.apply_chat_template(msgs, add_generation_prompt=True))
    res["cont"] = tok.apply_chat_template(msgs + [{"role": "assistant", "content": "Well, I"}],
                                          continue_final_message=True, tokenize=False)
    res["tokens_text"] = "Hello world, h\u00e9llo <|im_end|>"
    res["tokens"] = tok.convert_ids_to_tokens(tok.encode(res["tokens_text"]))
    res["len"] = len(tok)
    res["eos"] = [tok.eos_token, tok.eos_token_id]
    res["pad"] = [tok.pad_token, tok.pad_token_id]
    res["bos"] = [tok.bos_token, tok.bos_token_id]
    res["decode_skip"] = tok.decode(tok.encode("<|im_start|>user\nhi<|im_end|>"), skip_special_tokens=True)
    g = torch.Generator().manual_seed(3)
    for name in ("qwen2-tiny", "qwen3-tiny"):
        model = AutoModelForCausalLM.from_pretrained(f"tests/fixtures/qwen/{name}", dtype=torch.float64).eval()
        rows = [torch.randint(0, model.config.vocab_size, (n,), generator=g).tolist() for n in (7, 4)]
        T = 7
        ids = torch.tensor([[0] * (T - len(r)) + r for r in rows])
        mask = torch.tensor([[0] * (T - len(r)) + [1] * len(r) for r in rows])
        r = {"ids": ids.tolist(), "mask": mask.tolist()}
        with torch.no_grad():
            r["gen_left"] = model.generate(ids, attention_mask=mask, max_new_tokens=6, do_sample=False,
                                           pad_token_id=0).tolist()
            r["stop"] = r["gen_left"][1][T + 1]  # row 1's second new token ends it
            r["gen_eos"] = model.generate(ids, attention_mask=mask, max_new_tokens=6, do_sample=False,
                                          eos_token_id=r["stop"], pad_token_id=1).tolist()
            r["gen_default"] = model.generate(ids[1:, T - len(rows[1]):]).tolist()
            r["padded_row_logits"] = model(ids, attention_mask=mask).logits[1, T - len(rows[1]):].tolist()
            prompt = torch.tensor([[39, 72, 11, 264, 293, 272]])
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                r["stream_out"] = model.generate(prompt, max_new_tokens=30, do_sample=False,
                                                 streamer=TextStreamer(tok)).tolist()
            r["stream_text"] = buf.getvalue()
        r["repr"] = repr(model)
        r["tied"] = bool(model.config.tie_word_embeddings)
        res[name] = r
    path = os.path.join(os.environ.get("OUT", os.path.dirname(os.path.abspath(__file__))), "llm_api_hf.json")
    with open(path, "w") as f:
        json.dump(res, f)
        f.write("\n")
    print("wrote", path, os.path.getsize(path))


if __name__ == "__main__":
    main()
