"""Causal LMs used the way transformers' are: AutoModelForCausalLM.from_pretrained(folder, dtype=..., device=...),
model(input_ids, attention_mask=..., labels=...) -> CausalLMOutputWithPast(loss, logits), and
model.generate(input_ids, max_new_tokens=..., do_sample=..., streamer=...) -> prompt + new ids.  The layers are
the C++ Qwen model's (genesis._C.models.QwenForCausalLM); print(model) shows their tree with sizes."""
import warnings
from collections import OrderedDict

import genesis
from genesis import _C
from genesis.models.tokenization import check_folder
from genesis.nn.modules import CppLayer


# ---- the module tree, printed as transformers prints it
def _addindent(s, n):
    lines = s.split("\n")
    return lines[0] if len(lines) == 1 else lines[0] + "\n" + "\n".join(" " * n + x for x in lines[1:])


class QwenPart(CppLayer):
    """A layer of the C++ model (attention, MLP, Linear, RMSNorm, ...) whose repr shows its sizes."""

    def __init__(self, impl, prefix="", eps=1e-6):
        super().__init__(impl)
        object.__setattr__(self, "_prefix", prefix)
        object.__setattr__(self, "_eps", eps)
        for name, child in impl.named_children():
            self._modules[name] = QwenPart(child, prefix, eps)

    def _repr_name(self):
        name = self._impl.name()
        if self._prefix and name.startswith("Qwen"):
            return self._prefix + name[4:]
        if self._prefix and name in ("RMSNorm", "SparseMoeBlock"):
            return self._prefix + name
        return name

    def extra_repr(self):
        name, p = self._impl.name(), self._parameters
        if name == "Linear" and "weight" in p:
            w = p["weight"]
            return f"in_features={w.shape[1]}, out_features={w.shape[0]}, bias={p.get('bias') is not None}"
        if name == "Embedding" and "weight" in p:
            return f"{p['weight'].shape[0]}, {p['weight'].shape[1]}"
        if name == "RMSNorm" and "weight" in p:
            return f"{tuple(p['weight'].shape)}, eps={self._eps}"
        return ""

    def __getitem__(self, i):
        mods = list(self._modules.values())
        if isinstance(i, slice):
            return mods[i]
        if not -len(mods) <= i < len(mods):
            raise IndexError(f"index {i} is out of range")
        return mods[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __repr__(self):
        if self._impl.name() != "ModuleList" or not self._modules:
            return super().__repr__()
        # torch's ModuleList repr: runs of identical layers print once, as "(0-23): 24 x Layer(...)"
        reprs = [repr(m) for m in self._modules.values()]
        blocks = [[0, 0, reprs[0]]]
        for i, r in enumerate(reprs[1:], 1):
            if r == blocks[-1][2]:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, r])
        lines = [_addindent(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}", 2) for a, b, r in blocks]
        return "ModuleList(\n  " + "\n  ".join(lines) + "\n)"


# ---- outputs
class ModelOutput(OrderedDict):
    """transformers' ModelOutput: fields as attributes (None when unset), as keys (the set ones), and by
    position (out[0] is the first set field)."""

    _fields = ()

    def __init__(self, **kwargs):
        super().__init__()
        unknown = [k for k in kwargs if k not in self._fields]
        if unknown:
            raise TypeError(f"{type(self).__name__} got an unexpected field '{unknown[0]}'")
        for k in self._fields:
            if kwargs.get(k) is not None:
                self[k] = kwargs[k]

    def __getattr__(self, name):
        if name in type(self)._fields:
            return self.get(name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __getitem__(self, k):
        if isinstance(k, (int, slice)):
            return self.to_tuple()[k]
        return super().__getitem__(k)

    def to_tuple(self):
        """The set fields in order."""
        return tuple(self.values())

    def __repr__(self):
        return f"{type(self).__name__}(" + ", ".join(f"{k}={v!r}" for k, v in self.items()) + ")"


class CausalLMOutputWithPast(ModelOutput):
    """model(...)'s result: loss (with labels) and logits (B, T, vocab)."""

    _fields = ("loss", "logits", "past_key_values", "hidden_states", "attentions")


class MoeCausalLMOutputWithPast(ModelOutput):
    """A mixture-of-experts model(...)'s result: loss, aux_loss (the load-balancing loss, with
    config.output_router_logits) and logits (B, T, vocab)."""

    _fields = ("loss", "aux_loss", "logits", "past_key_values", "hidden_states", "attentions", "router_logits")


class GenerateDecoderOnlyOutput(ModelOutput):
    """generate(..., return_dict_in_generate=True)'s result: sequences (B, T + new)."""

    _fields = ("sequences", "scores", "logits", "attentions", "hidden_states", "past_key_values")


class GenerationConfig:
    """How generate() picks tokens and when it stops, with transformers' names and defaults; from_pretrained
    fills it from generation_config.json."""

    def __init__(self, **kwargs):
        self.max_length = None  # None: 20 new tokens (transformers 5's default); else prompt + new tokens at most
        self.max_new_tokens = None
        self.do_sample = False
        self.temperature = 1.0
        self.top_k = 50
        self.top_p = 1.0
        self.min_p = None
        self.repetition_penalty = 1.0
        self.num_beams = 1
        self.num_return_sequences = 1
        self.bos_token_id = None
        self.eos_token_id = None
        self.pad_token_id = None
        self.update(**kwargs)

    def update(self, **kwargs):
        """Sets fields; an unknown name is a TypeError."""
        for k, v in kwargs.items():
            if not hasattr(self, k):
                raise TypeError(f"GenerationConfig has no field '{k}'")
            setattr(self, k, v)
        return self

    def to_dict(self):
        """The fields as a dict."""
        return dict(self.__dict__)

    def __repr__(self):
        return "GenerationConfig(" + ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items()) + ")"


# ---- argument checks
def _as_ids(x, what):
    if not isinstance(x, genesis.Tensor):
        raise TypeError(f"{what} must be a genesis.Tensor of token ids (batch, sequence), got {type(x).__name__} "
                        "(use tok(text, return_tensors='gn') or genesis.tensor([[...]]))")
    if x.dim() != 2:
        raise ValueError(f"{what} must be 2-D (batch, sequence), got shape {tuple(x.shape)}")
    if x.dtype not in (genesis.int64, genesis.int32):
        raise TypeError(f"{what} must hold integers (int64), got {x.dtype}")
    return x.long() if x.dtype != genesis.int64 else x


def _check_ids_range(ids, vocab, what):
    if ids.numel() == 0:
        return
    lo, hi = int(ids.min().item()), int(ids.max().item())
    if lo < 0 or hi >= vocab:
        bad = lo if lo < 0 else hi
        raise IndexError(f"{what} holds id {bad}, outside the vocabulary [0, {vocab})")


def _as_dtype(dtype):
    if dtype is None or dtype == "auto":
        return None
    if isinstance(dtype, genesis.dtype):
        return dtype
    if isinstance(dtype, str):
        d = getattr(genesis, dtype.replace("torch.", ""), None)
        if isinstance(d, genesis.dtype):
            return d
        raise ValueError(f"unknown dtype {dtype!r} (use 'auto', 'float32', 'bfloat16', 'float16', 'float64' or a "
                         "genesis dtype)")
    raise TypeError(f"dtype must be a genesis dtype, a str or 'auto', got {type(dtype).__name__}")


def _as_device(device, device_map):
    if device is not None and device_map is not None:
        raise ValueError("give device or device_map, not both")
    if device_map is not None:
        if device_map == "auto":
            return "cuda" if genesis.cuda.is_available() else "cpu"
        if isinstance(device_map, (str, genesis.device, int)):
            return device_map
        raise NotImplementedError("device_map must name one device ('auto', 'cpu', 'cuda', 'cuda:1'); genesis "
                                  "does not split a model across devices")
    return device


_UNSUPPORTED_GENERATE_KWARGS = ("min_new_tokens", "min_length", "no_repeat_ngram_size", "bad_words_ids", "stop_strings",
                                "typical_p", "epsilon_cutoff", "eta_cutoff", "length_penalty", "early_stopping",
                                "num_beam_groups", "diversity_penalty", "penalty_alpha", "guidance_scale",
                                "assistant_model", "prefix_allowed_tokens_fn", "logits_processor", "stopping_criteria",
                                "force_words_ids", "constraints", "sequence_bias", "suppress_tokens")
_IGNORED_LOAD_KWARGS = ("trust_remote_code", "attn_implementation", "low_cpu_mem_usage", "revision",
                        "local_files_only", "cache_dir", "use_safetensors")


class _CausalLMBase:
    """HF-shaped forward, loss and generate over the C++ model (mixed into the Qwen classes)."""

    @property
    def device(self):
        """The device of the parameters."""
        return next(iter(self.parameters())).device

    @property
    def dtype(self):
        """The dtype of the parameters."""
        return next(iter(self.parameters())).dtype

    def num_parameters(self):
        """Number of parameters (a tied head counted once)."""
        return sum(p.numel() for p in self.parameters())

    def get_input_embeddings(self):
        """The token embedding layer."""
        return self.model.embed_tokens

    def forward(self, input_ids=None, attention_mask=None, labels=None, return_dict=True, use_cache=None,
                **kwargs):
        """input_ids (B, T) -> CausalLMOutputWithPast(logits (B, T, vocab), loss with labels: the mean cross
        entropy of logits[:, :-1] against labels[:, 1:], -100 ignored, as transformers computes it).
        attention_mask (B, T) of 0/1 keeps positions 0 out of every other position's attention."""
        for k in ("inputs_embeds", "past_key_values", "position_ids", "cache_position"):
            if kwargs.get(k) is not None:
                raise NotImplementedError(f"{k} is not supported (genesis runs whole sequences; generate() keeps "
                                          "its own KV cache)")
            kwargs.pop(k, None)
        for k in ("output_attentions", "output_hidden_states"):
            if kwargs.pop(k, None):
                raise NotImplementedError(f"{k}=True is not supported")
        kwargs.pop("num_items_in_batch", None)
        if kwargs:
            raise TypeError(f"forward() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if input_ids is None:
            raise ValueError("You must specify input_ids")
        ids = _as_ids(input_ids, "input_ids")
        if ids.shape[1] == 0:
            raise ValueError("input_ids has no positions (sequence length 0)")
        _check_ids_range(ids, self.config.vocab_size, "input_ids")
        mask = None
        if attention_mask is not None:
            am = _as_ids(attention_mask, "attention_mask") if not (
                isinstance(attention_mask, genesis.Tensor) and attention_mask.dtype == genesis.bool) else attention_mask
            if tuple(am.shape) != tuple(ids.shape):
                raise ValueError(f"attention_mask must have the shape of input_ids {tuple(ids.shape)}, got "
                                 f"{tuple(am.shape)}")
            keep = am.to(ids.device) != 0
            if not bool(keep.all().item()):
                T = ids.shape[1]
                pos = genesis.arange(T, device=ids.device)
                causal = pos[None, :] <= pos[:, None]
                # a masked query attends only to itself, so no row of the softmax is empty
                mask = (causal[None, None] & keep[:, None, None, :]) | (pos[None, :] == pos[:, None])[None, None]
        logits = self._impl.forward(ids) if mask is None else self._impl.forward_masked(ids, mask)
        loss = None
        if labels is not None:
            loss = self.loss_function(logits, labels)
        if self.config.num_experts > 0:
            aux = self._impl.router_aux_loss() if self.config.output_router_logits else None
            if aux is not None and loss is not None:
                loss = loss + aux.to(loss.dtype) * self.config.router_aux_loss_coef
            out = MoeCausalLMOutputWithPast(loss=loss, aux_loss=aux, logits=logits)
        else:
            out = CausalLMOutputWithPast(loss=loss, logits=logits)
        return out if return_dict else out.to_tuple()

    def loss_function(self, logits, labels):
        """transformers' causal-LM loss: mean cross entropy of logits[:, :-1] against labels[:, 1:] over the
        labels that are not -100 (bf16/fp16 logits are upcast to float32)."""
        labels = _as_ids(labels, "labels")
        if tuple(labels.shape) != tuple(logits.shape[:2]):
            raise ValueError(f"labels must have the shape of input_ids {tuple(logits.shape[:2])}, got "
                             f"{tuple(labels.shape)}")
        labels = labels.to(logits.device)
        V = logits.shape[-1]
        bad = (labels != -100) & ((labels < 0) | (labels >= V))
        if bool(bad.any().item()):
            raise IndexError(f"labels must be -100 (ignored) or ids in [0, {V})")
        lg = logits[:, :-1, :]
        if lg.dtype in (genesis.bfloat16, genesis.float16):
            lg = lg.float()
        return genesis.nn.functional.cross_entropy(lg.reshape(-1, V), labels[:, 1:].reshape(-1), ignore_index=-100)

    # ---- generation
    def generate(self, inputs=None, generation_config=None, streamer=None, **kwargs):
        """Continues each row of input_ids (B, T): returns (B, T + new) ids, the prompt included, rows that stop
        early padded with pad_token_id (transformers' generate).  Greedy unless do_sample=True (then temperature,
        top_k, top_p, min_p); stops at eos_token_id (the model's by default).  attention_mask leaves out padding
        (left or right).  streamer: a TextStreamer / TextIteratorStreamer (batch size 1)."""
        input_ids = kwargs.pop("input_ids", None)
        if inputs is not None and input_ids is not None:
            raise ValueError("give the prompt as inputs or input_ids, not both")
        input_ids = inputs if inputs is not None else input_ids
        attention_mask = kwargs.pop("attention_mask", None)
        return_dict = kwargs.pop("return_dict_in_generate", False)
        seed = kwargs.pop("seed", None)
        for k in ("use_cache", "output_scores", "output_logits", "output_attentions", "output_hidden_states"):
            if kwargs.pop(k, None) and k != "use_cache":
                raise NotImplementedError(f"{k}=True is not supported")
        if generation_config is not None and not isinstance(generation_config, GenerationConfig):
            raise TypeError(f"generation_config must be a GenerationConfig, got {type(generation_config).__name__}")
        cfg = GenerationConfig(**(generation_config or self.generation_config).to_dict())
        gen_keys = set(cfg.to_dict())
        for k in _UNSUPPORTED_GENERATE_KWARGS:
            if kwargs.get(k) is not None:
                raise NotImplementedError(f"generate(): {k} is not supported (genesis has greedy and sampling with "
                                          "temperature, top_k, top_p, min_p and repetition_penalty)")
            kwargs.pop(k, None)
        unknown = [k for k in kwargs if k not in gen_keys]
        if unknown:
            raise ValueError(f"The following `model_kwargs` are not used by the model: {unknown} (note: typos in the "
                             "generate arguments will also show up in this list)")
        cfg.update(**kwargs)
        if input_ids is None:
            raise ValueError("generate() needs input_ids (B, T), e.g. tok(text, return_tensors='gn').input_ids")
        ids = _as_ids(input_ids, "input_ids")
        B, T = ids.shape
        _check_ids_range(ids, self.config.vocab_size, "input_ids")
        rows = ids.tolist()
        eos = cfg.eos_token_id
        eos_list = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
        if any(isinstance(e, bool) or not isinstance(e, int) for e in eos_list):
            raise TypeError("eos_token_id must be an int or a list of ints")
        pad = cfg.pad_token_id if cfg.pad_token_id is not None else (eos_list[0] if eos_list else None)
        if attention_mask is not None:
            am = _as_ids(attention_mask, "attention_mask") if attention_mask.dtype != genesis.bool else \
                attention_mask.long()
            if tuple(am.shape) != (B, T):
                raise ValueError(f"attention_mask must have the shape of input_ids {(B, T)}, got {tuple(am.shape)}")
            keep = am.tolist()
        elif pad is not None and pad not in eos_list and any(pad in r for r in rows):
            keep = [[int(t != pad) for t in r] for r in rows]  # transformers infers the mask from the pad id
        else:
            keep = [[1] * T for _ in rows]
        prompts = [[t for t, k in zip(r, m) if k] for r, m in zip(rows, keep)]
        if any(not p for p in prompts):
            raise ValueError("every row of input_ids needs at least one token that attention_mask keeps")
        if any(m[-1] == 0 for m in keep) and attention_mask is not None:
            warnings.warn("right-padding was detected: the new tokens follow the padding in the output (use "
                          "tokenizer.padding_side='left' for generation)", stacklevel=2)
        # the settings, checked as transformers checks them
        max_new = cfg.max_new_tokens
        if max_new is None and cfg.max_length is None:
            max_new = 20
        elif max_new is None:
            if isinstance(cfg.max_length, bool) or not isinstance(cfg.max_length, int):
                raise TypeError("max_length must be an int")
            max_new = cfg.max_length - T
            if max_new <= 0:
                raise ValueError(f"Input length of input_ids is {T}, but `max_length` is set to {cfg.max_length}. "
                                 "Set `max_new_tokens` (the number of new tokens) instead.")
        if isinstance(max_new, bool) or not isinstance(max_new, int):
            raise TypeError(f"`max_new_tokens` must be an int, got {type(max_new).__name__}")
        if max_new <= 0:
            raise ValueError(f"`max_new_tokens` must be greater than 0, but is {max_new}.")
        limit = self.config.max_position_embeddings
        if T + max_new > limit and self.config.rope_scaling.rope_type != "dynamic":  # dynamic rope: no limit
            warnings.warn(f"the prompt ({T} tokens) and max_new_tokens ({max_new}) run past the model's "
                          f"max_position_embeddings ({limit}): generation stops at {limit} positions", stacklevel=2)
        if cfg.num_beams != 1:
            raise NotImplementedError("beam search (num_beams > 1) is not supported; use greedy or sampling")
        n_ret = cfg.num_return_sequences
        if isinstance(n_ret, bool) or not isinstance(n_ret, int) or n_ret < 1:
            raise ValueError(f"num_return_sequences must be a positive int, got {n_ret!r}")
        if n_ret > 1 and not cfg.do_sample:
            raise ValueError("Greedy methods without beam search do not support `num_return_sequences` different "
                             f"than 1 (got {n_ret}).")
        rep = 1.0 if cfg.repetition_penalty is None else float(cfg.repetition_penalty)
        if not rep > 0:
            raise ValueError(f"`repetition_penalty` has to be a strictly positive float, but is {rep}")
        temperature, top_k, top_p, min_p = 0.0, 0, 1.0, 0.0
        if cfg.do_sample:
            temperature = 1.0 if cfg.temperature is None else cfg.temperature
            if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature > 0:
                raise ValueError(f"`temperature` (={temperature}) has to be a strictly positive float, otherwise your "
                                 "next token scores will be invalid. If you're looking for greedy decoding "
                                 "strategies, set `do_sample=False`.")
            top_k = 0 if cfg.top_k is None else cfg.top_k
            if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
                raise ValueError(f"`top_k` has to be a strictly positive integer, but is {top_k}")
            top_p = 1.0 if cfg.top_p is None else cfg.top_p
            if isinstance(top_p, bool) or not isinstance(top_p, (int, float)) or not 0 < top_p <= 1:
                raise ValueError(f"`top_p` has to be a float > 0 and <= 1, but is {top_p}")
            min_p = 0.0 if cfg.min_p is None else cfg.min_p
            if isinstance(min_p, bool) or not isinstance(min_p, (int, float)) or not 0 <= min_p <= 1:
                raise ValueError(f"`min_p` has to be a float >= 0 and <= 1, but is {min_p}")
        if seed is None:
            seed = int(genesis.randint(0, 2 ** 31 - 1, (1,)).item()) if cfg.do_sample else 0
        if n_ret > 1:
            rows = [r for r in rows for _ in range(n_ret)]
            prompts = [p for p in prompts for _ in range(n_ret)]
        if streamer is not None:
            if not (hasattr(streamer, "put") and hasattr(streamer, "end")):
                raise TypeError("streamer must have put(ids) and end() (a TextStreamer or TextIteratorStreamer)")
            if len(prompts) > 1:
                raise ValueError(f"{type(streamer).__name__} only supports batch size 1, got {len(prompts)} rows")
        on_token = None
        if streamer is not None:
            streamer.put(ids.cpu())

            def on_token(row, token):
                streamer.put(genesis.tensor([token], dtype=genesis.int64))

        try:
            r = _C.models.generate(self._impl, prompts, max_new_tokens=max_new, temperature=float(temperature),
                                   top_k=int(top_k), top_p=float(top_p), min_p=float(min_p),
                                   repetition_penalty=rep, stop_ids=eos_list, ignore_eos=eos is not None, seed=seed,
                                   on_token=on_token)
        finally:
            if streamer is not None:
                streamer.end()
        new = r["tokens"]
        width = max((len(t) for t in new), default=0)
        if any(len(t) < width for t in new) and pad is None:
            raise ValueError("rows stopped at different lengths and there is no pad_token_id to fill them; pass "
                             "pad_token_id=...")
        out = [row + t + [pad] * (width - len(t)) for row, t in zip(rows, new)]
        seqs = genesis.tensor(out, dtype=genesis.int64).to(ids.device) if width or T else genesis.zeros(
            (len(out), 0), dtype=genesis.int64)
        return GenerateDecoderOnlyOutput(sequences=seqs) if return_dict else seqs


def _generation_config_of(impl):
    g = impl.generation_defaults
    cfg = GenerationConfig()
    for k in ("do_sample", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "max_new_tokens",
              "bos_token_id", "pad_token_id"):
        if g.get(k) is not None:
            setattr(cfg, k, g[k])
    eos = list(g.get("eos_token_id") or []) or list(impl.config.eos_token_ids)
    cfg.eos_token_id = None if not eos else (eos[0] if len(eos) == 1 else eos)
    return cfg


# config.json's model_type -> (the genesis.models class, transformers' architecture name)
_MODEL_TYPES = {"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM", "qwen3_moe": "Qwen3MoeForCausalLM",
                "llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "gemma2": "Gemma2ForCausalLM",
                "gemma3_text": "Gemma3ForCausalLM", "gemma3": "Gemma3ForCausalLM"}


def _model_type_of(path):
    """The model_type of a folder's config.json, checked against the supported ones (ValueError naming it)."""
    import json
    import os
    with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
        try:
            cfg = json.load(f)
        except ValueError as e:
            raise ValueError(f"{os.path.join(path, 'config.json')} is not valid JSON: {e}") from None
    if not isinstance(cfg, dict):
        raise ValueError(f"{os.path.join(path, 'config.json')} must hold a JSON object")
    supported = ", ".join(sorted(k for k in _MODEL_TYPES if k != "gemma3"))
    mt = cfg.get("model_type")
    archs = cfg.get("architectures") or []
    if mt is None:
        known = [k for a in archs for k, v in _MODEL_TYPES.items() if v == a and k != "gemma3"]
        hint = f" (architectures {archs} suggest model_type {known[0]!r})" if known else ""
        raise ValueError(f"Unrecognized model in {path}: config.json has no 'model_type'{hint}; genesis has causal "
                         f"LMs for model_type {supported}")
    if mt not in _MODEL_TYPES:
        raise ValueError(f"Unrecognized model_type {mt!r} in {path}: genesis has causal LMs for model_type "
                         f"{supported}")
    return mt


class AutoConfig:
    """Reads a folder's config.json as a QwenConfig (every supported family): AutoConfig.from_pretrained(folder)."""

    def __init__(self, *args, **kwargs):
        raise EnvironmentError("AutoConfig is designed to be instantiated using the "
                               "`AutoConfig.from_pretrained(pretrained_model_name_or_path)` method.")

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, **kwargs):
        """The QwenConfig of a Hugging Face folder's config.json (ValueError for an unsupported model_type)."""
        import os
        for k in _IGNORED_LOAD_KWARGS:
            kwargs.pop(k, None)
        if kwargs:
            raise TypeError(f"from_pretrained() got an unexpected keyword argument '{next(iter(kwargs))}'")
        path = check_folder(pretrained_model_name_or_path, needs="config.json")
        _model_type_of(path)
        return _C.models.QwenConfig.from_file(os.path.join(path, "config.json"))


class AutoModelForCausalLM:
    """Picks the causal-LM class of a folder's config.json model_type (Qwen2ForCausalLM for qwen2,
    Qwen3ForCausalLM for qwen3, Qwen3MoeForCausalLM for qwen3_moe, LlamaForCausalLM for llama, MistralForCausalLM
    for mistral, Gemma2ForCausalLM for gemma2, Gemma3ForCausalLM for gemma3_text) and loads it:
    AutoModelForCausalLM.from_pretrained(folder, dtype=..., device=...)."""

    def __init__(self, *args, **kwargs):
        raise EnvironmentError("AutoModelForCausalLM is designed to be instantiated using the "
                               "`AutoModelForCausalLM.from_pretrained(pretrained_model_name_or_path)` or "
                               "`AutoModelForCausalLM.from_config(config)` methods.")

    @staticmethod
    def _class_for(model_type):
        import genesis.models
        if model_type not in _MODEL_TYPES:
            supported = ", ".join(sorted(k for k in _MODEL_TYPES if k != "gemma3"))
            raise ValueError(f"Unrecognized model_type {model_type!r}: genesis has causal LMs for model_type "
                             f"{supported}")
        return getattr(genesis.models, _MODEL_TYPES[model_type])

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, dtype=None, device=None, torch_dtype=None,
                        device_map=None, **kwargs):
        """Loads a Hugging Face folder (config.json, safetensors); dtype 'auto'/None keeps the checkpoint's."""
        for k in _IGNORED_LOAD_KWARGS:
            kwargs.pop(k, None)
        if kwargs:
            raise TypeError(f"from_pretrained() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if dtype is not None and torch_dtype is not None:
            raise ValueError("give dtype or torch_dtype, not both")
        path = check_folder(pretrained_model_name_or_path, needs="config.json")
        _model_type_of(path)
        dt = _as_dtype(dtype if dtype is not None else torch_dtype)
        dev = _as_device(device, device_map)
        if dt == genesis.float64:  # read as float32 (exact for float32/bf16/fp16 checkpoints), then widen
            impl = _C.models.QwenForCausalLM.from_pretrained(path, dev, genesis.float32)
            impl.to(genesis.float64)
        else:
            impl = _C.models.QwenForCausalLM.from_pretrained(path, dev, dt)
        model = cls._class_for(impl.config.model_type)(None, _impl=impl)
        model.name_or_path = path
        return model.eval()

    @classmethod
    def from_config(cls, config, dtype=None, device=None, torch_dtype=None):
        """A randomly initialised model of a QwenConfig."""
        if not isinstance(config, _C.models.QwenConfig):
            raise TypeError(f"config must be a genesis.models.QwenConfig, got {type(config).__name__}")
        dt = _as_dtype(dtype if dtype is not None else torch_dtype)
        return cls._class_for(config.model_type)(config, device=device, dtype=dt)
