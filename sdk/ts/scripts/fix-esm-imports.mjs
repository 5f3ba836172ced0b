// Adds ".js" to relative import specifiers in dist/ that have no extension.
//
// Node's ESM loader needs full file names. Our own sources write them, but protoc-gen-es emits
// extensionless imports unless buf.gen.yaml passes import_extension=js; this pass makes dist/
// loadable either way and is a no-op once the generated code carries the extension.
import { readdir, readFile, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

const dist = resolve(process.argv[2] ?? "dist");
const specifier = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])(\.{1,2}\/[^"']*?)\2/g;

async function* files(dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (/\.(js|d\.ts)$/.test(entry.name)) yield path;
  }
}

let changed = 0;
for await (const file of files(dist)) {
  const text = await readFile(file, "utf8");
  const out = text.replace(specifier, (whole, lead, quote, spec) => {
    if (/\.(m?js|json)$/.test(spec)) return whole;
    const base = resolve(dirname(file), spec);
    if (existsSync(`${base}.js`)) return `${lead}${quote}${spec}.js${quote}`;
    if (existsSync(join(base, "index.js"))) return `${lead}${quote}${spec}/index.js${quote}`;
    return whole;
  });
  if (out !== text) {
    await writeFile(file, out);
    changed++;
  }
}
if (changed > 0) console.log(`fix-esm-imports: added .js to imports in ${changed} files`);
