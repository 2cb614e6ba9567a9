//! Where managers and operators see the disclosure lint (docs/lint.md,
//! docs/console.md "Fix list", docs/operations.md): the console's law
//! fix list and vehicle verdicts, the CLI `lint rooftop|feed` and its exit
//! codes, and the gauge `dealer_gateway_disclosure_lint_failing_vehicles`,
//! over real HTTP and the real binary.
//!
//! The fixture: a documentation fee left out of the advertised price,
//! classified `documentation_fee`, at three rooftops. In Ontario (CA-ON)
//! the all-in price rule fails it (a rule whose wording is not confirmed:
//! reported, never a failure on its own); in California (US-CA) a
//! documentation fee may stay out (Vehicle Code §11713.1(b)) and nothing
//! fails; in Germany (DE) the PAngV total price must include it, a
//! confirmed failure that every surface ranks first and counts. Putting
//! the fee in the price (the dealers file) flips the German verdict.

use std::collections::BTreeMap;

use chrono::{SubsecRound as _, TimeDelta, Utc};
use gateway::auth::RooftopScope;
use gateway::auth::api_token::{self, SCOPE_INVENTORY_READ, SCOPE_PRICING_READ, TokenRequest};
use gateway::store::OrganizationRecord;
use pricing::lint::ChargeClass;
use serde_json::json;

use crate::common::{TestApp, fresh_database, run_cli, spawn_on, test_source, test_vehicle, text};

const ORG: &str = "org.search-motors";
const ONTARIO: &str = "roof.search-south";
const CALIFORNIA: &str = "roof.search-north";
const CONSOLE: &str = "dealergateway:console:read";

const GERMANY: &str = "roof.search-private";
/// Ontario's all-in price rule (unconfirmed in the shipped catalogue).
const ON_ALL_IN: &str = "CA-ON-OREG-333-08-36-ALL-IN";
/// California's advertised-price rule that lets a documentation fee out.
const CA_11713_B: &str = "US-CA-VC-11713.1-B";
/// Germany's total price rule (PAngV §3), confirmed.
const DE_TOTAL: &str = "DE-PANGV-3-GESAMTPREIS";

/// The rule of the shipped catalogue, which the assertions below read
/// (whether it is confirmed decides where it is listed and what it counts).
fn rule(id: &str) -> &'static pricing::lint::Rule {
    pricing::lint::catalogue()
        .rules
        .iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("{id} is not in the catalogue"))
}

fn doc_fee(currency: &str, minor: i64, included: bool) -> gateway::store::RooftopPricing {
    let charge = json!({
        "charge_id": "doc-fee", "name": "Documentation fee",
        "amount": {"amount_minor": minor, "currency": currency}, "payee": "dealer",
        "included_in_advertised_price": included, "required": true,
        "taxable_status": "jurisdiction_dependent",
    });
    gateway::store::RooftopPricing {
        required_dealer_charges: vec![serde_json::from_value(charge).expect("a charge")],
        charge_classes: [("doc-fee".to_owned(), ChargeClass::DocumentationFee)].into(),
        ..Default::default()
    }
}

/// The search fixture's organization, its north rooftop moved to
/// Sacramento and its private one to Berlin, each rooftop charging the
/// fee (`included` or not).
fn organizations(included: bool) -> Vec<OrganizationRecord> {
    let now = Utc::now().trunc_subsecs(0);
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/search/dealers.yaml");
    let bytes = std::fs::read(&path).expect("dealers fixture");
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let mut orgs =
        gateway::dealers::parse(&catalog, "dealers.yaml", &bytes, "dealers-file:test", now)
            .unwrap_or_else(|e| panic!("{e}"));
    for org in &mut orgs {
        for rooftop in &mut org.rooftops {
            if rooftop.rooftop_id == ONTARIO {
                rooftop.settings.pricing = doc_fee("CAD", 49_900, included);
            }
            if rooftop.rooftop_id == CALIFORNIA {
                rooftop.dap.address.locality = "Sacramento".into();
                rooftop.dap.address.region = Some("CA".into());
                rooftop.dap.address.postal_code = Some("95814".into());
                // Within the documentation fee cap of Vehicle Code §4456.5.
                rooftop.settings.pricing = doc_fee("USD", 8_500, included);
            }
            if rooftop.rooftop_id == GERMANY {
                rooftop.dap.address.locality = "Berlin".into();
                rooftop.dap.address.region = None;
                rooftop.dap.address.postal_code = Some("10115".into());
                rooftop.dap.address.country = "DE".into();
                rooftop.dap.timezone = "Europe/Berlin".into();
                rooftop.settings.currency = "EUR".into();
                rooftop.settings.odometer_unit = "km".into();
                rooftop.settings.pricing = doc_fee("EUR", 29_900, included);
                rooftop.settings.pricing.advertised_prices_include_vat = Some(true);
            }
        }
    }
    orgs
}

/// A store with the organization and two used vehicles per rooftop.
async fn store_with_inventory() -> (std::path::PathBuf, String) {
    let now = Utc::now().trunc_subsecs(0);
    let (dir, url) = fresh_database().await;
    let store = gateway::store::open(&url).await.expect("store opens");
    store
        .upsert_organizations(&organizations(false))
        .await
        .expect("dealers imported");
    for (rooftop, prefix, currency) in [
        (ONTARIO, "2STHX", pricing::Currency::CAD),
        (CALIFORNIA, "1NRTH", pricing::Currency::USD),
        (GERMANY, "3PRVT", pricing::Currency::EUR),
    ] {
        let vehicles: Vec<_> = (1..=2)
            .map(|n| {
                let mut v =
                    test_vehicle(ORG, rooftop, &format!("veh.{rooftop}.{n}"), prefix, n, now);
                v.advertised_price = pricing::Money::from_minor(2_999_500, currency);
                v.government_charges_status = Some("not_applicable".into());
                v
            })
            .collect();
        store
            .create_snapshot(
                ORG,
                rooftop,
                &test_source(&format!("{rooftop}.csv"), now),
                &vehicles,
            )
            .await
            .expect("snapshot created");
    }
    store.close().await;
    (dir, url)
}

async fn console_token(app: &TestApp, scopes: &[&str]) -> String {
    let store = gateway::store::open(&app.database_url)
        .await
        .expect("store");
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let mut known = api_token::known_scopes(&catalog);
    known.extend(catalog.gateway_scopes.iter().map(|s| s.scope.clone()));
    let now = Utc::now();
    let request = TokenRequest {
        subject: "manager:search".to_owned(),
        organization_id: ORG.to_owned(),
        rooftops: RooftopScope::Group,
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        purpose: "lint surfaces test".to_owned(),
        expires_at: now + TimeDelta::days(1),
    };
    api_token::create(store.as_ref(), &request, &known, now)
        .await
        .expect("token created")
        .token
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

async fn sign_in(app: &TestApp, token: &str) -> String {
    let resp = client()
        .post(format!("{}/console/sign-in", app.base()))
        .header("origin", app.base())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={}", form_encode(token)))
        .send()
        .await
        .expect("sign in");
    assert_eq!(resp.status().as_u16(), 303);
    resp.headers()["set-cookie"]
        .to_str()
        .expect("ascii")
        .split(';')
        .next()
        .and_then(|kv| kv.strip_prefix("dgw_console="))
        .expect("cookie")
        .to_owned()
}

/// `application/x-www-form-urlencoded`, as a browser writes a value.
fn form_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn page(app: &TestApp, cookie: &str, path: &str) -> (u16, String) {
    let resp = client()
        .get(format!("{}{path}", app.base()))
        .header("cookie", format!("dgw_console={cookie}"))
        .send()
        .await
        .expect("page");
    (resp.status().as_u16(), resp.text().await.expect("body"))
}

/// The inner HTML of the element with `id` (up to its table's end).
fn table<'h>(html: &'h str, id: &str) -> Option<&'h str> {
    let start = html.find(&format!("id=\"{id}\""))?;
    let end = html[start..].find("</table>")?;
    Some(&html[start..start + end])
}

/// The row of `table` that names `rule`.
fn row<'h>(table: &'h str, rule: &str) -> &'h str {
    table
        .split("<tr")
        .find(|r| r.contains(&format!("<code>{rule}</code>")))
        .unwrap_or_else(|| panic!("{rule} not in {table}"))
}

#[tokio::test]
async fn the_overview_puts_law_failures_first_and_the_vehicle_page_gives_each_verdict() {
    let (dir, url) = store_with_inventory().await;
    let app = spawn_on(dir, url, |s| s.no_demo = true).await;
    let token = console_token(&app, &[CONSOLE, SCOPE_INVENTORY_READ, SCOPE_PRICING_READ]).await;
    let cookie = sign_in(&app, &token).await;

    // Germany: the confirmed failure, first, with its citation, count and fix.
    let (status, germany) = page(&app, &cookie, &format!("/console/rooftop/{GERMANY}/")).await;
    assert_eq!(status, 200, "{germany}");
    let law = germany.find("id=\"lint\"").expect("the law section");
    let completeness = germany
        .find("id=\"fixes\"")
        .expect("the completeness fixes");
    assert!(law < completeness, "law failures come first");
    assert!(germany.contains("not legal advice"), "{germany}");
    assert!(
        germany.contains("id=\"lint-failing-vehicles\">2<"),
        "{germany}"
    );
    let fixes = table(&germany, "lint-fixes").expect("a law fix list");
    let first = fixes.split("<tbody>").nth(1).expect("rows");
    let de_total = row(first, DE_TOTAL);
    assert!(
        first.find(DE_TOTAL) < first.find("</tr>"),
        "ranked first: {fixes}"
    );
    assert!(de_total.contains("<td class=\"num\">2</td>"), "{de_total}");
    assert!(
        de_total.contains(&escaped(&rule(DE_TOTAL).citation)),
        "{de_total}"
    );
    assert!(de_total.contains("Fix: "), "{de_total}");
    assert!(de_total.contains("P0001"), "an example vehicle: {de_total}");

    // Ontario: the all-in rule fails both vehicles, listed where its
    // confirmation puts it.
    let (_, ontario) = page(&app, &cookie, &format!("/console/rooftop/{ONTARIO}/")).await;
    let listed = if rule(ON_ALL_IN).confirmed {
        "lint-fixes"
    } else {
        "lint-unconfirmed"
    };
    let on = row(table(&ontario, listed).expect("listed"), ON_ALL_IN);
    assert!(on.contains("<td class=\"num\">2</td>"), "{on}");

    // California lets the fee stay out: no confirmed failure there.
    let (_, california) = page(&app, &cookie, &format!("/console/rooftop/{CALIFORNIA}/")).await;
    assert!(
        california.contains("id=\"lint-no-failures\""),
        "{california}"
    );
    assert!(table(&california, "lint-fixes").is_none(), "{california}");

    // The vehicle pages: each rule with its verdict, reason and fix.
    for (rooftop, id, verdict) in [
        (GERMANY, DE_TOTAL, "verdict-fail"),
        (ONTARIO, ON_ALL_IN, "verdict-fail"),
        (CALIFORNIA, CA_11713_B, "verdict-pass"),
    ] {
        let (status, vehicle) = page(
            &app,
            &cookie,
            &format!("/console/rooftop/{rooftop}/vehicle/veh.{rooftop}.1"),
        )
        .await;
        assert_eq!(status, 200, "{vehicle}");
        let r = row(table(&vehicle, "lint-rules").expect("the rules"), id);
        assert!(r.contains(verdict), "{rooftop}: {r}");
    }

    // Without the pricing scope: the scope error, no lint.
    let token = console_token(&app, &[CONSOLE, SCOPE_INVENTORY_READ]).await;
    let cookie = sign_in(&app, &token).await;
    let (status, scoped) = page(&app, &cookie, &format!("/console/rooftop/{GERMANY}/")).await;
    assert_eq!(status, 200);
    assert!(
        scoped.contains("the disclosure lint need the scope"),
        "{scoped}"
    );
    assert!(!scoped.contains("id=\"lint\""), "{scoped}");
}

/// What maud writes for a text value.
fn escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The gauge's samples by (rooftop, rule).
async fn failing_gauge(app: &TestApp) -> BTreeMap<(String, String), f64> {
    let addr = app.metrics_addr.expect("a metrics listener");
    let text = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .expect("scrape")
        .text()
        .await
        .expect("text");
    assert!(
        text.contains("# HELP dealer_gateway_disclosure_lint_failing_vehicles ")
            || !text.contains("dealer_gateway_disclosure_lint_failing_vehicles{"),
        "{text}"
    );
    text.lines()
        .filter_map(|l| l.strip_prefix("dealer_gateway_disclosure_lint_failing_vehicles{"))
        .map(|l| {
            let (labels, value) = l.split_once("} ").expect("a sample");
            let get = |k: &str| {
                labels
                    .split(',')
                    .find_map(|kv| kv.strip_prefix(&format!("{k}=\"")))
                    .map(|v| v.trim_end_matches('"').to_owned())
                    .expect("label")
            };
            (
                (get("rooftop_id"), get("rule")),
                value.parse::<f64>().expect("value"),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_metric_counts_failing_vehicles_per_rule_and_drops_to_zero_when_fixed() {
    let (dir, url) = store_with_inventory().await;
    let app = spawn_on(dir, url.clone(), |s| {
        s.no_demo = true;
        s.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
        s.directory_refresh_seconds = 1;
    })
    .await;
    let key = |rooftop: &str, rule: &str| (rooftop.to_owned(), rule.to_owned());
    // A scrape never waits for the lint: the counts follow in the background.
    let counted = crate::common::poll_until(std::time::Duration::from_secs(20), || async {
        let g = failing_gauge(&app).await;
        g.contains_key(&key(GERMANY, DE_TOTAL)) && g.contains_key(&key(CALIFORNIA, CA_11713_B))
    })
    .await;
    let gauge = failing_gauge(&app).await;
    assert!(counted, "{gauge:?}");
    assert_eq!(gauge.get(&key(GERMANY, DE_TOTAL)), Some(&2.0), "{gauge:?}");
    // Only confirmed rules are counted; every one that applies has a
    // series, 0 included.
    assert_eq!(
        gauge.get(&key(CALIFORNIA, CA_11713_B)),
        Some(&0.0),
        "{gauge:?}"
    );
    assert_eq!(
        gauge.get(&key(ONTARIO, ON_ALL_IN)),
        rule(ON_ALL_IN).confirmed.then_some(&2.0),
        "{gauge:?}"
    );
    assert!(
        gauge
            .iter()
            .filter(|((r, _), _)| r == CALIFORNIA)
            .all(|(_, v)| *v == 0.0),
        "{gauge:?}"
    );
    // Fix it in the dealers file: the fee is now in the price.
    let store = gateway::store::open(&url).await.expect("store");
    store
        .upsert_organizations(&organizations(true))
        .await
        .expect("fixed");
    store.close().await;
    let fixed = crate::common::poll_until(std::time::Duration::from_secs(20), || async {
        failing_gauge(&app).await.get(&key(GERMANY, DE_TOTAL)) == Some(&0.0)
    })
    .await;
    assert!(fixed, "{:?}", failing_gauge(&app).await);
}

#[tokio::test]
async fn cli_lint_rooftop_and_feed_exit_1_on_a_confirmed_failure_and_2_on_bad_input() {
    let (dir, url) = store_with_inventory().await;
    let lint = |rooftop: &str, extra: &[&str]| {
        let mut args = vec![
            "lint",
            "rooftop",
            "--organization",
            ORG,
            "--rooftop",
            rooftop,
        ];
        args.extend_from_slice(extra);
        run_cli(&url, &args)
    };
    let out = lint(GERMANY, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stdout.contains("not legal advice"), "{stdout}");
    assert!(
        stdout.contains(&format!("{ORG}/{GERMANY} for a buyer in DE")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("FAIL               {DE_TOTAL}  2 fail")),
        "{stdout}"
    );
    assert!(stdout.contains(&rule(DE_TOTAL).citation), "{stdout}");
    assert!(stdout.contains("== Failing vehicles =="), "{stdout}");
    assert!(
        stdout.contains("  stock P0001  VIN 3PRVT000000000001  "),
        "{stdout}"
    );
    // Ontario: the all-in rule fails; exit 1 only if it is confirmed.
    let out = lint(ONTARIO, &[]);
    let confirmed = rule(ON_ALL_IN).confirmed;
    assert_eq!(
        out.status.code(),
        Some(i32::from(confirmed)),
        "{}",
        text(&out)
    );
    let word = if confirmed {
        "FAIL              "
    } else {
        "fail (unconfirmed)"
    };
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("{word} {ON_ALL_IN}  2 fail")),
        "{}",
        text(&out)
    );
    // California: the fee may stay out; nothing confirmed fails.
    let out = lint(CALIFORNIA, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&format!("pass               {CA_11713_B}  0 fail")),
        "{}",
        text(&out)
    );
    // The same California rooftop for a buyer in Germany: Germany's rules.
    let out = lint(CALIFORNIA, &["--jurisdiction", "de", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["vehicles"].as_array().map(Vec::len), Some(2), "{doc}");
    assert_eq!(
        doc["vehicles"][0]["report"]["place"]["country"], "DE",
        "{doc}"
    );
    assert_eq!(
        doc["vehicles"][0]["facts"]["charges"][0]["class"], "documentation_fee",
        "{doc}"
    );
    assert_eq!(doc["summary"]["vehicles"], 2, "{doc}");
    assert_eq!(doc["summary"]["rules"][0]["rule_id"], DE_TOTAL, "{doc}");

    // Bad input: exit 2, before anything is linted.
    for (rooftop, organization, extra) in [
        ("roof.nowhere", ORG, &[][..]),
        (GERMANY, "org.nowhere", &[][..]),
        (GERMANY, ORG, &["--jurisdiction", "Ontario!"][..]),
    ] {
        let mut args = vec![
            "lint",
            "rooftop",
            "--organization",
            organization,
            "--rooftop",
            rooftop,
        ];
        args.extend_from_slice(extra);
        let out = run_cli(&url, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
    }

    // A feed before import: the import's own problems, exit 2.
    let feed = dir.join("berlin.csv");
    let header = "organization_id,rooftop_id,vin,stock_number,year,make,model,trim,condition,odometer_value,odometer_unit,listing_url,observed_at,advertised_price_minor,currency,required_dealer_charges_json,availability_status";
    let observed = Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let row = |price: &str| {
        format!(
            "{ORG},{GERMANY},WVWZZZ1JZXW000001,B1,2022,VW,Golf,Life,used,20000,km,https://berlin.example/inventory/B1,{observed},{price},EUR,,available"
        )
    };
    let args = [
        "lint".to_owned(),
        "feed".to_owned(),
        feed.display().to_string(),
        "--organization".to_owned(),
        ORG.to_owned(),
        "--rooftop".to_owned(),
        GERMANY.to_owned(),
    ];
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    std::fs::write(&feed, format!("{header}\n{}\n", row("abc"))).unwrap();
    let out = run_cli(&url, &argv);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("advertised_price_minor"),
        "{}",
        text(&out)
    );
    assert!(
        text(&out).contains("fix these problems first"),
        "{}",
        text(&out)
    );
    // A good feed: linted with the rooftop's stored settings, nothing written.
    std::fs::write(&feed, format!("{header}\n{}\n", row("2199000"))).unwrap();
    let out = run_cli(&url, &argv);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        stdout.contains(": 1 vehicles, 1 fail a confirmed rule"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  stock B1  VIN WVWZZZ1JZXW000001  "),
        "{stdout}"
    );
    let store = gateway::store::open(&url).await.expect("store");
    let snapshots = store.latest_snapshots().await.expect("snapshots");
    let berlin = snapshots
        .iter()
        .find(|s| s.rooftop_id == GERMANY)
        .expect("snapshot");
    assert_eq!(
        store
            .snapshot_vehicles(&berlin.snapshot_id)
            .await
            .expect("vehicles")
            .len(),
        2,
        "lint feed wrote nothing"
    );
    store.close().await;
}
