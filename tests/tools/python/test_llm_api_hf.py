"""genesis.models' Hugging Face-shaped API against what transformers itself returned for the same calls
(llm_api_hf.json, written by llm_api_hf_reference.py with transformers 5 and torch on the fixtures' Qwen3
tokenizer and tiny Qwen2/Qwen3 checkpoints): padding and truncation, chat templates, special tokens, greedy
generation of a left-padded batch with and without an eos id, generate()'s default length, the logits of a
left-padded row, TextStreamer's text and print(model)."""
import contextlib
import io
import json
import os

import numpy as np
import pytest

import genesis
import genesis.models as M
from conftest import SOURCE_DIR

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(SOURCE_DIR, "tests", "fixtures")
TOK_DIR = os.path.join(FIX, "tokenizer", "qwen3")


@pytest.fixture(scope="module")
def ref():
    with open(os.path.join(HERE, "llm_api_hf.json"), encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def tok():
    if not os.path.exists(os.path.join(TOK_DIR, "tokenizer.json")):
        pytest.skip("no test tokenizer in the tree")
    return M.AutoTokenizer.from_pretrained(TOK_DIR)


def test_tokenizer_calls_match_transformers(tok, ref):
    texts = ref["texts"]
    assert dict(tok(texts, padding=True)) == ref["pad_right"]
    assert dict(tok(texts, padding=True, padding_side="left")) == ref["pad_left"]
    assert dict(tok(texts, truncation=True, max_length=3)) == ref["trunc"]
    assert dict(tok(texts, max_length=3)) == ref["maxlen_only"]
    assert dict(tok(texts, padding="max_length", max_length=15)) == ref["pad_max"]
    assert dict(tok(texts, padding=True, pad_to_multiple_of=8)) == ref["multiple"]
    assert tok.convert_ids_to_tokens(tok.encode(ref["tokens_text"])) == ref["tokens"]
    assert len(tok) == ref["len"]
    assert [tok.eos_token, tok.eos_token_id] == ref["eos"] and [tok.pad_token, tok.pad_token_id] == ref["pad"]
    assert [tok.bos_token, tok.bos_token_id] == ref["bos"]
    assert tok.decode(tok.encode("<|im_start|>user\nhi<|im_end|>"), skip_special_tokens=True) == ref["decode_skip"]


def test_chat_template_calls_match_transformers(tok, ref):
    msgs = ref["msgs"]
    assert tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False) == ref["chat"]
    assert tok.apply_chat_template(msgs, tokenize=False) == ref["chat_noprompt"]
    assert tok.apply_chat_template(msgs, add_generation_prompt=True) == ref["chat_ids"]
    # transformers 5 returns a dict by default; return_dict=True gives the same here
    assert dict(tok.apply_chat_template(msgs, add_generation_prompt=True, return_dict=True)) == ref["chat_dict"]
    assert tok.apply_chat_template(msgs + [{"role": "assistant", "content": "Well, I"}], continue_final_message=True,
                                   tokenize=False) == ref["cont"]


@pytest.mark.parametrize("name", ["qwen2-tiny", "qwen3-tiny"])
def test_model_calls_match_transformers(tok, ref, name):
    r = ref[name]
    model = M.AutoModelForCausalLM.from_pretrained(os.path.join(FIX, "qwen", name), dtype=genesis.float64)
    ids, mask = genesis.tensor(r["ids"]), genesis.tensor(r["mask"])
    out = model.generate(ids, attention_mask=mask, max_new_tokens=6, do_sample=False, pad_token_id=0)
    assert out.tolist() == r["gen_left"]
    out = model.generate(ids, attention_mask=mask, max_new_tokens=6, eos_token_id=r["stop"], pad_token_id=1)
    assert out.tolist() == r["gen_eos"]
    n = sum(r["mask"][1])
    assert model.generate(ids[1:, ids.shape[1] - n:]).tolist() == r["gen_default"]
    logits = model(ids, attention_mask=mask).logits[1, ids.shape[1] - n:]
    # transformers computes the rotary tables in float32 even for a float64 model (genesis in float64): 1e-6
    np.testing.assert_allclose(np.array(logits.detach().numpy()), np.array(r["padded_row_logits"]), rtol=0, atol=1e-6)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = model.generate(genesis.tensor([[39, 72, 11, 264, 293, 272]]), max_new_tokens=30, do_sample=False,
                             streamer=M.TextStreamer(tok))
    assert out.tolist() == r["stream_out"] and buf.getvalue() == r["stream_text"]
    # print(model): transformers' tree without the entries genesis does not have as modules
    want = [line for line in r["repr"].split("\n") if "(act_fn)" not in line and "(rotary_emb)" not in line
            and not (r["tied"] and "(lm_head)" in line)]
    assert repr(model).split("\n") == want
