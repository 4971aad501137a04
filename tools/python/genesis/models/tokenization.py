"""Tokenizers used the way transformers' are: Tokenizer.from_pretrained(folder) (AutoTokenizer), tok(text or
texts, padding=..., truncation=..., max_length=..., return_tensors="gn") -> BatchEncoding, decode, batch_decode,
convert_ids_to_tokens, convert_tokens_to_ids and apply_chat_template.  The work runs in the C++ tokenizer
(genesis._C.models.Tokenizer, byte-level BPE from tokenizer.json)."""
import errno
import json
import numbers
import os
import shutil
from collections.abc import Mapping

from genesis import _C

VERY_LARGE_INTEGER = int(1e30)  # transformers' model_max_length when the config sets none
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json",
                    "vocab.json", "merges.txt", "added_tokens.json")
_PADDING = {True: "longest", "longest": "longest", "max_length": "max_length", False: None, None: None,
            "do_not_pad": None}
_TRUNCATION = {True: "longest_first", "longest_first": "longest_first", "only_first": "longest_first",
               False: None, None: None, "do_not_truncate": None}
_TENSOR_TYPES = ("gn", "pt", "np")
_NO_TEMPLATE = ("Cannot use chat template functions because tokenizer.chat_template is not set and no template "
                "argument was passed! Set tokenizer.chat_template or pass chat_template=... (a Jinja string).")


def check_folder(path, what="from_pretrained", needs=None):
    """The folder path as a str; TypeError for a non-path, FileNotFoundError / NotADirectoryError naming it (or
    the file `needs` it lacks)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what}() expects the path of a model folder (str or os.PathLike), got "
                        f"{type(path).__name__}")
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, "No such model folder (genesis loads local folders only: download "
                                "the model first, e.g. `huggingface-cli download Qwen/Qwen3-0.6B --local-dir DIR`)",
                                path)
    if not os.path.isdir(path):
        raise NotADirectoryError(errno.ENOTDIR, "Not a model folder (give the folder that holds the files)", path)
    if needs and not os.path.isfile(os.path.join(path, needs)):
        raise FileNotFoundError(errno.ENOENT, f"The folder has no {needs}", os.path.join(path, needs))
    return path


def _check_unknown(what, kwargs):
    if kwargs:
        raise TypeError(f"{what}() got an unexpected keyword argument '{next(iter(kwargs))}'")


def as_id_list(ids, what="token_ids"):
    """A flat list of Python ints from an int, a list/tuple of ints, a 0-D/1-D tensor or array."""
    if hasattr(ids, "tolist") and not isinstance(ids, (list, tuple)):
        ids = ids.tolist()
    if isinstance(ids, numbers.Integral) and not isinstance(ids, bool):
        return [int(ids)]
    if not isinstance(ids, (list, tuple)):
        raise TypeError(f"{what} must be an int, a list of ints or a 1-D tensor of ids, got {type(ids).__name__}")
    out = []
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            if isinstance(i, (list, tuple)):
                raise TypeError(f"{what} must be one sequence of ids, got a nested list (use batch_decode for a "
                                "batch)")
            raise TypeError(f"{what} must hold ints, got {type(i).__name__}")
        out.append(int(i))
    return out


class BatchEncoding(dict):
    """What a tokenizer call returns: a dict (input_ids, attention_mask) whose keys are also attributes."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"'BatchEncoding' object has no attribute '{name}'") from None

    def __getstate__(self):
        return dict(self)

    def __setstate__(self, state):
        self.update(state)

    def to(self, device):
        """The tensors moved to device (in place, as transformers does); returns self."""
        for k, v in self.items():
            if hasattr(v, "to") and hasattr(v, "device"):
                self[k] = v.to(device)
        return self

    def __repr__(self):
        return f"BatchEncoding({dict.__repr__(self)})"


def _to_tensors(rows, return_tensors, key):
    if return_tensors is None:
        return rows
    if len({len(r) for r in rows}) > 1:
        raise ValueError("Unable to create tensor, you should probably activate truncation and/or padding with "
                         f"'padding=True' 'truncation=True' to have batched tensors with the same length ({key} "
                         f"rows have lengths {sorted({len(r) for r in rows})}).")
    if return_tensors == "np":
        import numpy as np
        return np.array(rows, dtype=np.int64).reshape(len(rows), -1)
    import genesis
    if not rows or not rows[0]:
        return genesis.zeros((len(rows), 0), dtype=genesis.int64)
    return genesis.tensor(rows, dtype=genesis.int64)


class Tokenizer:
    """A Hugging Face tokenizer folder (tokenizer.json, tokenizer_config.json) with transformers' calling
    conventions; Tokenizer.from_pretrained is AutoTokenizer.from_pretrained."""

    def __init__(self, impl, name_or_path="", padding_side="right", truncation_side="right",
                 model_max_length=VERY_LARGE_INTEGER):
        self._impl = impl
        self.name_or_path = name_or_path
        self.padding_side = padding_side
        self.truncation_side = truncation_side
        self.model_max_length = model_max_length
        self.chat_template = impl.chat_template or None
        self._tokens = {"bos_token": impl.bos_token or None, "eos_token": impl.eos_token or None,
                        "pad_token": impl.pad_token or None, "unk_token": None}

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, padding_side=None, truncation_side=None,
                        model_max_length=None, chat_template=None, **kwargs):
        """Loads DIR/tokenizer.json and DIR/tokenizer_config.json (AutoTokenizer.from_pretrained's shape)."""
        for k in ("trust_remote_code", "use_fast", "revision", "local_files_only", "cache_dir"):
            kwargs.pop(k, None)
        _check_unknown("from_pretrained", kwargs)
        path = check_folder(pretrained_model_name_or_path, needs="tokenizer.json")
        impl = _C.models.Tokenizer.from_pretrained(path)
        cfg = {}
        cfg_path = os.path.join(path, "tokenizer_config.json")
        if os.path.isfile(cfg_path):
            with open(cfg_path, encoding="utf-8") as f:
                cfg = json.load(f)
            if not isinstance(cfg, dict):
                cfg = {}
        side = padding_side or cfg.get("padding_side") or "right"
        tside = truncation_side or cfg.get("truncation_side") or "right"
        for name, v in (("padding_side", side), ("truncation_side", tside)):
            if v not in ("left", "right"):
                raise ValueError(f"{name} must be 'left' or 'right', got {v!r}")
        mml = model_max_length or cfg.get("model_max_length")
        if not isinstance(mml, int) or isinstance(mml, bool) or mml <= 0:
            mml = VERY_LARGE_INTEGER
        tok = cls(impl, path, side, tside, mml)
        if chat_template is not None:
            tok.chat_template = chat_template
        return tok

    def save_pretrained(self, save_directory):
        """Copies the tokenizer's files (tokenizer.json, tokenizer_config.json, chat template) into a folder."""
        save_directory = os.fspath(save_directory)
        os.makedirs(save_directory, exist_ok=True)
        written = []
        for name in _TOKENIZER_FILES:
            src = os.path.join(self.name_or_path, name) if self.name_or_path else ""
            if src and os.path.isfile(src):
                dst = os.path.join(save_directory, name)
                if not os.path.exists(dst) or not os.path.samefile(src, dst):
                    shutil.copyfile(src, dst)
                written.append(dst)
        return tuple(written)

    # ---- special tokens (settable, as in transformers: tok.pad_token = tok.eos_token)
    def _token_property(name):
        def get(self):
            return self._tokens[name]

        def set_(self, value):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a str or None, got {type(value).__name__}")
            if value is not None and self._impl.token_to_id(value) < 0:
                raise ValueError(f"{name} {value!r} is not in the vocabulary (genesis cannot add tokens)")
            self._tokens[name] = value

        def get_id(self):
            t = self._tokens[name]
            return None if t is None else self.convert_tokens_to_ids(t)

        def set_id(self, value):
            if value is None:
                self._tokens[name] = None
                return
            tok = self.convert_ids_to_tokens(value)
            if tok is None:
                raise ValueError(f"{name}_id {value} is not in the vocabulary")
            self._tokens[name] = tok

        return property(get, set_, doc=f"The {name} string (None when unset)."), property(
            get_id, set_id, doc=f"The id of {name} (None when unset).")

    bos_token, bos_token_id = _token_property("bos_token")
    eos_token, eos_token_id = _token_property("eos_token")
    pad_token, pad_token_id = _token_property("pad_token")
    unk_token, unk_token_id = _token_property("unk_token")
    del _token_property

    @property
    def special_tokens_map(self):
        """The set special tokens by role (bos_token, eos_token, pad_token, unk_token)."""
        return {k: v for k, v in self._tokens.items() if v is not None}

    @property
    def all_special_ids(self):
        """Ids of every special added token."""
        return [i for i in range(self._impl.vocab_size) if self._impl.is_special(i)]

    @property
    def all_special_tokens(self):
        """Every special added token."""
        return [self._impl.id_to_token(i) for i in self.all_special_ids]

    @property
    def vocab_size(self):
        """Number of ids, added tokens included (max id + 1); len(tok) is the same."""
        return self._impl.vocab_size

    def __len__(self):
        return self._impl.vocab_size

    def get_vocab(self):
        """{token: id} over every id (added tokens included)."""
        out = {}
        for i in range(self._impl.vocab_size):
            t = self._impl.id_to_token(i)
            if t:
                out[t] = i
        return out

    def __repr__(self):
        return (f"{type(self).__name__}(name_or_path='{self.name_or_path}', vocab_size={len(self)}, "
                f"model_max_length={self.model_max_length}, padding_side='{self.padding_side}', "
                f"truncation_side='{self.truncation_side}', special_tokens={self.special_tokens_map})")

    # ---- ids <-> tokens
    def convert_ids_to_tokens(self, ids, skip_special_tokens=False):
        """Stored token strings ("Ġthe") of an id (str, None when unknown) or of a list of ids."""
        if isinstance(ids, numbers.Integral) and not isinstance(ids, bool):
            t = self._impl.id_to_token(int(ids))
            return t or None
        out = []
        for i in as_id_list(ids, "ids"):
            if skip_special_tokens and self._impl.is_special(i):
                continue
            out.append(self._impl.id_to_token(i) or None)
        return out

    def convert_tokens_to_ids(self, tokens):
        """Id of a stored token string (None when absent), or ids of a list of them."""
        if tokens is None:
            return None
        if isinstance(tokens, str):
            i = self._impl.token_to_id(tokens)
            return i if i >= 0 else self.unk_token_id
        if not isinstance(tokens, (list, tuple)):
            raise TypeError(f"tokens must be a str or a list of str, got {type(tokens).__name__}")
        return [self.convert_tokens_to_ids(_check_str(t, "tokens")) for t in tokens]

    def tokenize(self, text, add_special_tokens=False):
        """The token strings text splits into."""
        return self.convert_ids_to_tokens(self._impl.encode(_check_str(text, "text"), add_special_tokens))

    def convert_tokens_to_string(self, tokens):
        """Text of a list of stored token strings."""
        return self.decode(self.convert_tokens_to_ids(list(tokens)))

    # ---- encoding
    def encode(self, text, add_special_tokens=True, padding=False, truncation=None, max_length=None,
               return_tensors=None):
        """Token ids of one text (a list, or a (1, T) tensor with return_tensors)."""
        return self(_check_str(text, "text"), add_special_tokens=add_special_tokens, padding=padding,
                    truncation=truncation, max_length=max_length, return_tensors=return_tensors)["input_ids"]

    def __call__(self, text=None, add_special_tokens=True, padding=False, truncation=None, max_length=None,
                 return_tensors=None, return_attention_mask=None, padding_side=None, pad_to_multiple_of=None,
                 return_length=False, return_token_type_ids=None, verbose=True, **kwargs):
        """Encodes a text or a list of texts: BatchEncoding(input_ids=..., attention_mask=...)."""
        if "text_pair" in kwargs or "text_target" in kwargs:
            raise NotImplementedError("text pairs and targets are not supported (Qwen tokenizers take one text)")
        if "is_split_into_words" in kwargs and kwargs.pop("is_split_into_words"):
            raise NotImplementedError("is_split_into_words=True is not supported")
        _check_unknown("__call__", kwargs)
        batched = isinstance(text, (list, tuple))
        texts = list(text) if batched else [text]
        if text is None or not all(isinstance(t, str) for t in texts):
            raise ValueError("text input must be of type `str` (single example) or `List[str]` (batch), got "
                             + (type(text).__name__ if not batched else "a list holding " + ", ".join(
                                 sorted({type(t).__name__ for t in texts if not isinstance(t, str)}))))
        if padding not in _PADDING:
            raise ValueError(f"{padding!r} is not a valid PaddingStrategy, please select one of "
                             "['longest', 'max_length', 'do_not_pad']")
        if truncation not in _TRUNCATION:
            raise ValueError(f"{truncation!r} is not a valid TruncationStrategy, please select one of "
                             "['only_first', 'longest_first', 'do_not_truncate']")
        if return_tensors is not None and return_tensors not in _TENSOR_TYPES:
            raise ValueError(f"{return_tensors!r} is not a valid TensorType, please select one of "
                             f"{list(_TENSOR_TYPES)} ('gn' and 'pt' give genesis tensors)")
        if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int)
                                       or max_length < 0):
            raise ValueError(f"max_length must be a non-negative int, got {max_length!r}")
        if pad_to_multiple_of is not None and (not isinstance(pad_to_multiple_of, int) or pad_to_multiple_of <= 0):
            raise ValueError(f"pad_to_multiple_of must be a positive int, got {pad_to_multiple_of!r}")
        side = padding_side or self.padding_side
        if side not in ("left", "right"):
            raise ValueError(f"padding_side must be 'left' or 'right', got {side!r}")
        pad_mode, trunc_mode = _PADDING[padding], _TRUNCATION[truncation]
        if truncation is None and max_length is not None and pad_mode != "max_length":
            trunc_mode = "longest_first"  # transformers truncates when only max_length is given
        limit = max_length if max_length is not None else self.model_max_length
        rows = [self._impl.encode(t, add_special_tokens) for t in texts]
        if trunc_mode is not None:
            if self.truncation_side == "left":
                rows = [r[max(0, len(r) - limit):] for r in rows]
            else:
                rows = [r[:limit] for r in rows]
        masks = [[1] * len(r) for r in rows]
        if pad_mode is not None:
            if pad_mode == "max_length":
                if max_length is None and self.model_max_length >= VERY_LARGE_INTEGER:
                    raise ValueError("padding='max_length' needs max_length (the tokenizer sets no model_max_length)")
                width = limit
            else:
                width = max((len(r) for r in rows), default=0)
            if pad_to_multiple_of:
                width = -(-width // pad_to_multiple_of) * pad_to_multiple_of
            if any(len(r) < width for r in rows):
                pad = self.pad_token_id
                if pad is None:
                    raise ValueError("Asking to pad but the tokenizer does not have a padding token. Please select a "
                                     "token to use as `pad_token` `(tokenizer.pad_token = tokenizer.eos_token e.g.)`.")
                for i, r in enumerate(rows):
                    n = width - len(r)
                    if n > 0:
                        if side == "left":
                            rows[i], masks[i] = [pad] * n + r, [0] * n + masks[i]
                        else:
                            rows[i], masks[i] = r + [pad] * n, masks[i] + [0] * n
        out = BatchEncoding()
        if batched:
            out["input_ids"] = _to_tensors(rows, return_tensors, "input_ids")
        else:
            out["input_ids"] = _to_tensors(rows, return_tensors, "input_ids") if return_tensors else rows[0]
        if return_attention_mask is None or return_attention_mask:
            out["attention_mask"] = _to_tensors(masks, return_tensors, "attention_mask") if (
                batched or return_tensors) else masks[0]
        if return_length:
            lengths = [sum(m) for m in masks]
            out["length"] = lengths if batched else lengths[0]
        return out

    # ---- decoding
    def decode(self, token_ids, skip_special_tokens=False, clean_up_tokenization_spaces=None, **kwargs):
        """Text of one sequence of ids (ids with no token are skipped)."""
        _check_unknown("decode", kwargs)
        return self._impl.decode(as_id_list(token_ids), skip_special_tokens)

    def batch_decode(self, sequences, skip_special_tokens=False, clean_up_tokenization_spaces=None, **kwargs):
        """Texts of a batch of sequences (a list of lists or a 2-D tensor)."""
        _check_unknown("batch_decode", kwargs)
        if hasattr(sequences, "tolist") and not isinstance(sequences, (list, tuple)):
            sequences = sequences.tolist()
        if not isinstance(sequences, (list, tuple)):
            raise TypeError(f"batch_decode expects a list of sequences or a 2-D tensor, got {type(sequences).__name__}")
        return [self.decode(s, skip_special_tokens=skip_special_tokens) for s in sequences]

    # ---- chat templates
    def apply_chat_template(self, conversation, tools=None, documents=None, chat_template=None,
                            add_generation_prompt=False, continue_final_message=False, tokenize=True, padding=False,
                            truncation=False, max_length=None, return_tensors=None, return_dict=False, **kwargs):
        """Renders a chat (a list of {"role", "content"} dicts, or a list of chats) with the Jinja chat template
        as transformers does; tokenize=True gives ids (a tensor with return_tensors, a BatchEncoding with
        return_dict=True).  Other keywords (enable_thinking=False, ...) go to the template."""
        template = chat_template if chat_template is not None else self.chat_template
        if not template:
            raise ValueError(_NO_TEMPLATE)
        if not isinstance(template, str):
            raise TypeError(f"chat_template must be a str, got {type(template).__name__}")
        if add_generation_prompt and continue_final_message:
            raise ValueError("continue_final_message and add_generation_prompt are not compatible. Use "
                             "continue_final_message when you want the model to continue the final message, and "
                             "add_generation_prompt when you want to add a header that will prompt it to start a "
                             "new assistant message instead.")
        if return_dict and not tokenize:
            raise ValueError("`return_dict=True` is incompatible with `tokenize=False`, because there is no dict "
                             "of tokenizer outputs to return.")
        if not isinstance(conversation, (list, tuple)):
            raise TypeError(f"conversation must be a list of messages (dicts with 'role' and 'content') or a list of "
                            f"such lists, got {type(conversation).__name__}")
        batched = bool(conversation) and isinstance(conversation[0], (list, tuple))
        chats = list(conversation) if batched else [conversation]
        if tools is not None:
            if not isinstance(tools, (list, tuple)) or any(not isinstance(t, Mapping) for t in tools):
                raise TypeError("tools must be a list of JSON schemas (dicts); genesis does not derive schemas from "
                                "Python functions")
            tools = list(tools)
        base = {k: v for k, v in self.special_tokens_map.items()}
        base.update({"tools": tools, "documents": documents, "add_generation_prompt": bool(add_generation_prompt)})
        base.update(kwargs)
        texts = []
        for chat in chats:
            msgs = _check_messages(chat)
            ctx = dict(base, messages=msgs)
            try:
                ctx_json = json.dumps(ctx, ensure_ascii=False)
            except (TypeError, ValueError) as e:
                raise TypeError(f"apply_chat_template: the messages and keywords must be JSON data ({e})") from None
            text = _C.models.render_chat_template(template, ctx_json)
            if continue_final_message:
                if not msgs or not isinstance(msgs[-1].get("content"), str):
                    raise ValueError("continue_final_message needs a final message with text content")
                final = msgs[-1]["content"]
                if final not in text:
                    raise ValueError("continue_final_message is set but the final message does not appear in the "
                                     "rendered chat; the template may change its content")
                if final.strip() not in text:
                    final = final.strip()
                text = text[:text.rindex(final) + len(final)]
            texts.append(text)
        if not tokenize:
            return texts if batched else texts[0]
        enc = self(texts if batched else texts[0], add_special_tokens=False, padding=padding, truncation=truncation,
                   max_length=max_length, return_tensors=return_tensors)
        return enc if return_dict else enc["input_ids"]


def _check_str(x, what):
    if not isinstance(x, str):
        raise TypeError(f"{what} must be a str, got {type(x).__name__}")
    return x


def _check_messages(chat):
    out = []
    for i, m in enumerate(chat):
        if not isinstance(m, Mapping):
            raise TypeError(f"apply_chat_template: message {i} must be a dict with 'role' and 'content', got "
                            f"{type(m).__name__}")
        if "role" not in m:
            raise ValueError(f"apply_chat_template: message {i} has no 'role'")
        out.append(dict(m))
    return out


AutoTokenizer = Tokenizer
