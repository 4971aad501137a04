"""genesis.LLM and genesis.SamplingParams (genesis/serving.py over the serving engine) on the tiny Qwen2 fixture with
a byte-level tokenizer beside it: greedy outputs equal genesis.models' generate on each prompt alone, in input order;
n seeded samples equal separately seeded requests; stop strings and stop ids; logprobs against log_softmax of the
model's own forward in float64; chat against the rendered prompt; engine stats; and the errors bad input raises."""
import json
import os
import shutil

import pytest

import genesis
import genesis.models as M
from conftest import SOURCE_DIR, torch

FIX = os.path.join(SOURCE_DIR, "tests", "fixtures", "qwen", "qwen2-tiny")
END = 257  # the tokenizer's special end token <|end|>


def byte_tokenizer_json():
    """A byte-level BPE over the fixture's 512 ids: the 256 bytes (GPT-2's byte-to-character map), the merge 'a b'
    (id 256), the special <|end|> (257) and added tokens <tN> up to 511."""
    vocab, extra = {}, 0
    for b in range(256):
        keep = ord("!") <= b <= ord("~") or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF
        vocab[chr(b if keep else 256 + extra)] = b
        extra += 0 if keep else 1
    vocab["ab"] = 256
    added = [{"id": i, "content": "<|end|>" if i == END else f"<t{i}>", "special": i == END, "single_word": False,
              "lstrip": False, "rstrip": False, "normalized": False} for i in range(257, 512)]
    level = {"add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": {"type": "NFC"},
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": "\\p{L}+|\\s+"}, "behavior": "Isolated", "invert": False},
                dict(type="ByteLevel", **level)]},
            "post_processor": dict(type="ByteLevel", **level), "decoder": dict(type="ByteLevel", **level),
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "vocab": vocab, "merges": ["a b"]}}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    if not os.path.exists(os.path.join(FIX, "model.safetensors")):
        pytest.skip("no tiny Qwen fixture in the tree")
    d = str(tmp_path_factory.mktemp("qwen2_tok"))
    for f in ("config.json", "generation_config.json", "model.safetensors"):
        shutil.copy(os.path.join(FIX, f), d)
    with open(os.path.join(d, "tokenizer.json"), "w") as f:
        json.dump(byte_tokenizer_json(), f)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"eos_token": "<|end|>", "chat_template": "{% for m in messages %}{{ m.role }}: {{ m.content }}"
                   "<|end|>{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}"}, f)
    return d


@pytest.fixture(scope="module")
def llm(folder):
    return genesis.LLM(folder, dtype="float32", num_blocks=64, block_size=4)


@pytest.fixture(scope="module")
def model(folder):
    return M.QwenForCausalLM.from_pretrained(folder, dtype=genesis.float32)


@pytest.fixture(scope="module")
def tok(folder):
    return M.AutoTokenizer.from_pretrained(folder)


def alone(model, ids, max_tokens, **kw):
    """genesis.models' generate on one prompt (the tokenizer's end token stops it, as it stops the engine)."""
    kw.setdefault("stop_ids", [END])
    return model.generate([ids], max_new_tokens=max_tokens, **kw)[0]


def expect_idle(llm):
    s = llm.get_engine_stats()
    assert (s["running"], s["waiting"], s["blocks_used"]) == (0, 0, 0)


def test_defaults_follow_vllm():
    p = genesis.SamplingParams()
    assert (p.n, p.temperature, p.top_p, p.top_k, p.min_p, p.max_tokens, p.seed, p.logprobs) == (
        1, 1.0, 1.0, 0, 0.0, 16, None, None)
    assert (p.stop, p.stop_token_ids, p.ignore_eos, p.skip_special_tokens) == ([], [], False, True)
    assert genesis.SamplingParams(stop="x").stop == ["x"]
    assert "temperature=1.0" in repr(p)


def test_greedy_equals_generate_alone_in_input_order(llm, model, tok):
    params = genesis.SamplingParams(temperature=0, max_tokens=6)
    texts = ["ab ab", "a", "bbb a b ab", "b a", "hello there", "ab"]
    outs = llm.generate(texts, params)
    assert [o.prompt for o in outs] == texts
    for o, t in zip(outs, texts):
        assert o.prompt_token_ids == tok.encode(t, add_special_tokens=False)
        assert len(o.outputs) == 1 and o.outputs[0].index == 0 and o.finished
        want = alone(model, o.prompt_token_ids, 6)
        assert o.outputs[0].token_ids == want, t
        assert o.outputs[0].text == tok.decode(want, skip_special_tokens=True)
        assert o.outputs[0].finish_reason == ("stop" if want[-1] == END else "length")
        assert o.outputs[0].logprobs is None and o.outputs[0].cumulative_logprob is None
    # token ids: one prompt (list[int]), many (list[list[int]]), vLLM's dicts, and a mix with text
    ids = [[300, 301, 302], [5], [7, 8, 9, 10, 11, 12, 13], [400] * 9]
    single = llm.generate(ids[0], params)
    assert len(single) == 1 and single[0].prompt is None and single[0].prompt_token_ids == ids[0]
    assert single[0].outputs[0].token_ids == alone(model, ids[0], 6)
    mixed = llm.generate([ids[1], texts[0], {"prompt_token_ids": ids[2]}, {"prompt": texts[2]}, ids[3]], params)
    assert [o.prompt for o in mixed] == [None, texts[0], None, texts[2], None]
    for o in mixed:
        assert o.outputs[0].token_ids == alone(model, o.prompt_token_ids, 6)
    assert len({o.request_id for o in outs + mixed}) == len(outs + mixed)
    expect_idle(llm)


def test_per_prompt_params_and_ignore_eos(llm, model):
    a = genesis.SamplingParams(temperature=0, max_tokens=3, ignore_eos=True)
    b = genesis.SamplingParams(temperature=0, max_tokens=7, ignore_eos=True)
    prompts = [[1, 2], [3, 4, 5], [6]]
    outs = llm.generate(prompts, [a, b, a])
    for o, n in zip(outs, (3, 7, 3)):
        assert o.outputs[0].token_ids == alone(model, o.prompt_token_ids, n, stop_ids=[], ignore_eos=True)
        assert len(o.outputs[0].token_ids) == n and o.outputs[0].finish_reason == "length"


def test_n_seeded_samples_equal_separate_requests(llm, model):
    prompt = [11, 12, 13, 14, 15]
    p = genesis.SamplingParams(n=3, temperature=1.0, top_k=50, max_tokens=8, seed=7, ignore_eos=True)
    out = llm.generate([prompt], p)[0]
    assert [c.index for c in out.outputs] == [0, 1, 2]
    samples = [c.token_ids for c in out.outputs]
    for k in range(3):
        one = genesis.SamplingParams(temperature=1.0, top_k=50, max_tokens=8, seed=7 + k, ignore_eos=True)
        assert llm.generate([prompt], one)[0].outputs[0].token_ids == samples[k]
        assert samples[k] == alone(model, prompt, 8, temperature=1.0, top_k=50, seed=7 + k, stop_ids=[],
                                   ignore_eos=True)
    assert len({tuple(s) for s in samples}) > 1  # three streams, not one
    # the same seed again, batched with other prompts: the same tokens
    again = llm.generate([[1, 2, 3], prompt, [4] * 6], p)[1]
    assert [c.token_ids for c in again.outputs] == samples
    expect_idle(llm)


def test_stop_strings_and_stop_ids(llm, model, tok):
    prompt = [20, 21, 22]
    full = alone(model, prompt, 10, stop_ids=[], ignore_eos=True)
    # a stop string: the text of the fourth token; the sample ends at the first token whose text holds it
    stop = tok.decode(full[3:4])
    assert stop
    k = next(i for i in range(1, len(full) + 1) if stop in tok.decode(full[:i], skip_special_tokens=True))
    text = tok.decode(full[:k], skip_special_tokens=True)
    p = genesis.SamplingParams(temperature=0, max_tokens=10, stop=["\x00never", stop], ignore_eos=True)
    c = llm.generate([prompt], p)[0].outputs[0]
    assert c.token_ids == full[:k] and c.finish_reason == "stop" and c.stop_reason == stop
    assert c.text == text[:text.find(stop)]
    p.include_stop_str_in_output = True
    assert llm.generate([prompt], p)[0].outputs[0].text == text[:text.find(stop) + len(stop)]
    # a stop id: the sample ends with it
    p = genesis.SamplingParams(temperature=0, max_tokens=10, stop_token_ids=[full[2]], ignore_eos=True)
    c = llm.generate([prompt], p)[0].outputs[0]
    assert c.token_ids == full[:full.index(full[2]) + 1]
    assert (c.finish_reason, c.stop_reason) == ("stop", full[2])


def test_logprobs_equal_log_softmax_of_the_forward(folder):
    llm64 = genesis.LLM(folder, dtype=genesis.float64, num_blocks=32, block_size=4)
    m64 = M.AutoModelForCausalLM.from_pretrained(folder, dtype=genesis.float64)
    prompt = [30, 31, 32, 33, 34]
    for temperature, k in ((0.0, 3), (1.0, 0), (0.8, 5)):
        p = genesis.SamplingParams(temperature=temperature, max_tokens=5, logprobs=k, seed=3, ignore_eos=True)
        c = llm64.generate([prompt], p)[0].outputs[0]
        assert len(c.logprobs) == len(c.token_ids) == 5
        ids = prompt + c.token_ids
        logits = torch.tensor(m64(genesis.tensor([ids[:-1]], dtype=genesis.int64)).logits.detach().numpy())[0]
        # the engine samples from float32 rows of logits and takes their log_softmax in float64
        ref = torch.log_softmax(logits.float().double(), dim=-1)[len(prompt) - 1:]
        for t, (tokid, step) in enumerate(zip(c.token_ids, c.logprobs)):
            assert abs(step[tokid].logprob - ref[t, tokid].item()) < 1e-10
            top = torch.topk(ref[t], k)
            want = dict(zip(top.indices.tolist(), top.values.tolist()))
            others = {i: lp for i, lp in step.items() if i != tokid or i in want}
            assert set(others) == set(want)
            for rank, (i, v) in enumerate(zip(top.indices.tolist(), top.values.tolist()), 1):
                assert abs(step[i].logprob - v) < 1e-10 and step[i].rank == rank
            assert len(step) == k + (tokid not in want)
            assert step[tokid].decoded_token == M.AutoTokenizer.from_pretrained(folder).decode([tokid])
            if temperature == 0:
                assert tokid == int(ref[t].argmax()) and step[tokid].rank == 1
        assert abs(c.cumulative_logprob - sum(s[i].logprob for s, i in zip(c.logprobs, c.token_ids))) < 1e-12


def test_chat_renders_the_template_and_reuses_the_prefix(llm, model, tok):
    p = genesis.SamplingParams(temperature=0, max_tokens=5)
    conv = [{"role": "system", "content": "b a b a b a"}, {"role": "user", "content": "ab ab ab"}]
    out = llm.chat(conv, p)
    assert len(out) == 1
    assert out[0].prompt == "system: b a b a b a<|end|>user: ab ab ab<|end|>assistant: "
    assert out[0].prompt_token_ids == tok.encode(out[0].prompt, add_special_tokens=False)
    assert out[0].outputs[0].token_ids == alone(model, out[0].prompt_token_ids, 5)
    before = llm.get_engine_stats()
    convs = [conv, [{"role": "user", "content": "a"}]]
    again = llm.chat(convs, p, chat_template_kwargs={"enable_thinking": False})
    after = llm.get_engine_stats()
    assert again[0].outputs[0].token_ids == out[0].outputs[0].token_ids
    assert again[1].outputs[0].token_ids == alone(model, again[1].prompt_token_ids, 5)
    # the repeated conversation's full blocks came from the prefix cache: fewer tokens computed than prompted
    prompted = after["prompt_tokens"] - before["prompt_tokens"]
    assert prompted == sum(len(o.prompt_token_ids) for o in again)
    assert after["prefix_hit_rate"] > 0
    assert after["requests_finished"] - before["requests_finished"] == 2
    expect_idle(llm)


def test_engine_stats_and_config(llm):
    s = llm.get_engine_stats()
    for key in ("running", "waiting", "blocks_total", "blocks_used", "blocks_free", "blocks_cached",
                "prefix_hit_rate", "preemptions", "steps", "prompt_tokens", "computed_tokens", "generated_tokens",
                "requests_finished"):
        assert key in s
    assert s["blocks_total"] == 64 and s["blocks_used"] + s["blocks_free"] + s["blocks_cached"] == 64
    c = llm.get_engine_config()
    assert (c["num_blocks"], c["block_size"], c["max_running"], c["max_tokens_per_step"]) == (64, 4, 256, 2048)
    assert "num_blocks=64" in repr(llm)
    assert llm.get_tokenizer().vocab_size == 512


def test_small_pool_and_batch_limits_keep_outputs(folder, model):
    """Two running sequences at most, 8 tokens a step, a pool of 8 blocks of 4: chunked prompts and preemption."""
    small = genesis.LLM(folder, dtype="float32", num_blocks=8, block_size=4, max_num_seqs=2,
                        max_num_batched_tokens=8, enable_prefix_caching=False)
    p = genesis.SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)
    prompts = [[i + 1] * (3 + 2 * i) for i in range(6)]
    outs = small.generate(prompts, p)
    for o in outs:
        assert o.outputs[0].token_ids == alone(model, o.prompt_token_ids, 12, stop_ids=[], ignore_eos=True)
    assert small.get_engine_stats()["preemptions"] > 0  # the pool ran out: recomputed, same tokens
    expect_idle(small)


def test_bad_arguments_raise_clear_errors(folder, llm):
    S = genesis.SamplingParams
    for kw, msg in ((dict(n=0), "n must be at least 1"), (dict(temperature=-0.5), "temperature must be non-negative"),
                    (dict(top_p=0.0), r"top_p must be in \(0, 1\]"), (dict(top_k=-2), "top_k must be"),
                    (dict(min_p=1.5), r"min_p must be in \[0, 1\]"),
                    (dict(repetition_penalty=0.0), "repetition_penalty must be greater than zero"),
                    (dict(max_tokens=0), "max_tokens must be at least 1"),
                    (dict(logprobs=21), r"logprobs must be in \[0, 20\]"), (dict(stop=[""]), "must not be empty")):
        with pytest.raises(ValueError, match=msg):
            S(**kw)
    for kw in (dict(n=1.5), dict(temperature="hot"), dict(stop=5), dict(stop_token_ids=["a"]), dict(seed=1.0),
               dict(max_tokens=2.0), dict(logprobs=True)):
        with pytest.raises(TypeError):
            S(**kw)
    with pytest.raises(TypeError, match="unexpected keyword"):
        S(best_of=2)
    p = S(temperature=0, max_tokens=2)
    with pytest.raises(TypeError, match="prompts must be"):
        llm.generate(123, p)
    with pytest.raises(TypeError, match="list of int"):
        llm.generate([[1, "a"]], p)
    with pytest.raises(TypeError, match="each prompt"):
        llm.generate([1.5], p)
    with pytest.raises(ValueError, match="cannot be empty"):
        llm.generate([[1], []], p)
    with pytest.raises(ValueError, match="cannot be empty"):
        llm.generate("", p)
    with pytest.raises(ValueError, match="Token id 512 is out of vocabulary"):
        llm.generate([[1, 512]], p)
    with pytest.raises(ValueError, match="longer than the maximum model length"):
        llm.generate([[1] * 300], p)
    with pytest.raises(ValueError, match="must be the same"):
        llm.generate([[1], [2]], [p])
    with pytest.raises(TypeError, match="SamplingParams"):
        llm.generate([[1]], {"temperature": 0})
    with pytest.raises(TypeError, match="'role' and 'content'"):
        llm.chat([{"role": "user"}], p)
    with pytest.raises(TypeError, match="must be str"):
        llm.chat([{"role": "user", "content": 3}], p)
    with pytest.raises(ValueError, match="unsupported key"):
        llm.chat([{"role": "user", "content": "a"}], p, chat_template_kwargs={"tools": []})
    with pytest.raises(FileNotFoundError):
        genesis.LLM(os.path.join(folder, "missing"))
    for kw, exc in ((dict(max_num_seqs=0), ValueError), (dict(num_blocks=0), ValueError),
                    (dict(kv_cache_memory=-1.0), ValueError), (dict(block_size="4"), TypeError),
                    (dict(dtype="float13"), ValueError)):
        with pytest.raises(exc):
            genesis.LLM(folder, **kw)
    # a request the pool cannot hold is refused and leaves nothing behind
    tiny = genesis.LLM(folder, dtype="float32", num_blocks=2, block_size=4)
    with pytest.raises(ValueError, match="KV blocks"):
        tiny.generate([[1, 2, 3]], S(temperature=0, max_tokens=20))
    expect_idle(tiny)
    # a folder without a tokenizer: ids work, text does not
    bare = os.path.join(folder, "bare")
    os.makedirs(bare, exist_ok=True)
    for f in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(folder, f), bare)
    no_tok = genesis.LLM(bare, dtype="float32", num_blocks=16, block_size=4)
    assert no_tok.get_tokenizer() is None
    assert no_tok.generate([[1, 2]], S(temperature=0, max_tokens=2))[0].outputs[0].text == ""
    with pytest.raises(ValueError, match="need a tokenizer"):
        no_tok.generate("ab", p)
    with pytest.raises(ValueError, match="need a tokenizer"):
        no_tok.generate([[1]], S(stop=["x"]))
    with pytest.raises(ValueError, match="chat_template"):
        no_tok.chat([{"role": "user", "content": "a"}], p)
    expect_idle(llm)


def test_generate_releases_the_gil(llm):
    """Another Python thread runs while generate() is inside the engine (with the GIL held it could not)."""
    import threading
    import time
    window = {}

    def work():
        window["start"] = time.perf_counter()
        llm.generate([[i + 1] * 8 for i in range(24)], genesis.SamplingParams(temperature=0, max_tokens=40,
                                                                               ignore_eos=True))
        window["end"] = time.perf_counter()

    t = threading.Thread(target=work)
    stamps = []
    t.start()
    while t.is_alive():
        stamps.append(time.perf_counter())
    t.join()
    lo, hi = window["start"], window["end"]
    mid = [s for s in stamps if lo + 0.25 * (hi - lo) < s < hi - 0.25 * (hi - lo)]
    assert hi - lo > 0.02 and len(mid) > 100
    expect_idle(llm)
