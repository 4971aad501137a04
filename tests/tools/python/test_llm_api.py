"""genesis.models' Hugging Face-shaped API (tests genesis/models/tokenization.py, streamers.py, modeling.py):
AutoTokenizer / Tokenizer.from_pretrained and tokenizer calls against the transformers.js ids of
tests/fixtures/tokenizer, chat templates against jinja2's renders of tests/fixtures/chat_templates,
AutoModelForCausalLM on the tiny Qwen2/Qwen3 checkpoints against transformers' logits, loss, gradients and
greedy continuation in their reference.safetensors, the loss against torch's float64 cross entropy, attention
masks, generate() and its streamers, reprs, and the errors bad input raises."""
import json
import os
import threading

import numpy as np
import pytest

import genesis
import genesis.models as M
from conftest import SOURCE_DIR, to_torch, torch

FIX = os.path.join(SOURCE_DIR, "tests", "fixtures")
TOK_DIR = os.path.join(FIX, "tokenizer", "qwen3")
MODELS = ("qwen2-tiny", "qwen3-tiny")


@pytest.fixture(scope="module")
def tok():
    if not os.path.exists(os.path.join(TOK_DIR, "tokenizer.json")):
        pytest.skip("no test tokenizer in the tree")
    return M.AutoTokenizer.from_pretrained(TOK_DIR)


def model_dir(name):
    return os.path.join(FIX, "qwen", name)


def reference(name):
    return {k: v for k, v in genesis.load_file(os.path.join(model_dir(name), "reference.safetensors")).items()}


def load(name, dtype=genesis.float64):
    return M.AutoModelForCausalLM.from_pretrained(model_dir(name), dtype=dtype)


def np_of(t):
    return np.array(t.detach().numpy())


# ---------------------------------------------------------------- tokenizer
def tokenizer_cases():
    with open(os.path.join(FIX, "tokenizer", "qwen3_expected.json"), encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    out = []
    for c in cases:
        try:
            out.append((bytes.fromhex(c["input_hex"]).decode("utf-8"), c))
        except UnicodeDecodeError:
            continue  # a Python str cannot hold invalid UTF-8
    return out


def test_tokenizer_matches_transformers_ids_and_decodes(tok):
    cases = tokenizer_cases()
    assert len(cases) > 200
    for text, c in cases:
        enc = tok(text)
        assert enc["input_ids"] == c["ids"], repr(text)
        assert enc.input_ids is enc["input_ids"] and enc.attention_mask == [1] * len(c["ids"])
        assert tok.encode(text) == c["ids"]
        assert tok.decode(c["ids"]) == c["decoded"]
        assert tok.decode(c["ids"], skip_special_tokens=True) == c["decoded_skip_special"]
        assert tok.convert_ids_to_tokens(c["ids"]) == tok.tokenize(text)
        assert tok.convert_tokens_to_ids(tok.convert_ids_to_tokens(c["ids"])) == c["ids"]
    texts = [t for t, _ in cases[:40]]
    assert tok.batch_decode([c["ids"] for _, c in cases[:40]]) == [c["decoded"] for _, c in cases[:40]]
    assert tok(texts)["input_ids"] == [c["ids"] for _, c in cases[:40]]


def test_tokenizer_special_tokens_and_vocabulary(tok):
    with open(os.path.join(TOK_DIR, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    with open(os.path.join(TOK_DIR, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    top = max(max(tj["model"]["vocab"].values()), max(t["id"] for t in tj["added_tokens"]))
    assert len(tok) == top + 1 == tok.vocab_size
    assert tok.eos_token == cfg["eos_token"] and tok.pad_token == cfg["pad_token"] and tok.bos_token is None
    added = {t["content"]: t["id"] for t in tj["added_tokens"]}
    assert tok.eos_token_id == added[cfg["eos_token"]] and tok.pad_token_id == added[cfg["pad_token"]]
    assert tok.bos_token_id is None
    assert sorted(tok.all_special_ids) == sorted(t["id"] for t in tj["added_tokens"] if t["special"])
    assert tok.convert_ids_to_tokens(added["<|im_start|>"]) == "<|im_start|>"
    assert tok.convert_tokens_to_ids("<|im_start|>") == added["<|im_start|>"]
    assert tok.convert_tokens_to_ids("no such token") is None and tok.convert_ids_to_tokens(len(tok) + 5) is None
    word = next(k for k in tj["model"]["vocab"] if k.startswith("\u0120") and len(k) > 4)
    assert tok.convert_tokens_to_ids(word) == tj["model"]["vocab"][word]
    ids = [added["<|im_start|>"]] + tok.encode("hi") + [added["<|im_end|>"]]
    assert tok.convert_ids_to_tokens(ids, skip_special_tokens=True) == tok.convert_ids_to_tokens(tok.encode("hi"))
    # settable as in transformers
    tok2 = M.Tokenizer.from_pretrained(TOK_DIR, padding_side="left")
    tok2.pad_token = tok2.eos_token
    assert tok2.pad_token_id == tok2.eos_token_id and tok2.padding_side == "left"
    assert tok.pad_token_id == added[cfg["pad_token"]]  # the first tokenizer is untouched
    tok2.pad_token = None
    with pytest.raises(ValueError, match="Asking to pad"):
        tok2(["a", "a b c"], padding=True)
    assert "Tokenizer(" in repr(tok) and f"vocab_size={len(tok)}" in repr(tok)


def test_tokenizer_padding_truncation_and_tensors(tok):
    texts = ["Hello world", "The quick brown fox jumps over the lazy dog.", "a"]
    ids = [tok.encode(t) for t in texts]
    width = max(len(i) for i in ids)
    pad = tok.pad_token_id
    enc = tok(texts, padding=True, return_tensors="gn")
    assert isinstance(enc, M.BatchEncoding) and set(enc) == {"input_ids", "attention_mask"}
    assert enc.input_ids.dtype == genesis.int64 and tuple(enc.input_ids.shape) == (3, width)
    assert enc.input_ids.tolist() == [i + [pad] * (width - len(i)) for i in ids]
    assert enc.attention_mask.tolist() == [[1] * len(i) + [0] * (width - len(i)) for i in ids]
    left = tok(texts, padding="longest", padding_side="left", return_tensors="gn")
    assert left.input_ids.tolist() == [[pad] * (width - len(i)) + i for i in ids]
    assert left.attention_mask.tolist() == [[0] * (width - len(i)) + [1] * len(i) for i in ids]
    fixed = tok(texts, padding="max_length", max_length=width + 3, return_tensors="np")
    assert fixed["input_ids"].shape == (3, width + 3) and fixed["input_ids"].dtype == np.int64
    assert fixed["attention_mask"].sum(1).tolist() == [len(i) for i in ids]
    cut = tok(texts, truncation=True, max_length=3)
    assert cut["input_ids"] == [i[:3] for i in ids]
    assert tok(texts, max_length=3)["input_ids"] == [i[:3] for i in ids]  # max_length alone truncates
    both = tok(texts, padding=True, truncation=True, max_length=4, return_tensors="gn")
    assert both.input_ids.tolist() == [i[:4] + [pad] * (4 - len(i[:4])) for i in ids]
    one = tok(texts[1], return_tensors="gn")
    assert tuple(one.input_ids.shape) == (1, len(ids[1])) and one.input_ids.tolist() == [ids[1]]
    assert tok(texts, padding=True, pad_to_multiple_of=8)["input_ids"][0].__len__() == -(-width // 8) * 8
    assert tok(texts[0], return_attention_mask=False).keys() == {"input_ids"}
    assert tok(texts, return_length=True)["length"] == [len(i) for i in ids]
    # decode takes tensors too, and batch_decode a 2-D tensor
    assert tok.decode(one.input_ids[0]) == texts[1]
    assert tok.batch_decode(enc.input_ids, skip_special_tokens=True) == texts
    moved = enc.to("cpu")
    assert moved is enc and enc.input_ids.device.type == "cpu"


def test_chat_templates_match_jinja2(tok):
    with open(os.path.join(FIX, "chat_templates", "expected.json"), encoding="utf-8") as f:
        ref = json.load(f)
    checked = 0
    for t in ref["templates"]:
        with open(os.path.join(FIX, "chat_templates", t["file"]), encoding="utf-8") as f:
            src = f.read()
        for case in t["cases"]:
            ctx = dict(case["context"])
            kw = dict(conversation=ctx.pop("messages"), tools=ctx.pop("tools"), documents=ctx.pop("documents"),
                      add_generation_prompt=ctx.pop("add_generation_prompt"), chat_template=src, **ctx)
            for k in ("bos_token", "eos_token"):
                kw.setdefault(k, None)  # the reference context holds no special tokens unless the case sets them
            if "error" in case:
                with pytest.raises(ValueError):
                    tok.apply_chat_template(tokenize=False, **kw)
                continue
            assert tok.apply_chat_template(tokenize=False, **kw) == case["expected"], (t["name"], case["name"])
            ids = tok.apply_chat_template(tokenize=True, **kw)
            assert ids == tok.encode(case["expected"], add_special_tokens=False)
            checked += 1
    assert checked > 100


def test_apply_chat_template_shapes(tok):
    msgs = [{"role": "user", "content": "Hi there"}]
    text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert text.startswith("<|im_start|>user\nHi there<|im_end|>") and text.endswith("<|im_start|>assistant\n")
    assert tok.apply_chat_template(msgs, tokenize=False) == text[:-len("<|im_start|>assistant\n")]
    ids = tok.apply_chat_template(msgs, add_generation_prompt=True)  # transformers' default: tokenize=True
    assert ids == tok.encode(text)
    t = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="gn")
    assert t.tolist() == [ids]
    d = tok.apply_chat_template(msgs, add_generation_prompt=True, return_dict=True, return_tensors="gn")
    assert d.input_ids.tolist() == [ids] and d.attention_mask.tolist() == [[1] * len(ids)]
    batch = tok.apply_chat_template([msgs, msgs + [{"role": "assistant", "content": "Yo"}]], tokenize=False)
    assert batch[0] == tok.apply_chat_template(msgs, tokenize=False) and len(batch) == 2
    chat = msgs + [{"role": "assistant", "content": "Well, I"}]
    full = tok.apply_chat_template(chat, tokenize=False)
    cont = tok.apply_chat_template(chat, tokenize=False, continue_final_message=True)
    assert full.startswith(cont) and cont.endswith("\nWell, I") and full[len(cont):] == "<|im_end|>\n"
    with pytest.raises(ValueError, match="not compatible"):
        tok.apply_chat_template(msgs, add_generation_prompt=True, continue_final_message=True)


# ---------------------------------------------------------------- the model
@pytest.mark.parametrize("name", MODELS)
def test_logits_loss_and_gradients_match_transformers(name):
    ref = reference(name)
    model = load(name)
    assert type(model).__name__ == ("Qwen2ForCausalLM" if name.startswith("qwen2") else "Qwen3ForCausalLM")
    assert model.dtype == genesis.float64 and model.device.type == "cpu" and not model.training
    ids, labels = ref["input_ids"], ref["labels"]
    assert bool((labels == -100).any().item())  # the reference masks some labels
    out = model(ids)
    assert isinstance(out, M.CausalLMOutputWithPast) and out.loss is None and list(out.keys()) == ["logits"]
    assert out[0] is out.logits and out["logits"] is out.logits
    np.testing.assert_allclose(np_of(out.logits), np_of(ref["logits"]).astype(np.float64), rtol=2e-5, atol=2e-6)
    model.train()
    out = model(input_ids=ids, labels=labels)
    assert list(out.keys()) == ["loss", "logits"] and out.to_tuple()[0] is out.loss
    # transformers' loss: shift, cross entropy over labels != -100, in float64 with torch
    lt = to_torch(out.logits)
    want = torch.nn.functional.cross_entropy(lt[:, :-1].reshape(-1, lt.shape[-1]), to_torch(labels)[:, 1:].reshape(-1),
                                             ignore_index=-100)
    assert abs(out.loss.item() - want.item()) <= 1e-10 * abs(want.item())
    assert abs(out.loss.item() - ref["loss"].item()) <= 2e-6 * abs(ref["loss"].item())
    out.loss.backward()
    params = dict(model.named_parameters())
    grads = [k for k in ref if k.startswith("grad.")]
    assert grads
    for k in grads:
        g = params[k[5:]].grad
        np.testing.assert_allclose(np_of(g), np_of(ref[k]).astype(np.float64), rtol=1e-4, atol=1e-6, err_msg=k)


def test_loss_gradient_through_logits_matches_torch():
    model = load("qwen3-tiny")
    ids = genesis.randint(0, model.config.vocab_size, (2, 9))
    labels = ids.clone()
    labels[0, :4] = -100
    out = model(ids, labels=labels)
    logits = out.logits.detach().requires_grad_(True)
    loss = model.loss_function(logits, labels)
    loss.backward()
    lt = to_torch(logits, requires_grad=True)
    want = torch.nn.functional.cross_entropy(lt[:, :-1].reshape(-1, lt.shape[-1]), to_torch(labels)[:, 1:].reshape(-1),
                                             ignore_index=-100)
    want.backward()
    assert abs(loss.item() - want.item()) <= 1e-10 * abs(want.item())
    np.testing.assert_allclose(np_of(logits.grad), lt.grad.numpy(), rtol=1e-7, atol=1e-12)
    # every label ignored: NaN, as torch and transformers give
    assert np.isnan(model(ids, labels=genesis.full((2, 9), -100, dtype=genesis.int64)).loss.item())


@pytest.mark.parametrize("name", MODELS)
def test_attention_mask_left_padding_equals_unpadded_rows(name):
    model = load(name)
    V = model.config.vocab_size
    g = np.random.RandomState(3)
    rows = [g.randint(0, V, n).tolist() for n in (11, 6, 8)]
    T = max(len(r) for r in rows)
    ids = genesis.tensor([[0] * (T - len(r)) + r for r in rows])
    mask = genesis.tensor([[0] * (T - len(r)) + [1] * len(r) for r in rows])
    full = model(ids, attention_mask=mask).logits
    for b, r in enumerate(rows):
        alone = model(genesis.tensor([r])).logits[0]
        np.testing.assert_allclose(np_of(full[b, T - len(r):]), np_of(alone), rtol=1e-10, atol=1e-10)
    # an all-ones mask is no mask
    ones = model(ids, attention_mask=genesis.ones_like(ids)).logits
    np.testing.assert_array_equal(np_of(ones), np_of(model(ids).logits))
    # right padding: the kept positions see only kept positions
    right = genesis.tensor([r + [0] * (T - len(r)) for r in rows])
    rmask = genesis.tensor([[1] * len(r) + [0] * (T - len(r)) for r in rows])
    out = model(right, attention_mask=rmask).logits
    for b, r in enumerate(rows):
        np.testing.assert_allclose(np_of(out[b, :len(r)]), np_of(model(genesis.tensor([r])).logits[0]), rtol=1e-10,
                                   atol=1e-10)


@pytest.mark.parametrize("name", MODELS)
def test_greedy_generate_matches_transformers(name):
    ref = reference(name)
    for dtype in (genesis.float32, genesis.float64):
        model = load(name, dtype)
        out = model.generate(ref["generate.prompt"], max_new_tokens=12, do_sample=False)
        assert out.dtype == genesis.int64 and out.tolist() == ref["generate.output"].tolist(), dtype
    out = model.generate(input_ids=ref["generate.prompt"], max_length=15)  # the prompt counted in
    assert out.tolist() == ref["generate.output"][:, :15].tolist()
    d = model.generate(ref["generate.prompt"], max_new_tokens=3, return_dict_in_generate=True)
    assert d.sequences.tolist() == ref["generate.output"][:, :10].tolist()


def greedy_by_hand(model, row, n):
    seq = list(row)
    for _ in range(n):
        seq.append(int(model(genesis.tensor([seq])).logits[0, -1].argmax().item()))
    return seq


def test_generate_batches_eos_and_padding():
    model = load("qwen2-tiny")
    V = model.config.vocab_size
    g = np.random.RandomState(5)
    rows = [g.randint(0, V, n).tolist() for n in (7, 4)]
    singles = [greedy_by_hand(model, r, 6) for r in rows]
    T = 7
    ids = genesis.tensor([[0] * (T - len(r)) + r for r in rows])
    mask = genesis.tensor([[0] * (T - len(r)) + [1] * len(r) for r in rows])
    out = model.generate(ids, attention_mask=mask, max_new_tokens=6, pad_token_id=0)
    for b, r in enumerate(rows):
        assert out[b].tolist() == ids[b].tolist() + singles[b][len(r):]
    # a row that meets eos_token_id stops there; the others run on and the stopped one is padded
    new0, new1 = singles[0][len(rows[0]):], singles[1][len(rows[1]):]
    stop = new1[2]
    cut0, cut1 = [new[:new.index(stop) + 1] if stop in new else new for new in (new0, new1)]
    out = model.generate(ids, attention_mask=mask, max_new_tokens=6, eos_token_id=stop, pad_token_id=1)
    width = max(len(cut0), len(cut1))
    assert len(cut1) < 6 and out.shape[1] == T + width
    assert out[0].tolist() == ids[0].tolist() + cut0 + [1] * (width - len(cut0))
    assert out[1].tolist() == ids[1].tolist() + cut1 + [1] * (width - len(cut1))


def test_sampling_is_reproducible_and_top_k_1_is_greedy():
    model = load("qwen3-tiny")
    ids = genesis.tensor([[5, 17, 300, 42]])
    greedy = model.generate(ids, max_new_tokens=8)
    assert model.generate(ids, max_new_tokens=8, do_sample=True, top_k=1).tolist() == greedy.tolist()
    genesis.manual_seed(7)
    a = model.generate(ids, max_new_tokens=8, do_sample=True, temperature=0.9, top_p=0.95)
    genesis.manual_seed(7)
    b = model.generate(ids, max_new_tokens=8, do_sample=True, temperature=0.9, top_p=0.95)
    assert a.tolist() == b.tolist() and a[:, :4].tolist() == ids.tolist()
    many = model.generate(ids, max_new_tokens=5, do_sample=True, num_return_sequences=3)
    assert tuple(many.shape) == (3, 9) and many[:, :4].tolist() == [ids[0].tolist()] * 3


def test_streamers_give_the_decoded_text(tok, capsys):
    model = load("qwen3-tiny", genesis.float32)  # its 512 ids are byte tokens and merges of the tokenizer
    ids = genesis.tensor([sum((tok.encode(ch) for ch in "Hi, a b c"), [])])  # byte tokens: ids below 512
    assert int(ids.max().item()) < model.config.vocab_size
    out = model.generate(ids, max_new_tokens=40, streamer=M.TextStreamer(tok))
    printed = capsys.readouterr().out
    assert printed == tok.decode(out[0]) + "\n"
    out2 = model.generate(ids, max_new_tokens=40, streamer=M.TextStreamer(tok, skip_prompt=True))
    assert out2.tolist() == out.tolist()
    assert capsys.readouterr().out == tok.decode(out[0, ids.shape[1]:]) + "\n"
    streamer = M.TextIteratorStreamer(tok, skip_prompt=True, timeout=60)
    result = {}
    th = threading.Thread(target=lambda: result.update(out=model.generate(input_ids=ids, max_new_tokens=40,
                                                                          streamer=streamer)))
    th.start()
    chunks = list(streamer)
    th.join()
    assert "".join(chunks) == tok.decode(result["out"][0, ids.shape[1]:]) and len(chunks) > 1
    assert result["out"].tolist() == out.tolist()
    for c in chunks[:-1]:  # whole words or lines only, as transformers' streamer emits them
        assert c.endswith((" ", "\n")) or ord(c[-1]) >= 0x3400, repr(c)


def test_a_failing_generation_still_ends_the_stream(tok):
    model = load("qwen3-tiny", genesis.float32)

    class Failing(M.TextIteratorStreamer):
        puts = 0

        def put(self, value):
            self.puts += 1
            if self.puts > 3:  # the prompt and two new tokens, then a failure
                raise RuntimeError("consumer went away")
            super().put(value)

    streamer = Failing(tok, timeout=60)
    errors = []

    def run():
        try:
            model.generate(genesis.tensor([[64, 65, 66]]), max_new_tokens=30, streamer=streamer)
        except RuntimeError as e:
            errors.append(str(e))

    th = threading.Thread(target=run)
    th.start()
    text = "".join(streamer)  # ends instead of waiting forever
    th.join()
    first = model.generate(genesis.tensor([[64, 65, 66]]), max_new_tokens=2)
    assert errors == ["consumer went away"] and text == tok.decode(first[0])


def test_reprs_show_sizes_like_transformers():
    model = load("qwen2-tiny", genesis.float32)
    c = model.config
    h, q, kv, inter = c.hidden_size, c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim, \
        c.intermediate_size
    n = c.num_hidden_layers
    eps = c.rms_norm_eps

    def lin(i, o, b):
        return f"Linear(in_features={i}, out_features={o}, bias={b})"

    layer = "\n".join([
        "Qwen2DecoderLayer(", "  (self_attn): Qwen2Attention(", f"    (q_proj): {lin(h, q, True)}",
        f"    (k_proj): {lin(h, kv, True)}", f"    (v_proj): {lin(h, kv, True)}", f"    (o_proj): {lin(q, h, False)}",
        "  )", "  (mlp): Qwen2MLP(", f"    (gate_proj): {lin(h, inter, False)}",
        f"    (up_proj): {lin(h, inter, False)}",
        f"    (down_proj): {lin(inter, h, False)}", "  )", f"  (input_layernorm): Qwen2RMSNorm(({h},), eps={eps})",
        f"  (post_attention_layernorm): Qwen2RMSNorm(({h},), eps={eps})", ")"])
    want = "\n".join(["Qwen2ForCausalLM(", "  (model): Qwen2Model(",
                      f"    (embed_tokens): Embedding({c.vocab_size}, {h})", "    (layers): ModuleList(",
                      f"      (0-{n - 1}): {n} x " + layer.replace("\n", "\n      "),
                      "    )", f"    (norm): Qwen2RMSNorm(({h},), eps={eps})", "  )", ")"])
    assert repr(model) == want
    assert len(model.model.layers) == n and repr(model.model.layers[0]) == layer
    assert repr(model.model.layers[0].mlp.up_proj) == lin(h, inter, False)
    q3 = load("qwen3-tiny", genesis.float32)
    assert "(q_norm): Qwen3RMSNorm(" in repr(q3) and "(lm_head): Linear(" in repr(q3)
    legacy = M.QwenForCausalLM.from_pretrained(model_dir("qwen2-tiny"))
    assert f"(q_proj): {lin(h, q, True)}" in repr(legacy) and "QwenDecoderLayer(" in repr(legacy)
    assert "do_sample=False" in repr(model.generation_config)


def test_from_pretrained_options(tmp_path):
    m = M.AutoModelForCausalLM.from_pretrained(model_dir("qwen3-tiny"), dtype="auto")
    assert m.dtype == genesis.float32 and m.name_or_path == model_dir("qwen3-tiny")
    assert M.AutoModelForCausalLM.from_pretrained(model_dir("qwen3-tiny"), torch_dtype="bfloat16").dtype == \
        genesis.bfloat16
    assert M.Qwen3ForCausalLM.from_pretrained(model_dir("qwen3-tiny"), device_map="cpu").device.type == "cpu"
    with pytest.raises(ValueError, match="qwen3 model, not Qwen2ForCausalLM"):
        M.Qwen2ForCausalLM.from_pretrained(model_dir("qwen3-tiny"))
    fresh = M.AutoModelForCausalLM.from_config(m.config)
    assert type(fresh) is M.Qwen3ForCausalLM and fresh.num_parameters() == m.config.num_parameters()
    # bf16 logits: the loss is computed in float32
    b = M.AutoModelForCausalLM.from_pretrained(model_dir("qwen3-tiny"), dtype=genesis.bfloat16)
    ids = genesis.tensor([[1, 2, 3, 4, 5]])
    out = b(ids, labels=ids)
    assert out.logits.dtype == genesis.bfloat16 and out.loss.dtype == genesis.float32
    # a saved copy loads again, tokenizer files included
    m.save_pretrained(str(tmp_path / "m"))
    M.Tokenizer.from_pretrained(TOK_DIR).save_pretrained(str(tmp_path / "m"))
    assert os.path.exists(tmp_path / "m" / "tokenizer.json") and os.path.exists(tmp_path / "m" / "config.json")
    assert M.AutoTokenizer.from_pretrained(tmp_path / "m").encode("abc") == M.Tokenizer.from_pretrained(
        TOK_DIR).encode("abc")


# ---------------------------------------------------------------- errors
def test_errors_for_bad_input(tok, tmp_path):
    missing = str(tmp_path / "nope")
    for fn in (M.AutoTokenizer.from_pretrained, M.AutoModelForCausalLM.from_pretrained):
        with pytest.raises(FileNotFoundError, match="No such model folder") as e:
            fn(missing)
        assert e.value.filename == missing
        with pytest.raises(TypeError, match="str or os.PathLike"):
            fn(42)
        with pytest.raises(NotADirectoryError):
            fn(os.path.join(TOK_DIR, "tokenizer.json"))
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        M.AutoTokenizer.from_pretrained(model_dir("qwen3-tiny"))
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        M.AutoModelForCausalLM.from_pretrained(model_dir("qwen3-tiny"), bogus=1)
    with pytest.raises(ValueError, match="unknown dtype"):
        M.AutoModelForCausalLM.from_pretrained(model_dir("qwen3-tiny"), dtype="float7")
    with pytest.raises(OSError, match="from_pretrained"):
        M.AutoModelForCausalLM()
    # tokenizer calls
    with pytest.raises(ValueError, match="text input must be of type"):
        tok(123)
    with pytest.raises(ValueError, match="text input must be of type"):
        tok(["a", 3])
    with pytest.raises(ValueError, match="not a valid PaddingStrategy"):
        tok("a", padding="sideways")
    with pytest.raises(ValueError, match="not a valid TruncationStrategy"):
        tok("a", truncation="middle")
    with pytest.raises(ValueError, match="not a valid TensorType"):
        tok("a", return_tensors="tf")
    with pytest.raises(ValueError, match="Unable to create tensor"):
        tok(["a", "a b c d"], return_tensors="gn")
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        tok("a", colour=1)
    with pytest.raises(TypeError, match="must hold ints"):
        tok.decode(["a"])
    with pytest.raises(TypeError, match="use batch_decode"):
        tok.decode([[1, 2]])
    with pytest.raises(TypeError, match="must be an int, a list of ints"):
        tok.decode("hello")
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tok.pad_token = "<definitely not a token>"
    with pytest.raises(TypeError, match="message 0 must be a dict"):
        tok.apply_chat_template(["hi"])
    with pytest.raises(ValueError, match="has no 'role'"):
        tok.apply_chat_template([{"content": "hi"}])
    with pytest.raises(ValueError, match="chat template"):
        tok.apply_chat_template([{"role": "user", "content": "hi"}], chat_template="")
    with pytest.raises(ValueError, match="line 1"):
        tok.apply_chat_template([{"role": "user", "content": "hi"}], chat_template="{% if %}")
    # the model
    model = load("qwen3-tiny", genesis.float32)
    ids = genesis.tensor([[1, 2, 3]])
    with pytest.raises(TypeError, match="genesis.Tensor of token ids"):
        model([[1, 2, 3]])
    with pytest.raises(ValueError, match="must be 2-D"):
        model(genesis.tensor([1, 2, 3]))
    with pytest.raises(TypeError, match="must hold integers"):
        model(genesis.tensor([[1.0, 2.0]]))
    with pytest.raises(IndexError, match="outside the vocabulary"):
        model(genesis.tensor([[1, model.config.vocab_size]]))
    with pytest.raises(IndexError, match="outside the vocabulary"):
        model(genesis.tensor([[-1, 2]]))
    with pytest.raises(ValueError, match="labels must have the shape"):
        model(ids, labels=genesis.tensor([[1, 2]]))
    with pytest.raises(IndexError, match="labels must be -100"):
        model(ids, labels=genesis.tensor([[1, 2, 9999]]))
    with pytest.raises(ValueError, match="attention_mask must have the shape"):
        model(ids, attention_mask=genesis.tensor([[1, 1]]))
    with pytest.raises(NotImplementedError, match="past_key_values"):
        model(ids, past_key_values=object())
    with pytest.raises(ValueError, match="greater than 0"):
        model.generate(ids, max_new_tokens=0)
    with pytest.raises(ValueError, match="strictly positive float"):
        model.generate(ids, do_sample=True, temperature=0.0)
    with pytest.raises(ValueError, match="top_p"):
        model.generate(ids, do_sample=True, top_p=1.5)
    with pytest.raises(ValueError, match="top_k"):
        model.generate(ids, do_sample=True, top_k=-2)
    with pytest.raises(ValueError, match=r"not used by the model: \['max_tokens'\]"):
        model.generate(ids, max_tokens=5)
    with pytest.raises(NotImplementedError, match="min_new_tokens is not supported"):
        model.generate(ids, min_new_tokens=3)
    with pytest.raises(ValueError, match="needs input_ids"):
        model.generate()
    with pytest.raises(ValueError, match="only supports batch size 1"):
        model.generate(genesis.tensor([[1, 2], [3, 4]]), max_new_tokens=2, streamer=M.TextStreamer(tok))
    with pytest.raises(ValueError, match="num_return_sequences"):
        model.generate(ids, num_return_sequences=2)
    with pytest.raises(NotImplementedError, match="beam search"):
        model.generate(ids, num_beams=4)
    with pytest.raises(TypeError, match="must be a GenerationConfig"):
        model.generate(ids, generation_config={"max_new_tokens": 2})
    with pytest.warns(UserWarning, match="max_position_embeddings"):
        out = model.generate(ids, max_new_tokens=model.config.max_position_embeddings)
    assert out.shape[1] == model.config.max_position_embeddings
    with pytest.raises(ValueError, match="at least one token"):
        model.generate(ids, attention_mask=genesis.tensor([[0, 0, 0]]))
