//! The result budget (docs/benchmarks.md "Result sizes and the token
//! budget"): every tool's default answer fits what agent harnesses hand a
//! model (text at most 25,000 characters, `structuredContent` at most
//! 25 KiB serialized), a page asked for more than fits ends early with a
//! cursor and says so, and the concise forms still validate against the
//! tools' output schemas with provenance and freshness on every record.

use std::collections::{BTreeMap, BTreeSet};

use gateway::catalog::Catalog;
use serde_json::{Value, json};

use crate::common::{TestApp, spawn_with, tool_error_code};

/// The limits of docs/benchmarks.md "Result sizes and the token budget".
const TEXT_CHARS: usize = 25_000;
const STRUCTURED_BYTES: usize = 25_600;

const SEARCH: &str = "dealeragent.inventory.search";
const GET_VEHICLE: &str = "dealeragent.inventory.get_vehicle";
const DISCLOSURE: &str = "dealeragent.pricing.get_disclosure";
const OFFERS: &str = "dealergateway.offers.evaluate";

/// A demo gateway whose anonymous availability quota does not stop a walk
/// over every vehicle.
async fn demo() -> TestApp {
    spawn_with(|s| {
        s.anonymous_quota_per_minute = 100_000;
        s.rate_limit_ip_per_minute = 1_000_000;
    })
    .await
}

/// A client of `org`'s AAP endpoint (`/aap/{org}/mcp`).
fn aap_endpoint(app: &TestApp, org: &str) -> TestApp {
    let mut client = TestApp::attach(&app.base());
    client.url = format!("{}/aap/{org}/mcp", app.base());
    client
}

/// Characters of the text blocks and bytes of the serialized structured
/// content of one tool result.
fn sizes(result: &Value) -> (usize, usize) {
    let text = result["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter(|c| c["type"] == "text")
        .map(|c| c["text"].as_str().expect("text").chars().count())
        .sum();
    let structured = serde_json::to_string(&result["structuredContent"])
        .unwrap()
        .len();
    (text, structured)
}

/// The largest answer of each tool, and how many were measured.
#[derive(Default)]
struct Largest(BTreeMap<String, (usize, usize, usize)>);

impl Largest {
    /// Check one successful result against the budget and its tool's
    /// output schema, and keep its sizes.
    fn check(&mut self, catalog: &Catalog, tool: &str, result: &Value) {
        assert_eq!(result["isError"], false, "{tool}: {result}");
        let (text, structured) = sizes(result);
        assert!(
            text <= TEXT_CHARS,
            "{tool}: {text} characters of text: {result}"
        );
        assert!(
            structured <= STRUCTURED_BYTES,
            "{tool}: {structured} bytes of structured content: {result}"
        );
        assert!(
            result["_meta"].get("dealergateway.budget").is_none(),
            "{tool}: marked over budget"
        );
        if let Err(errors) = catalog
            .tool(tool)
            .unwrap()
            .validate_output(&result["structuredContent"])
        {
            panic!("{tool}: {errors:?}");
        }
        let entry = self.0.entry(tool.to_owned()).or_default();
        entry.0 = entry.0.max(text);
        entry.1 = entry.1.max(structured);
        entry.2 += 1;
    }
}

/// Every vehicle of `org`, walked with concise pages of 100 (each ended by
/// the budget), checking each page.
async fn walk(app: &TestApp, catalog: &Catalog, largest: &mut Largest, org: &str) -> Vec<Value> {
    let mut vehicles = Vec::new();
    let mut args = json!({"organization_id": org, "page": {"limit": 100}});
    loop {
        let page = app.call_tool(SEARCH, args.clone()).await;
        largest.check(catalog, SEARCH, &page);
        let sc = &page["structuredContent"];
        vehicles.extend(sc["vehicles"].as_array().unwrap().iter().cloned());
        match sc["page"]["next_cursor"].as_str() {
            Some(c) => args["page"]["cursor"] = json!(c),
            None => break,
        }
    }
    vehicles
}

/// Every tool's default answer on the demo, for every organization and
/// every vehicle: text and structured content within the budget, valid
/// against the tool's output schema. Before the budget a default search
/// page was 68 KB of structured content, a disclosure 38 KB, an
/// evaluation 27 KB and an AAP search 42 KB.
#[tokio::test]
async fn every_default_answer_fits_the_budget_on_the_demo() {
    let app = demo().await;
    let catalog = Catalog::load().unwrap();
    let mut largest = Largest::default();
    let manifest = app
        .call_tool("dealeragent.discovery.get_manifest", json!({}))
        .await;
    largest.check(&catalog, "dealeragent.discovery.get_manifest", &manifest);
    let orgs: Vec<String> = manifest["structuredContent"]["organization_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap().to_owned())
        .collect();
    let mut used = 0;
    for org in &orgs {
        let dealer = app
            .call_tool("dealeragent.dealer.get", json!({"organization_id": org}))
            .await;
        largest.check(&catalog, "dealeragent.dealer.get", &dealer);
        let default = app.call_tool(SEARCH, json!({"organization_id": org})).await;
        largest.check(&catalog, SEARCH, &default);
        assert_eq!(
            default["structuredContent"]["vehicles"]
                .as_array()
                .unwrap()
                .len(),
            10,
            "the default page is ten vehicles"
        );
        for v in walk(&app, &catalog, &mut largest, org).await {
            let target = json!({
                "organization_id": org,
                "rooftop_id": v["rooftop_id"],
                "vehicle_id": v["vehicle_id"],
            });
            for tool in [
                GET_VEHICLE,
                "dealeragent.inventory.verify_availability",
                DISCLOSURE,
            ] {
                let result = app.call_tool(tool, target.clone()).await;
                largest.check(&catalog, tool, &result);
            }
            let mut offers = target.clone();
            offers["profile"] = json!({"payment_mode": "unknown", "jurisdiction": {"country": &v["advertised_price"]["amount"]["currency"].as_str().unwrap()[..2]}});
            let result = app.call_tool(OFFERS, offers).await;
            largest.check(&catalog, OFFERS, &result);
            if v["condition"] != "new" {
                let details = app
                    .call_tool(
                        "dealeragent.inventory.get_used_vehicle_details",
                        target.clone(),
                    )
                    .await;
                // A used vehicle without the evidence the profile requires
                // is not found (docs: README "Used vehicles").
                if tool_error_code(&details).is_none() {
                    largest.check(
                        &catalog,
                        "dealeragent.inventory.get_used_vehicle_details",
                        &details,
                    );
                    used += 1;
                }
            }
        }
        // The AAP endpoint of the organization, its four tools' defaults.
        let aap = aap_endpoint(&app, org);
        for (tool, args) in [
            (
                "aap_dealer_information",
                json!({"type": "dealer.information.request"}),
            ),
            (
                "aap_inventory_facets",
                json!({"type": "inventory.facets.request"}),
            ),
            (
                "aap_inventory_search",
                json!({"type": "inventory.search.request"}),
            ),
        ] {
            let result = aap.call_tool(tool, args).await;
            largest.check(&catalog, tool, &result);
            if tool == "aap_inventory_search" {
                for v in result["structuredContent"]["data"]["vehicles"]
                    .as_array()
                    .unwrap()
                {
                    let one = aap
                        .call_tool(
                            "aap_inventory_vehicle",
                            json!({"type": "inventory.vehicle.request", "vehicle_id": v["vehicle_id"]}),
                        )
                        .await;
                    largest.check(&catalog, "aap_inventory_vehicle", &one);
                }
            }
        }
    }
    assert!(used > 0, "no used vehicle measured");
    // Every tool of both endpoints was measured.
    assert_eq!(largest.0.len(), 12, "{:?}", largest.0.keys());
    for (tool, (text, structured, n)) in &largest.0 {
        println!("{tool}: {n} answers, largest text {text} chars, structured {structured} bytes");
    }
}

/// Ids of a paginated search, and the sizes of its pages.
async fn paginate(app: &TestApp, first: Value) -> (Vec<String>, Vec<usize>, Vec<Value>) {
    let mut ids = Vec::new();
    let mut counts = Vec::new();
    let mut pages = Vec::new();
    let mut args = first;
    loop {
        let result = app.call_tool(SEARCH, args.clone()).await;
        assert_eq!(result["isError"], false, "{result}");
        let sc = result["structuredContent"].clone();
        let vehicles = sc["vehicles"].as_array().unwrap();
        counts.push(vehicles.len());
        ids.extend(
            vehicles
                .iter()
                .map(|v| v["vehicle_id"].as_str().unwrap().to_owned()),
        );
        let next = sc["page"]["next_cursor"].as_str().map(str::to_owned);
        pages.push(result);
        match next {
            Some(c) => args["page"]["cursor"] = json!(c),
            None => break,
        }
    }
    (ids, counts, pages)
}

/// `limit: 100` with `detail: "full"` does not fit: the page ends early
/// with a cursor and a note saying so, within the budget, and following
/// the cursors yields every vehicle of the organization exactly once, in
/// the same order as a walk one vehicle at a time would.
#[tokio::test]
async fn a_page_asked_for_more_than_fits_ends_early_and_its_cursors_yield_the_rest() {
    let app = demo().await;
    let org = "org.lakeshore-auto-group";
    let facets = app
        .call_tool(
            SEARCH,
            json!({"organization_id": org, "page": {"limit": 1}}),
        )
        .await;
    let total: u64 = facets["structuredContent"]["facets"]["make"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();

    let (full, counts, pages) = paginate(
        &app,
        json!({"organization_id": org, "page": {"limit": 100}, "detail": "full"}),
    )
    .await;
    assert!(counts[0] < 100, "a full page of 100 cannot fit: {counts:?}");
    for (page, count) in pages.iter().zip(&counts) {
        let (text, structured) = sizes(page);
        assert!(text <= TEXT_CHARS && structured <= STRUCTURED_BYTES);
        let sc = &page["structuredContent"];
        let notes = sc["provenance"]["transformations"].to_string();
        if sc["page"]["has_more"] == true {
            assert!(
                notes.contains(&format!(
                    "page ended after {count} of the 100 vehicles asked for"
                )),
                "{notes}"
            );
        }
        // The full form: media and features where the vehicle has them.
        assert!(
            sc["vehicles"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v.get("media").is_some()),
            "{sc}"
        );
    }
    let unique: BTreeSet<&String> = full.iter().collect();
    assert_eq!(unique.len(), full.len(), "a vehicle was repeated");
    assert_eq!(full.len() as u64, total, "a vehicle was lost");

    // The same order as the default concise pages and as `limit: 1`.
    let (concise, concise_counts, _) = paginate(
        &app,
        json!({"organization_id": org, "page": {"limit": 100}}),
    )
    .await;
    assert_eq!(concise, full);
    assert!(
        concise_counts[0] > counts[0],
        "{concise_counts:?} {counts:?}"
    );
    let (one_by_one, _, _) = paginate(
        &app,
        json!({"organization_id": org, "rooftop_ids": ["roof.lakeshore-chicago"], "page": {"limit": 1}}),
    )
    .await;
    let (chicago_full, _, _) = paginate(
        &app,
        json!({"organization_id": org, "rooftop_ids": ["roof.lakeshore-chicago"], "page": {"limit": 100}, "detail": "full"}),
    )
    .await;
    assert_eq!(one_by_one, chicago_full);

    // A cursor of a full page continues a concise pagination (detail, like
    // limit, selects nothing).
    let first = &pages[0]["structuredContent"]["page"]["next_cursor"];
    let switched = app
        .call_tool(
            SEARCH,
            json!({"organization_id": org, "page": {"limit": 3, "cursor": first}}),
        )
        .await;
    let ids: Vec<&str> = switched["structuredContent"]["vehicles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["vehicle_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, full[counts[0]..counts[0] + 3]);
}

/// A concise vehicle keeps identity, price, availability, provenance and
/// freshness, leaves out what the note names, validates as a DAP vehicle,
/// and its `resource_link` reads back the full record.
#[tokio::test]
async fn concise_vehicles_keep_provenance_and_freshness_and_link_to_the_full_record() {
    let app = demo().await;
    let catalog = Catalog::load().unwrap();
    let vehicle_schema = catalog.tool(GET_VEHICLE).unwrap();
    let org = "org.maplecrest-motor-group";
    let page = app.call_tool(SEARCH, json!({"organization_id": org})).await;
    let sc = &page["structuredContent"];
    let notes = sc["provenance"]["transformations"].to_string();
    assert!(notes.contains("concise vehicles"), "{notes}");
    let links: Vec<&Value> = page["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "resource_link")
        .collect();
    let vehicles = sc["vehicles"].as_array().unwrap();
    assert_eq!(links.len(), vehicles.len());
    // The text block is the structured content, whole.
    assert_eq!(
        serde_json::from_str::<Value>(page["content"][0]["text"].as_str().unwrap()).unwrap(),
        *sc
    );
    for (v, link) in vehicles.iter().zip(&links) {
        for member in [
            "vehicle_id",
            "year",
            "make",
            "model",
            "condition",
            "advertised_price",
            "availability",
            "provenance",
            "freshness",
        ] {
            assert!(v.get(member).is_some(), "{member} missing: {v}");
        }
        for member in ["features", "media", "used_vehicle", "powertrain"] {
            assert!(v.get(member).is_none(), "{member} present: {v}");
        }
        if let Err(errors) = vehicle_schema.validate_output(v) {
            panic!("{errors:?}");
        }
        let uri = format!(
            "dealeragent://organization/{org}/rooftop/{}/vehicle/{}",
            v["rooftop_id"].as_str().unwrap(),
            v["vehicle_id"].as_str().unwrap()
        );
        assert_eq!(link["uri"], uri.as_str());
        assert_eq!(link["name"], v["vehicle_id"]);
        let read = app.modern("resources/read", json!({"uri": uri})).await;
        let text = read.result()["contents"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        let record: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(record["vehicle_id"], v["vehicle_id"]);
        assert_eq!(record["advertised_price"], v["advertised_price"]);
        assert!(record.get("media").is_some() || record.get("features").is_some());
    }

    // get_vehicle: full by default; concise on request, saying what it
    // leaves out and linking to the record.
    let target = json!({"organization_id": org, "rooftop_id": vehicles[0]["rooftop_id"], "vehicle_id": vehicles[0]["vehicle_id"]});
    let full = app.call_tool(GET_VEHICLE, target.clone()).await;
    assert!(full["structuredContent"].get("media").is_some());
    assert!(full["structuredContent"].get("extensions").is_none());
    let mut concise_args = target.clone();
    concise_args["detail"] = json!("concise");
    let concise = app.call_tool(GET_VEHICLE, concise_args).await;
    let one = &concise["structuredContent"];
    if let Err(errors) = vehicle_schema.validate_output(one) {
        panic!("{errors:?}");
    }
    let note = &one["extensions"]["dealergateway.detail"];
    assert_eq!(note["detail"], "concise");
    assert!(note["left_out"].to_string().contains("media"), "{note}");
    assert!(
        note["how_to_get"]
            .as_str()
            .unwrap()
            .contains("detail \"full\""),
        "{note}"
    );
    assert_eq!(concise["content"][1]["type"], "resource_link");
    // The concise vehicle is the listed one, note aside.
    let mut without_note = one.clone();
    without_note.as_object_mut().unwrap().remove("extensions");
    assert_eq!(without_note["provenance"], vehicles[0]["provenance"]);
    assert_eq!(
        without_note["advertised_price"],
        vehicles[0]["advertised_price"]
    );
}

/// The disclosure's offers extension is trimmed by default to what decides
/// the answer and says how to get the rest; `detail: "full"` gives the
/// evaluation whole. `offers.evaluate` is trimmed the same way, and its
/// concise form validates against its output schema.
#[tokio::test]
async fn offers_are_concise_by_default_and_whole_on_request() {
    let app = demo().await;
    let catalog = Catalog::load().unwrap();
    let org = "org.lakeshore-auto-group";
    let page = app.call_tool(SEARCH, json!({"organization_id": org})).await;
    let v = &page["structuredContent"]["vehicles"][0];
    let target = json!({"organization_id": org, "rooftop_id": v["rooftop_id"], "vehicle_id": v["vehicle_id"]});

    let concise = app.call_tool(DISCLOSURE, target.clone()).await;
    let mut full_args = target.clone();
    full_args["detail"] = json!("full");
    let full = app.call_tool(DISCLOSURE, full_args).await;
    let (c, f) = (
        &concise["structuredContent"]["extensions"]["dealergateway.offers"],
        &full["structuredContent"]["extensions"]["dealergateway.offers"],
    );
    for member in [
        "best_stack",
        "guaranteed_floor",
        "potential_extra",
        "unusable_programs",
        "winning_payment_mode",
        "as_of",
    ] {
        assert_eq!(c[member], f[member], "{member}");
    }
    assert!(c["best_stack"]["optimality"]["status"].is_string());
    for member in ["branches", "programs", "trace", "revisions"] {
        assert!(c.get(member).is_none(), "{member}: {c}");
        assert!(f.get(member).is_some(), "{member}: {f}");
    }
    assert_eq!(c["omitted"]["detail"], "concise");
    assert!(
        c["omitted"]["how_to_get"]
            .as_str()
            .unwrap()
            .contains("dealergateway.offers.evaluate"),
        "{c}"
    );
    assert!(
        c["omitted"]["left_out"]
            .to_string()
            .contains("3 payment-mode branches")
    );
    assert!(sizes(&concise).1 < sizes(&full).1);
    // The rest of the disclosure is the same document.
    for member in [
        "advertised_price",
        "required_dealer_charges",
        "conditional_adjustments",
        "government_charges",
        "disclosure_completeness",
        "disclosure_text",
    ] {
        assert_eq!(
            concise["structuredContent"][member], full["structuredContent"][member],
            "{member}"
        );
    }
    let disclosure = catalog.tool(DISCLOSURE).unwrap();
    for result in [&concise, &full] {
        if let Err(errors) = disclosure.validate_output(&result["structuredContent"]) {
            panic!("{errors:?}");
        }
    }

    let mut args = target.clone();
    args["profile"] = json!({"payment_mode": "unknown", "jurisdiction": {"country": "US"}});
    let concise = app.call_tool(OFFERS, args.clone()).await;
    args["detail"] = json!("full");
    let full = app.call_tool(OFFERS, args).await;
    let (c, f) = (&concise["structuredContent"], &full["structuredContent"]);
    let offers = catalog.tool(OFFERS).unwrap();
    for result in [c, f] {
        if let Err(errors) = offers.validate_output(result) {
            panic!("{errors:?}");
        }
    }
    assert_eq!(c["trace"], json!([]));
    assert!(!f["trace"].as_array().unwrap().is_empty());
    assert!(f.get("omitted").is_none());
    let left_out = c["omitted"]["left_out"].to_string();
    assert!(left_out.contains("trace"), "{left_out}");
    for (cb, fb) in c["branches"]
        .as_array()
        .unwrap()
        .iter()
        .zip(f["branches"].as_array().unwrap())
    {
        assert_eq!(cb["programs"], json!([]));
        assert!(!fb["programs"].as_array().unwrap().is_empty());
        for member in ["best_stack", "guaranteed_floor", "potential_extra"] {
            assert_eq!(cb[member], fb[member], "{member}");
        }
    }
    for member in [
        "best_stack",
        "programs",
        "revisions",
        "provenance",
        "winning_payment_mode",
    ] {
        assert_eq!(c[member], f[member], "{member}");
    }
}

/// The AAP search page is sized to fit: ten vehicles by default, and a
/// larger limit is served as the vehicles that fit with `data.limit` the
/// effective size, so paging by `skip + limit` loses and repeats nothing.
#[tokio::test]
async fn the_aap_search_page_fits_and_pages_by_its_effective_limit() {
    let app = demo().await;
    let org = "org.lakeshore-auto-group";
    let aap = aap_endpoint(&app, org);
    let default = aap
        .call_tool(
            "aap_inventory_search",
            json!({"type": "inventory.search.request"}),
        )
        .await;
    let data = &default["structuredContent"]["data"];
    assert_eq!(data["limit"], 10);
    assert_eq!(data["vehicles"].as_array().unwrap().len(), 10);
    let total = data["total"].as_u64().unwrap();

    let mut seen = Vec::new();
    let mut skip = 0u64;
    while skip < total {
        let result = aap
            .call_tool(
                "aap_inventory_search",
                json!({"type": "inventory.search.request", "pagination": {"skip": skip, "limit": 100}}),
            )
            .await;
        let (text, structured) = sizes(&result);
        assert!(text <= TEXT_CHARS && structured <= STRUCTURED_BYTES);
        let sc = &result["structuredContent"];
        let limit = sc["data"]["limit"].as_u64().unwrap();
        let vehicles = sc["data"]["vehicles"].as_array().unwrap();
        if (vehicles.len() as u64) < total - skip {
            // Cut by the budget: the effective size, said in the message.
            assert!(limit > 0 && limit < 100, "{limit}");
            assert_eq!(vehicles.len() as u64, limit);
            assert!(
                sc["message"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("pagination.skip {}", skip + limit)),
                "{}",
                sc["message"]
            );
        }
        seen.extend(
            vehicles
                .iter()
                .map(|v| v["vehicle_id"].as_str().unwrap().to_owned()),
        );
        skip += limit;
    }
    let unique: BTreeSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len());
    assert_eq!(seen.len() as u64, total);
}
