"""Renders a chat template as transformers does (jinja2, its tojson and globals): JSON on stdin with template,
messages, tools (optional) and add_generation_prompt; the prompt text on stdout."""
import json
import sys
from datetime import datetime

from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    """transformers' tojson filter: json.dumps without HTML escaping or sorted keys."""
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    """The template's raise_exception()."""
    raise ValueError(message)


def main():
    """Reads the request, writes the rendered prompt."""
    req = json.load(sys.stdin)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    ctx = {"messages": req["messages"], "add_generation_prompt": req.get("add_generation_prompt", True)}
    if req.get("tools") is not None:
        ctx["tools"] = req["tools"]
    sys.stdout.write(env.from_string(req["template"]).render(**ctx))


if __name__ == "__main__":
    main()
