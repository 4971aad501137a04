// harness.mjs - what the serve tests share: start `genesis serve` on a free port of 127.0.0.1 with
// the test model, run the `genesis` tool, and a tiny test runner (exit 0 all passed, 1 a failure,
// 77 skipped).
import { spawn, execFileSync } from 'node:child_process';

export const CLI = process.env.GENESIS_CLI;
export const MODEL = process.env.GENESIS_SERVE_MODEL;
if (!CLI || !MODEL) {
  console.error('set GENESIS_CLI (the genesis binary) and GENESIS_SERVE_MODEL (a model folder); CTest does');
  process.exit(2);
}

export function skip(why) {
  console.log(`SKIP: ${why}`);
  process.exit(77);
}

// Runs `genesis ARGS...`; returns { stdout, stderr }.
export function genesis(args) {
  const out = execFileSync(CLI, ['--quiet', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return out;
}

// `genesis generate` greedy for a chat prompt: { text, ids, promptTokens }.
export function generateChat(prompt, maxNew, extra = []) {
  const args = ['generate', '--model', MODEL, '--chat', '--prompt', prompt, '--max-new-tokens', String(maxNew), ...extra];
  const text = execFileSync(CLI, ['--quiet', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const r = spawnSyncText(args.concat(['--print-ids']));
  const ids = r.stdout.trim().split(/\s+/).filter((x) => x).map(Number);
  const m = /prefill (\d+) tokens/.exec(r.stderr);
  return { text: text.replace(/\n$/, ''), ids, promptTokens: m ? Number(m[1]) : -1 };
}

import { spawnSync } from 'node:child_process';
export function spawnSyncText(args) {
  const r = spawnSync(CLI, ['--quiet', ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`genesis ${args.join(' ')} failed: ${r.stderr}`);
  return r;
}

// Starts the server (extra flags appended; `model` another model folder, `env` more environment
// variables); resolves to { url, port, proc, log(), stop() } once /health answers 200.
export async function startServer(extra = [], { model = MODEL, env = {} } = {}) {
  // 8192 blocks of the test model: 16 MiB (the cpu default, 512 MiB, takes seconds to allocate).
  const pool = extra.includes('--kv-cache-blocks') ? [] : ['--kv-cache-blocks', '8192'];
  const proc = spawn(CLI, ['serve', '--model', model, '--host', '127.0.0.1', '--port', '0', ...pool, ...extra], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env },
  });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start:\n${log}`)), 60000);
    proc.stderr.on('data', (d) => {
      log += d.toString();
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    proc.on('exit', (code) => reject(new Error(`the server exited (${code}):\n${log}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  let sawLoading = false;  // /health answered 503 while the model loaded
  for (let i = 0; ; ++i) {
    const r = await fetch(`${url}/health`).catch(() => null);
    if (r && r.status === 503) sawLoading = true;
    if (r && r.status === 200) break;
    if (i > 600) throw new Error(`/health never answered 200:\n${log}`);
    await new Promise((res) => setTimeout(res, 100));
  }
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return {
    url,
    port,
    proc,
    log: () => log,
    sawLoading,
    // SIGTERM; resolves to the exit status (the server must exit 0).
    async stop(signal = 'SIGTERM') {
      proc.kill(signal);
      const r = await Promise.race([exited, new Promise((res) => setTimeout(() => res({ code: 'timeout' }), 30000))]);
      return r.code;
    },
  };
}

// The Prometheus text's value of a metric (the first sample of that name).
export function metric(text, name) {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

const tests = [];
export function test(name, fn) {
  tests.push({ name, fn });
}

export async function run() {
  let failed = 0;
  const only = process.env.GENESIS_SERVE_TEST_FILTER;
  for (const t of tests) {
    if (only && !t.name.includes(only)) continue;
    const t0 = Date.now();
    try {
      await t.fn();
      console.log(`PASS ${t.name} (${Date.now() - t0} ms)`);
    } catch (e) {
      ++failed;
      console.log(`FAIL ${t.name}: ${e && e.stack ? e.stack : e}`);
    }
  }
  console.log(failed ? `${failed} of ${tests.length} failed` : `all ${tests.length} passed`);
  return failed ? 1 : 0;
}
