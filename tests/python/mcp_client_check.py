"""Drive the gateway with the official MCP Python SDK (mcp 2.3.0) as a real client.

usage: python mcp_client_check.py URL [--mode 2026-07-28|legacy|auto]... [--wire] [--bearer TOKEN]

For each mode (default: 2026-07-28, legacy, and auto, which must pick 2026-07-28) it lists tools, calls the manifest
tool, looks up the first organization with dealeragent.dealer.get, lists and reads the
manifest resource, and sends invalid arguments. Each check prints one PASS/FAIL line;
the exit status is non-zero when any check failed. The SDK validates every result
against the negotiated revision's schema and every structuredContent against the
tool's outputSchema, so a malformed answer surfaces as a FAIL with the SDK's message.

With --bearer TOKEN every request carries `Authorization: Bearer TOKEN` (set on the httpx
client the SDK uses), and each mode also checks a protected call: a search of the
partner-only demo rooftop (PROTECTED_ORG / PROTECTED_ROOFTOP) succeeds with vehicles, while
the same call from a client without the token is isError dealeragent.resource.not_found.
The token must grant that rooftop and dealeragent:inventory:read.

Run it from a scratch directory (not from inside site-packages): the `mcp/types`
package would otherwise shadow the standard library's `types`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import traceback
import urllib.parse
import warnings
from typing import Any

import httpx2
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import PromptReference, ResourceTemplateReference

MANIFEST_TOOL = "dealeragent.discovery.get_manifest"
DEALER_TOOL = "dealeragent.dealer.get"
MANIFEST_URI = "dealeragent://manifest"
REQUIRED_TOOLS = {MANIFEST_TOOL, DEALER_TOOL}
# Fields of the manifest that identify the same authoritative object in the tool result
# and the resource (DAP-CORE-006); issued_at/expires_at may differ between two reads.
STABLE_MANIFEST_FIELDS = ("gateway_id", "organization_ids", "rooftop_ids", "capabilities")
VALIDATION_ERROR_CODE = "dealeragent.validation.invalid"
NOT_FOUND_CODE = "dealeragent.resource.not_found"
SEARCH_TOOL = "dealeragent.inventory.search"
PROMPTS = ("find_vehicles", "compare_vehicles", "explain_disclosure", "check_availability")
# The demo's partner-only rooftop (anonymous_reads: false in demo/dealers.yaml).
PROTECTED_ORG = "org.lakeshore-auto-group"
PROTECTED_ROOFTOP = "roof.lakeshore-fleet-wholesale"


class Report:
    def __init__(self) -> None:
        self.passed = 0
        self.failed: list[str] = []

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        line = f"{'PASS' if ok else 'FAIL'} {name}"
        if detail and not ok:
            line += f": {detail}"
        print(line, flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed.append(name)
        return ok


def text_of(result: Any) -> str | None:
    """The concatenated text blocks of a CallToolResult, or None when it has none."""
    texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    return "".join(texts) if texts else None


def brief(value: Any, limit: int = 400) -> str:
    s = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return s if len(s) <= limit else s[:limit] + "..."


async def run_mode(url: str, mode: str, wire: bool, report: Report, bearer: str | None = None) -> None:
    p = f"[{mode}{' bearer' if bearer else ''}]"

    async def on_request(req: httpx2.Request) -> None:
        print(f"  >> {req.method} {req.headers.get('mcp-method', '')} {req.content.decode()[:300]}")

    async def on_response(resp: httpx2.Response) -> None:
        print(f"  << {resp.status_code} {resp.headers.get('content-type')} session={resp.headers.get('mcp-session-id')}")

    hooks = {"request": [on_request], "response": [on_response]} if wire else {}
    # The credential travels in the Authorization header only, never in the URL.
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    async with httpx2.AsyncClient(event_hooks=hooks, timeout=30, headers=headers) as http:
        # cache=None: every call must reach the server, or the checks would test the SDK's cache.
        async with Client(
            streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=20, cache=None
        ) as client:
            report.check(f"{p} connect (negotiated {client.protocol_version})", True)
            if mode == "auto":
                # The SDK's auto mode probes server/discover first; a dual-era gateway must win it.
                report.check(
                    f"{p} server/discover probe selects 2026-07-28",
                    client.protocol_version == "2026-07-28",
                    f"negotiated {client.protocol_version}",
                )

            # --- tools/list
            tools = await client.list_tools()
            names = [t.name for t in tools.tools]
            report.check(f"{p} tools/list has no next cursor", tools.next_cursor is None, f"next_cursor={tools.next_cursor!r}")
            report.check(
                f"{p} tools/list contains {sorted(REQUIRED_TOOLS)}",
                REQUIRED_TOOLS <= set(names),
                f"got {names}",
            )
            report.check(f"{p} tools/list names are unique", len(names) == len(set(names)), f"got {names}")
            for tool in tools.tools:
                schema = tool.input_schema or {}
                report.check(
                    f"{p} tool {tool.name}: inputSchema root type object",
                    schema.get("type") == "object",
                    f"inputSchema={brief(schema)}",
                )
                report.check(
                    f"{p} tool {tool.name}: has outputSchema",
                    isinstance(tool.output_schema, dict) and bool(tool.output_schema),
                    f"outputSchema={brief(tool.output_schema)}",
                )

            # --- the manifest tool
            manifest: dict[str, Any] | None = None
            adapters: list[dict[str, Any]] = []
            r = await client.call_tool(MANIFEST_TOOL, {})
            if report.check(f"{p} {MANIFEST_TOOL} {{}} is not an error", not r.is_error, brief(r.model_dump(by_alias=True, exclude_none=True))):
                sc = r.structured_content
                if report.check(f"{p} manifest has structuredContent object", isinstance(sc, dict), brief(sc)):
                    manifest = sc
                    report.check(
                        f"{p} manifest standard == dealer-agent-protocol",
                        sc.get("standard") == "dealer-agent-protocol",
                        f"standard={sc.get('standard')!r}",
                    )
                    report.check(
                        f"{p} manifest standard_version == 0.1",
                        sc.get("standard_version") == "0.1",
                        f"standard_version={sc.get('standard_version')!r}",
                    )
                    text = text_of(r)
                    try:
                        parsed = json.loads(text) if text is not None else None
                    except ValueError as e:
                        parsed = f"<not JSON: {e}>"
                    report.check(
                        f"{p} manifest text content parses to the structuredContent",
                        parsed == sc,
                        f"text={brief(text)}",
                    )
                    # DAP profiles are in `capabilities`; this gateway's own
                    # extension profiles (dealergateway.*) cannot be (DAP's
                    # profile pattern), so they are published under
                    # extensions["dealergateway.extensions"].profiles.
                    extension_profiles = ((sc.get("extensions") or {}).get("dealergateway.extensions") or {}).get("profiles") or []
                    # A compatibility adapter that names its own `endpoint` (the AAP
                    # binding: one MCP endpoint per organization) is served there, not here.
                    adapters = [
                        a
                        for a in ((sc.get("extensions") or {}).get("dealergateway.compatibility") or {}).get("adapters") or []
                        if a.get("endpoint")
                    ]
                    elsewhere = {s.get("tool") for a in adapters for s in a.get("skills") or []}
                    advertised = sorted(
                        (
                            {t for cap in sc.get("capabilities") or [] for t in cap.get("tools") or []}
                            | {t for prof in extension_profiles for t in prof.get("tools") or []}
                        )
                        - elsewhere
                    )
                    report.check(
                        f"{p} tools/list equals the tools the manifest advertises here (capabilities and extension profiles, less adapters served at their own endpoint)",
                        sorted(names) == advertised,
                        f"tools/list={sorted(names)} manifest={advertised}",
                    )

            # --- dealeragent.dealer.get for the first organization of the manifest
            org_ids = (manifest or {}).get("organization_ids") or []
            if report.check(f"{p} manifest lists an organization", bool(org_ids), brief(manifest)):
                for adapter in adapters:
                    await check_adapter_endpoint(url, http, mode, adapter, org_ids[0], p, report)
                args = {"organization_id": org_ids[0]}
                r = await client.call_tool(DEALER_TOOL, args)
                if report.check(f"{p} {DEALER_TOOL} {brief(args)} is not an error", not r.is_error, brief(r.model_dump(by_alias=True, exclude_none=True))):
                    sc = r.structured_content if isinstance(r.structured_content, dict) else {}
                    rooftops = sc.get("rooftops")
                    report.check(
                        f"{p} {DEALER_TOOL} returns >= 1 rooftop",
                        isinstance(rooftops, list) and len(rooftops) >= 1,
                        f"structuredContent={brief(sc)}",
                    )

            # --- resources
            resources = await client.list_resources()
            uris = [str(x.uri) for x in resources.resources]
            report.check(f"{p} resources/list includes {MANIFEST_URI}", MANIFEST_URI in uris, f"got {uris}")
            rr = await client.read_resource(MANIFEST_URI)
            contents = rr.contents
            doc: Any = None
            if report.check(f"{p} read {MANIFEST_URI} returns one text content", len(contents) == 1 and hasattr(contents[0], "text"), brief(rr.model_dump(by_alias=True, exclude_none=True))):
                c = contents[0]
                report.check(f"{p} read {MANIFEST_URI}: uri echoes the request", str(c.uri) == MANIFEST_URI, f"uri={c.uri}")
                report.check(
                    f"{p} read {MANIFEST_URI}: mimeType application/json",
                    c.mime_type == "application/json",
                    f"mimeType={c.mime_type!r}",
                )
                try:
                    doc = json.loads(c.text)
                except ValueError as e:
                    report.check(f"{p} read {MANIFEST_URI}: JSON text", False, str(e))
            if doc is not None and manifest is not None:
                diff = [k for k in STABLE_MANIFEST_FIELDS if doc.get(k) != manifest.get(k)]
                report.check(
                    f"{p} manifest resource matches the manifest tool on {', '.join(STABLE_MANIFEST_FIELDS)}",
                    not diff and all(k in doc for k in STABLE_MANIFEST_FIELDS),
                    f"differs on {diff}",
                )

            # --- prompts and completions (docs/mcp.md "Prompts and completions")
            await check_prompts_and_completions(client, p, report, org_ids)

            # --- subscriptions (docs/mcp.md "Subscriptions"), through the SDK's own API
            await check_subscriptions(client, p, report, org_ids, bearer is not None)

            # --- invalid arguments: a tool-level validation error, not a protocol error
            bad = {"bogus": 1}
            r = await client.call_tool(MANIFEST_TOOL, bad)
            sc = r.structured_content if isinstance(r.structured_content, dict) else {}
            report.check(
                f"{p} {MANIFEST_TOOL} {brief(bad)} -> isError with code {VALIDATION_ERROR_CODE}",
                r.is_error and sc.get("code") == VALIDATION_ERROR_CODE,
                brief(r.model_dump(by_alias=True, exclude_none=True)),
            )

            if bearer:
                await check_protected_search(client, p, report, expect_visible=True)

    if bearer:
        # The same call from a client without the token: the rooftop does not exist for it.
        async with httpx2.AsyncClient(timeout=30) as anonymous_http:
            async with Client(
                streamable_http_client(url, http_client=anonymous_http), mode=mode, read_timeout_seconds=20, cache=None
            ) as anonymous:
                await check_protected_search(anonymous, f"[{mode} anonymous]", report, expect_visible=False)


async def check_prompts_and_completions(client: Client, p: str, report: Report, org_ids: list[str]) -> None:
    prompts = await client.list_prompts()
    names = [x.name for x in prompts.prompts]
    report.check(
        f"{p} prompts/list names the shopping prompts",
        set(PROMPTS) <= set(names) and all(x.description for x in prompts.prompts),
        f"got {names}",
    )
    if not org_ids:
        return
    r = await client.get_prompt(
        "explain_disclosure",
        {"organization_id": org_ids[0], "rooftop_id": "roof.x", "vehicle_id": "veh.y", "jurisdiction": "US-IL"},
    )
    text = " ".join(getattr(m.content, "text", "") or "" for m in r.messages)
    report.check(
        f"{p} prompts/get explain_disclosure writes its arguments into the recipe",
        "dealeragent.pricing.get_disclosure" in text and org_ids[0] in text and '"subdivision": "US-IL"' in text,
        brief(text),
    )
    try:
        await client.get_prompt("explain_disclosure", {"organization_id": "not an id", "rooftop_id": "r", "vehicle_id": "v"})
        report.check(f"{p} prompts/get with a bad argument is refused", False, "no error")
    except Exception as e:  # the SDK raises the JSON-RPC error
        message = str(e)
        report.check(
            f"{p} prompts/get with a bad argument is -32602 naming the argument and its rule, without the value",
            "organization_id must be an identifier" in message and "not an id" not in message,
            message,
        )
    c = await client.complete(PromptReference(type="ref/prompt", name="find_vehicles"), {"name": "organization_id", "value": ""})
    report.check(
        f"{p} completion/complete offers the organizations the caller may see",
        sorted(c.completion.values) == sorted(org_ids),
        f"values={c.completion.values} manifest={org_ids}",
    )
    c = await client.complete(
        ResourceTemplateReference(type="ref/resource", uri="dealeragent://organization/{organization_id}/rooftop/{rooftop_id}"),
        {"name": "rooftop_id", "value": ""},
        {"organization_id": org_ids[0]},
    )
    report.check(
        f"{p} completion/complete offers rooftops of the chosen organization",
        len(c.completion.values) >= 1 and c.completion.has_more is False,
        brief(c.model_dump(by_alias=True, exclude_none=True)),
    )


# A vehicle of the partner-only rooftop: anonymous callers may not follow it.
PRIVATE_VEHICLE_URI = (
    "dealeragent://organization/org.lakeshore-auto-group/rooftop/roof.lakeshore-fleet-wholesale/vehicle/veh.any"
)


async def check_subscriptions(client: Client, p: str, report: Report, org_ids: list[str], has_bearer: bool) -> None:
    """2026-07-28: `Client.listen` is acknowledged with the URIs held and ends cleanly; 2025-11-25:
    `subscribe_resource` / `unsubscribe_resource` answer. Anonymously, a partner-only vehicle is
    refused with -32602 in both eras (a bearer for that rooftop may follow it)."""
    if not org_ids:
        return
    followed = [MANIFEST_URI, f"dealeragent://organization/{org_ids[0]}"]
    if client.protocol_version == "2026-07-28":
        async with client.listen(resource_subscriptions=followed, resources_list_changed=True) as sub:
            honored = sub.honored
            report.check(
                f"{p} listen is acknowledged with the URIs it follows",
                honored is not None and sorted(honored.resource_subscriptions or []) == sorted(followed),
                brief(honored.model_dump(by_alias=True, exclude_none=True) if honored else None),
            )
        report.check(f"{p} listen ends when the client leaves it", True)
        if not has_bearer:
            try:
                async with client.listen(resource_subscriptions=[PRIVATE_VEHICLE_URI]):
                    report.check(f"{p} listen on a partner-only vehicle is refused", False, "acknowledged")
            except MCPError as e:
                report.check(f"{p} listen on a partner-only vehicle is refused with -32602", e.code == -32602, str(e))
        return
    with warnings.catch_warnings():
        # The SDK marks resources/subscribe deprecated (removed in 2026-07-28); this era still has it.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        for uri in followed:
            await client.subscribe_resource(uri)
            report.check(f"{p} resources/subscribe {uri} answers", True)
        await client.unsubscribe_resource(followed[0])
        report.check(f"{p} resources/unsubscribe {followed[0]} answers", True)
        if not has_bearer:
            try:
                await client.subscribe_resource(PRIVATE_VEHICLE_URI)
                report.check(f"{p} resources/subscribe on a partner-only vehicle is refused", False, "accepted")
            except MCPError as e:
                report.check(
                    f"{p} resources/subscribe on a partner-only vehicle is refused with -32602", e.code == -32602, str(e)
                )


async def check_adapter_endpoint(
    url: str, http: httpx2.AsyncClient, mode: str, adapter: dict, org: str, p: str, report: Report
) -> None:
    """The adapter's own endpoint for `org` lists exactly the adapter's tools, and its
    dealer-information skill (when it has one) answers without an error."""
    endpoint = str(adapter.get("endpoint")).replace("{organization_id}", org)
    parts = urllib.parse.urlsplit(url)
    target = urllib.parse.urlunsplit((parts.scheme, parts.netloc, endpoint, "", ""))
    tools_expected = sorted(s.get("tool") for s in adapter.get("skills") or [])
    name = adapter.get("profile")
    async with Client(
        streamable_http_client(target, http_client=http), mode=mode, read_timeout_seconds=20, cache=None
    ) as client:
        listed = await client.list_tools()
        got = sorted(t.name for t in listed.tools)
        report.check(
            f"{p} {endpoint} tools/list equals the tools of adapter {name}",
            got == tools_expected,
            f"tools/list={got} manifest={tools_expected}",
        )
        if "aap_dealer_information" in got:
            r = await client.call_tool("aap_dealer_information", {"type": "dealer.information.request", "dealer_id": org})
            sc = r.structured_content if isinstance(r.structured_content, dict) else {}
            report.check(
                f"{p} {endpoint} aap_dealer_information answers with the dealer's rooftops",
                not r.is_error
                and sc.get("type") == "dealer.information.response"
                and bool(((sc.get("data") or {}).get("rooftops"))),
                brief(r.model_dump(by_alias=True, exclude_none=True)),
            )


async def check_protected_search(client: Client, p: str, report: Report, expect_visible: bool) -> None:
    """Search the partner-only rooftop: vehicles with the token, not_found without it."""
    args = {"organization_id": PROTECTED_ORG, "rooftop_ids": [PROTECTED_ROOFTOP]}
    r = await client.call_tool(SEARCH_TOOL, args)
    dump = brief(r.model_dump(by_alias=True, exclude_none=True))
    sc = r.structured_content if isinstance(r.structured_content, dict) else {}
    if expect_visible:
        vehicles = sc.get("vehicles")
        report.check(
            f"{p} {SEARCH_TOOL} {brief(args)} with the bearer token returns vehicles of {PROTECTED_ROOFTOP}",
            not r.is_error
            and isinstance(vehicles, list)
            and len(vehicles) > 0
            and all(v.get("rooftop_id") == PROTECTED_ROOFTOP for v in vehicles),
            dump,
        )
        # The result budget (docs/mcp.md "Content blocks and the result
        # budget"): the text block fits 25,000 characters, and each vehicle
        # has a resource_link the SDK parses and can read back in full.
        text = text_of(r) or ""
        links = [b for b in r.content if getattr(b, "type", None) == "resource_link"]
        report.check(
            f"{p} {SEARCH_TOOL} text block within 25,000 characters, one resource_link per vehicle",
            len(text) <= 25_000 and isinstance(vehicles, list) and len(links) == len(vehicles),
            f"text={len(text)} links={len(links)}",
        )
        if links:
            uri = str(links[0].uri)
            rr = await client.read_resource(uri)
            record = json.loads(rr.contents[0].text) if rr.contents and hasattr(rr.contents[0], "text") else {}
            report.check(
                f"{p} the first resource_link reads back its full vehicle",
                uri.endswith("/vehicle/" + str(vehicles[0].get("vehicle_id")))
                and record.get("vehicle_id") == vehicles[0].get("vehicle_id"),
                brief(rr.model_dump(by_alias=True, exclude_none=True)),
            )
    else:
        report.check(
            f"{p} {SEARCH_TOOL} {brief(args)} without a token -> isError {NOT_FOUND_CODE}",
            bool(r.is_error) and sc.get("code") == NOT_FOUND_CODE,
            dump,
        )


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("--mode", action="append", choices=["2026-07-28", "legacy", "auto"], help="repeatable; default all three")
    ap.add_argument("--wire", action="store_true", help="print each HTTP request/response")
    ap.add_argument(
        "--bearer",
        metavar="TOKEN",
        help=f"send Authorization: Bearer TOKEN and check a protected search of {PROTECTED_ROOFTOP}",
    )
    args = ap.parse_args()
    report = Report()
    for mode in args.mode or ["2026-07-28", "legacy", "auto"]:
        print(f"== mode {mode} against {args.url}{' with a bearer token' if args.bearer else ''}", flush=True)
        try:
            await run_mode(args.url, mode, args.wire, report, args.bearer)
        except Exception as e:  # the SDK raises on protocol errors and schema-invalid results
            detail = "".join(traceback.format_exception_only(type(e), e)).strip()
            report.check(f"[{mode}] session ran to the end without an exception", False, detail)
            traceback.print_exc()
    total = report.passed + len(report.failed)
    print(f"\nPython MCP client: {report.passed} of {total} checks passed")
    for name in report.failed:
        print(f"  FAILED: {name}")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
