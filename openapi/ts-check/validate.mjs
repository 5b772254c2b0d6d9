// validate.mjs: validates JSON bodies against openapi.json's schemas with
// ajv (JSON Schema 2020-12, the dialect of OpenAPI 3.1), in strict mode so
// that a misspelt keyword in the document fails too.
//   node validate.mjs GOLDEN_DIR [SAMPLE_DIR [BODY_DIR...]]
// GOLDEN_DIR: testdata/golden, each body against the schemas goldens.json
// names. SAMPLE_DIR: files SCHEMA.NAME.json (TestOpenAPISamples in proxy
// writes them: every compatibility switch's shapes), each against SCHEMA.
// BODY_DIR: more API bodies (wire's golden documents, the CRM pass-through
// ones with unknown elements such as videos), each *.json against the
// answer schema of its root key.
// (Strict about keywords and formats, not about required keys named only
// in an allOf branch: PropertyFull adds required keys to Property.)
// A body that a schema wrongly accepts is not caught here; the Go tests pin
// the shapes themselves.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";

const here = new URL(".", import.meta.url).pathname;
const doc = JSON.parse(readFileSync(join(here, "../openapi.json"), "utf8"));
// The schemas as one JSON Schema document: OpenAPI's references to
// #/components/schemas/X become #/$defs/X.
const defs = JSON.parse(JSON.stringify(doc.components.schemas).replaceAll('"#/components/schemas/', '"#/$defs/'));
const ajv = new Ajv2020({ strict: true, strictTypes: false, strictRequired: false, allErrors: true });
ajv.addSchema({ $id: "listing", $defs: defs });
const check = (name) => {
  const v = ajv.getSchema(`listing#/$defs/${name}`);
  if (!v) throw new Error(`no schema ${name} in openapi.json`);
  return v;
};
let failures = 0, checked = 0;
const validate = (file, body, schema) => {
  checked++;
  const v = check(schema);
  if (!v(body)) {
    failures++;
    console.error(`${file}: not a ${schema}:\n${ajv.errorsText(v.errors, { separator: "\n  " })}`);
  }
};
const [goldenDir, sampleDir, ...bodyDirs] = process.argv.slice(2);
if (!goldenDir) throw new Error("usage: node validate.mjs GOLDEN_DIR [SAMPLE_DIR]");
const map = JSON.parse(readFileSync(join(here, "goldens.json"), "utf8"));
for (const [file, want] of Object.entries(map.goldens)) {
  const body = JSON.parse(readFileSync(join(goldenDir, file), "utf8"));
  for (const s of want.schemas) validate(file, body, s);
  if (want.items) {
    const [path, schema] = want.items;
    let items = path.split(".").reduce((o, k) => o[k], body);
    if (!Array.isArray(items)) items = [items];
    if (items.length === 0) throw new Error(`${file}: no items at ${path}`);
    items.forEach((it, i) => validate(`${file} ${path}[${i}]`, it, schema));
  }
}
if (sampleDir) {
  const files = readdirSync(sampleDir).filter((f) => f.endsWith(".json"));
  if (files.length === 0) throw new Error(`no samples in ${sampleDir}`);
  for (const f of files) validate(f, JSON.parse(readFileSync(join(sampleDir, f), "utf8")), f.split(".")[0]);
}
const byRoot = { properties: "PropertyListResponse", agents: "AgentListResponse", errors: "PropertyListResponse", property: "PropertyResponse", agent: "AgentResponse", error: "PropertyResponse" };
for (const dir of bodyDirs) {
  const files = readdirSync(dir).filter((f) => f.endsWith(".json"));
  if (files.length === 0) throw new Error(`no bodies in ${dir}`);
  for (const f of files) {
    const body = JSON.parse(readFileSync(join(dir, f), "utf8"));
    const schema = byRoot[Object.keys(body)[0]];
    if (!schema) {
      failures++;
      console.error(`${join(dir, f)}: root ${Object.keys(body)[0]} is no API answer's`);
      continue;
    }
    validate(join(dir, f), body, schema);
  }
}
console.log(`${checked} validations, ${failures} failed`);
process.exit(failures ? 1 : 0);
