"""genesis.models from Python: a small random Qwen3-architecture model as an nn.Module (names,
forward, loss, backward, optimizer step), greedy generation, save/load of a Hugging Face folder,
and SFT on a few chats (tests tools/python/src/models.cpp, genesis/models/)."""
import json
import os

import numpy as np
import pytest

import genesis
import genesis.models as M
from conftest import SOURCE_DIR


def tiny_config():
    return M.QwenConfig(model_type="qwen3", vocab_size=64, hidden_size=32, intermediate_size=64,
                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                        max_position_embeddings=256, qk_norm=True, dtype="float32", eos_token_ids=[])


def test_model_is_a_module_with_hf_names():
    genesis.manual_seed(0)
    model = M.QwenForCausalLM(tiny_config())
    names = [n for n, _ in model.named_parameters()]
    assert "model.embed_tokens.weight" in names and "model.layers.1.self_attn.q_norm.weight" in names
    assert sum(p.numel() for p in model.parameters()) == model.config.num_parameters()
    ids = genesis.randint(0, 64, (2, 7))
    logits = model(ids)
    assert logits.shape == (2, 7, 64)
    # the loss is HF's shifted cross entropy
    want = genesis.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 64), ids[:, 1:].reshape(-1))
    loss = model(ids, labels=ids)
    assert abs(loss.item() - want.item()) < 1e-5
    opt = genesis.optim.AdamW(model.parameters(), lr=1e-2)
    loss.backward()
    opt.step()
    assert model(ids, labels=ids).item() < loss.item()


def test_generation_is_greedy_and_deterministic(tmp_path):
    genesis.manual_seed(1)
    model = M.QwenForCausalLM(tiny_config())
    out = model.generate([[1, 2, 3], [4, 5]], max_new_tokens=6)
    assert [len(o) for o in out] == [6, 6]
    # greedy = argmax of the full forward, token by token
    seq = [1, 2, 3]
    for _ in range(6):
        seq.append(int(model(genesis.tensor([seq]))[0, -1].argmax().item()))
    assert out[0] == seq[3:]
    seen = []
    model.generate([[1, 2, 3]], max_new_tokens=4, streamer=lambda row, tok: seen.append(tok))
    assert seen == out[0][:4]
    model.save_pretrained(str(tmp_path / "tiny"))
    again = M.QwenForCausalLM.from_pretrained(str(tmp_path / "tiny"))
    assert again.generate([[1, 2, 3]], max_new_tokens=6)[0] == out[0]


def test_sft_trains_on_chat_jsonl(tmp_path):
    tok_dir = os.path.join(SOURCE_DIR, "tests", "fixtures", "tokenizer", "qwen3")
    if not os.path.exists(os.path.join(tok_dir, "tokenizer.json")):
        pytest.skip("no test tokenizer in the tree")
    tok = M.Tokenizer.from_pretrained(tok_dir)
    chats = tmp_path / "chats.jsonl"
    with open(chats, "w") as f:
        for i in range(16):
            f.write(json.dumps({"messages": [{"role": "user", "content": f"echo {i}"},
                                             {"role": "assistant", "content": f"{i}"}]}) + "\n")
    cfg = tiny_config()
    cfg.vocab_size = tok.vocab_size
    genesis.manual_seed(0)
    model = M.QwenForCausalLM(cfg)
    steps = []
    r = M.train_sft(model, tok, train_file=str(chats), output_dir=str(tmp_path / "out"), max_steps=4, lr=1e-2,
                    batch_size=4, save_final=False, warmup_steps=0, on_step=steps.append)
    assert r["steps"] == 4 and steps == [1, 2, 3, 4] and len(r["losses"]) == 4
    assert np.isfinite(r["losses"]).all()


def test_tokenizer_round_trip_and_streaming():
    tok_dir = os.path.join(SOURCE_DIR, "tests", "fixtures", "tokenizer", "qwen3")
    if not os.path.exists(os.path.join(tok_dir, "tokenizer.json")):
        pytest.skip("no test tokenizer in the tree")
    tok = M.Tokenizer.from_pretrained(tok_dir)
    text = "Genesis from Python: héllo, 世界!"
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    dec = M.StreamDecoder(tok)
    assert "".join(dec.put(i) for i in ids) + dec.flush() == text
    chat = tok.apply_chat_template([{"role": "user", "content": "Hi"}], add_generation_prompt=True, tokenize=False)
    assert chat.startswith("<|im_start|>user\nHi<|im_end|>") and chat.rstrip().endswith("assistant")
    assert tok.apply_chat_template([{"role": "user", "content": "Hi"}], add_generation_prompt=True) == \
        tok.encode(chat, False)
