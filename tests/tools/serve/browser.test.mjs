// browser.test.mjs - the chat page of `genesis serve` in headless Chromium (puppeteer-core): the
// API key prompt, a question sent with Enter whose streamed answer equals the API's greedy one, a
// second turn, and Stop ending a stream. GENESIS_SERVE_SCREENSHOT=FILE saves a screenshot there.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { MODEL, skip, startServer, test, run } from './harness.mjs';

let puppeteer;
try {
  puppeteer = (await import('puppeteer-core')).default;
} catch {
  skip('the npm package puppeteer-core is not installed (scripts/setup.sh installs it into tests/tools/serve)');
}
const chromium = [process.env.CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome']
  .find((p) => p && fs.existsSync(p));
if (!chromium) skip('no chromium found (Debian: apt-get install chromium; or set CHROMIUM)');

const KEY = 'page-key';
const MAX = 24;
const server = await startServer(['--api-key', KEY]);
const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});

async function api(messages, extra = {}) {
  const r = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages, max_tokens: MAX, temperature: 0, chat_template_kwargs: { enable_thinking: true }, ...extra }),
  });
  assert.equal(r.status, 200);
  return (await r.json()).choices[0].message.content;
}

// Types `text` into the box, presses Enter and waits for the answer's end; returns its text and stats.
async function ask(page, text) {
  const before = (await page.$$('.msg.assistant')).length;
  await page.type('#input', text);
  await page.keyboard.press('Enter');
  await page.waitForFunction((n) => document.querySelectorAll('.msg.assistant[data-done="1"]').length > n, { timeout: 60000 }, before);
  return page.evaluate(() => {
    const all = document.querySelectorAll('.msg.assistant');
    const last = all[all.length - 1];
    return { text: last.querySelector('.text').textContent, stats: last.querySelector('.stats').textContent };
  });
}

test('the chat page: API key prompt, streamed greedy answers over two turns, Stop', async () => {
  const page = await browser.newPage();
  await page.setViewport({ width: 1100, height: 720 });
  let asked = 0;
  page.on('dialog', async (d) => {
    ++asked;
    await d.accept(KEY);
  });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const r = await page.goto(server.url + '/', { waitUntil: 'load' });
  assert.equal(r.status(), 200);
  await page.waitForFunction(() => (name) => document.getElementById('model').textContent === name, { timeout: 20000 }, MODEL.split('/').filter((x) => x).pop());
  assert.equal(asked, 1, 'the page asks for the API key once');
  await page.$eval('#temperature', (e) => { e.value = '0'; });
  await page.$eval('#max_tokens', (e, v) => { e.value = v; }, String(MAX));

  const q1 = 'What is the capital of France?';
  const a1 = await ask(page, q1);
  const want1 = await api([{ role: 'user', content: q1 }]);
  assert.ok(want1.length > 0);
  assert.equal(a1.text, want1);
  assert.match(a1.stats, new RegExp(`^${MAX} tokens, [0-9.]+ tok/s$`));

  const q2 = 'And of Italy?';
  const a2 = await ask(page, q2);
  const want2 = await api([{ role: 'user', content: q1 }, { role: 'assistant', content: want1 }, { role: 'user', content: q2 }]);
  assert.equal(a2.text, want2);
  // Shift+Enter is a new line, not a send.
  await page.type('#input', 'line one');
  await page.keyboard.down('Shift');
  await page.keyboard.press('Enter');
  await page.keyboard.up('Shift');
  await page.type('#input', 'line two');
  assert.equal(await page.$eval('#input', (e) => e.value), 'line one\nline two');
  assert.equal((await page.$$('.msg.user')).length, 2);
  if (process.env.GENESIS_SERVE_SCREENSHOT) await page.screenshot({ path: process.env.GENESIS_SERVE_SCREENSHOT });

  // Stop: a long answer, stopped once its first words show. The tiny model writes 380 tokens in well under a
  // second on a quiet machine, so the page receives the stream through a throttled connection (about 3 kB/s:
  // a stream of a few tokens a second), which leaves the click time to land mid-stream.
  await page.emulateNetworkConditions({ download: 3000, upload: 1000000, latency: 0 });
  await page.$eval('#input', (e) => { e.value = ''; });
  await page.$eval('#max_tokens', (e) => { e.value = '380'; });
  const before = (await page.$$('.msg.assistant')).length;
  await page.type('#input', 'Tell me a very long story.');
  await page.keyboard.press('Enter');
  await page.waitForFunction((n) => {
    const all = document.querySelectorAll('.msg.assistant');
    return all.length > n && all[all.length - 1].querySelector('.text').textContent.length > 0;
  }, { timeout: 60000 }, before);
  assert.equal(await page.$eval('#stop', (e) => e.disabled), false);
  await page.click('#stop');
  await page.waitForFunction((n) => document.querySelectorAll('.msg.assistant[data-done="1"]').length > n, { timeout: 20000 }, before);
  const stopped = await page.evaluate(() => {
    const all = document.querySelectorAll('.msg.assistant');
    const last = all[all.length - 1];
    return { text: last.querySelector('.text').textContent, stats: last.querySelector('.stats').textContent };
  });
  await page.emulateNetworkConditions(null);
  assert.match(stopped.stats, /\(stopped\)/);
  assert.equal(await page.$eval('#send', (e) => e.disabled), false);
  const full = await api([{ role: 'user', content: q1 }, { role: 'assistant', content: want1 }, { role: 'user', content: q2 },
    { role: 'assistant', content: want2 }, { role: 'user', content: 'Tell me a very long story.' }], { max_tokens: 380, ignore_eos: true });
  assert.ok(stopped.text.length < full.length && full.startsWith(stopped.text), 'the stopped answer is a prefix of the full one');
  // The server cancelled it: nothing runs any more.
  let m = '';
  for (let i = 0; i < 100; ++i) {
    m = await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${KEY}` } }).then((x) => x.text());
    if (/genesis_num_requests_running\{[^}]*\} 0\n/.test(m) && /genesis_kv_cache_blocks_used\{[^}]*\} 0\n/.test(m)) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.match(m, /genesis_kv_cache_blocks_used\{[^}]*\} 0\n/);

  // New chat clears the conversation.
  await page.click('#new');
  assert.equal((await page.$$('.msg')).length, 0);
  assert.deepEqual(errors, []);
});

const rc = await run();
await browser.close();
const stopped = await server.stop();
process.exit(stopped === 0 ? rc : 1);
