"""genesis.LLM: offline batched generation over the serving engine (continuous batching on a paged KV cache,
prefix caching), with vLLM's names and defaults (docs/serving.md):

    llm = genesis.LLM("Qwen2.5-0.5B-Instruct", device="cuda", dtype="bfloat16")
    params = genesis.SamplingParams(temperature=0.7, top_p=0.8, max_tokens=64, seed=1)
    for out in llm.generate(["Hello, my name is", "The capital of France is"], params):
        print(out.prompt, out.outputs[0].text)
    print(llm.chat([{"role": "user", "content": "Hi!"}], params)[0].outputs[0].text)

Every prompt becomes one engine request (n samples each); the outputs come back in the order of the prompts.
"""
import numbers
import random

from genesis import _C

_SAMPLING_EPS = 1e-5  # a temperature below this is greedy (vLLM's rule)


def _is_int(x):
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _is_num(x):
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


class SamplingParams:
    """How tokens are chosen and when a sample stops, with vLLM's names and defaults (temperature 1.0, max_tokens 16;
    temperature 0 is greedy)."""

    def __init__(self, n=1, temperature=1.0, top_p=1.0, top_k=0, min_p=0.0, repetition_penalty=1.0, max_tokens=16,
                 stop=None, stop_token_ids=None, seed=None, logprobs=None, ignore_eos=False, skip_special_tokens=True,
                 include_stop_str_in_output=False):
        for name, v in (("n", n), ("top_k", top_k)):
            if not _is_int(v):
                raise TypeError(f"{name} must be an int, got {type(v).__name__}")
        for name, v in (("temperature", temperature), ("top_p", top_p), ("min_p", min_p),
                        ("repetition_penalty", repetition_penalty)):
            if not _is_num(v):
                raise TypeError(f"{name} must be a float, got {type(v).__name__}")
        if max_tokens is not None and not _is_int(max_tokens):
            raise TypeError(f"max_tokens must be an int or None, got {type(max_tokens).__name__}")
        if seed is not None and not _is_int(seed):
            raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")
        if logprobs is not None and not _is_int(logprobs):
            raise TypeError(f"logprobs must be an int or None, got {type(logprobs).__name__}")
        if stop is None:
            stop = []
        elif isinstance(stop, str):
            stop = [stop]
        elif not isinstance(stop, (list, tuple)) or not all(isinstance(s, str) for s in stop):
            raise TypeError("stop must be a str or a list of str")
        if stop_token_ids is None:
            stop_token_ids = []
        elif not isinstance(stop_token_ids, (list, tuple)) or not all(_is_int(t) for t in stop_token_ids):
            raise TypeError("stop_token_ids must be a list of int")
        if n < 1:
            raise ValueError(f"n must be at least 1, got {n}.")
        if temperature < 0.0:
            raise ValueError(f"temperature must be non-negative, got {temperature}.")
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}.")
        if top_k < -1:
            raise ValueError(f"top_k must be -1 (disable), 0 (disable) or at least 1, got {top_k}.")
        if not 0.0 <= min_p <= 1.0:
            raise ValueError(f"min_p must be in [0, 1], got {min_p}.")
        if repetition_penalty <= 0.0:
            raise ValueError(f"repetition_penalty must be greater than zero, got {repetition_penalty}.")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}.")
        if seed is not None and not 0 <= seed < 2 ** 64:
            raise ValueError(f"seed must be in [0, 2**64), got {seed}.")
        if logprobs is not None and not 0 <= logprobs <= 20:
            raise ValueError(f"logprobs must be in [0, 20], got {logprobs}.")
        if any(not s for s in stop):
            raise ValueError("stop strings must not be empty")
        if any(t < 0 for t in stop_token_ids):
            raise ValueError("stop_token_ids must be non-negative")
        self.n = int(n)
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.top_k = int(top_k)
        self.min_p = float(min_p)
        self.repetition_penalty = float(repetition_penalty)
        self.max_tokens = None if max_tokens is None else int(max_tokens)
        self.stop = list(stop)
        self.stop_token_ids = [int(t) for t in stop_token_ids]
        self.seed = None if seed is None else int(seed)
        self.logprobs = None if logprobs is None else int(logprobs)
        self.ignore_eos = bool(ignore_eos)
        self.skip_special_tokens = bool(skip_special_tokens)
        self.include_stop_str_in_output = bool(include_stop_str_in_output)

    def _engine_kwargs(self, max_model_len):
        greedy = self.temperature < _SAMPLING_EPS
        seed = self.seed if self.seed is not None else random.getrandbits(63)
        return dict(n=self.n, max_new_tokens=max_model_len if self.max_tokens is None else self.max_tokens,
                    temperature=0.0 if greedy else self.temperature, top_k=0 if greedy else max(self.top_k, 0),
                    top_p=1.0 if greedy else self.top_p, min_p=0.0 if greedy else self.min_p,
                    repetition_penalty=self.repetition_penalty, stop=self.stop, stop_token_ids=self.stop_token_ids,
                    ignore_eos=self.ignore_eos, seed=seed,
                    logprobs=0 if self.logprobs is None else max(self.logprobs, 1),
                    skip_special_tokens=self.skip_special_tokens)

    def __repr__(self):
        fields = ("n", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "max_tokens", "stop",
                  "stop_token_ids", "seed", "logprobs", "ignore_eos", "skip_special_tokens")
        return "SamplingParams(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in fields) + ")"


class Logprob:
    """A token's log-probability under the model (log_softmax of its logits), its rank (1 = most likely; None where
    it was not among the reported top tokens) and its text."""

    __slots__ = ("logprob", "rank", "decoded_token")

    def __init__(self, logprob, rank=None, decoded_token=None):
        self.logprob = logprob
        self.rank = rank
        self.decoded_token = decoded_token

    def __eq__(self, other):
        return isinstance(other, Logprob) and (self.logprob, self.rank, self.decoded_token) == (
            other.logprob, other.rank, other.decoded_token)

    def __repr__(self):
        return f"Logprob(logprob={self.logprob!r}, rank={self.rank!r}, decoded_token={self.decoded_token!r})"


class CompletionOutput:
    """One sample of a prompt: its text, token ids, finish reason ('stop' or 'length'), and logprobs when asked."""

    def __init__(self, index, text, token_ids, cumulative_logprob, logprobs, finish_reason, stop_reason=None):
        self.index = index
        self.text = text
        self.token_ids = token_ids
        self.cumulative_logprob = cumulative_logprob
        self.logprobs = logprobs
        self.finish_reason = finish_reason
        self.stop_reason = stop_reason

    def finished(self):
        """Whether the sample has ended (always, offline)."""
        return self.finish_reason is not None

    def __repr__(self):
        return (f"CompletionOutput(index={self.index}, text={self.text!r}, token_ids={self.token_ids}, "
                f"cumulative_logprob={self.cumulative_logprob}, logprobs={self.logprobs}, "
                f"finish_reason={self.finish_reason}, stop_reason={self.stop_reason})")


class RequestOutput:
    """What one prompt produced: the prompt, its token ids and n CompletionOutputs."""

    def __init__(self, request_id, prompt, prompt_token_ids, outputs, finished=True):
        self.request_id = request_id
        self.prompt = prompt
        self.prompt_token_ids = prompt_token_ids
        self.prompt_logprobs = None
        self.outputs = outputs
        self.finished = finished

    def __repr__(self):
        return (f"RequestOutput(request_id={self.request_id}, prompt={self.prompt!r}, "
                f"prompt_token_ids={self.prompt_token_ids}, outputs={self.outputs}, finished={self.finished})")


class LLM:
    """A model folder, its tokenizer and a serving engine: batched offline generate() and chat() (vLLM's shape).

    num_blocks sizes the KV pool in blocks of block_size positions; else kv_cache_memory is the fraction of the
    device's free memory (a float in (0, 1], default 0.9) or a byte budget (an int > 1). max_num_seqs caps the running
    batch, max_num_batched_tokens the tokens of one step, enable_prefix_caching reuses equal prompt prefixes."""

    def __init__(self, model, *, device=None, dtype="auto", num_blocks=None, kv_cache_memory=None, block_size=16,
                 max_num_seqs=256, max_num_batched_tokens=2048, max_queued_seqs=4096, enable_prefix_caching=True):
        from genesis.models.modeling import _as_dtype
        from genesis.models.tokenization import check_folder
        path = check_folder(model, what="LLM", needs="config.json")
        for name, v in (("block_size", block_size), ("max_num_seqs", max_num_seqs),
                        ("max_num_batched_tokens", max_num_batched_tokens), ("max_queued_seqs", max_queued_seqs)):
            if not _is_int(v):
                raise TypeError(f"{name} must be an int, got {type(v).__name__}")
            if v < 1:
                raise ValueError(f"{name} must be at least 1, got {v}.")
        if num_blocks is not None and (not _is_int(num_blocks) or num_blocks < 1):
            if not _is_int(num_blocks):
                raise TypeError(f"num_blocks must be an int or None, got {type(num_blocks).__name__}")
            raise ValueError(f"num_blocks must be at least 1, got {num_blocks}.")
        fraction, budget = 0.9, 0
        if kv_cache_memory is not None:
            if isinstance(kv_cache_memory, bool) or not isinstance(kv_cache_memory, numbers.Real):
                raise TypeError(f"kv_cache_memory must be a float fraction or an int of bytes, got "
                                f"{type(kv_cache_memory).__name__}")
            if isinstance(kv_cache_memory, numbers.Integral) and kv_cache_memory > 1:
                budget = int(kv_cache_memory)
            elif 0.0 < kv_cache_memory <= 1.0:
                fraction = float(kv_cache_memory)
            else:
                raise ValueError(f"kv_cache_memory must be a fraction in (0, 1] of the free device memory or a "
                                 f"number of bytes, got {kv_cache_memory}.")
        self.model = path
        self._impl = _C.serving.LLM(path, device=device, dtype=_as_dtype(dtype), block_size=block_size,
                                    num_blocks=num_blocks or 0, kv_cache_bytes=budget,
                                    kv_cache_memory_fraction=fraction, max_running=max_num_seqs,
                                    max_tokens_per_step=max_num_batched_tokens, max_waiting=max_queued_seqs,
                                    prefix_caching=bool(enable_prefix_caching))
        self._tok = None
        self._next_id = 0

    # ---- helpers
    def get_tokenizer(self):
        """The model folder's tokenizer (genesis.models.Tokenizer), or None when it has no tokenizer.json."""
        if self._tok is None and self._impl.has_tokenizer:
            from genesis.models.tokenization import AutoTokenizer
            self._tok = AutoTokenizer.from_pretrained(self.model)
        return self._tok

    def get_engine_stats(self):
        """The engine's figures: running/waiting sequences, KV blocks total/used/free/cached, prefix hit rate,
        preemptions, steps, prompt/computed/generated tokens, finished requests."""
        return self._impl.engine_stats()

    def get_engine_config(self):
        """The engine's resolved sizes: block_size, num_blocks, max_running, max_tokens_per_step, max_waiting."""
        return self._impl.engine_config()

    def _prompts_of(self, prompts):
        """[(text or None, ids or None)] from str | list[str] | list[int] | list[list[int]] | {'prompt': ...} |
        {'prompt_token_ids': ...} (or lists of those dicts)."""
        if isinstance(prompts, (str, dict)):
            prompts = [prompts]
        elif not isinstance(prompts, (list, tuple)):
            raise TypeError(f"prompts must be a str, a list of str or a list of token id lists, got "
                            f"{type(prompts).__name__}")
        elif prompts and all(_is_int(t) for t in prompts):
            prompts = [list(prompts)]
        V, ctx = self._impl.vocab_size, self._impl.max_model_len
        out = []
        for p in prompts:
            if isinstance(p, dict):
                if "prompt_token_ids" in p:
                    p = p["prompt_token_ids"]
                elif "prompt" in p:
                    p = p["prompt"]
                else:
                    raise ValueError("a prompt dict needs 'prompt' or 'prompt_token_ids'")
            if isinstance(p, str):
                if not p:
                    raise ValueError("The decoder prompt cannot be empty")
                if not self._impl.has_tokenizer:
                    raise ValueError("text prompts need a tokenizer (the model folder has no tokenizer.json); give "
                                     "token ids")
                out.append((p, None))
            elif isinstance(p, (list, tuple)):
                if not all(_is_int(t) for t in p):
                    raise TypeError("a prompt of token ids must be a list of int")
                if not p:
                    raise ValueError("The decoder prompt cannot be empty")
                bad = [t for t in p if not 0 <= t < V]
                if bad:
                    raise ValueError(f"Token id {bad[0]} is out of vocabulary (vocab_size {V})")
                if len(p) >= ctx:
                    raise ValueError(f"The decoder prompt (length {len(p)}) is longer than the maximum model length "
                                     f"of {ctx - 1}.")
                out.append((None, [int(t) for t in p]))
            else:
                raise TypeError(f"each prompt must be a str or a list of token ids, got {type(p).__name__}")
        return out

    def _params_list(self, sampling_params, count):
        if sampling_params is None:
            return [SamplingParams()] * count
        if isinstance(sampling_params, SamplingParams):
            return [sampling_params] * count
        if isinstance(sampling_params, (list, tuple)):
            if len(sampling_params) != count:
                raise ValueError(f"The lengths of prompts ({count}) and sampling_params ({len(sampling_params)}) "
                                 "must be the same.")
            for p in sampling_params:
                if not isinstance(p, SamplingParams):
                    raise TypeError(f"sampling_params must be SamplingParams, got {type(p).__name__}")
            return list(sampling_params)
        raise TypeError(f"sampling_params must be SamplingParams or a list of them, got "
                        f"{type(sampling_params).__name__}")

    def _finish(self, raw, params):
        tok = self.get_tokenizer() if params.logprobs is not None else None
        decoded = {}

        def text_of(t):
            if tok is None or t >= tok.vocab_size:
                return None
            if t not in decoded:
                decoded[t] = tok.decode([t])
            return decoded[t]

        outputs = []
        for c in raw["outputs"]:
            text, stop_reason = c["text"], None
            ids = list(c["token_ids"])
            if c["finish_reason"] == "stop":
                if ids and ids[-1] in params.stop_token_ids:
                    stop_reason = ids[-1]
                else:
                    hits = [(text.find(s), s) for s in params.stop if s in text]
                    if hits:
                        at, s = min(hits)
                        stop_reason = s
                        text = text[:at + len(s)] if params.include_stop_str_in_output else text[:at]
            logprobs = cumulative = None
            if params.logprobs is not None:
                logprobs = []
                for t, lp, top in zip(ids, c["token_logprobs"], c["top_logprobs"]):
                    rank = next((i + 1 for i, (tt, _) in enumerate(top) if tt == t), None)
                    step = {t: Logprob(lp, rank, text_of(t))}
                    for i, (tt, tlp) in enumerate(top[:params.logprobs]):
                        if tt != t:
                            step[tt] = Logprob(tlp, i + 1, text_of(tt))
                    logprobs.append(step)
                cumulative = float(sum(c["token_logprobs"]))
            outputs.append(CompletionOutput(c["index"], text, ids, cumulative, logprobs, c["finish_reason"],
                                            stop_reason))
        rid = str(self._next_id)
        self._next_id += 1
        return RequestOutput(rid, raw["prompt"] or None, list(raw["prompt_token_ids"]), outputs)

    def _run(self, items, params_list, runner):
        """Runs the prompts of each distinct SamplingParams as one batch; the outputs in the prompts' order."""
        results = [None] * len(items)
        groups = {}
        for i, p in enumerate(params_list):
            groups.setdefault(id(p), (p, []))[1].append(i)
        for p, idx in groups.values():
            kw = p._engine_kwargs(self._impl.max_model_len)
            if p.stop and not self._impl.has_tokenizer:
                raise ValueError("stop strings need a tokenizer (the model folder has no tokenizer.json)")
            for j, raw in zip(idx, runner([items[i] for i in idx], kw)):
                results[j] = self._finish(raw, p)
        return results

    # ---- the API
    def generate(self, prompts, sampling_params=None, use_tqdm=False):
        """Generates after each prompt (text, or token ids); returns a RequestOutput per prompt, in their order.
        sampling_params: one SamplingParams for all (default SamplingParams()) or one per prompt."""
        items = self._prompts_of(prompts)
        params = self._params_list(sampling_params, len(items))

        def runner(chunk, kw):
            texts = [t for t, _ in chunk if t is not None]
            ids = [i for t, i in chunk if t is None]
            by_text = iter(self._impl.generate_text(texts, **kw) if texts else [])
            by_ids = iter(self._impl.generate_ids(ids, **kw) if ids else [])
            return [next(by_text) if t is not None else next(by_ids) for t, _ in chunk]

        return self._run(items, params, runner)

    def chat(self, messages, sampling_params=None, use_tqdm=False, chat_template_kwargs=None):
        """Replies to a conversation (a list of {'role', 'content'} dicts) or to each of a list of conversations,
        rendered with the tokenizer's chat template (the generation prompt added); returns a RequestOutput per
        conversation. chat_template_kwargs may set enable_thinking."""
        if not isinstance(messages, (list, tuple)):
            raise TypeError(f"messages must be a list of message dicts or a list of conversations, got "
                            f"{type(messages).__name__}")
        convs = [messages] if messages and isinstance(messages[0], dict) else list(messages)
        pairs = []
        for conv in convs:
            if not isinstance(conv, (list, tuple)):
                raise TypeError(f"a conversation must be a list of message dicts, got {type(conv).__name__}")
            msgs = []
            for m in conv:
                if not isinstance(m, dict) or "role" not in m or "content" not in m:
                    raise TypeError("each message must be a dict with 'role' and 'content'")
                if not isinstance(m["role"], str) or not isinstance(m["content"], str):
                    raise TypeError("a message's 'role' and 'content' must be str")
                msgs.append((m["role"], m["content"]))
            pairs.append(msgs)
        thinking = None
        for k, v in (chat_template_kwargs or {}).items():
            if k != "enable_thinking":
                raise ValueError(f"chat_template_kwargs: unsupported key {k!r} (supported: enable_thinking)")
            thinking = bool(v)
        if not self._impl.has_chat_template:
            raise ValueError("chat() needs a tokenizer with a chat_template (tokenizer_config.json or "
                             "chat_template.jinja)")
        params = self._params_list(sampling_params, len(pairs))
        return self._run(pairs, params, lambda chunk, kw: self._impl.chat(chunk, enable_thinking=thinking, **kw))

    def __repr__(self):
        c = self.get_engine_config()
        return (f"LLM(model={self.model!r}, num_blocks={c['num_blocks']}, block_size={c['block_size']}, "
                f"max_num_seqs={c['max_running']}, max_num_batched_tokens={c['max_tokens_per_step']}, "
                f"enable_prefix_caching={c['prefix_caching']})")


__all__ = ["LLM", "SamplingParams", "RequestOutput", "CompletionOutput", "Logprob"]
