// The official MCP TypeScript SDK (v2 client, the one the MCP Inspector ships) as a real
// client of the gateway's prompts and completions, in both eras (docs/mcp.md "Prompts and
// completions"). usage: node mcp_prompts_check.mjs CLIENT_MODULE URL
// CLIENT_MODULE is the path of @modelcontextprotocol/client's dist/index.mjs.
// Prints one PASS/FAIL line per check; exits 1 when any check failed.
const [clientModule, url] = process.argv.slice(2);
const { Client, StreamableHTTPClientTransport } = await import(clientModule);

let failed = 0;
function check(name, ok, detail) {
  console.log(`${ok ? "PASS" : "FAIL"} ${name}${ok ? "" : `: ${detail}`}`);
  if (!ok) failed += 1;
}

const PROMPTS = ["find_vehicles", "compare_vehicles", "explain_disclosure", "check_availability"];
const ORG = "org.lakeshore-auto-group";

for (const [era, mode] of [["2026-07-28", { pin: "2026-07-28" }], ["legacy", "legacy"]]) {
  const p = `[ts ${era}]`;
  const client = new Client({ name: "dgw-prompts-check", version: "0" }, { mode });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    check(`${p} connect`, true);
    const caps = client.getServerCapabilities() ?? {};
    check(`${p} server declares prompts and completions`, !!caps.prompts && !!caps.completions, JSON.stringify(caps));
    const list = await client.listPrompts();
    const names = list.prompts.map((x) => x.name);
    check(`${p} prompts/list names the shopping prompts`, PROMPTS.every((n) => names.includes(n)), JSON.stringify(names));
    const got = await client.getPrompt({
      name: "find_vehicles",
      arguments: { organization_id: ORG, request: "a used SUV under 30,000 USD", make: "Hyundai" },
    });
    const text = got.messages.map((m) => m.content.text ?? "").join(" ");
    check(
      `${p} prompts/get find_vehicles writes its arguments into the recipe`,
      text.includes("dealeragent.inventory.search") && text.includes(ORG) && text.includes('["Hyundai"]'),
      text.slice(0, 300),
    );
    let refused = null;
    try {
      await client.getPrompt({ name: "find_vehicles", arguments: { organization_id: ORG } });
    } catch (e) {
      refused = e;
    }
    check(
      `${p} prompts/get without a required argument is -32602 naming it`,
      refused !== null && refused.code === -32602 && String(refused.message).includes("argument request is required"),
      String(refused),
    );
    const orgs = await client.complete({
      ref: { type: "ref/prompt", name: "find_vehicles" },
      argument: { name: "organization_id", value: "org.l" },
    });
    check(`${p} completion/complete organization_id`, JSON.stringify(orgs.completion.values) === JSON.stringify([ORG]), JSON.stringify(orgs));
    const makes = await client.complete({
      ref: { type: "ref/prompt", name: "find_vehicles" },
      argument: { name: "make", value: "" },
      context: { arguments: { organization_id: ORG } },
    });
    check(`${p} completion/complete make lists makes in stock`, makes.completion.values.length > 0, JSON.stringify(makes));
  } catch (e) {
    check(`${p} session`, false, e?.stack ?? String(e));
  } finally {
    await client.close().catch(() => {});
  }
}
console.log(failed === 0 ? "TypeScript SDK prompts check: all passed" : `TypeScript SDK prompts check: ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
