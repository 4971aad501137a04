"""genesis.models: the Qwen causal LMs (Qwen2, Qwen2.5, Qwen3 dense) as nn.Modules, their
tokenizer, generation with a KV cache, and supervised fine-tuning.

    model = genesis.models.QwenForCausalLM.from_pretrained("Qwen2.5-0.5B-Instruct", device="cuda")
    tok = genesis.models.Tokenizer.from_pretrained("Qwen2.5-0.5B-Instruct")
    ids = tok.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=True)
    out = model.generate([ids], max_new_tokens=32)
    print(tok.decode(out[0]))
"""
from genesis import _C
from genesis._C.models import QwenConfig, StreamDecoder, Tokenizer, read_chat_jsonl, train_tokenizer  # noqa: F401
from genesis.nn.modules import CppLayer


class QwenForCausalLM(CppLayer):
    """The causal LM: parameters carry Hugging Face's names (model.layers.0.self_attn.q_proj.weight, ...)."""

    def __init__(self, config, device=None, dtype=None, _impl=None):
        super().__init__(_impl if _impl is not None else _C.models.QwenForCausalLM(config, device, dtype))

    @classmethod
    def from_pretrained(cls, path, device=None, dtype=None):
        """Loads a Hugging Face folder (config.json, safetensors, sharded or not)."""
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
    return _C.models.train_sft(impl, tokenizer, on_step=on_step, **options)
