#!/usr/bin/env python3
"""tests/llm/chat/gen_expected.py - the jinja2 oracle for genesis::ChatTemplate.

Renders every conversation with every template under tests/fixtures/chat_templates/, and
every language-feature snippet below, with jinja2 configured exactly as transformers'
apply_chat_template does (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
loopcontrols, the {% generation %} tag, its own tojson, raise_exception, strftime_now),
and writes tests/fixtures/chat_templates/expected.json. The C++ test replays it and
requires byte-identical output, so a checkout tests without Python.

    /usr/bin/python3 tests/llm/chat/gen_expected.py            # rewrite expected.json
    /usr/bin/python3 tests/llm/chat/gen_expected.py --check    # exit 1 if it would change
"""
import argparse
import json
import pathlib
import sys
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "chat_templates"
TEMPLATES = {
    "qwen2-instruct": "qwen2-instruct.jinja",
    "qwen2.5-instruct": "qwen2.5-instruct.jinja",
    "qwen3": "qwen3.jinja",
    "qwen3-coder-vllm": "qwen3-coder-vllm.jinja",
    # The chat templates of tests/fixtures/tokenizer/{llama3,gemma3}/tokenizer_config.json, and Llama 2
    # chat's (meta-llama/Llama-2-7b-chat-hf's tokenizer_config.json).
    "llama3-instruct": "llama3-instruct.jinja",
    "gemma3-it": "gemma3-it.jinja",
    "llama2-chat": "llama2-chat.jinja",
}
# What transformers' apply_chat_template passes besides the conversation: the tokenizer's special tokens
# (special_tokens_map, from tokenizer_config.json).  The Qwen cases predate this and pass none.
TEMPLATE_CONTEXT = {
    "llama3-instruct": {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"},
    "gemma3-it": {"bos_token": "<bos>", "eos_token": "<end_of_turn>", "unk_token": "<unk>", "pad_token": "<pad>",
                  "boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"},
    "llama2-chat": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
}


# ---- the environment, as transformers.utils.chat_template_utils builds it


class GenerationTag(jinja2.ext.Extension):
    """transformers' AssistantTracker without the tracking: {% generation %} renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def make_env():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, context):
    try:
        return {"expected": env.from_string(source).render(**context)}
    except Exception as e:  # the C++ side must fail too
        return {"error": f"{type(e).__name__}: {e}"}


# ---- conversations

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. \"Paris\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Heure locale — ünïcödé, 東京, emoji 🕒, quotes ' \" and \\ backslash, <tags> & </script>",
        "parameters": {"type": "object", "properties": {"tz": {"type": "string", "default": "UTC"}}, "required": []},
    },
}
NUMBERS_TOOL = {
    "type": "function",
    "function": {
        "name": "stats",
        "description": "Numbers of every kind",
        "parameters": {
            "type": "object",
            "properties": {"x": {"type": "number", "minimum": -1.5, "maximum": 1e20, "step": 0.1}},
            "strict": True,
            "extra": None,
        },
    },
}


def call(name, arguments, wrap=True, id_=None):
    c = {"name": name, "arguments": arguments}
    if not wrap:
        return c
    out = {"type": "function", "function": c}
    if id_:
        out["id"] = id_
    return out


def u(text):
    return {"role": "user", "content": text}


def a(text, **extra):
    m = {"role": "assistant", "content": text}
    m.update(extra)
    return m


def s(text):
    return {"role": "system", "content": text}


def t(text, name=None):
    m = {"role": "tool", "content": text}
    if name:
        m["name"] = name
    return m


def conversations():
    """(name, messages, extra kwargs) triples; every template renders every one."""
    tool_turn = [
        u("What's the weather in Paris?"),
        a("", tool_calls=[call("get_weather", {"city": "Paris", "unit": "celsius"}, id_="call_1")]),
        t('{"temperature": 21, "condition": "sunny"}', "get_weather"),
    ]
    yield "user_only", [u("Hello!")], {"add_generation_prompt": True}
    yield "user_only_no_prompt", [u("Hello!")], {"add_generation_prompt": False}
    yield "system_user", [s("You are a pirate."), u("Hi")], {"add_generation_prompt": True}
    yield "multi_turn", [s("Be brief."), u("2+2?"), a("4"), u("And 3+3?")], {"add_generation_prompt": True}
    yield "multi_turn_no_system_closed", [u("Hi"), a("Hello! How can I help?"), u("Tell me a joke"), a("Why did the chicken cross the road?")], {"add_generation_prompt": False}
    yield "tools_user", [u("Weather in Rome?")], {"tools": [WEATHER_TOOL], "add_generation_prompt": True}
    yield "tools_system_user", [s("You are a weather bot."), u("Weather in Rome?")], {"tools": [WEATHER_TOOL, TIME_TOOL], "add_generation_prompt": True}
    yield "tool_call_dict_args", tool_turn + [a("It is 21°C and sunny in Paris.")], {"tools": [WEATHER_TOOL], "add_generation_prompt": False}
    yield "tool_call_string_args", [u("Weather?"), a("", tool_calls=[call("get_weather", '{"city": "Oslo"}')]), t("cold")], {"tools": [WEATHER_TOOL], "add_generation_prompt": True}
    yield "tool_calls_parallel", [
        u("Weather in Paris and Tokyo, and the time?"),
        a("", tool_calls=[call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Tokyo"}), call("get_time", {"tz": "Asia/Tokyo"})]),
        t("18C"), t("25C"), t("21:04"),
    ], {"tools": [WEATHER_TOOL, TIME_TOOL], "add_generation_prompt": True}
    yield "tool_call_with_content", [u("Paris?"), a("Let me check.", tool_calls=[call("get_weather", {"city": "Paris"})]), t("sunny"), a("Sunny.")], {"tools": [WEATHER_TOOL], "add_generation_prompt": False}
    yield "tool_call_unwrapped", [u("Paris?"), a("", tool_calls=[call("get_weather", {"city": "Paris"}, wrap=False)]), t("rain")], {"add_generation_prompt": True}
    yield "tool_then_more_turns", tool_turn + [a("Sunny, 21."), u("And tomorrow?"), a("", tool_calls=[call("get_weather", {"city": "Paris", "day": "tomorrow"})]), t("cloudy"), t("windy")], {"tools": [WEATHER_TOOL], "add_generation_prompt": True}
    yield "tool_args_numbers", [u("stats"), a("", tool_calls=[call("stats", {"x": 0.1, "y": -2, "z": 1e-7, "big": 1e16, "f": 3.0, "ok": True, "none": None, "list": [1, 2.5, "x"], "nested": {"k": []}, "empty": {}})]), t("done")], {"tools": [NUMBERS_TOOL], "add_generation_prompt": True}
    yield "reasoning_content_last", [u("Why is the sky blue?"), a("Rayleigh scattering.", reasoning_content="Think about light scattering.\nShort wavelengths scatter more.")], {"add_generation_prompt": False}
    yield "reasoning_content_history", [u("Q1"), a("A1", reasoning_content="R1"), u("Q2"), a("A2", reasoning_content="R2")], {"add_generation_prompt": False}
    yield "think_in_content", [u("Q1"), a("<think>\nfirst thoughts\n</think>\n\nAnswer one"), u("Q2"), a("<think>second</think>Answer two")], {"add_generation_prompt": False}
    yield "think_in_content_then_prompt", [u("Q1"), a("<think>\nhmm\n</think>\n\nA1"), u("Q2")], {"add_generation_prompt": True}
    yield "reasoning_none_with_think", [u("Q"), a("<think>x</think>y", reasoning_content=None)], {"add_generation_prompt": False}
    yield "enable_thinking_false", [u("Quick answer please")], {"add_generation_prompt": True, "enable_thinking": False}
    yield "enable_thinking_true", [u("Think hard")], {"add_generation_prompt": True, "enable_thinking": True}
    yield "enable_thinking_false_no_prompt", [u("Hi"), a("Hello")], {"add_generation_prompt": False, "enable_thinking": False}
    yield "unicode_emoji", [s("Réponds en français 🇫🇷"), u("こんにちは 👋🏽 — ça va? Ω≈ç√∫"), a("Très bien ! 😀"), u("𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \u00a0nbsp\u2028sep")], {"add_generation_prompt": True}
    yield "empty_contents", [s(""), u(""), a(""), u("")], {"add_generation_prompt": True}
    yield "jinja_looking_content", [u("{{ messages }} {% if true %}x{% endif %} {# c #}"), a("{%- raw -%} {{ '}}' }}"), u("{{- 1 + 1 -}}")], {"add_generation_prompt": True}
    yield "system_in_middle", [u("Hi"), s("New instructions: be formal."), u("Hello again")], {"add_generation_prompt": True}
    yield "user_tool_response_text", [u("Q"), a("", tool_calls=[call("get_time", {})]), u("<tool_response>\n12:00\n</tool_response>"), a("It is noon.")], {"tools": [TIME_TOOL], "add_generation_prompt": False}
    yield "whitespace_content", [u("\n\n  leading and trailing  \n\t"), a("\n\nanswer with newlines\n\n"), u("\t")], {"add_generation_prompt": True}
    yield "extra_kwargs", [u("Hi")], {"add_generation_prompt": True, "bos_token": "<|endoftext|>", "eos_token": "<|im_end|>", "custom": {"a": 1}}
    yield "long_multi_turn", [m for k in range(6) for m in (u(f"question {k}"), a(f"answer {k}"))], {"add_generation_prompt": True}
    yield "tool_first_message", [t("orphan tool output"), u("what was that?")], {"add_generation_prompt": True}
    yield "assistant_prefill_last", [u("Write a haiku"), a("<think>\nsyllables\n</think>\n\nAutumn moonlight")], {"add_generation_prompt": False, "enable_thinking": True}


def family_conversations():
    """More (name, messages, kwargs) for the Llama and Gemma templates: strict alternation, content lists."""
    yield "alternating_with_system", [s("You are concise."), u("Hi"), a("Hello."), u("Bye")], {"add_generation_prompt": False}
    yield "alternating_with_system_prompt", [s("  Answer in French.  "), u(" Hi "), a(" Bonjour. "), u("Merci")], {"add_generation_prompt": True}
    yield "alternating_no_system", [u("One"), a("Two"), u("Three"), a("Four")], {"add_generation_prompt": True}
    yield "content_list_text_and_image", [u([{"type": "text", "text": " Describe "}, {"type": "image"}, {"type": "text", "text": "this image. "}])], {"add_generation_prompt": True}
    yield "system_content_list", [{"role": "system", "content": [{"type": "text", "text": "Be kind."}]}, u("Hello")], {"add_generation_prompt": True}
    yield "special_tokens_in_content", [u("<|eot_id|> <end_of_turn> </s> [INST] <<SYS>>"), a("<bos><s>")], {"add_generation_prompt": False}
    yield "assistant_first", [a("I start."), u("Odd.")], {"add_generation_prompt": True}
    yield "no_bos_token", [u("Hi")], {"add_generation_prompt": True, "bos_token": ""}


def conversation_context(messages, kwargs, template=None):
    # render_jinja_template passes tools and documents explicitly (None when not given).
    ctx = {"messages": messages, "tools": None, "documents": None, "add_generation_prompt": False}
    ctx.update(TEMPLATE_CONTEXT.get(template, {}))
    ctx.update(kwargs)
    return ctx


# ---- language-feature snippets: (name, template, context)

SNIPPETS = [
    ("print_values", "{{ 1 }}|{{ 1.5 }}|{{ 1.0 }}|{{ 1e-5 }}|{{ 1e16 }}|{{ 123456789.125 }}|{{ 0.1 + 0.2 }}|{{ -0.0 }}|{{ true }}|{{ none }}|{{ 'x' }}|{{ [1, 'a', none, true, 2.5] }}|{{ {'a': 1, 'b': [1]} }}|{{ (1, 2) }}|{{ (1,) }}|{{ x }}", {"x": None}),
    ("print_repr_quotes", "{{ ['it\\'s', 'say \"hi\"', 'both \\' \"', 'tab\\tnl\\n', 'é😀'] }}", {}),
    ("undefined_behaviour", "[{{ missing }}]{{ missing is defined }}{{ missing is undefined }}{{ missing | default('d') }}{{ missing | length }}{{ 'a' in missing }}{{ missing == missing }}{% for x in missing %}never{% else %}empty{% endfor %}{{ missing ~ 'x' }}{{ not missing }}", {}),
    ("missing_attr", "{{ d.nope }}|{{ d['nope'] }}|{{ d.nope is defined }}|{{ l[10] is defined }}|{{ d.get('nope', 'dflt') }}|{{ d.get('k') }}|{{ n.attr }}", {"d": {"k": "v"}, "l": [1], "n": None}),
    ("loop_vars", "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.cycle('a', 'b') }};{% endfor %}", {"xs": ["p", "q", "r"]}),
    ("loop_prev_next", "{% for x in xs %}{{ loop.previtem | default('^') }}{{ x }}{{ loop.nextitem | default('$') }} {% endfor %}", {"xs": [1, 2, 3]}),
    ("for_else", "{% for x in [] %}{{ x }}{% else %}none{% endfor %}{% for x in [1] %}{{ x }}{% else %}none{% endfor %}", {}),
    ("for_filter", "{% for x in xs if x % 2 == 0 %}{{ x }}{{ loop.index }}{{ loop.length }} {% endfor %}", {"xs": [1, 2, 3, 4, 5, 6]}),
    ("for_dict_and_items", "{% for k in d %}{{ k }} {% endfor %}{% for k, v in d.items() %}{{ k }}={{ v }} {% endfor %}{% for k, v in d | items %}{{ k }}:{{ v }} {% endfor %}", {"d": {"z": 1, "a": 2, "m": 3}}),
    ("for_string", "{% for c in 'héllo' %}[{{ c }}]{% endfor %}", {}),
    ("nested_loops", "{% for a in [1, 2] %}{% for b in 'xy' %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}", {}),
    ("set_scoping", "{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = x + 10 %}{{ x }} {% endfor %}{{ x }}{% if true %}{% set x = 5 %}{% endif %}{{ x }}", {}),
    ("namespace", "{% set ns = namespace(count=0, found=false) %}{% for i in range(5) %}{% set ns.count = ns.count + i %}{% if i == 3 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.count }} {{ ns.found }}{% set ns2 = namespace({'a': 1}, b=2) %}{{ ns2.a }}{{ ns2.b }}", {}),
    ("set_tuple_and_block", "{% set a, b = [1, 2] %}{{ a }}{{ b }}{% set body %}  inner {{ a }}  {% endset %}[{{ body }}]{% set up | upper | trim %} shout {% endset %}[{{ up }}]", {}),
    ("break_continue", "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}", {}),
    ("generation_tag", "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}!{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}", {"messages": [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]}),
    ("whitespace_trim_lstrip", "<ul>\n  {% for x in xs %}\n    <li>{{ x }}</li>\n  {% endfor %}\n</ul>\n", {"xs": [1, 2]}),
    ("whitespace_minus", "a  \n  {%- if true -%}  \n  b  \n  {%- endif -%}  \n  c {{- ' d ' -}} e\n{{ 'f' }}  \n  g", {}),
    ("whitespace_plus", "x\n    {%+ if true +%}\n    y\n    {%- endif %}\n  {# comment #}\nz\n  {#- c -#}  w", {}),
    ("whitespace_var_no_trim", "  {{ 'v' }}\n  {{ 'w' }}  \n{% if true %}  t  {% endif %}  \n   {% if true %}\ne{% endif %}", {}),
    ("whitespace_crlf", "line1\r\n  {% if true %}\r\n  yes\r\n  {% endif %}\r\nend\r\n", {}),
    ("raw_block", "{% raw %}{{ not evaluated }} {% if %}{% endraw %}|  {%- raw -%}  x  {%- endraw %}", {}),
    ("comments", "a{# one #}b\n  {# two\n lines #}\nc{#- strip -#}  d", {}),
    ("slicing", "{{ xs[1:] }}{{ xs[:2] }}{{ xs[::-1] }}{{ xs[-2:] }}{{ xs[::2] }}{{ xs[3:0:-1] }}{{ xs[-1] }}{{ s[1:3] }}{{ s[::-1] }}{{ s[-1] }}{{ xs[10:] }}{{ xs[:-10] }}", {"xs": [0, 1, 2, 3, 4], "s": "héllo"}),
    ("reverse_messages", "{% for m in messages[::-1] %}{{ loop.index0 }}{{ m.role }} {% endfor %}", {"messages": [{"role": "a"}, {"role": "b"}, {"role": "c"}]}),
    ("in_not_in", "{{ 'a' in 'cat' }}{{ 'z' not in 'cat' }}{{ 2 in [1, 2] }}{{ 'k' in d }}{{ 'v' in d }}{{ 3 not in [1, 2] }}", {"d": {"k": "v"}}),
    ("tests", "{{ 'x' is string }}{{ 1 is number }}{{ true is number }}{{ 1.5 is float }}{{ 1 is integer }}{{ true is integer }}{{ true is boolean }}{{ d is mapping }}{{ l is mapping }}{{ l is iterable }}{{ 's' is iterable }}{{ 1 is iterable }}{{ l is sequence }}{{ d is sequence }}{{ none is none }}{{ 0 is none }}{{ true is true }}{{ 1 is true }}{{ false is false }}{{ 0 is false }}{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 'ab' is lower }}{{ 'AB' is upper }}{{ 1 is eq 1 }}{{ 2 is gt 1 }}{{ 'a' is in 'cat' }}{{ none is sameas none }}{{ x is not none }}", {"d": {}, "l": [1], "x": 5}),
    ("comparisons", "{{ 1 < 2 }}{{ 2 <= 2 }}{{ 'a' < 'b' }}{{ [1, 2] < [1, 3] }}{{ 1 == 1.0 }}{{ true == 1 }}{{ 'a' != 'b' }}{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}{{ none == none }}{{ [1] == [1] }}{{ {'a': 1} == {'a': 1} }}", {}),
    ("and_or_values", "{{ 0 or 'x' }}|{{ 'a' and 'b' }}|{{ '' and 'b' }}|{{ none or none }}|{{ [] or [1] }}|{{ not '' }}|{{ not 0 and 1 }}", {}),
    ("ternary", "{{ 'yes' if x else 'no' }}|{{ 'yes' if not x else 'no' }}|{{ 'only' if false }}|{{ 1 if x > 3 else 2 if x > 1 else 3 }}", {"x": 2}),
    ("arithmetic", "{{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 1.5 + 1 }} {{ 10 - 2.5 }} {{ -x }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1] + [2] }} {{ 'a' + 'b' }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 4 / 2 }}", {"x": 3}),
    ("concat", "{{ 'a' ~ 1 ~ none ~ true ~ [1] ~ 2.0 }}|{{ x ~ y }}", {"x": "p", "y": 3}),
    ("precedence", "{{ xs | length - 1 }}|{{ -2 ** 2 }}|{{ not 1 == 2 }}|{{ 'a' ~ 'b' | upper }}|{{ 'a' ~ 'b' + 'c' }}|{{ 2 * 3 ** 2 }}", {"xs": [1, 2, 3]}),
    ("filters_strings", "{{ '  pad  ' | trim }}|{{ 'xxhixx' | trim('x') }}|{{ 'Hello' | upper }}{{ 'Hello' | lower }}|{{ 'hello world' | capitalize }}|{{ 'hello big-world' | title }}|{{ 'aXbXc' | replace('X', '-') }}|{{ 'abc' | reverse }}|{{ 42 | string }}{{ 'x' | safe }}|{{ 'héllo' | length }}|{{ 'ÉCOLE' | lower }}{{ 'straße' | upper }}", {}),
    ("filters_lists", "{{ xs | join(', ') }}|{{ xs | first }}|{{ xs | last }}|{{ xs | length }}|{{ xs | count }}|{{ 'abc' | list }}|{{ xs | reverse | list }}|{{ [3, 1, 2] | sort }}|{{ ['b', 'A', 'c'] | sort }}|{{ [1, 2, 1, 3] | unique | list }}|{{ [3, 1, 2] | min }}{{ [3, 1, 2] | max }}{{ [1, 2, 3] | sum }}|{{ [] | first is defined }}|{{ xs | join }}", {"xs": ["a", "b", "c"]}),
    ("filters_numbers", "{{ '42' | int }} {{ '3.9' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ '0x1A' | int(0, 16) }} {{ '2.5' | float }} {{ 'y' | float }} {{ -3 | abs }} {{ true | int }} {{ ' 12 ' | int }}", {}),
    ("filters_default", "{{ x | default('a') }}{{ none | default('b') }}{{ '' | default('c') }}{{ '' | default('d', true) }}{{ 0 | d('e', boolean=true) }}{{ y | default('f') }}", {"y": "set"}),
    ("filters_select_map", "{{ users | selectattr('active') | map(attribute='name') | join(',') }}|{{ users | rejectattr('active') | map(attribute='name') | list }}|{{ users | selectattr('age', 'gt', 30) | map(attribute='name') | list }}|{{ users | map(attribute='nick', default='-') | list }}|{{ [1, 2, 3, 4] | select('odd') | list }}|{{ [1, 0, 2] | select | list }}|{{ ['a', 'b'] | map('upper') | list }}|{{ users | selectattr('name', 'equalto', 'bo') | list | length }}|{{ users | map(attribute='tags.0') | list }}", {"users": [{"name": "al", "active": True, "age": 40, "tags": ["x"]}, {"name": "bo", "active": False, "age": 20, "nick": "b", "tags": ["y"]}]}),
    ("tojson_variants", "{{ d | tojson }}\n{{ d | tojson(indent=2) }}\n{{ d | tojson(sort_keys=true) }}\n{{ d | tojson(separators=(',', ':')) }}\n{{ d | tojson(ensure_ascii=true) }}\n{{ 'a\"b\\\\c\\n\\t\\u0001</script>' | tojson }}\n{{ [] | tojson(indent=2) }}{{ {} | tojson(indent=4) }}\n{{ [1, [2, {}], {'x': []}] | tojson(indent=1) }}\n{{ 1.0 | tojson }} {{ 1e-7 | tojson }} {{ none | tojson }} {{ true | tojson }} {{ 'é😀' | tojson(true) }}", {"d": {"z": 1, "a": [1.5, None, True, "ü"], "m": {"k": "v"}}}),
    ("string_methods", "{{ s.startswith('he') }}{{ s.endswith('lo') }}{{ s.startswith(('x', 'h')) }}|{{ '  x  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\\n\\na\\n'.lstrip('\\n') }}|{{ 'a\\n\\n'.rstrip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}|{{ 'a b c'.rsplit(None, 1) }}|{{ s.replace('l', 'L') }}|{{ s.replace('l', 'L', 1) }}|{{ s.upper() }}{{ 'ABC'.lower() }}|{{ s.count('l') }}|{{ s.find('l') }}{{ s.rfind('l') }}{{ s.find('z') }}|{{ 'hello world'.title() }}|{{ '123'.isdigit() }}{{ 'a1'.isdigit() }}|{{ '-'.join(['a', 'b']) }}|{{ 'a\\nb\\r\\nc'.splitlines() }}|{{ 'prefix_x'.removeprefix('prefix_') }}", {"s": "hello"}),
    ("split_think", "{% set c = m.split('</think>')[-1].lstrip('\\n') %}[{{ c }}]{% set r = m.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}[{{ r }}]", {"m": "<think>\nreason\n</think>\n\nanswer"}),
    ("dict_methods", "{% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}|{{ d.keys() | list }}|{{ d.values() | list }}|{{ d.get('a') }}{{ d.get('zz', 0) }}{{ d.get('zz') }}|{{ d['a'] }}{{ d.a }}", {"d": {"a": 1, "b": 2}}),
    ("string_escapes", "{{ 'tab\\there' }}|{{ \"dq 'single'\" }}|{{ '\\u00e9\\x41\\101' }}|{{ 'unknown \\d escape' }}|{{ 'adjacent' 'strings' }}", {}),
    ("list_dict_literals", "{% set l = [1, 'two', [3]] %}{% set d = {'k': l, 'n': none} %}{{ l[2][0] }}{{ d.k[1] }}{{ d['n'] }}{{ [] }}{{ {} }}{{ [1, 2,] }}", {}),
    ("unicode_strings", "{{ s | length }}|{{ s[0] }}{{ s[-1] }}|{{ s | upper }}|{{ s[::-1] }}|{{ s.split('é') }}", {"s": "é😀中b"}),
    ("print_nested_context", "{{ messages }}|{{ messages[0] }}|{{ messages | length }}", {"messages": [{"role": "user", "content": "hi 'there'"}]}),
    ("raise_exception", "{% if messages[0].role != 'user' %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}ok", {"messages": [{"role": "assistant", "content": "x"}]}),
    ("loop_last_lookahead", "{% for m in messages %}{{ m }}{% if loop.last or messages[loop.index0 + 1] != 'b' %}|{% endif %}{% endfor %}", {"messages": ["a", "b", "b", "c"]}),
    ("is_defined_chains", "{% for m in messages %}{% if m.tool_calls is defined and m.tool_calls %}T{% elif m.content is string %}S{% else %}N{% endif %}{% endfor %}", {"messages": [{"content": "x"}, {"tool_calls": [1]}, {"content": None}, {"tool_calls": []}]}),
    ("range_and_dict", "{{ range(3) | list }}{{ range(1, 7, 2) | list }}{{ range(5, 0, -2) | list }}{{ dict(a=1, b='x') }}", {}),
    ("lazy_generators_are_true", "{% if xs | selectattr('missing') %}gen-true{% endif %}|{{ xs | selectattr('missing') | list | length }}|{% if xs | selectattr('missing') | list %}never{% else %}empty{% endif %}|{{ (xs | map(attribute='a') | first) }}|{{ xs | map(attribute='a') | join }}|{{ [] | reverse | list }}{% if [] | reverse %}rev-true{% endif %}{% if missing | reverse %}u-true{% endif %}", {"xs": [{"a": 1}, {"a": 2}]}),
    ("dict_views", "{{ d.keys() }}|{{ d.values() }}|{{ d.items() }}|{{ d.keys() | list }}|{{ 'a' in d.keys() }}|{{ d.items() | length }}|{{ d.keys() is sequence }}", {"d": {"a": 1, "b": [2]}}),
    ("percent_format", "{{ 'v=%s n=%d %%' % ('x', 3.9) }}|{{ 'plain' % {} }}|{{ '%r' % ('q',) }}|{{ 'x%s' % missing }}|{{ 'one %s' % 1 }}", {}),
    ("title_filter_vs_method", """{{ "hello (big)-world [x] o'neil" | title }}|{{ "hello (big)-world [x] o'neil".title() }}|{{ ['b', 'a'] | title }}""", {}),
    ("float_signed_zero", "{{ 0.0 % -1.5 }} {{ 0.0 // -1.5 }} {{ -0.0 }} {{ 5.0 % -2 }} {{ -5 // 2.0 }} {{ 1 / 3 }} {{ 2 ** 0.5 }} {{ 10 ** 15 }} {{ 1e15 + 0.5 }}", {}),
    ("odd_even_floats", "{{ 3.0 is odd }}{{ 2.5 is odd }}{{ 4.0 is even }}{{ -3 is odd }}{{ 9 is divisibleby 3.0 }}", {}),
    ("delimiters_inside_strings", """{{ '}}' ~ "{%" ~ '{#' }}|{% if '%}' %}yes{% endif %}|{# {{ not a tag }} #}|{{ {'a': {'b': 1}} }}|{{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1_000 }}""", {}),
    ("macros", """{% macro render_args(args, sep=', ', last='.') %}
    {%- for k, v in args.items() %}{{ k }}={{ v | tojson }}{{ sep if not loop.last else last }}{% endfor %}
{%- endmacro %}
{% macro greet(name, greeting='Hello') -%}
    {{ greeting }}, {{ name }}{{ '!' if top is defined }} [{{ render_args({'n': name | default('?')}, last='') }}]
{%- endmacro %}
{% set top = 1 %}
{{ render_args({'a': 1, 'b': 'x'}) }}|{{ greet('Ann') }}|{{ greet(greeting='Hi', name='Bo') }}|{{ greet() }}|{{ render_args({'z': [1]}, ';') | upper }}""", {}),
    ("dictsort_indent_splitlines", """{{ d | dictsort }}|{{ d | dictsort(by='value', reverse=true) }}|{{ d | dictsort(true) }}|{% for k, v in d | dictsort %}{{ k }}{% endfor %}
[{{ text | indent }}]
[{{ text | indent(2, true) }}]
[{{ text | indent('> ', blank=true) }}]
{{ 'a\\x0bb\\x1cc\\u2028d\\r\\ne'.splitlines() }}""", {"d": {"b": 2, "A": 3, "a": 1}, "text": "one\ntwo\n\nthree\n"}),
    ("deferred_generator_errors", """{% if 1 | map('string') %}kept{% endif %}|{{ (5 | select('odd')) is defined }}|{{ 'abc' | items is iterable }}|{{ 0 | map('upper') | list }}""", {}),
    ("print_statement", "{% print 'p' ~ 1 %}|{{ 'a', 'b' }}", {}),
]

ERRORS = [
    ("undefined_attribute_of_undefined", "{{ missing.attr }}", {}),
    ("undefined_plus", "{{ missing + 'x' }}", {}),
    ("type_error_plus", "{{ 'a' + 1 }}", {}),
    ("concat_binds_tighter_than_plus", "{{ 1 + 2 ~ 3 }}", {}),
    ("raise_exception_error", "{{ raise_exception('Bad input: ' ~ x) }}", {"x": 42}),
    ("tojson_undefined", "{{ missing | tojson }}", {}),
    ("for_over_none", "{% for x in none %}{% endfor %}", {}),
    ("assign_non_namespace", "{% set x = 1 %}{% set x.a = 2 %}", {}),
    ("call_undefined", "{{ nothing() }}", {}),
    ("syntax_error_stray_name", "{{ 'o'neil' }}", {}),
    ("generator_has_no_length", "{{ xs | select('odd') | length }}", {"xs": [1, 2]}),
    ("generator_error_when_consumed", "{{ 1 | map('string') | list }}", {}),
    ("mutating_method", "{{ xs.append(1) }}", {"xs": []}),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed expected.json instead of writing it")
    ap.add_argument("--out", default=str(FIXTURES / "expected.json"))
    args = ap.parse_args()

    env = make_env()
    out = {"generator": "tests/llm/chat/gen_expected.py", "jinja2": jinja2.__version__, "templates": [], "snippets": [], "errors": []}
    for name, file in TEMPLATES.items():
        source = (FIXTURES / file).read_text(encoding="utf-8")
        cases = []
        extra = family_conversations() if name in TEMPLATE_CONTEXT else ()
        for case, messages, kwargs in [*conversations(), *extra]:
            ctx = conversation_context(messages, kwargs, name)
            cases.append({"name": case, "context": ctx, **render(env, source, ctx)})
        out["templates"].append({"name": name, "file": file, "cases": cases})
    for name, source, ctx in SNIPPETS:
        out["snippets"].append({"name": name, "template": source, "context": ctx, **render(env, source, ctx)})
    for name, source, ctx in ERRORS:
        r = render(env, source, ctx)
        if "error" not in r:
            sys.exit(f"error case {name!r} rendered without an error: {r['expected']!r}")
        out["errors"].append({"name": name, "template": source, "context": ctx, **r})

    text = json.dumps(out, ensure_ascii=False, indent=1) + "\n"
    path = pathlib.Path(args.out)
    if args.check:
        # Compared without the jinja2 version: another release rendering the same bytes is fine.
        old = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        old.pop("jinja2", None)
        new = dict(out)
        new.pop("jinja2")
        if old != new:
            print(f"{path} is out of date for jinja2 {jinja2.__version__}: rerun {out['generator']}", file=sys.stderr)
            return 1
        print(f"{path} is up to date (jinja2 {jinja2.__version__})")
        return 0
    path.write_text(text, encoding="utf-8")
    n_cases = sum(len(t["cases"]) for t in out["templates"])
    print(f"wrote {path}: {len(out['templates'])} templates x conversations = {n_cases} cases, "
          f"{len(out['snippets'])} snippets, {len(out['errors'])} error cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
