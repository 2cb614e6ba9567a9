//! Errors that teach (docs/security.md "What a tool error says"): a table
//! of deliberately wrong calls to every tool, DAP tools on `/mcp` and AAP
//! tools on `/aap/{organization_id}/mcp`, over real HTTP.
//!
//! For each call the test asserts the words of the error (the allowed
//! values, the bound, the pattern in words, the allowed members, "give
//! exactly one of …"), that no part of the input is repeated anywhere in
//! the response (sentinels in wrong values and member names), that the
//! error object still validates against its published schema, and then
//! applies the correction the error states, read from the error's own
//! explanation by [`correct`] (pick the suggested or the first allowed
//! value, clamp to the bound, use the pattern's example, drop or rename
//! the unexpected member, keep one of the alternatives, ...), and shows the
//! corrected call succeeds.

use serde_json::{Map, Value, json};

use crate::common::{self, TestApp};

const ORG: &str = "org.lakeshore-auto-group";
const ROOFTOP: &str = "roof.lakeshore-chicago";

const MANIFEST: &str = "dealeragent.discovery.get_manifest";
const DEALER: &str = "dealeragent.dealer.get";
const SEARCH: &str = "dealeragent.inventory.search";
const VEHICLE: &str = "dealeragent.inventory.get_vehicle";
const VERIFY: &str = "dealeragent.inventory.verify_availability";
const USED: &str = "dealeragent.inventory.get_used_vehicle_details";
const DISCLOSURE: &str = "dealeragent.pricing.get_disclosure";
const OFFERS: &str = "dealergateway.offers.evaluate";
const AAP_DEALER: &str = "aap_dealer_information";
const AAP_FACETS: &str = "aap_inventory_facets";
const AAP_SEARCH: &str = "aap_inventory_search";
const AAP_VEHICLE: &str = "aap_inventory_vehicle";

/// A published, in-stock used unit of the demo, as an agent found it with
/// a search: the values a correction may need that no error can state
/// (which vehicle the caller meant).
#[derive(Debug, Clone)]
struct Unit {
    vehicle_id: String,
    vin: String,
    stock_number: String,
}

/// One wrong call and what its error must say.
struct Case {
    what: &'static str,
    tool: &'static str,
    args: Value,
    /// The field error that must be there: its pointer and keyword ...
    pointer: &'static str,
    keyword: &'static str,
    /// ... and words its explanation must contain.
    words: Vec<&'static str>,
    /// Text of the input that must appear nowhere in the response.
    secrets: Vec<String>,
}

fn case(
    what: &'static str,
    tool: &'static str,
    args: Value,
    pointer: &'static str,
    keyword: &'static str,
    words: &[&'static str],
    secrets: &[&str],
) -> Case {
    Case {
        what,
        tool,
        args,
        pointer,
        keyword,
        words: words.to_vec(),
        secrets: secrets.iter().map(|s| (*s).to_owned()).collect(),
    }
}

fn is_aap(tool: &str) -> bool {
    tool.starts_with("aap_")
}

/// The result of one call: `isError`, `structuredContent`, the raw body.
async fn call(app: &TestApp, tool: &str, args: &Value) -> (bool, Value, String) {
    let client = if is_aap(tool) {
        let mut client = TestApp::attach(&app.base());
        client.url = format!("{}/aap/{ORG}/mcp", app.base());
        client
    } else {
        TestApp::attach(&app.base())
    };
    let reply = client
        .modern("tools/call", json!({"name": tool, "arguments": args}))
        .await;
    assert_eq!(reply.status, 200, "{tool}: {}", reply.raw);
    let result = reply.result();
    (
        result["isError"] == json!(true),
        result["structuredContent"].clone(),
        reply.raw.clone(),
    )
}

/// A used, available unit at the Chicago rooftop.
async fn unit(app: &TestApp) -> Unit {
    let (is_error, sc, raw) = call(
        app,
        SEARCH,
        &json!({"organization_id": ORG, "rooftop_ids": [ROOFTOP],
                "filters": {"condition": ["used"], "availability": ["available"]},
                "page": {"limit": 1}}),
    )
    .await;
    assert!(!is_error, "{raw}");
    let v = &sc["vehicles"][0];
    Unit {
        vehicle_id: v["vehicle_id"].as_str().expect(&raw).to_owned(),
        vin: v["vin"].as_str().expect(&raw).to_owned(),
        stock_number: v["stock_number"].as_str().expect(&raw).to_owned(),
    }
}

/// The table: at least 30 wrong calls across every tool.
fn cases(u: &Unit) -> Vec<Case> {
    let unit_args = |extra: Value| {
        let mut args = json!({"organization_id": ORG, "rooftop_id": ROOFTOP});
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        args
    };
    let offers = |profile: Value| {
        let mut p = json!({"payment_mode": "cash", "jurisdiction": {"country": "US", "subdivision": "US-IL"}});
        merge(&mut p, &profile);
        json!({"organization_id": ORG, "rooftop_id": ROOFTOP, "vehicle_id": u.vehicle_id, "profile": p})
    };
    let search = |extra: Value| {
        let mut args = json!({"organization_id": ORG});
        merge(&mut args, &extra);
        args
    };
    let aap = |request: &str, extra: Value| {
        let mut args = json!({"type": request});
        merge(&mut args, &extra);
        args
    };
    vec![
        // dealeragent.inventory.search
        case(
            "sort.field outside its enum",
            SEARCH,
            search(json!({"sort": {"field": "price-zqA1", "order": "asc"}})),
            "/sort/field",
            "enum",
            &[
                "sort.field must be one of: advertised_price, year, odometer, inventory_age_days, observed_at.",
            ],
            &["price-zqA1"],
        ),
        case(
            "sort.field misspelt",
            SEARCH,
            search(json!({"sort": {"field": "yeer", "order": "desc"}})),
            "/sort/field",
            "enum",
            &["sort.field must be one of:", "Did you mean 'year'?"],
            &["yeer"],
        ),
        case(
            "sort.order outside its enum",
            SEARCH,
            search(json!({"sort": {"field": "year", "order": "ascending-zqA3"}})),
            "/sort/order",
            "enum",
            &["sort.order must be one of: asc, desc."],
            &["ascending-zqA3"],
        ),
        case(
            "sort without its order",
            SEARCH,
            search(json!({"sort": {"field": "year"}})),
            "/sort/order",
            "required",
            &["Required property 'sort.order' is missing; it must be one of: asc, desc."],
            &[],
        ),
        case(
            "page.limit above its maximum",
            SEARCH,
            search(json!({"page": {"limit": 500}})),
            "/page/limit",
            "maximum",
            &["page.limit must be at most 100 (accepted: a whole number from 1 to 100)."],
            &[],
        ),
        case(
            "page.limit below its minimum",
            SEARCH,
            search(json!({"page": {"limit": 0}})),
            "/page/limit",
            "minimum",
            &["page.limit must be at least 1"],
            &[],
        ),
        case(
            "page.limit written with a decimal point",
            SEARCH,
            search(json!({"page": {"limit": 20.0}})),
            "/page/limit",
            "type",
            &["page.limit must be a whole number written without a decimal point or exponent"],
            &[],
        ),
        case(
            "filters.condition item misspelt",
            SEARCH,
            search(json!({"filters": {"condition": ["usedZq"]}})),
            "/filters/condition/0",
            "enum",
            &[
                "filters.condition[0] must be one of: new, used, certified, demo.",
                "Did you mean 'used'?",
            ],
            &["usedZq"],
        ),
        case(
            "a misspelt top-level member",
            SEARCH,
            search(json!({"qurey": "zqA9 honda"})),
            "/",
            "additionalProperties",
            &[
                "The arguments object has an unexpected member (its name is not repeated); allowed members here: organization_id, rooftop_ids, query, filters, sort, page",
                "Did you mean 'query'?",
            ],
            &["qurey", "zqA9"],
        ),
        case(
            "an unknown filter whose name is a secret",
            SEARCH,
            search(json!({"filters": {"sk_live_zqA10": "zqA10-value"}})),
            "/filters",
            "additionalProperties",
            &[
                "filters has an unexpected member (its name is not repeated); allowed members here: vehicle_type, make, model, condition, year_min, year_max, price_min, price_max, odometer_min, odometer_max,",
            ],
            &["sk_live_zqA10", "zqA10-value"],
        ),
        case(
            "a currency in lower case",
            SEARCH,
            search(
                json!({"filters": {"price_min": {"amount_minor": 1_000_000, "currency": "usd"}}}),
            ),
            "/filters/price_min/currency",
            "pattern",
            &[
                "filters.price_min.currency must be an ISO 4217 code in capitals such as USD (pattern ^[A-Z]{3}$).",
            ],
            &["usd"],
        ),
        case(
            "year_min above year_max",
            SEARCH,
            search(json!({"filters": {"year_min": 2030, "year_max": 2010}})),
            "/filters/year_min",
            "semantic",
            &[
                "filters.year_min must not be greater than filters.year_max",
                "swap the two",
            ],
            &[],
        ),
        case(
            "price bounds in two currencies",
            SEARCH,
            search(
                json!({"filters": {"price_min": {"amount_minor": 100, "currency": "USD"},
                                      "price_max": {"amount_minor": 9_000_000, "currency": "CAD"}}}),
            ),
            "/filters/price_max/currency",
            "semantic",
            &["filters.price_max.currency must be the currency of filters.price_min"],
            &["CAD"],
        ),
        case(
            "a list filter given as a string",
            SEARCH,
            search(json!({"filters": {"make": "Honda-zqA14"}})),
            "/filters/make",
            "type",
            &[
                "filters.make must be a list (no value twice), each item a string of 1 to 100 characters.",
            ],
            &["zqA14"],
        ),
        case(
            "a rooftop listed twice",
            SEARCH,
            search(json!({"rooftop_ids": [ROOFTOP, ROOFTOP]})),
            "/rooftop_ids",
            "uniqueItems",
            &["rooftop_ids must not list the same value twice."],
            &[],
        ),
        case(
            "a query over its length",
            SEARCH,
            search(json!({"query": format!("zqA16{}", "q".repeat(600))})),
            "/query",
            "maxLength",
            &["query must be at most 500 characters long."],
            &["zqA16"],
        ),
        case(
            "an odometer unit outside its enum",
            SEARCH,
            search(json!({"filters": {"odometer_max": {"value": 50_000, "unit": "miles-zqA17"}}})),
            "/filters/odometer_max/unit",
            "enum",
            &["filters.odometer_max.unit must be one of: mi, km."],
            &["miles-zqA17"],
        ),
        // dealeragent.inventory.get_vehicle
        case(
            "two vehicle selectors",
            VEHICLE,
            unit_args(json!({"vin": u.vin, "stock_number": u.stock_number})),
            "/",
            "oneOf",
            &[
                "Give exactly one of vehicle_id, vin or stock_number; more than one of them was given.",
            ],
            &[&u.vin, &u.stock_number],
        ),
        case(
            "no vehicle selector",
            VEHICLE,
            unit_args(json!({})),
            "/",
            "oneOf",
            &["Give exactly one of vehicle_id, vin or stock_number; none of them was given."],
            &[],
        ),
        case(
            "a selector misspelt",
            VEHICLE,
            unit_args(json!({"vehicle-id": u.vehicle_id})),
            "/",
            "additionalProperties",
            &[
                "allowed members here: organization_id, rooftop_id, vehicle_id, vin, stock_number",
                "Did you mean 'vehicle_id'?",
            ],
            &["vehicle-id", &u.vehicle_id],
        ),
        // dealeragent.inventory.verify_availability
        case(
            "purpose misspelt",
            VERIFY,
            unit_args(json!({"vehicle_id": u.vehicle_id, "purpose": "comparision"})),
            "/purpose",
            "enum",
            &[
                "purpose must be one of: display, comparison, shopping_assistance.",
                "Did you mean 'comparison'?",
            ],
            &["comparision"],
        ),
        case(
            "a selector in camel case",
            VERIFY,
            unit_args(json!({"vehicleId": u.vehicle_id})),
            "/",
            "additionalProperties",
            &[
                "allowed members here: organization_id, rooftop_id, vehicle_id, vin, stock_number, purpose",
                "Did you mean 'vehicle_id'?",
            ],
            &["vehicleId", &u.vehicle_id],
        ),
        // dealeragent.pricing.get_disclosure
        case(
            "a subdivision without its country",
            DISCLOSURE,
            unit_args(
                json!({"vehicle_id": u.vehicle_id, "jurisdiction": {"country": "US", "subdivision": "WA"}}),
            ),
            "/jurisdiction/subdivision",
            "pattern",
            &[
                "jurisdiction.subdivision must be an ISO 3166-2 subdivision code in capitals such as US-IL",
            ],
            &["WA"],
        ),
        case(
            "a country of three letters",
            DISCLOSURE,
            unit_args(
                json!({"vehicle_id": u.vehicle_id, "jurisdiction": {"country": "usa-zqA24"}}),
            ),
            "/jurisdiction/country",
            "pattern",
            &[
                "jurisdiction.country must be an ISO 3166-1 alpha-2 country code in capitals such as US",
            ],
            &["usa-zqA24"],
        ),
        case(
            "payment_mode outside its enum",
            DISCLOSURE,
            unit_args(json!({"vehicle_id": u.vehicle_id, "payment_mode": "credit-zqA25"})),
            "/payment_mode",
            "enum",
            &["payment_mode must be one of: cash, finance, lease, unknown."],
            &["credit-zqA25"],
        ),
        // dealergateway.offers.evaluate
        case(
            "a claim that is neither a boolean nor unknown",
            OFFERS,
            offers(json!({"claims": {"military": "yes-zqA26"}})),
            "/profile/claims/military",
            "oneOf",
            &["profile.claims.military must be true or false, or the string \"unknown\"."],
            &["yes-zqA26"],
        ),
        case(
            "profile.payment_mode misspelt",
            OFFERS,
            offers(json!({"payment_mode": "csah"})),
            "/profile/payment_mode",
            "enum",
            &[
                "profile.payment_mode must be one of: cash, finance, lease, unknown.",
                "Did you mean 'cash'?",
            ],
            &["csah"],
        ),
        case(
            "a postal code with two hyphens",
            OFFERS,
            offers(json!({"jurisdiction": {"country": "US", "postal_code": "6-0-6-1-4"}})),
            "/profile/jurisdiction/postal_code",
            "pattern",
            &[
                "profile.jurisdiction.postal_code must be a postal or ZIP code, or its prefix, such as 60614",
            ],
            &["6-0-6-1-4"],
        ),
        case(
            "as_of not a date-time",
            OFFERS,
            offers(json!({"as_of": "yesterday-zqA29"})),
            "/profile/as_of",
            "format",
            &["profile.as_of must be an RFC 3339 date-time such as 2026-01-31T09:00:00Z."],
            &["yesterday-zqA29"],
        ),
        case(
            "an eligibility criterion the engine does not know",
            OFFERS,
            offers(json!({"claims": {"veteran_zqA30": true}})),
            "/profile/claims",
            "additionalProperties",
            &[
                "profile.claims has an unexpected member (its name is not repeated); allowed members here: residency, loyalty, conquest, military, first_responder,",
            ],
            &["veteran_zqA30"],
        ),
        // dealeragent.inventory.get_used_vehicle_details
        case(
            "two used-vehicle selectors",
            USED,
            unit_args(json!({"vehicle_id": u.vehicle_id, "stock_number": u.stock_number})),
            "/",
            "oneOf",
            &[
                "Give exactly one of vehicle_id, vin or stock_number; more than one of them was given.",
            ],
            &[&u.vehicle_id, &u.stock_number],
        ),
        case(
            "an unknown used-vehicle option",
            USED,
            unit_args(json!({"vehicle_id": u.vehicle_id, "include_history_zqA32": true})),
            "/",
            "additionalProperties",
            &["allowed members here: organization_id, rooftop_id, vehicle_id, vin, stock_number."],
            &["include_history_zqA32"],
        ),
        // dealeragent.dealer.get
        case(
            "rooftop_ids given as a string",
            DEALER,
            json!({"organization_id": ORG, "rooftop_ids": ROOFTOP}),
            "/rooftop_ids",
            "type",
            &[
                "rooftop_ids must be a list (at least 1 item, no value twice), each item a DAP identifier: letters, digits and . _ : -, starting with a letter or digit (1 to 128 characters).",
            ],
            &[ROOFTOP],
        ),
        // dealeragent.discovery.get_manifest
        case(
            "organization_id spelt the British way",
            MANIFEST,
            json!({"organisation_id": ORG}),
            "/",
            "additionalProperties",
            &[
                "allowed members here: organization_id.",
                "Did you mean 'organization_id'?",
            ],
            &["organisation_id", ORG],
        ),
        // The AAP tools (aap.error, details.field_errors).
        case(
            "AAP sort.field outside its enum",
            AAP_SEARCH,
            aap(
                "inventory.search.request",
                json!({"sort": {"field": "price-zqA36", "order": "asc"}}),
            ),
            "/sort/field",
            "enum",
            &["sort.field must be one of: year, mileage, updated_at."],
            &["price-zqA36"],
        ),
        case(
            "AAP pagination.limit above its maximum",
            AAP_SEARCH,
            aap(
                "inventory.search.request",
                json!({"pagination": {"limit": 5000}}),
            ),
            "/pagination/limit",
            "maximum",
            &["pagination.limit must be at most 1000 (accepted: a whole number from 1 to 1000)."],
            &[],
        ),
        case(
            "AAP pagination.limit written with a decimal point",
            AAP_SEARCH,
            aap(
                "inventory.search.request",
                json!({"pagination": {"limit": 20.0}}),
            ),
            "/pagination/limit",
            "type",
            &[
                "pagination.limit must be a whole number written without a decimal point or exponent",
            ],
            &[],
        ),
        case(
            "AAP condition outside its enum",
            AAP_SEARCH,
            aap(
                "inventory.search.request",
                json!({"filters": {"condition": ["certified-zqA39"]}}),
            ),
            "/filters/condition/0",
            "enum",
            &["filters.condition[0] must be one of: new, used, cpo."],
            &["certified-zqA39"],
        ),
        case(
            "AAP year_min below its minimum",
            AAP_SEARCH,
            aap(
                "inventory.search.request",
                json!({"filters": {"year_min": 1800}}),
            ),
            "/filters/year_min",
            "minimum",
            &[
                "filters.year_min must be at least 1900 (accepted: a whole number from 1900 to 2100).",
            ],
            &[],
        ),
        case(
            "AAP sort without its order",
            AAP_SEARCH,
            aap(
                "inventory.search.request",
                json!({"sort": {"field": "year"}}),
            ),
            "/sort/order",
            "required",
            &["Required property 'sort.order' is missing; it must be one of: asc, desc."],
            &[],
        ),
        case(
            "AAP filter this gateway does not apply",
            AAP_FACETS,
            aap(
                "inventory.facets.request",
                json!({"filters": {"price_max_zqA41": 30_000}}),
            ),
            "/filters",
            "additionalProperties",
            &[
                "filters has an unexpected member (its name is not repeated); allowed members here: make, model, condition, vehicle_type, status, rooftops, year_min, year_max, mileage_max, vin, stock, query.",
            ],
            &["price_max_zqA41"],
        ),
        case(
            "AAP vehicle request without an identifier",
            AAP_VEHICLE,
            aap("inventory.vehicle.request", json!({})),
            "/",
            "anyOf",
            &["Give at least one of vin, stock or vehicle_id; none of them was given."],
            &[],
        ),
        case(
            "AAP request type misspelt",
            AAP_DEALER,
            aap("dealer.info.request-zqA43", json!({})),
            "/type",
            "const",
            &["type must be exactly \"dealer.information.request\"."],
            &["dealer.info.request-zqA43"],
        ),
    ]
}

/// `other`'s members written into `base`, recursively.
fn merge(base: &mut Value, other: &Value) {
    if let (Some(b), Some(o)) = (base.as_object_mut(), other.as_object()) {
        for (k, v) in o {
            match b.get_mut(k) {
                Some(existing) if existing.is_object() && v.is_object() => merge(existing, v),
                _ => {
                    b.insert(k.clone(), v.clone());
                }
            }
        }
    }
}

/// The text of `explanation` after `marker`, up to the first of `ends`.
fn after<'a>(explanation: &'a str, marker: &str, ends: &[&str]) -> Option<&'a str> {
    let rest = &explanation[explanation.find(marker)? + marker.len()..];
    let end = ends
        .iter()
        .filter_map(|e| rest.find(e))
        .min()
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The names of "a, b or c".
fn names(list: &str) -> Vec<String> {
    list.replace(" or ", ", ")
        .split(", ")
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .collect()
}

/// The suggested name of "Did you mean 'x'?", if any.
fn suggestion(explanation: &str) -> Option<String> {
    after(explanation, "Did you mean '", &["'"]).map(str::to_owned)
}

/// The JSON pointer of a path as errors write it (`filters.year_max`).
fn pointer_of(path: &str) -> String {
    format!("/{}", path.replace('.', "/"))
}

fn set(args: &mut Value, pointer: &str, value: Value) {
    if pointer == "/" || pointer.is_empty() {
        *args = value;
        return;
    }
    let (parent, name) = pointer.rsplit_once('/').unwrap();
    let parent = if parent.is_empty() {
        &mut *args
    } else {
        args.pointer_mut(parent)
            .unwrap_or_else(|| panic!("no {parent}"))
    };
    match parent {
        Value::Object(map) => {
            map.insert(name.to_owned(), value);
        }
        Value::Array(items) => items[name.parse::<usize>().unwrap()] = value,
        other => panic!("cannot set {pointer} in {other}"),
    }
}

fn object_at<'a>(args: &'a mut Value, pointer: &str) -> &'a mut Map<String, Value> {
    let node = if pointer == "/" {
        args
    } else {
        args.pointer_mut(pointer).unwrap()
    };
    node.as_object_mut().unwrap()
}

/// Apply the correction one field error states, reading only its pointer
/// and its explanation (and, for a selector the caller left out, which
/// vehicle it meant); `Err` with the explanation when it states none.
fn correct(args: &mut Value, error: &Value, unit: &Unit) -> Result<(), String> {
    let at = error["instance_location"].as_str().unwrap();
    let text = error["explanation"].as_str().unwrap();
    let current = |args: &Value| args.pointer(at).cloned();
    let unstated = || format!("no correction is stated in: {text:?}");
    if text.contains("has an unexpected member") {
        let allowed = names(after(text, "allowed members here: ", &["."]).ok_or_else(unstated)?);
        let meant = suggestion(text);
        let object = object_at(args, at);
        let unexpected: Vec<String> = object
            .keys()
            .filter(|k| !allowed.contains(k))
            .cloned()
            .collect();
        for key in unexpected {
            let value = object.remove(&key).unwrap();
            if let Some(meant) = &meant
                && !object.contains_key(meant)
            {
                object.insert(meant.clone(), value);
            }
        }
    } else if text.starts_with("Give ") {
        let listed = names(after(text, " of ", &[";", " in "]).ok_or_else(unstated)?);
        let object = object_at(args, at);
        if text.contains("more than one of them was given") {
            let keep = listed.iter().find(|n| object.contains_key(*n)).cloned();
            object.retain(|k, _| !listed.contains(k) || Some(k) == keep.as_ref());
        } else if !listed.iter().any(|n| object.contains_key(n)) {
            let name = &listed[0];
            let value = match name.as_str() {
                "vehicle_id" => &unit.vehicle_id,
                "vin" => &unit.vin,
                _ => &unit.stock_number,
            };
            object.insert(name.clone(), json!(value));
        }
    } else if text.starts_with("Required property '") {
        let options = names(after(text, "it must be one of: ", &["."]).ok_or_else(unstated)?);
        set(args, at, json!(options[0]));
    } else if text.contains("must be one of: ") {
        let options =
            names(after(text, "must be one of: ", &[".", " Did you mean"]).ok_or_else(unstated)?);
        let pick = suggestion(text).unwrap_or_else(|| options[0].clone());
        set(args, at, json!(pick));
    } else if let Some(literal) = after(text, "must be exactly ", &[]) {
        let literal: Value =
            serde_json::from_str(literal.trim_end_matches('.')).map_err(|_| unstated())?;
        set(args, at, literal);
    } else if text.contains("must be a whole number written without a decimal point") {
        let whole = current(args).and_then(|v| v.as_f64()).unwrap();
        set(args, at, json!(whole.trunc() as i64));
    } else if let Some(bound) = after(text, "must be at most ", &[" ", "."])
        .or_else(|| after(text, "must be at least ", &[" ", "."]))
        .filter(|b| b.parse::<i64>().is_ok())
        .filter(|_| !text.contains("characters long"))
    {
        set(
            args,
            at,
            json!(bound.parse::<i64>().map_err(|_| unstated())?),
        );
    } else if let Some(n) = after(text, "must be at most ", &[" characters long"]) {
        let n: usize = n.parse().map_err(|_| unstated())?;
        let s: String = current(args)
            .unwrap()
            .as_str()
            .unwrap()
            .chars()
            .take(n)
            .collect();
        set(args, at, json!(s));
    } else if text.contains("must not list the same value twice") {
        let mut seen = Vec::new();
        for v in current(args).unwrap().as_array().unwrap() {
            if !seen.contains(v) {
                seen.push(v.clone());
            }
        }
        set(args, at, Value::Array(seen));
    } else if text.contains("must be a list") {
        let value = current(args).unwrap();
        set(args, at, json!([value]));
    } else if text.contains("must be true or false") {
        set(args, at, json!(true));
    } else if let Some(max) = after(text, "must not be greater than ", &[":", " ("]) {
        // A reversed range: swap the two bounds.
        let min_value = current(args).unwrap();
        let max_pointer = pointer_of(max);
        let max_value = args.pointer(&max_pointer).cloned().ok_or_else(unstated)?;
        set(args, at, max_value);
        set(args, &max_pointer, min_value);
    } else if let Some(other) = after(text, "must be the currency of ", &[":"]) {
        let currency = args
            .pointer(&format!("{}/currency", pointer_of(other)))
            .cloned()
            .ok_or_else(unstated)?;
        set(args, at, currency);
    } else if let Some(example) = after(text, "such as ", &[" ", ",", ")"]) {
        set(args, at, json!(example.trim_end_matches(['.', ':'])));
    } else {
        return Err(format!("no correction is stated in: {text:?}"));
    }
    Ok(())
}

/// Every error object validates against its published definition.
fn error_validator(definition: &str) -> jsonschema::Validator {
    let catalog = gateway::catalog::Catalog::load().unwrap();
    let schema = gateway::catalog::bundle_reference(&catalog.schema_documents, definition).unwrap();
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap()
}

#[tokio::test]
async fn every_wrong_call_is_answered_with_its_correction_and_the_corrected_call_succeeds() {
    let app = common::spawn().await;
    let unit = unit(&app).await;
    let dap_error = error_validator("error.schema.json#/$defs/error");
    let aap_error = error_validator("aap-common.schema.json#/$defs/aapError");
    let cases = cases(&unit);
    assert!(cases.len() >= 30, "{} cases", cases.len());
    let tools: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.tool).collect();
    let catalog = gateway::catalog::Catalog::load().unwrap();
    for tool in &catalog.tools {
        assert!(
            tools.contains(tool.name.as_str()),
            "no case for {}",
            tool.name
        );
    }
    let mut failures = Vec::new();
    for case in cases {
        let (is_error, sc, raw) = call(&app, case.tool, &case.args).await;
        let label = format!("{} ({})", case.what, case.tool);
        if !is_error {
            failures.push(format!("{label}: not refused: {raw}"));
            continue;
        }
        let validator = if is_aap(case.tool) {
            &aap_error
        } else {
            &dap_error
        };
        if !validator.is_valid(&sc) {
            failures.push(format!("{label}: the error object breaks its schema: {sc}"));
        }
        let dap_code = if is_aap(case.tool) {
            &sc["details"]["dap_code"]
        } else {
            &sc["code"]
        };
        if dap_code != "dealeragent.validation.invalid" {
            failures.push(format!("{label}: not a validation error: {sc}"));
            continue;
        }
        for secret in &case.secrets {
            if raw.contains(secret.as_str()) {
                failures.push(format!("{label}: the input {secret:?} is echoed: {raw}"));
            }
        }
        let errors = sc["details"]["field_errors"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let Some(error) = errors
            .iter()
            .find(|e| e["instance_location"] == case.pointer && e["keyword"] == case.keyword)
        else {
            failures.push(format!(
                "{label}: no {} error at {}: {errors:?}",
                case.keyword, case.pointer
            ));
            continue;
        };
        let explanation = error["explanation"].as_str().unwrap_or_default();
        for words in &case.words {
            if !explanation.contains(words) {
                failures.push(format!("{label}: {explanation:?} does not say {words:?}"));
            }
        }
        // The correction the errors state, applied.
        let mut corrected = case.args.clone();
        let stated: Result<Vec<()>, String> = errors
            .iter()
            .map(|e| correct(&mut corrected, e, &unit))
            .collect();
        if let Err(why) = stated {
            failures.push(format!("{label}: {why}"));
            continue;
        }
        let (still_error, sc, _) = call(&app, case.tool, &corrected).await;
        if still_error {
            failures.push(format!(
                "{label}: the corrected call {corrected} still fails: {sc}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} problem(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
