"""Streamers for generate(streamer=...), as in transformers: TextStreamer prints words as they come and
TextIteratorStreamer hands them to another thread (for text in streamer: ...).  generate() calls put(ids)
with the prompt first, then with each new token, and end() once at the end."""
import queue

from genesis.models.tokenization import as_id_list


class BaseStreamer:
    """What generate() calls: put(ids) for the prompt and each new token, end() when done."""

    def put(self, value):
        raise NotImplementedError()

    def end(self):
        raise NotImplementedError()


def _is_chinese_char(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
            or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
            or 0x2F800 <= cp <= 0x2FA1F)


class TextStreamer(BaseStreamer):
    """Prints the text as it is generated, a word at a time (skip_prompt=True leaves out the prompt);
    decode_kwargs (skip_special_tokens=True, ...) go to tokenizer.decode."""

    def __init__(self, tokenizer, skip_prompt=False, **decode_kwargs):
        self.tokenizer = tokenizer
        self.skip_prompt = skip_prompt
        self.decode_kwargs = decode_kwargs
        self.token_cache = []
        self.print_len = 0
        self.next_tokens_are_prompt = True

    def put(self, value):
        """Takes the prompt ids (batch size 1) or the next token and emits the text that is complete."""
        shape = tuple(getattr(value, "shape", ()))
        if len(shape) > 1 and shape[0] > 1:
            raise ValueError(f"{type(self).__name__} only supports batch size 1")
        if len(shape) > 1:
            value = value[0]
        if self.skip_prompt and self.next_tokens_are_prompt:
            self.next_tokens_are_prompt = False
            return
        self.next_tokens_are_prompt = False
        self.token_cache.extend(as_id_list(value, "value"))
        text = self.tokenizer.decode(self.token_cache, **self.decode_kwargs)
        if text.endswith("\n"):  # a line is complete: emit it and start over
            printable = text[self.print_len:]
            self.token_cache = []
            self.print_len = 0
        elif text and _is_chinese_char(ord(text[-1])):  # CJK characters are words of their own
            printable = text[self.print_len:]
            self.print_len += len(printable)
        else:  # up to the last space: the last word may still grow
            printable = text[self.print_len:text.rfind(" ") + 1]
            self.print_len += len(printable)
        self.on_finalized_text(printable)

    def end(self):
        """Emits what is left and marks the end of the stream."""
        if self.token_cache:
            printable = self.tokenizer.decode(self.token_cache, **self.decode_kwargs)[self.print_len:]
        else:
            printable = ""
        self.token_cache = []
        self.print_len = 0
        self.next_tokens_are_prompt = True
        self.on_finalized_text(printable, stream_end=True)

    def on_finalized_text(self, text, stream_end=False):
        """Prints text (a newline at the end of the stream); override to send it elsewhere."""
        print(text, flush=True, end="" if not stream_end else None)


class TextIteratorStreamer(TextStreamer):
    """Queues the text for another thread: run generate() in a thread and iterate over the streamer there;
    timeout (seconds) makes a stalled read raise queue.Empty."""

    def __init__(self, tokenizer, skip_prompt=False, timeout=None, **decode_kwargs):
        super().__init__(tokenizer, skip_prompt, **decode_kwargs)
        self.text_queue = queue.Queue()
        self.stop_signal = None
        self.timeout = timeout

    def on_finalized_text(self, text, stream_end=False):
        """Queues text (and the end marker at the end of the stream)."""
        if text:
            self.text_queue.put(text, timeout=self.timeout)
        if stream_end:
            self.text_queue.put(self.stop_signal, timeout=self.timeout)

    def __iter__(self):
        return self

    def __next__(self):
        value = self.text_queue.get(timeout=self.timeout)
        if value == self.stop_signal:
            raise StopIteration()
        return value
