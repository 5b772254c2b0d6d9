// demo.ts: a client of the listing API generated from openapi/openapi.json
// (openapi-typescript for the types, openapi-fetch for the calls) reads a
// list as a client team would. CI compiles it with tsc --strict and runs it
// against golden bodies served by a stand-in fetch (no network): see
// .ci/run. Usage: node generated/out/demo.js PROPERTY_LIST.json AGENT_LIST.json
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

async function main(): Promise<void> {
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
