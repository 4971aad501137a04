// api.test.mjs - `genesis serve` driven by the official OpenAI Node SDK (npm `openai`): answers
// equal to `genesis generate`, sampling, stop, logprobs, usage, completions with token ids,
// tokenize, the error paths, concurrency and cancellation of aborted streams.
import assert from 'node:assert/strict';
import { CLI, MODEL, skip, genesis, generateChat, spawnSyncText, startServer, metric, test, run } from './harness.mjs';

let OpenAI;
try {
  OpenAI = (await import('openai')).default;
} catch {
  skip('the npm package openai is not installed (scripts/setup.sh installs it into tests/tools/serve)');
}

const PROMPTS = ['What is the capital of France?', 'hi', 'Write a haiku about the sea.', 'Count: 1, 2, 3'];
const MAX = 24;
const server = await startServer(['--max-body-bytes', '65536']);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
const model = (await client.models.list()).data[0].id;
const greedy = Object.fromEntries(PROMPTS.map((p) => [p, generateChat(p, MAX)]));

async function chat(prompt, extra = {}) {
  return client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: prompt }],
    max_tokens: MAX,
    temperature: 0,
    ...extra,
  });
}

// The content, finish reasons and usage of a streamed chat.
async function streamed(prompt, extra = {}) {
  const stream = await chat(prompt, { stream: true, stream_options: { include_usage: true }, ...extra });
  const content = {};
  const finish = {};
  let usage = null;
  let chunks = 0;
  for await (const c of stream) {
    ++chunks;
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) {
      content[ch.index] = (content[ch.index] ?? '') + (ch.delta.content ?? '');
      if (ch.finish_reason) finish[ch.index] = ch.finish_reason;
    }
  }
  return { content, finish, usage, chunks };
}

test('models lists the served model', async () => {
  const list = await client.models.list();
  assert.equal(list.data.length, 1);
  assert.equal(list.data[0].id, MODEL.split('/').filter((x) => x).pop());
});

test('chat (not streamed) equals genesis generate greedy', async () => {
  for (const p of PROMPTS) {
    const r = await chat(p);
    const g = greedy[p];
    assert.ok(g.text.length > 0);
    assert.equal(r.choices[0].message.content, g.text, p);
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(r.choices[0].finish_reason, g.ids.length === MAX ? 'length' : 'stop');
    assert.equal(r.usage.prompt_tokens, g.promptTokens);
    assert.equal(r.usage.completion_tokens, g.ids.length);
    assert.equal(r.usage.total_tokens, g.promptTokens + g.ids.length);
    assert.equal(r.object, 'chat.completion');
    assert.match(r.system_fingerprint, /^fp_genesis_/);
  }
});

test('chat streamed equals genesis generate greedy, with usage last', async () => {
  for (const p of PROMPTS) {
    const s = await streamed(p);
    assert.equal(s.content[0], greedy[p].text, p);
    assert.ok(s.chunks >= 3);
    assert.equal(s.usage.completion_tokens, greedy[p].ids.length);
    assert.equal(s.usage.prompt_tokens, greedy[p].promptTokens);
    assert.equal(s.finish[0], greedy[p].ids.length === MAX ? 'length' : 'stop');
  }
});

test('stream chunks are whole UTF-8 (no replacement characters)', async () => {
  const stream = await chat(PROMPTS[0], { stream: true, max_tokens: 64 });
  let text = '';
  for await (const c of stream) {
    const piece = c.choices[0]?.delta?.content ?? '';
    assert.ok(!piece.includes('\uFFFD'), `a chunk split a character: ${JSON.stringify(piece)}`);
    text += piece;
  }
  assert.ok(/[^\x00-\x7f]/.test(text), 'the test model should write multi-byte characters');
});

test('n = 3 with a seed: three choices, the same again with the same seed', async () => {
  const ask = (seed) => chat(PROMPTS[0], { n: 3, seed, temperature: 1.0, max_tokens: 12 });
  const a = await ask(7);
  const b = await ask(7);
  assert.equal(a.choices.length, 3);
  assert.deepEqual(a.choices.map((c) => c.index), [0, 1, 2]);
  assert.deepEqual(a.choices.map((c) => c.message.content), b.choices.map((c) => c.message.content));
  const distinct = new Set(a.choices.map((c) => c.message.content));
  assert.ok(distinct.size > 1, 'three samples at temperature 1 should differ');
  const c = await ask(8);
  assert.notDeepEqual(a.choices.map((x) => x.message.content), c.choices.map((x) => x.message.content));
  assert.ok(a.usage.completion_tokens <= 3 * 12);
  if (a.choices.every((x) => x.finish_reason === 'length')) assert.equal(a.usage.completion_tokens, 3 * 12);
});

test('stop: the text ends before the stop string, finish_reason stop (streamed too)', async () => {
  const full = greedy[PROMPTS[0]].text;
  const chars = [...full];
  const stop = chars.slice(6, 8).join('');
  const want = full.slice(0, full.indexOf(stop));
  const r = await chat(PROMPTS[0], { stop: [stop] });
  assert.equal(r.choices[0].message.content, want);
  assert.equal(r.choices[0].finish_reason, 'stop');
  const s = await streamed(PROMPTS[0], { stop });
  assert.equal(s.content[0], want);
  assert.equal(s.finish[0], 'stop');
});

test('logprobs: the chosen token is the top one under greedy, top_logprobs sorted', async () => {
  const r = await chat(PROMPTS[1], { logprobs: true, top_logprobs: 3 });
  const lp = r.choices[0].logprobs.content;
  assert.equal(lp.length, r.usage.completion_tokens);
  for (const e of lp) {
    assert.ok(e.logprob <= 0);
    assert.equal(e.top_logprobs.length, 3);
    assert.equal(e.top_logprobs[0].logprob, e.logprob);
    assert.equal(e.top_logprobs[0].token, e.token);
    for (let i = 1; i < 3; ++i) assert.ok(e.top_logprobs[i].logprob <= e.top_logprobs[i - 1].logprob);
    if (!e.token.includes('\uFFFD')) assert.equal(Buffer.from(e.bytes).toString('utf8'), e.token);
  }
  // The tokens' bytes spell the greedy answer.
  const spelled = Buffer.concat(lp.map((e) => Buffer.from(e.bytes))).toString('utf8');
  assert.ok(spelled.startsWith(greedy[PROMPTS[1]].text), spelled);
  assert.equal(r.choices[0].message.content, greedy[PROMPTS[1]].text);
});

test('completions with token ids equal genesis generate --prompt-ids', async () => {
  const ids = genesis(['tokenize', '--model', MODEL, '--text', 'The quick brown fox']).trim().split(/\s+/).map(Number);
  const r = await client.completions.create({ model, prompt: ids, max_tokens: 16, temperature: 0 });
  const want = spawnSyncText(['generate', '--model', MODEL, '--prompt-ids', ids.join(','), '--max-new-tokens', '16']).stdout;
  assert.equal(r.choices[0].text, want.replace(/\n$/, ''));
  assert.equal(r.usage.prompt_tokens, ids.length);
  assert.equal(r.object, 'text_completion');
  const t = await client.completions.create({ model, prompt: 'The quick brown fox', max_tokens: 16, temperature: 0 });
  assert.equal(t.choices[0].text, r.choices[0].text);
  const s = await client.completions.create({ model, prompt: ids, max_tokens: 16, temperature: 0, stream: true });
  let text = '';
  for await (const c of s) text += c.choices[0]?.text ?? '';
  assert.equal(text, r.choices[0].text);
});

test('/tokenize equals genesis tokenize; /detokenize inverts it', async () => {
  const text = 'Hello, wörld! 你好 <|im_start|>';
  const want = genesis(['tokenize', '--model', MODEL, '--text', text]).trim().split(/\s+/).map(Number);
  const r = await fetch(`${server.url}/tokenize`, { method: 'POST', body: JSON.stringify({ prompt: text }) });
  assert.equal(r.status, 200);
  const j = await r.json();
  assert.deepEqual(j.tokens, want);
  assert.equal(j.count, want.length);
  const d = await fetch(`${server.url}/detokenize`, { method: 'POST', body: JSON.stringify({ tokens: want }) });
  assert.equal((await d.json()).prompt, text);
});

test('400 names the field: wrong types, bad ranges, unsupported penalties', async () => {
  const cases = [
    [{ temperature: 'hot' }, 'temperature'],
    [{ temperature: 3 }, 'temperature'],
    [{ max_tokens: 0 }, 'max_tokens'],
    [{ n: 'two' }, 'n'],
    [{ top_p: 1.5 }, 'top_p'],
    [{ presence_penalty: 0.5 }, 'presence_penalty'],
    [{ stop: 5 }, 'stop'],
    [{ messages: [{ role: 'wizard', content: 'x' }] }, 'messages[0].role'],
    [{ messages: 'hi' }, 'messages'],
  ];
  for (const [extra, param] of cases) {
    await assert.rejects(chat('hi', extra), (e) => {
      assert.equal(e.status, 400, JSON.stringify(extra));
      assert.equal(e.param, param);
      assert.equal(e.type, 'invalid_request_error');
      assert.ok(e.message.includes(param.split('[')[0]), e.message);
      return true;
    });
  }
  const bad = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: '{"messages": [' });
  assert.equal(bad.status, 400);
  assert.match((await bad.json()).error.message, /not valid JSON/);
});

test('400 for a prompt longer than the context names both lengths', async () => {
  const long = 'word '.repeat(700);
  await assert.rejects(chat(long), (e) => {
    assert.equal(e.status, 400);
    assert.match(e.message, /maximum context length is 512 tokens/);
    assert.match(e.message, /resulted in \d{3,} tokens/);
    return true;
  });
  await assert.rejects(chat('hi', { max_tokens: 600 }), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.param, 'max_tokens');
    assert.match(e.message, /512 tokens.*\d+ in the messages, 600 in the completion/);
    return true;
  });
});

test('404 for an unknown model, 413 for a body over the limit', async () => {
  await assert.rejects(chat('hi', { model: 'gpt-17' }), (e) => {
    assert.equal(e.status, 404);
    assert.match(e.message, /gpt-17/);
    return true;
  });
  await assert.rejects(chat('x'.repeat(70000)), (e) => {
    assert.equal(e.status, 413);
    assert.equal(e.type, 'invalid_request_error');
    return true;
  });
  const ok = await chat('hi');
  assert.equal(ok.choices[0].message.content, greedy.hi.text);
});

test('401 without the API key (every endpoint but /health and the page)', async () => {
  const s = await startServer(['--api-key', 'sekrit']);
  try {
    const bad = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(bad.models.list(), (e) => e.status === 401 && e.type === 'authentication_error');
    await assert.rejects(
      bad.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }),
      (e) => e.status === 401,
    );
    for (const path of ['/metrics', '/tokenize']) {
      const r = await fetch(`${s.url}${path}`, { method: path === '/metrics' ? 'GET' : 'POST', body: path === '/metrics' ? undefined : '{}' });
      assert.equal(r.status, 401, path);
    }
    assert.equal((await fetch(`${s.url}/health`)).status, 200);
    assert.equal((await fetch(`${s.url}/`)).status, 200);
    const good = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'sekrit', maxRetries: 0 });
    const r = await good.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: MAX, temperature: 0 });
    assert.equal(r.choices[0].message.content, greedy.hi.text);
  } finally {
    assert.equal(await s.stop(), 0);
  }
});

test('429 with Retry-After when the queue is full', async () => {
  const s = await startServer(['--max-waiting', '0']);
  try {
    const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'x', maxRetries: 0 });
    await assert.rejects(c.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }), (e) => {
      assert.equal(e.status, 429);
      assert.equal(e.type, 'rate_limit_error');
      assert.equal(e.headers.get('retry-after'), '1');
      return true;
    });
    const m = await fetch(`${s.url}/metrics`).then((r) => r.text());
    assert.match(m, /genesis_requests_total\{path="\/v1\/chat\/completions",status="429"\} 1/);
  } finally {
    assert.equal(await s.stop(), 0);
  }
});

test('tools go into the template; tool results continue the conversation', async () => {
  const tools = [{
    type: 'function',
    function: { name: 'get_weather', description: 'The weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  }];
  const plain = await chat('Weather in Paris?');
  const withTools = await chat('Weather in Paris?', { tools });
  assert.ok(withTools.usage.prompt_tokens > plain.usage.prompt_tokens + 20);
  const none = await chat('Weather in Paris?', { tools, tool_choice: 'none' });
  assert.equal(none.usage.prompt_tokens, plain.usage.prompt_tokens);
  // The random test model writes no valid call: a forced call falls back to plain content, never a 500.
  const forced = await chat('Weather in Paris?', { tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } });
  assert.ok(['stop', 'length', 'tool_calls'].includes(forced.choices[0].finish_reason));
  const messages = [
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' },
  ];
  const r = await client.chat.completions.create({ model, messages, tools, max_tokens: 8, temperature: 0 });
  assert.ok(r.usage.prompt_tokens > withTools.usage.prompt_tokens);
  const tok = await fetch(`${server.url}/tokenize`, { method: 'POST', body: JSON.stringify({ prompt: '{"city": "Paris"}' }) }).then((x) => x.json());
  assert.ok(tok.count > 0);
});

test('text-part content and chat_template_kwargs', async () => {
  const a = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'What is the capital ' }, { type: 'text', text: 'of France?' }] }],
    max_tokens: MAX,
    temperature: 0,
  });
  assert.equal(a.choices[0].message.content, greedy[PROMPTS[0]].text);
  // Qwen3's template with enable_thinking false adds an empty think block to the prompt.
  const think = await fetch(`${server.url}/tokenize`, {
    method: 'POST',
    body: JSON.stringify({ prompt: '<think>\n\n</think>\n\n' }),
  }).then((x) => x.json());
  const b = await chat(PROMPTS[1], { chat_template_kwargs: { enable_thinking: false } });
  assert.equal(b.usage.prompt_tokens, greedy[PROMPTS[1]].promptTokens + think.count);
  assert.equal(b.choices[0].finish_reason, 'length');
});

test('32 concurrent streamed clients all get the greedy answer', async () => {
  const jobs = [];
  for (let i = 0; i < 32; ++i) {
    const p = PROMPTS[i % PROMPTS.length];
    jobs.push(streamed(p).then((s) => [p, s]));
  }
  for (const [p, s] of await Promise.all(jobs)) {
    assert.equal(s.content[0], greedy[p].text, p);
    assert.equal(s.usage.completion_tokens, greedy[p].ids.length);
  }
});

test('100 clients aborting mid-stream are cancelled: 0 KV blocks in use after', async () => {
  const before = await fetch(`${server.url}/metrics`).then((r) => r.text());
  const generatedBefore = metric(before, 'genesis_generation_tokens_total');
  const jobs = [];
  for (let i = 0; i < 100; ++i) {
    jobs.push((async () => {
      const stream = await chat(PROMPTS[i % PROMPTS.length], { stream: true, max_tokens: 400, ignore_eos: true });
      let got = 0;
      for await (const c of stream) {
        if ((c.choices[0]?.delta?.content ?? '') !== '' && ++got >= 2) break;  // break: the SDK aborts the request
      }
    })());
  }
  await Promise.all(jobs);
  let m = '';
  for (let i = 0; i < 200; ++i) {
    m = await fetch(`${server.url}/metrics`).then((r) => r.text());
    if (metric(m, 'genesis_kv_cache_blocks_used') === 0 && metric(m, 'genesis_num_requests_running') === 0 &&
        metric(m, 'genesis_num_requests_waiting') === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(metric(m, 'genesis_kv_cache_blocks_used'), 0);
  assert.equal(metric(m, 'genesis_num_requests_running'), 0);
  assert.equal(metric(m, 'genesis_num_requests_waiting'), 0);
  // Cancelled, not run to the end: far fewer than 100 x 400 tokens were generated.
  const generated = metric(m, 'genesis_generation_tokens_total') - generatedBefore;
  assert.ok(generated < 100 * 40, `generated ${generated} tokens`);
  const r = await chat('hi');
  assert.equal(r.choices[0].message.content, greedy.hi.text);
});

test('RSS stays flat over 2,000 requests', async () => {
  // A pool of 256 blocks (the warm-up has written every one of them: a pool's pages count once touched).
  const s = await startServer(['--kv-cache-blocks', '256']);
  try {
    const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const fs = await import('node:fs');
    const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${s.proc.pid}/status`, 'utf8'))[1]);
    const one = async (p, stream) => {
      const body = { model, messages: [{ role: 'user', content: p }], max_tokens: 3, temperature: 0 };
      if (!stream) return (await c.chat.completions.create(body)).choices[0].message.content;
      let text = '';
      for await (const x of await c.chat.completions.create({ ...body, stream: true })) text += x.choices[0]?.delta?.content ?? '';
      return text;
    };
    const batch = async (count) => {
      for (let i = 0; i < count; i += 8) {
        const jobs = [];
        for (let k = 0; k < 8; ++k) jobs.push(one(PROMPTS[(i + k) % PROMPTS.length] + ' #' + (i + k), (i + k) % 2 === 1));
        await Promise.all(jobs);
      }
    };
    await batch(2000);  // warm-up: thread stacks, the allocator's arenas (one per busy thread), the KV pool
    const before = rss();
    await batch(2000);
    const after = rss();
    console.log(`  RSS ${(before / 1024).toFixed(1)} MiB -> ${(after / 1024).toFixed(1)} MiB over 2000 requests`);
    assert.ok(after - before < 6 * 1024, `RSS grew by ${after - before} kB over 2000 requests`);
  } finally {
    assert.equal(await s.stop(), 0);
  }
});

test('/metrics: Prometheus text with the counters and histograms', async () => {
  const m = await fetch(`${server.url}/metrics`).then((r) => r.text());
  for (const name of ['genesis_num_requests_running', 'genesis_num_requests_waiting', 'genesis_kv_cache_blocks_used',
    'genesis_kv_cache_blocks_free', 'genesis_prefix_cache_hit_rate', 'genesis_prompt_tokens_total',
    'genesis_generation_tokens_total', 'genesis_time_to_first_token_seconds_count', 'genesis_inter_token_latency_seconds_count'])
    assert.ok(!Number.isNaN(metric(m, name)), name);
  assert.ok(metric(m, 'genesis_time_to_first_token_seconds_count') > 100);
  assert.match(m, /genesis_requests_total\{path="\/v1\/chat\/completions",status="200"\} \d+/);
  assert.match(m, /genesis_requests_total\{path="\/v1\/chat\/completions",status="400"\} \d+/);
});

test('/health is 503 while the model loads, then 200', async () => {
  // The tokenizer and the cpu default pool of 512 MiB take a while to load; the port is open from the start.
  const s = await startServer(['--kv-cache-blocks', '0']);
  try {
    assert.ok(s.sawLoading, '/health never said 503 while loading');
    assert.equal((await fetch(`${s.url}/health`)).status, 200);
  } finally {
    assert.equal(await s.stop(), 0);
  }
});

test('SIGTERM: the server stops and exits 0', async () => {
  const s = await startServer();
  const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'x', maxRetries: 0 });
  const stream = await c.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 400, ignore_eos: true, stream: true });
  const reading = (async () => { for await (const _ of stream); })().catch(() => {});
  assert.equal(await s.stop('SIGTERM'), 0);
  await reading;
  const s2 = await startServer();
  assert.equal(await s2.stop('SIGINT'), 0);
});

const rc = await run();
const stopped = await server.stop();
if (stopped !== 0) {
  console.log(`FAIL the server exited ${stopped} on SIGTERM`);
  process.exit(1);
}
process.exit(rc);
