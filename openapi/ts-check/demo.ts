// demo.ts: a client of the listing API generated from openapi/openapi.json
// (openapi-typescript for the types, openapi-fetch for the calls) reads a
// list as a client team would. CI (check.sh) compiles it with tsc --strict
// and runs it on golden bodies served by a stand-in fetch, then against a
// running listingproxy with the embedded demo data.
// Usage: node generated/out/demo.js PROPERTY_LIST.json AGENT_LIST.json
//        node generated/out/demo.js --live http://127.0.0.1:8080
import { readFileSync } from "node:fs";
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/listing-api.js";

type Property = components["schemas"]["Property"];
type Agent = components["schemas"]["Agent"];
type FieldError = components["schemas"]["FieldError"];

// The compatibility switches json_single_object(_items) make a collection of
// one item an object: the schema says T[] | T, and so does the client.
function asArray<T>(x: T | T[] | undefined): T[] {
  if (x === undefined) return [];
  return Array.isArray(x) ? x : [x];
}

// json_numeric_ids makes ids numbers: the schema says string | number.
function idOf(x: { id: string | number }): string {
  return String(x.id);
}

function describeErrors(errors: FieldError | FieldError[]): string[] {
  return asArray(errors).map((e) => `error on ${e.field}: ${e.message}`);
}

function describeProperty(p: Property): string {
  const photos = asArray(p.photos.photo).map((ph) => ph.url);
  const agents = asArray(p.agents.agent).map((a) => `${a.name} (#${idOf(a)})`);
  const price = p.price ?? "(short detail)";
  return `#${idOf(p)} ${p.agency_id} ${p.status} ${p.address.display === "true" ? p.address.address : "(address withheld)"}: ${price}; ${p.photos.count} photos (${photos.length} listed); agents ${agents.join(", ")}`;
}

function describeAgent(a: Agent): string {
  const props = asArray(a.properties.property).map((p) => p.agency_id);
  return `#${idOf(a)} ${a.name}${a.email !== undefined ? " <" + a.email + ">" : ""}: ${a.properties.count} current properties ${props.join(" ")}`;
}

// A fetch that answers every request with the body of a file, and records
// the URL the client asked for.
function standIn(file: string, asked: string[]): typeof fetch {
  return async (input: RequestInfo | URL): Promise<Response> => {
    asked.push(input instanceof Request ? input.url : String(input));
    return new Response(readFileSync(file), { status: 200, headers: { "Content-Type": "application/json; charset=utf-8" } });
  };
}

// live reads lists, single resources and the errors sent with HTTP 200
// from a running listingproxy (the demo configuration's user harbour), and
// checks what it reads.
async function live(baseUrl: string): Promise<string[]> {
  const lines: string[] = [];
  const fail = (msg: string): never => {
    throw new Error(`${baseUrl}: ${msg}`);
  };
  const auth = "Basic " + Buffer.from("harbour:harbour-demo").toString("base64");
  const api = createClient<paths>({ baseUrl, headers: { Authorization: auth } });

  const pl = await api.GET("/{country}/properties.json", {
    params: { path: { country: "au" }, query: { "status[]": ["current", "contract"], detail: "full", limit: 5, order: ["price"] } },
  });
  if (pl.data === undefined || "errors" in pl.data) return fail(`property list: HTTP ${pl.response.status} ${JSON.stringify(pl.data ?? pl.error)}`);
  const props = asArray(pl.data.properties.property);
  if (props.length !== 5 || Number(pl.data.properties.count) !== 5) fail(`property list: ${props.length} items, count ${pl.data.properties.count}`);
  for (const p of props) {
    if (p.status !== "CURRENT" && p.status !== "CONTRACT") fail(`property ${idOf(p)}: status ${p.status}`);
    if (p.price === undefined || p.openhomes === undefined) fail(`property ${idOf(p)}: not in full detail`);
  }
  lines.push(...props.map(describeProperty));

  const first = props[0] ?? fail("no property");
  const one = await api.GET("/{country}/properties/{id}.json", { params: { path: { country: "au", id: Number(idOf(first)) } } });
  if (one.data === undefined || "error" in one.data) return fail(`property ${idOf(first)}: ${JSON.stringify(one.data ?? one.error)}`);
  if (idOf(one.data.property) !== idOf(first)) fail(`property ${idOf(first)}: got ${idOf(one.data.property)}`);
  lines.push("single: " + describeProperty(one.data.property));

  // Errors come with HTTP 200: the body's root key tells them apart.
  const bad = await api.GET("/{country}/properties.json", { params: { path: { country: "au" }, query: { approved_from: "2024-01-01", bedrooms: 5000 } } });
  if (bad.response.status !== 200 || bad.data === undefined || !("errors" in bad.data)) return fail(`bad criteria: HTTP ${bad.response.status} ${JSON.stringify(bad.data)}`);
  const errs = asArray(bad.data.errors.error);
  if (errs.map((e) => e.field).join(",") !== "bedrooms,approved_from") fail(`bad criteria: ${JSON.stringify(errs)}`);
  lines.push(...describeErrors(bad.data.errors.error));
  const missing = await api.GET("/{country}/agents/{id}.json", { params: { path: { country: "au", id: 999999999 } } });
  if (missing.response.status !== 200 || missing.data === undefined || !("error" in missing.data)) return fail(`missing agent: HTTP ${missing.response.status}`);
  lines.push("missing agent: " + missing.data.error);

  const al = await api.GET("/{country}/agents.json", { params: { path: { country: "au" }, query: { detail: "full", limit: 2, order: "name" } } });
  if (al.data === undefined || "errors" in al.data) return fail(`agent list: HTTP ${al.response.status}`);
  const agents = asArray(al.data.agents.agent);
  if (agents.length !== 2 || agents.some((a) => a.email === undefined)) fail(`agent list: ${JSON.stringify(al.data)}`);
  lines.push(...agents.map(describeAgent));

  // Without credentials: 401 and the single error, typed by the document.
  const anon = await createClient<paths>({ baseUrl }).GET("/{country}/agents.json", { params: { path: { country: "au" } } });
  if (anon.response.status !== 401 || anon.response.headers.get("WWW-Authenticate") === null || anon.error?.error === undefined) {
    fail(`anonymous: HTTP ${anon.response.status}`);
  }
  lines.push(`anonymous: ${anon.response.status} ${anon.error?.error}`);

  // The document it serves is the repository's.
  const doc = await createClient<paths>({ baseUrl }).GET("/openapi.json", {});
  if (JSON.stringify(doc.data) !== JSON.stringify(JSON.parse(readFileSync("../openapi.json", "utf8")))) fail("/openapi.json differs from openapi/openapi.json");
  lines.push(`/openapi.json: ETag ${doc.response.headers.get("ETag")}`);
  return lines;
}

async function main(): Promise<void> {
  if (process.argv[2] === "--live") {
    const url = process.argv[3] ?? "";
    if (url === "") throw new Error("usage: demo.js --live URL");
    console.log((await live(url)).join("\n"));
    return;
  }
  const [propertyFile, agentFile] = process.argv.slice(2);
  if (propertyFile === undefined || agentFile === undefined) {
    throw new Error("usage: demo.js PROPERTY_LIST.json AGENT_LIST.json");
  }
  const asked: string[] = [];

  const props = createClient<paths>({ baseUrl: "https://listings.example", fetch: standIn(propertyFile, asked) });
  const pl = await props.GET("/{country}/properties.json", {
    params: { path: { country: "au" }, query: { "status[]": ["current", "contract"], detail: "full", limit: 10 } },
  });
  if (pl.error !== undefined || pl.data === undefined) throw new Error(`properties: HTTP ${pl.response.status}`);
  const body = pl.data;
  // Criteria errors come with HTTP 200: the root key tells them apart.
  const lines = "errors" in body ? describeErrors(body.errors.error) : asArray(body.properties.property).map(describeProperty);
  if (!("errors" in body) && Number(body.properties.count) !== asArray(body.properties.property).length) {
    throw new Error("properties: count differs from the items");
  }

  const agents = createClient<paths>({ baseUrl: "https://listings.example", fetch: standIn(agentFile, asked) });
  const al = await agents.GET("/{country}/agents.json", { params: { path: { country: "nz" }, query: { name: "smith", order: "name" } } });
  if (al.error !== undefined || al.data === undefined) throw new Error(`agents: HTTP ${al.response.status}`);
  const ab = al.data;
  lines.push(...("errors" in ab ? describeErrors(ab.errors.error) : asArray(ab.agents.agent).map(describeAgent)));

  const want = ["https://listings.example/au/properties.json?", "https://listings.example/nz/agents.json?"];
  asked.forEach((u, i) => {
    if (!u.startsWith(want[i] ?? "-")) throw new Error(`request ${i}: asked ${u}, want ${want[i]}...`);
  });
  console.log(asked.join("\n"));
  console.log(lines.join("\n"));
  if (lines.length === 0) throw new Error("nothing read");
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
