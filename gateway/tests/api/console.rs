//! The rooftop manager's console (issue 14, docs/console.md) over real
//! HTTP against the bundled demo: sign-in with good, bad and scope-less
//! tokens, the cookie's attributes, CSRF (Origin), isolation by URL (a
//! foreign rooftop or vehicle gets the same 404 page as an absent one), each
//! page showing what the tools answer for the same grant, sign-out and
//! revocation ending the session.

use chrono::{TimeDelta, Utc};
use gateway::auth::RooftopScope;
use gateway::auth::api_token::{self, SCOPE_INVENTORY_READ, SCOPE_PRICING_READ, TokenRequest};
use serde_json::{Value, json};

use crate::common::{self, TestApp};

const ORG: &str = "org.lakeshore-auto-group";
const CHICAGO: &str = "roof.lakeshore-chicago";
const GRAND_RAPIDS: &str = "roof.lakeshore-grand-rapids";
const CONSOLE: &str = "dealergateway:console:read";

/// A token made by the same function `dealer-gateway token create` calls,
/// with the catalog's scope model (profile scopes plus its gateway
/// scopes, where the console scope lives).
async fn make_token(app: &TestApp, rooftops: RooftopScope, scopes: &[&str]) -> (String, String) {
    let store = gateway::store::open(&app.database_url)
        .await
        .expect("store");
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let mut known = api_token::known_scopes(&catalog);
    known.extend(catalog.gateway_scopes.iter().map(|s| s.scope.clone()));
    let now = Utc::now();
    let request = TokenRequest {
        subject: "manager:chicago".to_owned(),
        organization_id: ORG.to_owned(),
        rooftops,
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        purpose: "console test".to_owned(),
        expires_at: now + TimeDelta::days(2),
    };
    let issued = api_token::create(store.as_ref(), &request, &known, now)
        .await
        .expect("token created");
    (issued.token, issued.token_id)
}

fn chicago() -> RooftopScope {
    RooftopScope::Rooftops([CHICAGO.to_owned()].into())
}

const ALL: [&str; 3] = [CONSOLE, SCOPE_INVENTORY_READ, SCOPE_PRICING_READ];

/// An HTTP client that shows redirects instead of following them and keeps
/// no cookies (the tests send the cookie themselves).
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

struct Page {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

async fn get(app: &TestApp, path: &str, cookie: Option<&str>) -> Page {
    let mut req = client().get(format!("{}{path}", app.base()));
    if let Some(c) = cookie {
        req = req.header("cookie", format!("dgw_console={c}"));
    }
    let resp = req.send().await.expect("request sent");
    Page {
        status: resp.status().as_u16(),
        headers: resp.headers().clone(),
        body: resp.text().await.expect("body"),
    }
}

async fn post_form(
    app: &TestApp,
    path: &str,
    origin: Option<&str>,
    cookie: Option<&str>,
    form: &[(&str, &str)],
) -> Page {
    let body = form
        .iter()
        .map(|(k, v)| format!("{}={}", url_encode(k), url_encode(v)))
        .collect::<Vec<_>>()
        .join("&");
    let mut req = client()
        .post(format!("{}{path}", app.base()))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body);
    if let Some(o) = origin {
        req = req.header("origin", o);
    }
    if let Some(c) = cookie {
        req = req.header("cookie", format!("dgw_console={c}"));
    }
    let resp = req.send().await.expect("request sent");
    Page {
        status: resp.status().as_u16(),
        headers: resp.headers().clone(),
        body: resp.text().await.expect("body"),
    }
}

/// `application/x-www-form-urlencoded` value encoding, as a browser does.
fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                char::from(b).to_string()
            }
            b' ' => "+".to_owned(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Sign in; returns the session handle from `Set-Cookie`.
async fn sign_in(app: &TestApp, token: &str) -> String {
    let page = post_form(
        app,
        "/console/sign-in",
        Some(&app.base()),
        None,
        &[("token", token)],
    )
    .await;
    assert_eq!(page.status, 303, "{}", page.body);
    let cookie = set_cookie(&page).expect("a session cookie");
    cookie
        .split(';')
        .next()
        .and_then(|kv| kv.strip_prefix("dgw_console="))
        .expect("cookie value")
        .to_owned()
}

fn set_cookie(page: &Page) -> Option<String> {
    page.headers
        .get("set-cookie")
        .map(|v| v.to_str().expect("ascii").to_owned())
}

/// A tool's structuredContent for `token`, over MCP: what an agent gets.
async fn tool(app: &TestApp, token: &str, name: &str, args: Value) -> Value {
    let body = common::modern_body(1, "tools/call", json!({"name": name, "arguments": args}));
    let auth = format!("Bearer {token}");
    let mut headers = TestApp::modern_headers("tools/call", Some(name));
    headers.push(("authorization", &auth));
    let reply = app.post_raw(&headers, body.to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    reply.result()["structuredContent"].clone()
}

/// What maud writes for a text value.
fn escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn money(v: &Value) -> String {
    serde_json::from_value::<pricing::Money>(v.clone())
        .expect("money")
        .to_string()
}

async fn first_vehicle(app: &TestApp, token: &str, rooftop: &str) -> String {
    let found = tool(
        app,
        token,
        "dealeragent.inventory.search",
        json!({"organization_id": ORG, "rooftop_ids": [rooftop], "page": {"limit": 1}}),
    )
    .await;
    found["vehicles"][0]["vehicle_id"]
        .as_str()
        .expect("a vehicle")
        .to_owned()
}

#[tokio::test]
async fn sign_in_with_a_console_token_sets_a_strict_http_only_cookie_that_is_not_the_token() {
    let app = common::spawn().await;
    let (token, _) = make_token(&app, chicago(), &ALL).await;
    let form = get(&app, "/console/", None).await;
    assert_eq!(form.status, 200);
    assert!(
        form.body.contains(r#"action="/console/sign-in""#),
        "{}",
        form.body
    );
    assert!(form.body.contains(r#"type="password""#));

    let page = post_form(
        &app,
        "/console/sign-in",
        Some(&app.base()),
        None,
        &[("token", &token)],
    )
    .await;
    assert_eq!(page.status, 303);
    assert_eq!(page.headers["location"], "/console/");
    let cookie = set_cookie(&page).expect("cookie");
    let attributes: Vec<&str> = cookie.split(';').map(str::trim).collect();
    assert!(attributes.contains(&"HttpOnly"), "{cookie}");
    assert!(attributes.contains(&"SameSite=Strict"), "{cookie}");
    assert!(attributes.contains(&"Path=/console"), "{cookie}");
    assert!(!attributes.contains(&"Secure"), "plain http: {cookie}");
    let max_age: i64 = attributes
        .iter()
        .find_map(|a| a.strip_prefix("Max-Age="))
        .expect("bounded lifetime")
        .parse()
        .unwrap();
    assert!((1..=8 * 3600).contains(&max_age), "{cookie}");
    let handle = attributes[0].strip_prefix("dgw_console=").unwrap();
    assert_eq!(handle.len(), 64);
    assert!(!cookie.contains(&token) && !token.contains(handle));

    let home = get(&app, "/console/", Some(handle)).await;
    assert_eq!(home.status, 200);
    assert!(home.body.contains("Your rooftops"));
    assert!(home.body.contains(CHICAGO));
    // Only the rooftops the grant covers, even published ones.
    assert!(!home.body.contains(GRAND_RAPIDS));
    assert!(!home.body.contains(&token));
    assert_eq!(home.headers["cache-control"], "no-store");
    let csp = home.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'none'") && !csp.contains("script-src"));
}

#[tokio::test]
async fn the_cookie_is_secure_when_the_public_url_is_https() {
    let app = common::spawn_with(|s| s.public_url = Some("https://gw.example.com".into())).await;
    let (token, _) = make_token(&app, chicago(), &ALL).await;
    let page = post_form(
        &app,
        "/console/sign-in",
        Some("https://gw.example.com"),
        None,
        &[("token", &token)],
    )
    .await;
    assert_eq!(page.status, 303, "{}", page.body);
    let cookie = set_cookie(&page).unwrap();
    assert!(cookie.split(';').any(|a| a.trim() == "Secure"), "{cookie}");
}

#[tokio::test]
async fn a_bad_token_and_a_token_without_the_console_scope_open_no_session() {
    let app = common::spawn().await;
    let (no_scope, _) =
        make_token(&app, chicago(), &[SCOPE_INVENTORY_READ, SCOPE_PRICING_READ]).await;
    let forged = format!("{}x", &no_scope[..no_scope.len() - 1]);
    for (bad, status) in [
        (forged.as_str(), 401),
        (
            "dgw_0123456789abcdef_notatokenatallnotatokenatallnotatokenatall0",
            401,
        ),
        ("not-a-token", 401),
        (no_scope.as_str(), 403),
    ] {
        let page = post_form(
            &app,
            "/console/sign-in",
            Some(&app.base()),
            None,
            &[("token", bad)],
        )
        .await;
        assert_eq!(page.status, status, "{bad}: {}", page.body);
        assert!(set_cookie(&page).is_none(), "no session for {bad}");
        assert!(!page.body.contains(bad), "the token is never echoed");
    }
    let scope_page = post_form(
        &app,
        "/console/sign-in",
        Some(&app.base()),
        None,
        &[("token", &no_scope)],
    )
    .await;
    assert!(scope_page.body.contains(CONSOLE), "{}", scope_page.body);
}

#[tokio::test]
async fn sign_in_needs_the_gateways_own_origin() {
    let app = common::spawn().await;
    let (token, _) = make_token(&app, chicago(), &ALL).await;
    for origin in [None, Some("http://evil.example"), Some("null")] {
        let page = post_form(&app, "/console/sign-in", origin, None, &[("token", &token)]).await;
        assert_eq!(page.status, 403, "{origin:?}");
        assert!(set_cookie(&page).is_none());
    }
}

#[tokio::test]
async fn a_one_rooftop_manager_gets_the_same_404_for_another_rooftop_as_for_a_missing_one() {
    let app = common::spawn().await;
    let (token, _) = make_token(&app, chicago(), &ALL).await;
    let (group, _) = make_token(&app, RooftopScope::Group, &ALL).await;
    let foreign_vehicle = first_vehicle(&app, &group, GRAND_RAPIDS).await;
    let own_vehicle = first_vehicle(&app, &token, CHICAGO).await;
    let cookie = sign_in(&app, &token).await;

    let own = get(&app, &format!("/console/rooftop/{CHICAGO}/"), Some(&cookie)).await;
    assert_eq!(own.status, 200, "{}", own.body);
    let missing = get(&app, "/console/rooftop/roof.does-not-exist/", Some(&cookie)).await;
    assert_eq!(missing.status, 404);
    for path in [
        format!("/console/rooftop/{GRAND_RAPIDS}/"),
        format!("/console/rooftop/{GRAND_RAPIDS}/vehicles"),
        format!("/console/rooftop/{GRAND_RAPIDS}/imports"),
        format!("/console/rooftop/{GRAND_RAPIDS}/availability"),
        format!("/console/rooftop/{GRAND_RAPIDS}/vehicle/{foreign_vehicle}"),
        format!("/console/rooftop/{GRAND_RAPIDS}/vehicle/{foreign_vehicle}/what-if"),
        // Another rooftop's vehicle under the manager's own rooftop.
        format!("/console/rooftop/{CHICAGO}/vehicle/{foreign_vehicle}"),
        format!(
            "/console/rooftop/{CHICAGO}/vehicle/{foreign_vehicle}/what-if?payment_mode=cash&country=US"
        ),
        format!("/console/rooftop/{CHICAGO}/vehicle/veh.does-not-exist"),
        "/console/rooftop/roof.does-not-exist/imports".to_owned(),
    ] {
        let page = get(&app, &path, Some(&cookie)).await;
        assert_eq!(page.status, 404, "{path}");
        assert_eq!(page.body, missing.body, "{path}: same page as an absent id");
    }
    let own_page = get(
        &app,
        &format!("/console/rooftop/{CHICAGO}/vehicle/{own_vehicle}"),
        Some(&cookie),
    )
    .await;
    assert_eq!(own_page.status, 200);
    // Signed out, a rooftop page sends to the sign-in page.
    let anonymous = get(&app, &format!("/console/rooftop/{CHICAGO}/"), None).await;
    assert_eq!(anonymous.status, 303);
    assert_eq!(anonymous.headers["location"], "/console/");
}

#[tokio::test]
async fn the_vehicle_page_shows_the_price_and_the_disclosure_text_the_tool_returns() {
    let app = common::spawn().await;
    let (token, _) = make_token(&app, chicago(), &ALL).await;
    let vehicle = first_vehicle(&app, &token, CHICAGO).await;
    let disclosure = tool(
        &app,
        &token,
        "dealeragent.pricing.get_disclosure",
        json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": vehicle}),
    )
    .await;
    let cookie = sign_in(&app, &token).await;
    let page = get(
        &app,
        &format!("/console/rooftop/{CHICAGO}/vehicle/{vehicle}"),
        Some(&cookie),
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    let text = disclosure["disclosure_text"].as_str().unwrap();
    assert!(page.body.contains(&escaped(text)), "disclosure text");
    let price = money(&disclosure["advertised_price"]["amount"]);
    assert!(
        page.body
            .contains(&format!(r#"id="advertised-price">{price}<"#)),
        "advertised price {price}"
    );
    let score = disclosure["disclosure_completeness"]["score"]
        .as_u64()
        .unwrap();
    assert!(
        page.body
            .contains(&format!(r#"id="completeness-score">{score} / 100<"#))
    );
    for charge in disclosure["required_dealer_charges"].as_array().unwrap() {
        assert!(
            page.body
                .contains(&escaped(charge["name"].as_str().unwrap()))
        );
    }
    // The raw structured content, behind a closed toggle.
    assert!(
        page.body
            .contains(r#"<details class="raw" id="raw-disclosure">"#)
    );
    assert!(page.body.contains(&escaped(&format!(
        "\"disclosure_id\": \"{}\"",
        disclosure["disclosure_id"].as_str().unwrap()
    ))));
    assert!(!page.body.contains("<script"));
}

#[tokio::test]
async fn what_if_shows_the_offer_evaluation_of_the_tool() {
    let app = common::spawn().await;
    let (token, _) = make_token(&app, chicago(), &ALL).await;
    let vehicle = first_vehicle(&app, &token, CHICAGO).await;
    let evaluation = tool(
        &app,
        &token,
        "dealergateway.offers.evaluate",
        json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": vehicle, "profile": {
            "payment_mode": "unknown",
            "jurisdiction": {"country": "US", "subdivision": "US-IL"},
            "claims": {"military": true, "residency": false}
        }}),
    )
    .await;
    let cookie = sign_in(&app, &token).await;
    let form = get(
        &app,
        &format!("/console/rooftop/{CHICAGO}/vehicle/{vehicle}/what-if"),
        Some(&cookie),
    )
    .await;
    assert_eq!(form.status, 200);
    assert!(form.body.contains(r#"id="what-if-form""#));
    assert!(!form.body.contains(r#"id="evaluation""#));
    let page = get(
        &app,
        &format!(
            "/console/rooftop/{CHICAGO}/vehicle/{vehicle}/what-if?payment_mode=unknown&country=US&subdivision=US-IL&postal_code=&as_of=&claim_military=true&claim_residency=false&claim_loyalty=unknown"
        ),
        Some(&cookie),
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    let mode = evaluation["winning_payment_mode"].as_str().unwrap();
    assert!(
        page.body.contains(&format!(r#"id="winning-mode">{mode}<"#)),
        "{}",
        page.body
    );
    let net = money(&evaluation["best_stack"]["net_price"]);
    assert!(
        page.body.contains(&format!(r#"id="best-net">{net}<"#)),
        "net {net}"
    );
    for branch in evaluation["branches"].as_array().unwrap() {
        let floor = money(&branch["guaranteed_floor"]["net_price"]);
        assert!(page.body.contains(&floor), "floor {floor}");
        for extra in branch["potential_extra"].as_array().unwrap() {
            assert!(
                page.body
                    .contains(&escaped(extra["summary"].as_str().unwrap()))
            );
        }
    }
    assert!(page.body.contains(r#"id="raw-evaluation""#));
    // An invalid profile is the tool's own validation error.
    let invalid = get(
        &app,
        &format!(
            "/console/rooftop/{CHICAGO}/vehicle/{vehicle}/what-if?payment_mode=barter&country=US"
        ),
        Some(&cookie),
    )
    .await;
    assert_eq!(invalid.status, 200);
    assert!(
        invalid.body.contains("dealeragent.validation.invalid"),
        "{}",
        invalid.body
    );
}

#[tokio::test]
async fn the_overview_list_imports_and_programs_show_what_the_store_and_tools_hold() {
    let app = common::spawn().await;
    let (token, _) = make_token(&app, chicago(), &ALL).await;
    let cookie = sign_in(&app, &token).await;
    // The inventory count: every vehicle has a condition, so the condition
    // facet of an unfiltered search counts them all.
    let all = tool(
        &app,
        &token,
        "dealeragent.inventory.search",
        json!({"organization_id": ORG, "rooftop_ids": [CHICAGO], "page": {"limit": 100}}),
    )
    .await;
    let count: u64 = all["facets"]["condition"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["count"].as_u64().unwrap())
        .sum();
    let overview = get(&app, &format!("/console/rooftop/{CHICAGO}/"), Some(&cookie)).await;
    assert_eq!(overview.status, 200);
    assert!(
        overview
            .body
            .contains(&format!(r#"id="fact-vehicles">{count}<"#)),
        "{}",
        overview.body
    );
    assert!(overview.body.contains(r#"id="score-distribution""#));
    assert!(overview.body.contains(r#"id="fix-ranking""#));
    // The chart's rows add up to the inventory.
    let doc = overview
        .body
        .split(r#"id="score-distribution""#)
        .nth(1)
        .unwrap();
    let table = doc.split("</table>").next().unwrap();
    let total: u64 = table
        .split(r#"<td class="num">"#)
        .skip(1)
        .map(|c| c.split('<').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, count);

    let list = get(
        &app,
        &format!("/console/rooftop/{CHICAGO}/vehicles?make=Honda&sort=advertised_price:asc"),
        Some(&cookie),
    )
    .await;
    assert_eq!(list.status, 200);
    let hondas = tool(
        &app,
        &token,
        "dealeragent.inventory.search",
        json!({"organization_id": ORG, "rooftop_ids": [CHICAGO], "filters": {"make": ["Honda"]},
               "sort": {"field": "advertised_price", "order": "asc"}, "page": {"limit": 25}}),
    )
    .await;
    let ids: Vec<&str> = hondas["vehicles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["vehicle_id"].as_str().unwrap())
        .collect();
    assert!(!ids.is_empty());
    let mut at = 0;
    for id in &ids {
        let pos = list.body[at..]
            .find(&format!("/vehicle/{id}\""))
            .unwrap_or_else(|| panic!("{id} in order"));
        at += pos + 1;
    }
    assert!(list.body.contains(r#"id="next-page""#));
    assert!(!list.body.contains("Ford F-150"), "only the filtered make");

    let imports = get(
        &app,
        &format!("/console/rooftop/{CHICAGO}/imports"),
        Some(&cookie),
    )
    .await;
    assert_eq!(imports.status, 200);
    assert!(imports.body.contains(r#"id="snapshot-history""#));
    assert!(
        imports
            .body
            .contains(&format!("<td class=\"num\">{count}</td>")),
        "{}",
        imports.body
    );

    let programs = get(&app, "/console/programs", Some(&cookie)).await;
    assert_eq!(programs.status, 200);
    let store = gateway::store::open(&app.database_url).await.unwrap();
    let stored = store.current_programs(ORG).await.unwrap();
    assert!(!stored.is_empty());
    for p in &stored {
        assert!(
            programs
                .body
                .contains(&format!("<code>{}</code>", p.program_id)),
            "{}",
            p.program_id
        );
    }
    let availability = get(
        &app,
        &format!("/console/rooftop/{CHICAGO}/availability"),
        Some(&cookie),
    )
    .await;
    assert_eq!(availability.status, 200);
    assert!(availability.body.contains(r#"id="availability-bands""#));
}

#[tokio::test]
async fn sign_out_and_revocation_end_the_session() {
    let app = common::spawn().await;
    let (token, token_id) = make_token(&app, chicago(), &ALL).await;
    let cookie = sign_in(&app, &token).await;
    assert_eq!(
        get(&app, &format!("/console/rooftop/{CHICAGO}/"), Some(&cookie))
            .await
            .status,
        200
    );
    // Sign-out is a POST from the gateway's own origin, like sign-in.
    let foreign = post_form(
        &app,
        "/console/sign-out",
        Some("http://evil.example"),
        Some(&cookie),
        &[],
    )
    .await;
    assert_eq!(foreign.status, 403);
    assert_eq!(get(&app, "/console/", Some(&cookie)).await.status, 200);
    let out = post_form(
        &app,
        "/console/sign-out",
        Some(&app.base()),
        Some(&cookie),
        &[],
    )
    .await;
    assert_eq!(out.status, 303);
    assert!(set_cookie(&out).unwrap().contains("Max-Age=0"));
    let after = get(&app, &format!("/console/rooftop/{CHICAGO}/"), Some(&cookie)).await;
    assert_eq!(after.status, 303, "the old cookie no longer opens a page");
    assert!(
        !get(&app, "/console/", Some(&cookie))
            .await
            .body
            .contains("Your rooftops")
    );

    // A token revoked after sign-in ends its session on the next request.
    let again = sign_in(&app, &token).await;
    assert_eq!(get(&app, "/console/", Some(&again)).await.status, 200);
    let store = gateway::store::open(&app.database_url).await.unwrap();
    store.revoke_api_token(&token_id, Utc::now()).await.unwrap();
    let revoked = get(&app, &format!("/console/rooftop/{CHICAGO}/"), Some(&again)).await;
    assert_eq!(revoked.status, 303);
}

#[tokio::test]
async fn signing_in_again_replaces_the_browsers_previous_session() {
    let app = common::spawn().await;
    let (token, _) = make_token(&app, chicago(), &ALL).await;
    let first = sign_in(&app, &token).await;
    let page = post_form(
        &app,
        "/console/sign-in",
        Some(&app.base()),
        Some(&first),
        &[("token", &token)],
    )
    .await;
    assert_eq!(page.status, 303);
    let second = set_cookie(&page).unwrap();
    assert!(!second.contains(&first), "a new handle");
    assert_eq!(
        get(
            &app,
            &format!("/console/rooftop/{CHICAGO}/imports"),
            Some(&first)
        )
        .await
        .status,
        303,
        "the previous session is gone"
    );
}

#[tokio::test]
async fn console_requests_count_against_the_per_address_limit_of_mcp() {
    let app = common::spawn_with(|s| s.rate_limit_ip_per_minute = 3).await;
    let (token, _) = make_token(&app, chicago(), &ALL).await;
    let cookie = sign_in(&app, &token).await;
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(get(&app, "/console/", Some(&cookie)).await);
    }
    let refused = statuses
        .iter()
        .find(|p| p.status == 429)
        .expect("over the limit");
    assert!(refused.headers.contains_key("retry-after"));
    assert_eq!(statuses[0].status, 200);
}
