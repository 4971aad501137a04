"""genesis.models: the decoder causal LMs (Qwen2, Qwen2.5, Qwen3, Qwen3-MoE, Llama, Mistral, Gemma 2, Gemma 3)
as nn.Modules, their tokenizer, generation with a KV cache, and supervised fine-tuning, with transformers' API:

    tok = genesis.models.AutoTokenizer.from_pretrained("Qwen2.5-0.5B-Instruct")
    model = genesis.models.AutoModelForCausalLM.from_pretrained("Qwen2.5-0.5B-Instruct", dtype="auto", device="cuda")
    ids = tok.apply_chat_template([{"role": "user", "content": "Hi"}], add_generation_prompt=True,
                                  return_tensors="gn").to(model.device)
    out = model.generate(ids, max_new_tokens=32, streamer=genesis.models.TextStreamer(tok, skip_prompt=True))
    print(tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True))

QwenForCausalLM keeps genesis' own calling conventions (forward returns the logits or the loss; generate
takes lists of ids and returns the new ids).
"""
from genesis import _C
from genesis._C.models import QwenConfig, RopeParameters, read_chat_jsonl, train_tokenizer  # noqa: F401
from genesis.models.modeling import (AutoConfig, AutoModelForCausalLM, CausalLMOutputWithPast,  # noqa: F401
                                     GenerateDecoderOnlyOutput, GenerationConfig, ModelOutput,
                                     MoeCausalLMOutputWithPast, QwenPart, _as_dtype, _CausalLMBase,
                                     _generation_config_of)
from genesis.models.streamers import BaseStreamer, TextIteratorStreamer, TextStreamer  # noqa: F401
from genesis.models.tokenization import AutoTokenizer, BatchEncoding, Tokenizer, check_folder  # noqa: F401
from genesis.nn.modules import CppLayer


class StreamDecoder(_C.models.StreamDecoder):
    """Incremental decoding for streaming: put(id) returns whole characters, flush() the rest."""

    def __init__(self, tokenizer, skip_special_tokens=False):
        super().__init__(getattr(tokenizer, "_impl", tokenizer), skip_special_tokens)


class QwenForCausalLM(CppLayer):
    """The causal LM: parameters carry Hugging Face's names (model.layers.0.self_attn.q_proj.weight, ...)."""

    _repr_prefix = ""

    def __init__(self, config, device=None, dtype=None, _impl=None):
        super().__init__(_impl if _impl is not None else _C.models.QwenForCausalLM(config, device, dtype))
        eps = self._impl.config.rms_norm_eps
        for name, child in self._impl.named_children():  # layers that print their sizes
            self._modules[name] = QwenPart(child, self._repr_prefix, eps)

    @classmethod
    def from_pretrained(cls, path, device=None, dtype=None):
        """Loads a Hugging Face folder (config.json, safetensors, sharded or not)."""
        path = check_folder(path, needs="config.json")
        return cls(None, _impl=_C.models.QwenForCausalLM.from_pretrained(path, device, dtype))

    def save_pretrained(self, save_directory):
        self._impl.save_pretrained(save_directory)

    @property
    def config(self):
        return self._impl.config

    def forward(self, input_ids, labels=None):
        """ids (B, T) int64 -> logits (B, T, vocab); with labels, the mean next-token loss (HF's shift, -100 ignored)."""
        if labels is not None:
            return self._impl.loss(input_ids, labels)
        return self._impl.forward(input_ids)

    def gradient_checkpointing_enable(self):
        self._impl.gradient_checkpointing = True

    def generate(self, prompts, max_new_tokens=128, temperature=0.0, top_k=0, top_p=1.0, min_p=0.0,
                 repetition_penalty=1.0, stop_ids=(), ignore_eos=False, seed=0, streamer=None, return_dict=False):
        """New tokens after each prompt (lists of ids; a tensor (B, T) works too).  streamer(row, token)
        sees tokens as they come and may return False to stop that row.  Ctrl-C interrupts."""
        if hasattr(prompts, "tolist"):
            prompts = prompts.tolist()
        if prompts and isinstance(prompts[0], int):
            prompts = [prompts]
        r = _C.models.generate(self._impl, prompts, max_new_tokens=max_new_tokens, temperature=temperature,
                               top_k=top_k, top_p=top_p, min_p=min_p, repetition_penalty=repetition_penalty,
                               stop_ids=list(stop_ids), ignore_eos=ignore_eos, seed=seed, on_token=streamer)
        return r if return_dict else r["tokens"]


def train_sft(model, tokenizer, on_step=None, **options):
    """Supervised fine-tuning on chat JSONL (train_file=..., output_dir=..., and the fields of the C++
    SftOptions: epochs, max_steps, lr, batch_size, max_length, packing, autocast, ...).  Returns a dict
    with steps, losses, eval_loss, seconds, tokens_per_second, final_dir.  Ctrl-C interrupts."""
    impl = model._impl if isinstance(model, QwenForCausalLM) else model
    return _C.models.train_sft(impl, getattr(tokenizer, "_impl", tokenizer), on_step=on_step, **options)


class Qwen2ForCausalLM(_CausalLMBase, QwenForCausalLM):
    """Qwen2 / Qwen2.5 with transformers' API: model(input_ids, attention_mask=, labels=) returns
    CausalLMOutputWithPast (.logits, .loss) and generate(input_ids, ...) returns prompt + new ids."""

    _repr_prefix = "Qwen2"

    def __init__(self, config, device=None, dtype=None, _impl=None):
        super().__init__(config, device=device, dtype=_as_dtype(dtype), _impl=_impl)
        self.generation_config = _generation_config_of(self._impl)
        self.name_or_path = ""

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, dtype=None, device=None, **kwargs):
        """Loads a Hugging Face folder as AutoModelForCausalLM.from_pretrained does."""
        model = AutoModelForCausalLM.from_pretrained(pretrained_model_name_or_path, dtype=dtype, device=device,
                                                     **kwargs)
        if type(model) is not cls:
            raise ValueError(f"{pretrained_model_name_or_path!r} holds a {model.config.model_type} model, not "
                             f"{cls.__name__} (use AutoModelForCausalLM)")
        return model


class Qwen3ForCausalLM(Qwen2ForCausalLM):
    """Qwen3 (dense) with transformers' API (see Qwen2ForCausalLM)."""

    _repr_prefix = "Qwen3"


class LlamaForCausalLM(Qwen2ForCausalLM):
    """Llama 3.x (rope llama3, yarn, linear, dynamic) with transformers' API (see Qwen2ForCausalLM)."""

    _repr_prefix = "Llama"


class MistralForCausalLM(Qwen2ForCausalLM):
    """Mistral (sliding-window attention) with transformers' API (see Qwen2ForCausalLM)."""

    _repr_prefix = "Mistral"


class Gemma2ForCausalLM(Qwen2ForCausalLM):
    """Gemma 2 (sandwich norms, GeGLU, soft-capping, alternating sliding layers) with transformers' API."""

    _repr_prefix = "Gemma2"


class Gemma3ForCausalLM(Qwen2ForCausalLM):
    """Gemma 3 text (q/k norms, a local rope for sliding layers) with transformers' API (see Qwen2ForCausalLM)."""

    _repr_prefix = "Gemma3"


class Qwen3MoeForCausalLM(Qwen2ForCausalLM):
    """Qwen3-MoE (routed SwiGLU experts) with transformers' API; model(...) returns MoeCausalLMOutputWithPast."""

    _repr_prefix = "Qwen3Moe"
