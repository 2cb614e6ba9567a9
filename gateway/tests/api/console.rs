//! The rooftop manager's console (docs/console.md) over real
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
    // The page shows the disclosure for a buyer in the rooftop's own
    // jurisdiction (docs/console.md): the tool's answer to that request.
    let disclosure = tool(
        &app,
        &token,
        "dealeragent.pricing.get_disclosure",
        json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": vehicle,
               "jurisdiction": {"country": "US", "subdivision": "US-IL"}}),
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

/// The page's text as a reader sees it: tags dropped, entities decoded.
/// With `without_code`, `<code>` elements (hints and the raw JSON) are
/// dropped first.
fn visible_text(html: &str, without_code: bool) -> String {
    let mut rest = html;
    let mut out = String::new();
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let tail = &rest[open..];
        if without_code && tail.starts_with("<code") {
            let end = tail
                .find("</code>")
                .map_or(tail.len(), |e| e + "</code>".len());
            rest = &tail[end..];
            out.push(' ');
            continue;
        }
        let end = tail.find('>').map_or(tail.len(), |e| e + 1);
        rest = &tail[end..];
        out.push(' ');
    }
    out.push_str(rest);
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// The HTML of the element `<{tag} … id="{id}" …>…</{tag}>` (first one).
fn element<'h>(html: &'h str, tag: &str, id: &str) -> &'h str {
    let marker = format!(r#"id="{id}""#);
    let at = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no element #{id}"));
    let start = html[..at].rfind(&format!("<{tag}")).expect("opening tag");
    let close = format!("</{tag}>");
    let end = html[at..].find(&close).expect("closing tag") + at + close.len();
    &html[start..end]
}

/// The rows (`<tr>…</tr>`) of a table's body.
fn body_rows(table: &str) -> Vec<&str> {
    let body = table.split("<tbody>").nth(1).unwrap_or_default();
    body.split("<tr")
        .skip(1)
        .map(|r| r.split("</tr>").next().unwrap_or_default())
        .collect()
}

/// The visible text of the first cell of `row` whose class list contains
/// `class`.
fn cell(row: &str, class: &str) -> String {
    let marker = format!(r#"class="{class}""#);
    let at = row
        .find(&marker)
        .or_else(|| row.find(&format!(r#" {class}""#)))
        .unwrap_or_else(|| panic!("no .{class} in {row}"));
    let start = row[..at].rfind('<').unwrap();
    let end = row[start..].find("</td>").map_or(row.len(), |e| start + e);
    visible_text(&row[start..end], false).trim().to_owned()
}

/// "+349.00 USD", "\u{2212}1,500.00 USD", "27,849.00 USD" in minor units (USD).
fn usd_minor(text: &str) -> i64 {
    let negative = text.starts_with('\u{2212}') || text.starts_with('-');
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    assert!(text.ends_with(" USD"), "{text}");
    let value: i64 = digits.parse().unwrap_or_else(|_| panic!("{text}"));
    if negative { -value } else { value }
}

/// Chicago's first vehicles matching `filters` (the search tool's order).
async fn vehicles(app: &TestApp, token: &str, rooftop: &str, filters: Value) -> Vec<Value> {
    // Every page: a page ends where the result budget says, even below
    // its limit (docs/inventory.md "Detail and the result budget").
    let mut args = json!({"organization_id": ORG, "rooftop_ids": [rooftop], "filters": filters, "page": {"limit": 100}});
    let mut all = Vec::new();
    loop {
        let found = tool(app, token, "dealeragent.inventory.search", args.clone()).await;
        all.extend(found["vehicles"].as_array().cloned().unwrap_or_default());
        match found["page"]["next_cursor"].as_str() {
            Some(cursor) => args["page"]["cursor"] = json!(cursor),
            None => return all,
        }
    }
}

// Regression: the console asked for every disclosure without a buyer
// jurisdiction, so a rooftop with government-charge estimates for its own
// region (Chicago: US-IL in demo/dealers.yaml) scored 20 points lower on
// every vehicle than an agent passing the buyer's jurisdiction gets, its
// first fix was to configure the estimates it has, and its vehicle page
// said the dealer publishes no amounts.
#[tokio::test]
async fn a_rooftop_with_estimates_for_its_region_is_scored_with_them_and_never_told_to_add_them() {
    let app = common::spawn().await;
    let (token, _) = make_token(&app, chicago(), &ALL).await;
    let cookie = sign_in(&app, &token).await;
    let illinois = json!({"country": "US", "subdivision": "US-IL"});
    // Every vehicle's score is the tool's for a buyer in US-IL, its
    // government charges estimated; without a jurisdiction it is 20 less.
    let all = vehicles(&app, &token, CHICAGO, json!({})).await;
    let mut expected: Vec<u64> = Vec::new();
    let mut scored_90 = None;
    for v in &all {
        let id = v["vehicle_id"].as_str().unwrap();
        let args = json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": id});
        let bare = tool(
            &app,
            &token,
            "dealeragent.pricing.get_disclosure",
            args.clone(),
        )
        .await;
        let mut with = args.clone();
        with["jurisdiction"] = illinois.clone();
        let there = tool(&app, &token, "dealeragent.pricing.get_disclosure", with).await;
        assert_eq!(there["government_charges"]["status"], "estimated", "{id}");
        let (bare_score, score) = (
            bare["disclosure_completeness"]["score"].as_u64().unwrap(),
            there["disclosure_completeness"]["score"].as_u64().unwrap(),
        );
        assert_eq!(score, bare_score + 20, "{id}");
        if score == 90 && bare_score == 70 && scored_90.is_none() {
            scored_90 = Some(id.to_owned());
        }
        expected.push(score);
    }
    let overview = get(&app, &format!("/console/rooftop/{CHICAGO}/"), Some(&cookie)).await;
    assert_eq!(overview.status, 200);
    let mean = expected.iter().sum::<u64>() / expected.len() as u64;
    assert!(
        overview
            .body
            .contains(&format!(r#"id="mean-score">{mean}<"#)),
        "mean {mean}: {}",
        overview.body
    );
    let assumed = visible_text(element(&overview.body, "p", "assumed-jurisdiction"), false);
    assert!(assumed.contains("US-IL"), "{assumed}");
    // No fix asks for what is configured.
    assert!(
        !overview.body.contains("Government charges classified"),
        "{}",
        overview.body
    );
    assert!(!overview.body.contains("government_charge_estimates"));

    // A vehicle that agents asking for US-IL score 90 (and 70 without).
    let vehicle = scored_90.expect("a Chicago vehicle scoring 90 with its estimates");
    let page = get(
        &app,
        &format!("/console/rooftop/{CHICAGO}/vehicle/{vehicle}"),
        Some(&cookie),
    )
    .await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains(r#"id="completeness-score">90 / 100<"#),
        "{}",
        page.body
    );
    let text = visible_text(&page.body, true);
    assert!(!text.contains("no amounts"), "{text}");
    assert!(!text.contains("publishes no"), "{text}");
    // The estimate's total (165.00 + 151.00 USD in demo/dealers.yaml).
    assert_eq!(
        visible_text(element(&page.body, "strong", "government-total"), false).trim(),
        "316.00 USD"
    );
    assert!(
        visible_text(element(&page.body, "p", "assumed-jurisdiction"), false).contains("US-IL")
    );

    // A rooftop without estimates (Grand Rapids, Michigan) is told to add
    // one for its own jurisdiction, by name.
    let (group, _) = make_token(&app, RooftopScope::Group, &ALL).await;
    let group_cookie = sign_in(&app, &group).await;
    let michigan = get(
        &app,
        &format!("/console/rooftop/{GRAND_RAPIDS}/"),
        Some(&group_cookie),
    )
    .await;
    let fixes = visible_text(element(&michigan.body, "table", "fix-ranking"), false);
    assert!(
        fixes.contains("Configure gateway_settings.pricing.government_charge_estimates for US-MI"),
        "{fixes}"
    );
}

// Regression: the what-if page showed each stack as program ids
// (`lk-customer-cash@3, …`) with no names, amounts or reasons a program is
// out, and no price waterfall.
#[tokio::test]
async fn what_if_names_every_program_says_why_it_is_out_and_draws_a_waterfall_that_adds_up() {
    let app = common::spawn().await;
    let (token, _) = make_token(&app, chicago(), &ALL).await;
    let cookie = sign_in(&app, &token).await;
    let new = vehicles(&app, &token, CHICAGO, json!({"condition": ["new"]})).await;
    let vehicle = new[0]["vehicle_id"].as_str().unwrap().to_owned();
    let profile = json!({
        "payment_mode": "unknown",
        "jurisdiction": {"country": "US", "subdivision": "US-IL"},
        "claims": {"military": true}
    });
    // The full evaluation, as the what-if page asks for it (every branch's
    // per-program reports; docs/pricing.md section 2, "Output").
    let evaluation = tool(
        &app,
        &token,
        "dealergateway.offers.evaluate",
        json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": vehicle, "profile": profile, "detail": "full"}),
    )
    .await;
    let disclosure = tool(
        &app,
        &token,
        "dealeragent.pricing.get_disclosure",
        json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": vehicle,
               "jurisdiction": {"country": "US", "subdivision": "US-IL"}}),
    )
    .await;
    let page = get(
        &app,
        &format!(
            "/console/rooftop/{CHICAGO}/vehicle/{vehicle}/what-if?payment_mode=unknown&country=US&subdivision=US-IL&postal_code=&as_of=&claim_military=true"
        ),
        Some(&cookie),
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(!visible_text(element(&page.body, "table", "branches"), true).contains('@'));
    let mut combination = 0;
    for branch in evaluation["branches"].as_array().unwrap() {
        let mode = branch["payment_mode"].as_str().unwrap();
        let in_best: Vec<&str> = branch["best_stack"]["program_ids"]
            .as_array()
            .unwrap()
            .iter()
            .chain(branch["best_stack"]["surcharge_ids"].as_array().unwrap())
            .map(|r| r["program_id"].as_str().unwrap())
            .collect();
        let table = element(&page.body, "table", &format!("programs-{mode}"));
        let rows = body_rows(table);
        let reports = branch["programs"].as_array().unwrap();
        assert_eq!(rows.len(), reports.len(), "{mode}: one row per program");
        for (row, report) in rows.iter().zip(reports) {
            let id = report["program_id"].as_str().unwrap();
            let name = report["name"].as_str().unwrap();
            let text = visible_text(row, true);
            assert!(
                text.contains(&escaped(name)) || text.contains(name),
                "{mode} {id}: {text}"
            );
            if let Some(amount) = report["amount"].get("amount") {
                assert!(text.contains(&money(amount)), "{mode} {id} amount: {text}");
            }
            let standing = cell(row, "standing");
            if in_best.contains(&id) {
                assert!(
                    standing.starts_with("in the best stack") || standing.starts_with("added"),
                    "{mode} {id}: {standing}"
                );
                continue;
            }
            assert!(standing.starts_with("out"), "{mode} {id}: {standing}");
            match (
                report["applicability"]["status"].as_str().unwrap(),
                report["eligibility"]["status"].as_str().unwrap(),
            ) {
                ("not_applicable", _) => {
                    assert!(text.contains("does not apply: "), "{mode} {id}: {text}");
                    assert_eq!(standing, "out: it does not apply");
                }
                (_, "ineligible") => assert!(text.contains("not eligible"), "{text}"),
                (_, "unknown") => {
                    assert!(standing.starts_with("out until decided by "), "{standing}");
                    // What would decide it, in the program's own words.
                    let need = &report["eligibility"]["needs"][0]["evidence"];
                    assert!(
                        standing.contains(need.as_str().unwrap()),
                        "{standing} names {need}"
                    );
                }
                _ => {
                    if standing.contains("rejected by a combination rule") {
                        combination += 1;
                    }
                }
            }
        }
        // The waterfall: every counted line adds up to the net, which is
        // the tool's net price plus the required dealer charges that are
        // not in the advertised price.
        let waterfall = element(&page.body, "table", &format!("waterfall-{mode}"));
        let rows = body_rows(waterfall);
        let mut sum = 0;
        let mut net = None;
        for row in &rows {
            if row.contains(r#"class="step net""#) {
                net = Some(usd_minor(&cell(row, "num total")));
            } else {
                sum += usd_minor(&cell(row, "num delta"));
            }
        }
        let charges: i64 = disclosure["required_dealer_charges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["included_in_advertised_price"] != json!(true))
            .map(|c| c["amount"]["amount_minor"].as_i64().unwrap())
            .sum();
        let tool_net = branch["best_stack"]["net_price"]["amount_minor"]
            .as_i64()
            .unwrap();
        assert_eq!(net, Some(sum), "{mode}: the lines add up to the net");
        assert_eq!(sum, tool_net + charges, "{mode}");
        // One line per discount of the best stack, by name.
        let text = visible_text(waterfall, true);
        for r in branch["best_stack"]["program_ids"].as_array().unwrap() {
            let report = reports
                .iter()
                .find(|p| p["program_id"] == r["program_id"])
                .unwrap();
            assert!(
                text.contains(report["name"].as_str().unwrap()),
                "{mode}: {text}"
            );
        }
    }
    // The demo's customer cash and subsidized APR exclude each other: one
    // is out of a stack for that reason, said so.
    assert!(combination > 0, "{}", page.body);
}

// Regression: the programs page showed neither caps, rule text,
// declarative limits, criteria nor withdrawn revisions.
#[tokio::test]
async fn the_programs_page_shows_caps_criteria_limits_rule_text_and_withdrawn_revisions() {
    let app = common::spawn().await;
    let dir = common::temp_dir();
    let file = dir.join("more.yaml");
    std::fs::write(
        &file,
        r#"
programs:
  - program_id: lk-responder
    revision: 1
    name: First responder thanks
    kind: cash
    direction: discount
    amount: {status: percent_off, percent: "10", rounding: half_up}
    cap: {amount_minor: 123400, currency: USD}
    applies_to: {conditions: [new]}
    criteria:
      - {criterion: first_responder, operator: verified, value: true, evidence_status: required, description: "Serving firefighter or paramedic, verified"}
    stacking:
      group: affinity-extra
      combinability: rule_defined
      rule: "stack.len() <= 3 && stack.len() >= 1"
      rule_monotone: true
      limits:
        - {group: affinity-extra, max_programs: 1, max_amount: {amount_minor: 200000, currency: USD}}
  - program_id: lk-responder
    revision: 2
    name: First responder thanks (draft)
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 90000, currency: USD}}
    stacking: {group: affinity-extra, combinability: stackable}
"#,
    )
    .unwrap();
    let file = file.display().to_string();
    let imported = common::run_cli(
        &app.database_url,
        &["import", "programs", &file, "--organization", ORG],
    );
    assert!(imported.status.success(), "{}", common::text(&imported));
    let withdrawn = common::run_cli(
        &app.database_url,
        &[
            "programs",
            "withdraw",
            "--organization",
            ORG,
            "lk-responder",
            "--revision",
            "2",
        ],
    );
    assert!(withdrawn.status.success(), "{}", common::text(&withdrawn));
    let (token, _) = make_token(&app, chicago(), &ALL).await;
    let cookie = sign_in(&app, &token).await;
    let page = get(&app, "/console/programs", Some(&cookie)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let section = element(&page.body, "section", "program-lk-responder");
    let text = visible_text(section, false);
    assert!(text.contains("at most 1,234.00 USD"), "cap: {text}");
    assert!(text.contains("10 % of the advertised price"), "{text}");
    assert!(
        text.contains(
            "first responder is proven (proof required): Serving firefighter or paramedic, verified"
        ),
        "criteria: {text}"
    );
    assert!(
        text.contains(
            "limit: in a stack with this program, at most 1 program of group affinity-extra, and known amounts of group affinity-extra summing to at most 2,000.00 USD"
        ),
        "limit: {text}"
    );
    // The rule's text, escaped, in a <pre>.
    assert!(
        section.contains(
            r#"<pre class="rule" tabindex="0"><code>stack.len() &lt;= 3 &amp;&amp; stack.len() &gt;= 1</code></pre>"#
        ),
        "{section}"
    );
    assert!(text.contains("declared monotone"), "{text}");
    assert!(text.contains("a combination rule decides"), "{text}");
    // The history: revision 2 withdrawn (with when), revision 1 in effect.
    let history = body_rows(element(section, "table", "history-lk-responder"));
    assert_eq!(history.len(), 2);
    let first = visible_text(history[0], false);
    let second = visible_text(history[1], false);
    assert!(first.contains("in effect now"), "{first}");
    assert!(second.contains("withdrawn 20"), "{second}");
    assert!(text.contains("Revision 2 in full"), "{text}");
    // Every demo program is listed, each with its cap or "none".
    let store = gateway::store::open(&app.database_url).await.unwrap();
    for p in store.current_programs(ORG).await.unwrap() {
        let s = element(&page.body, "section", &format!("program-{}", p.program_id));
        match p.doc.get("cap") {
            Some(cap) => {
                assert!(visible_text(s, false).contains(&format!("at most {}", money(cap))))
            }
            None => assert!(s.contains(r#"<dd class="cap">none</dd>"#), "{s}"),
        }
    }
}

// Regression: the manager's pages printed protocol words
// (`generally_available`, `rule_defined`, bands, authorities) as text.
#[tokio::test]
async fn manager_pages_say_protocol_values_in_words_and_keep_the_raw_value_in_code_only() {
    let app = common::spawn().await;
    let (token, _) = make_token(&app, chicago(), &ALL).await;
    let cookie = sign_in(&app, &token).await;
    let vehicle =
        vehicles(&app, &token, CHICAGO, json!({"condition": ["new"]})).await[0]["vehicle_id"]
            .as_str()
            .unwrap()
            .to_owned();
    let raw = [
        "generally_available",
        "rule_defined",
        "best_one",
        "verified_current",
        "recent_authoritative",
        "dealer_asserted",
        "authoritative_dealer_system",
        "not_applicable",
        "percent_off",
        "eligible_subject_to_evidence",
        "jurisdiction_dependent",
        "pending_sale",
        "in_transit",
        "dealer_discount",
        "finance_rate",
    ];
    let mut seen_in_code = Vec::new();
    for path in [
        format!("/console/rooftop/{CHICAGO}/"),
        format!("/console/rooftop/{CHICAGO}/vehicles"),
        format!("/console/rooftop/{CHICAGO}/vehicle/{vehicle}"),
        format!(
            "/console/rooftop/{CHICAGO}/vehicle/{vehicle}/what-if?payment_mode=unknown&country=US&subdivision=US-IL"
        ),
        "/console/programs".to_owned(),
        format!("/console/rooftop/{CHICAGO}/imports"),
        format!("/console/rooftop/{CHICAGO}/availability"),
    ] {
        let page = get(&app, &path, Some(&cookie)).await;
        assert_eq!(page.status, 200, "{path}");
        let text = visible_text(&page.body, true);
        for word in raw {
            assert!(!text.contains(word), "{path}: `{word}` outside code");
            if page.body.contains(word) {
                seen_in_code.push(word);
            }
        }
    }
    // The raw values are still there for a manager searching the docs.
    for word in ["generally_available", "rule_defined", "dealer_asserted"] {
        assert!(seen_in_code.contains(&word), "{word} kept in a code hint");
    }
    let vehicle_page = get(
        &app,
        &format!("/console/rooftop/{CHICAGO}/vehicle/{vehicle}"),
        Some(&cookie),
    )
    .await;
    assert!(
        visible_text(&vehicle_page.body, true).contains("advertised to everyone"),
        "{}",
        vehicle_page.body
    );
    let programs = get(&app, "/console/programs", Some(&cookie)).await;
    assert!(
        programs
            .body
            .contains(r#"a combination rule decides <code class="hint">rule_defined</code>"#)
    );
}

// Regression: `dealer-gateway preview --profile` with a jurisdiction the
// rooftop has estimates for still showed government charges as unknown
// (the disclosure was built without the profile's jurisdiction), and the
// default preview ignored the rooftop's own.
#[tokio::test]
async fn preview_builds_the_disclosure_for_the_profiles_jurisdiction_or_the_rooftops_own() {
    let app = common::spawn().await;
    let (token, _) = make_token(&app, chicago(), &ALL).await;
    let stock = vehicles(&app, &token, CHICAGO, json!({}))
        .await
        .first()
        .and_then(|v| v["stock_number"].as_str().map(str::to_owned))
        .expect("a stock number");
    let dir = common::temp_dir();
    let profile = |name: &str, yaml: &str| {
        let path = dir.join(name);
        std::fs::write(&path, yaml).unwrap();
        path.display().to_string()
    };
    let illinois = profile(
        "il.yaml",
        "payment_mode: cash\njurisdiction: {country: US, subdivision: US-IL}\nclaims: {}\n",
    );
    let michigan = profile(
        "mi.yaml",
        "payment_mode: unknown\njurisdiction: {country: US, subdivision: US-MI}\nclaims: {}\n",
    );
    let preview = |extra: &[&str]| {
        let mut args = vec![
            "preview",
            "--organization",
            ORG,
            "--rooftop",
            CHICAGO,
            "--stock",
            &stock,
        ];
        args.extend_from_slice(extra);
        let out = common::run_cli(&app.database_url, &args);
        assert!(out.status.success(), "{}", common::text(&out));
        common::text(&out)
    };
    let with_profile = preview(&["--profile", &illinois]);
    assert!(
        with_profile.contains("Government charges: estimated, total 316.00 USD"),
        "{with_profile}"
    );
    assert!(
        with_profile.contains("buyer assumed: US-IL (the profile's), payment mode cash"),
        "{with_profile}"
    );
    assert!(!with_profile.contains("government_charges_classified (-20)"));
    let default = preview(&[]);
    assert!(
        default.contains("Government charges: estimated, total 316.00 USD"),
        "{default}"
    );
    assert!(default.contains("buyer assumed: US-IL (the rooftop's own jurisdiction"));
    // A buyer elsewhere: unknown, and the fix names what exists.
    let elsewhere = preview(&["--profile", &michigan]);
    assert!(
        elsewhere.contains("Government charges: unknown"),
        "{elsewhere}"
    );
    assert!(
        elsewhere.contains(
            "fix: gateway_settings.pricing.government_charge_estimates covers US-IL but not US-MI"
        ),
        "{elsewhere}"
    );
}
