// tools.test.mjs - `genesis serve` with the official OpenAI Node SDK on what the random test model cannot
// show: tool calls streamed and taken back (a scripted model that answers a tool call to every chat), the
// rendered prompt of a tool round trip against transformers' way of rendering the template (jinja2), an
// engine failure (500, the server keeps serving) and LoRA adapters served beside the base.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { MODEL, skip, generateChat, startServer, metric, test, run } from './harness.mjs';

let OpenAI;
try {
  OpenAI = (await import('openai')).default;
} catch {
  skip('the npm package openai is not installed (scripts/setup.sh installs it into tests/tools/serve)');
}
const SCRIPTED = process.env.GENESIS_SERVE_SCRIPTED_MODEL;
const ADAPTER = process.env.GENESIS_SERVE_ADAPTER;
if (!SCRIPTED || !ADAPTER) {
  console.error('set GENESIS_SERVE_SCRIPTED_MODEL and GENESIS_SERVE_ADAPTER (test model folders); CTest does');
  process.exit(2);
}

// What the scripted model writes (tests/tools/serve/make_model.cpp): some content, then one tool call.
const SCRIPT_CONTENT = 'Let me check.';
const SCRIPT_NAME = 'get_weather';
const SCRIPT_ARGUMENTS = '{"city": "Paris"}';

const TOOLS = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];

// 20 ms after each token: a stream's tokens come one to a chunk, however busy the machine.
const server = await startServer([], { model: SCRIPTED, env: { GENESIS_SERVE_TOKEN_DELAY_MS: '20' } });
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
const model = (await client.models.list()).data[0].id;
const ask = (extra = {}) => ({
  model,
  messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
  tools: TOOLS,
  max_tokens: 64,
  temperature: 0,
  ...extra,
});

// The prompt as transformers renders the template (tests/tools/serve/render_chat.py, jinja2) for messages
// normalised as the server hands them to its template (tool-call arguments as objects).
function jinjaPrompt(messages, tools) {
  const template = JSON.parse(readFileSync(`${SCRIPTED}/tokenizer_config.json`, 'utf8')).chat_template;
  const norm = messages.map((m) => {
    const out = { role: m.role, content: m.content ?? null };
    if (m.tool_calls) {
      out.tool_calls = m.tool_calls.map((c) => ({
        id: c.id,
        type: c.type,
        function: { name: c.function.name, arguments: JSON.parse(c.function.arguments) },
      }));
    }
    if (m.tool_call_id) out.tool_call_id = m.tool_call_id;
    return out;
  });
  const script = new URL('./render_chat.py', import.meta.url).pathname;
  return execFileSync('python3', [script], {
    input: JSON.stringify({ template, messages: norm, tools, add_generation_prompt: true }),
    encoding: 'utf8',
  });
}

async function tokenize(body) {
  const r = await fetch(`${server.url}/tokenize`, { method: 'POST', body: JSON.stringify(body) });
  assert.equal(r.status, 200, await r.clone().text());
  return (await r.json()).tokens;
}

test('the scripted model answers a tool call (not streamed)', async () => {
  const r = await client.chat.completions.create(ask());
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.equal(c.message.content, SCRIPT_CONTENT);
  assert.equal(c.message.tool_calls.length, 1);
  const call = c.message.tool_calls[0];
  assert.match(call.id, /^call_[0-9a-f]{24}$/);
  assert.equal(call.type, 'function');
  assert.deepEqual(call.function, { name: SCRIPT_NAME, arguments: SCRIPT_ARGUMENTS });
  // Without tools the same text is content.
  const plain = await client.chat.completions.create(ask({ tools: undefined }));
  assert.equal(plain.choices[0].message.content, `${SCRIPT_CONTENT}<tool_call>{"name":"get_weather", "arguments": ${SCRIPT_ARGUMENTS}}</tool_call>`);
  assert.equal(plain.choices[0].finish_reason, 'stop');
});

test('a streamed tool call: id, type and name first, then the arguments piece by piece', async () => {
  const stream = await client.chat.completions.create(ask({ stream: true }));
  let content = '';
  const pieces = [];
  let first = null;
  const finish = [];
  for await (const chunk of stream) {
    for (const ch of chunk.choices) {
      content += ch.delta.content ?? '';
      if (ch.finish_reason) finish.push(ch.finish_reason);
      for (const t of ch.delta.tool_calls ?? []) {
        assert.equal(t.index, 0);
        if (first === null) {
          first = t;
          assert.match(t.id, /^call_[0-9a-f]{24}$/);
          assert.equal(t.type, 'function');
          assert.equal(t.function.name, SCRIPT_NAME);
        } else {
          assert.equal(t.id, undefined);
          assert.equal(t.function.name, undefined);
        }
        pieces.push(t.function.arguments);
      }
    }
  }
  assert.ok(first, 'no tool call in the stream');
  assert.equal(content, SCRIPT_CONTENT);
  assert.equal(pieces.join(''), SCRIPT_ARGUMENTS);
  assert.ok(pieces.filter((p) => p !== '').length >= 4, `the arguments came in ${JSON.stringify(pieces)}`);
  assert.deepEqual(finish, ['tool_calls']);
});

test('the SDK stream helpers reassemble the call the non-streamed answer has', async () => {
  const whole = await client.chat.completions.create(ask());
  const deltas = [];
  let done = null;
  const stream = client.chat.completions
    .stream(ask())
    .on('tool_calls.function.arguments.delta', (e) => deltas.push(e))
    .on('tool_calls.function.arguments.done', (e) => (done = e));
  const final = await stream.finalChatCompletion();
  const c = final.choices[0];
  assert.equal(c.finish_reason, whole.choices[0].finish_reason);
  assert.equal(c.message.content, whole.choices[0].message.content);
  assert.equal(c.message.tool_calls.length, 1);
  assert.deepEqual(c.message.tool_calls[0].function, whole.choices[0].message.tool_calls[0].function);
  assert.equal(c.message.tool_calls[0].type, 'function');
  assert.match(c.message.tool_calls[0].id, /^call_[0-9a-f]{24}$/);
  // The name was known while the arguments were still coming.
  assert.ok(deltas.length >= 4);
  assert.equal(deltas[0].name, SCRIPT_NAME);
  assert.ok(deltas[0].arguments.length < SCRIPT_ARGUMENTS.length);
  assert.equal(done.name, SCRIPT_NAME);
  assert.equal(done.arguments, SCRIPT_ARGUMENTS);
});

test('a tool round trip: the tool result goes into the prompt as the template renders it', async () => {
  const messages = [
    { role: 'system', content: 'You answer with tools.' },
    { role: 'user', content: 'What is the weather in Paris?' },
  ];
  const first = await client.chat.completions.create(ask({ messages }));
  assert.equal(first.choices[0].finish_reason, 'tool_calls');
  const call = first.choices[0].message.tool_calls[0];
  const result = JSON.stringify({ temperature: 21, unit: 'celsius', city: JSON.parse(call.function.arguments).city });
  const next = [...messages, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: result }];
  const second = await client.chat.completions.create(ask({ messages: next }));
  assert.ok(['tool_calls', 'stop'].includes(second.choices[0].finish_reason));
  // The server's prompt (POST /tokenize with the chat) is the template as transformers renders it.
  for (const [msgs, usage] of [[messages, first.usage], [next, second.usage]]) {
    const served = await tokenize({ model, messages: msgs, tools: TOOLS });
    const text = jinjaPrompt(msgs, TOOLS);
    assert.deepEqual(served, await tokenize({ prompt: text }), text);
    assert.equal(usage.prompt_tokens, served.length);
  }
  const text = jinjaPrompt(next, TOOLS);
  assert.ok(text.includes(`<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>`), text);
  assert.ok(text.includes(`<|im_start|>user\n<tool_response>\n${result}\n</tool_response><|im_end|>\n<|im_start|>assistant\n`), text);
  assert.ok(second.usage.prompt_tokens > first.usage.prompt_tokens + 30);
});

test('an engine failure is a 500 with the error object; the server keeps serving', async () => {
  // The 2nd and 3rd requests the engine takes fail (the fault injection of the serve backend).
  const s = await startServer([], { env: { GENESIS_SERVE_FAIL_REQUESTS: '2,3' } });
  try {
    const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const body = { model: (await c.models.list()).data[0].id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 8, temperature: 0 };
    const ok = await c.chat.completions.create(body);
    assert.ok(ok.choices[0].message.content.length > 0);
    await assert.rejects(c.chat.completions.create(body), (e) => {
      assert.equal(e.status, 500);
      assert.equal(e.type, 'server_error');
      assert.match(e.message, /the engine failed on this request/);
      return true;
    });
    // Streamed: the failure comes as an error event, which the SDK raises.
    await assert.rejects((async () => {
      for await (const _ of await c.chat.completions.create({ ...body, stream: true }));
    })(), (e) => {
      assert.match(e.message, /the engine failed on this request/);
      return true;
    });
    const again = await c.chat.completions.create(body);
    assert.equal(again.choices[0].message.content, ok.choices[0].message.content);
    const m = await fetch(`${s.url}/metrics`).then((r) => r.text());
    assert.match(m, /genesis_requests_total\{path="\/v1\/chat\/completions",status="500"\} 1\n/);
    assert.equal(metric(m, 'genesis_kv_cache_blocks_used'), 0);
    assert.match(s.log(), /-> 500: the engine failed on this request/);
  } finally {
    assert.equal(await s.stop(), 0);
  }
});

test('--adapter: the base and the adapter are both served, the model field picks', async () => {
  const s = await startServer(['--adapter', ADAPTER, '--adapter', `tuned=${ADAPTER}`]);
  try {
    const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const base = MODEL.split('/').filter((x) => x).pop();
    const name = ADAPTER.split('/').filter((x) => x).pop();
    const list = (await c.models.list()).data;
    assert.deepEqual(list.map((m) => m.id), [base, name, 'tuned']);
    assert.equal(list[0].parent, null);
    assert.equal(list[1].parent, base);
    assert.equal(list[1].root, ADAPTER);
    const prompt = 'Write a haiku about the sea.';
    const want = { base: generateChat(prompt, 16), adapter: generateChat(prompt, 16, ['--adapter', ADAPTER]) };
    assert.notEqual(want.adapter.text, want.base.text, 'the adapter should change the greedy answer');
    const say = async (m, stream = false) => {
      const body = { model: m, messages: [{ role: 'user', content: prompt }], max_tokens: 16, temperature: 0 };
      if (!stream) return (await c.chat.completions.create(body)).choices[0].message.content;
      let text = '';
      for await (const x of await c.chat.completions.create({ ...body, stream: true })) text += x.choices[0]?.delta?.content ?? '';
      return text;
    };
    assert.equal(await say(base), want.base.text);
    assert.equal(await say(name), want.adapter.text);
    assert.equal(await say('tuned', true), want.adapter.text);
    assert.equal(await say(base, true), want.base.text);
    const r = await c.chat.completions.create({ model: name, messages: [{ role: 'user', content: prompt }], max_tokens: 4 });
    assert.equal(r.model, name);
    await assert.rejects(say('other'), (e) => {
      assert.equal(e.status, 404);
      assert.match(e.message, /'other' does not exist.*'tuned'/);
      return true;
    });
  } finally {
    assert.equal(await s.stop(), 0);
  }
});

const rc = await run();
const stopped = await server.stop();
if (stopped !== 0) {
  console.log(`FAIL the server exited ${stopped} on SIGTERM`);
  process.exit(1);
}
process.exit(rc);
