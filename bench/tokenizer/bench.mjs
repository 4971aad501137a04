// bench/tokenizer/bench.mjs - builds a deterministic mixed corpus, encodes it with transformers.js
// (@lenml/tokenizers) and with bench_tokenizer (genesis::Tokenizer), checks that the ids are identical
// and prints MB/s for both.  Called by run.sh:
//   node bench.mjs <@lenml/tokenizers package dir> <bench_tokenizer binary> <work dir> [target MB]
//
// Corpus (documents separated by '\f', one encode() call each):
//   - every text file git tracks in this repository (sources, docs, scripts; fixtures excluded), whole;
//   - documents of 30..90 cases from tests/fixtures/tokenizer/cases.txt (CJK, Japanese, Korean, Arabic,
//     emoji, code, URLs, special tokens, ...), each case perturbed by a seeded generator (case flips,
//     numbers, words of one script shuffled together), until the corpus reaches the target size.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { parseCases } from "../../tests/llm/tokenizer/gen_oracle.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const [pkg, bin, work, targetArg] = process.argv.slice(2);
if (!pkg || !bin || !work) {
  console.error("usage: node bench.mjs <tokenizers package dir> <bench_tokenizer> <work dir> [target MB]");
  process.exit(2);
}
const targetBytes = Number(targetArg ?? 12) * 1e6;
// Cases longer than this are left out of the corpus (default: none; the longest is 1700 bytes).  With
// MAX_CASE_BYTES=200 the very long words, which transformers.js does not cache, are left out.
const maxCaseBytes = Number(process.env.MAX_CASE_BYTES ?? 4000);
const modelDir = path.join(root, "tests/fixtures/tokenizer/qwen3");

// ---- corpus
function xorshift(seed) {
  let s = seed >>> 0;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s / 4294967296;
  };
}

function buildCorpus() {
  const docs = [];
  const files = execFileSync("git", ["ls-files"], { cwd: root, encoding: "utf8" })
    .split("\n")
    .filter((f) => /\.(cpp|h|hpp|c|cu|cuh|py|md|txt|cmake|sh|mjs|json)$/.test(f) && !f.startsWith("tests/fixtures/"))
    .sort();
  for (const f of files) {
    const text = fs.readFileSync(path.join(root, f), "utf8").replaceAll("\f", "");
    if (text.length > 0 && text.length < 2e6) docs.push(text);
  }
  const dec = new TextDecoder("utf-8", { ignoreBOM: true });
  const cases = parseCases(fs.readFileSync(path.join(root, "tests/fixtures/tokenizer/cases.txt"), "utf8"))
    // U+FEFF is dropped: JS's \s counts it as white space, HF's regex engine (and PCRE2) do not, so
    // " \uFEFF" + a letter splits differently (docs/tokenizer.md, "Known differences").
    .map((b) => dec.decode(b).replaceAll("\f", "").replaceAll("\uFEFF", ""))
    .filter((s) => s.length > 0 && Buffer.byteLength(s) <= maxCaseBytes);
  const rand = xorshift(20240611);
  const pick = (a) => a[Math.floor(rand() * a.length)];
  let size = Buffer.byteLength(docs.join("\f"));
  while (size < targetBytes) {
    const parts = [];
    const n = 30 + Math.floor(rand() * 60);
    for (let i = 0; i < n; ++i) {
      let s = pick(cases);
      const r = rand();
      if (r < 0.2) s = s.toUpperCase();
      else if (r < 0.35) s = s.split(" ").sort(() => rand() - 0.5).join(" ");
      else if (r < 0.5) s = s + " " + Math.floor(rand() * 1e9);
      else if (r < 0.6) s = pick(cases).slice(0, 20) + s;
      parts.push(s);
    }
    const doc = parts.join(pick([" ", "\n", "\n\n", ". ", "\t"]));
    docs.push(doc);
    size += Buffer.byteLength(doc) + 1;
  }
  return docs;
}

const docs = buildCorpus();
const corpus = docs.join("\f");
fs.mkdirSync(work, { recursive: true });
const corpusFile = path.join(work, "corpus.txt");
fs.writeFileSync(corpusFile, corpus);
const mb = Buffer.byteLength(corpus) / 1e6;
console.log(`corpus: ${docs.length} documents, ${mb.toFixed(2)} MB (${corpusFile})`);

// ---- genesis (a separate process; the two never run at the same time)
const idsFile = path.join(work, "ids_genesis.bin");
const out = execFileSync(bin, [modelDir, corpusFile, idsFile, "3"], { encoding: "utf8" });
process.stdout.write(out);
const ours = new Int32Array(fs.readFileSync(idsFile).buffer.slice(0));
const oursBest = Number(/best of \d+ passes [\d.]+ s = ([\d.]+) MB\/s/.exec(out)[1]);
const oursCold = Number(/first pass [\d.]+ s = ([\d.]+) MB\/s/.exec(out)[1]);

// ---- transformers.js
const { TokenizerLoader } = await import(pathToFileURL(path.join(pkg, "dist/main.mjs")).href);
let t0 = performance.now();
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(path.join(modelDir, "tokenizer.json"), "utf8")),
  tokenizerConfig: JSON.parse(fs.readFileSync(path.join(modelDir, "tokenizer_config.json"), "utf8")),
});
const jsLoad = (performance.now() - t0) / 1000;
const theirs = [];
let jsCold = 0, jsBest = 1e30;
for (let p = 0; p < 3; ++p) {
  t0 = performance.now();
  for (const d of docs) {
    const ids = tok.encode(d, { add_special_tokens: true });
    if (p === 0) { for (const id of ids) theirs.push(id); theirs.push(-1); }
  }
  const s = (performance.now() - t0) / 1000;
  if (p === 0) jsCold = s;
  jsBest = Math.min(jsBest, s);
}
console.log(`transformers.js: load ${jsLoad.toFixed(2)} s; first pass ${jsCold.toFixed(2)} s = ${(mb / jsCold).toFixed(2)} MB/s; ` +
            `best of 3 passes ${jsBest.toFixed(2)} s = ${(mb / jsBest).toFixed(2)} MB/s`);

// ---- compare
let firstDiff = -1;
for (let i = 0; i < Math.min(ours.length, theirs.length) && firstDiff < 0; ++i) if (ours[i] !== theirs[i]) firstDiff = i;
if (firstDiff < 0 && ours.length !== theirs.length) firstDiff = Math.min(ours.length, theirs.length);
if (firstDiff >= 0) {
  let doc = 0;
  for (let i = 0; i < firstDiff; ++i) doc += theirs[i] === -1;
  fs.writeFileSync(path.join(work, "mismatch.txt"), docs[doc]);
  console.log(`MISMATCH: ids differ at position ${firstDiff}, in document ${doc} (written to ${work}/mismatch.txt); ` +
              `genesis ${ours.length} ids, transformers.js ${theirs.length}`);
  process.exit(1);
}
console.log(`ids identical: ${theirs.length - docs.length} ids in ${docs.length} documents`);
console.log(`speed-up (genesis / transformers.js): first pass ${(oursCold / (mb / jsCold)).toFixed(2)}x, ` +
            `best pass ${(oursBest / (mb / jsBest)).toFixed(2)}x`);
