//! The console's sessions and sign-in form over real HTTP
//! (docs/console.md "The session", docs/security.md):
//!
//! - a flood of sign-ins with one token replaces only that subject's own
//!   oldest sessions: another organization's manager stays signed in;
//! - a throttled sign-in says when to retry (`Retry-After`);
//! - what the framework would refuse on its own (a wrong method, a body
//!   of another media type, a form without its field, a body too large)
//!   is answered as a console page with the console's headers;
//! - a request naming more than one `dgw_console` cookie is signed out,
//!   and its sign-in is refused (a planted cookie never wins).

use chrono::{TimeDelta, Utc};
use gateway::auth::RooftopScope;
use gateway::auth::api_token::{self, TokenRequest};
use gateway::console::session::{MAX_SESSIONS, MAX_SESSIONS_PER_SUBJECT};

use crate::common::{self, TestApp};

const LAKESHORE: &str = "org.lakeshore-auto-group";
const MAPLECREST: &str = "org.maplecrest-motor-group";
const CONSOLE: &str = "dealergateway:console:read";
const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// A console token of `subject` in `organization`, made by the function
/// `dealer-gateway token create` calls.
async fn console_token(app: &TestApp, organization: &str, subject: &str) -> String {
    let store = gateway::store::open(&app.database_url)
        .await
        .expect("store");
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let mut known = api_token::known_scopes(&catalog);
    known.extend(catalog.gateway_scopes.iter().map(|s| s.scope.clone()));
    let now = Utc::now();
    let request = TokenRequest {
        subject: subject.to_owned(),
        organization_id: organization.to_owned(),
        rooftops: RooftopScope::Group,
        scopes: [CONSOLE.to_owned()].into(),
        purpose: "console sessions test".to_owned(),
        expires_at: now + TimeDelta::days(2),
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

/// `POST /console/sign-in` from the gateway's own origin with `body` as
/// `content_type`, with the `Cookie` header `cookie` when given.
async fn post_sign_in(
    base: &str,
    http: &reqwest::Client,
    content_type: &str,
    body: String,
    cookie: Option<&str>,
) -> reqwest::Response {
    let mut req = http
        .post(format!("{base}/console/sign-in"))
        .header("origin", base)
        .header("content-type", content_type)
        .body(body);
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    req.send().await.expect("request sent")
}

const FORM: &str = "application/x-www-form-urlencoded";

/// Signs in with `token`; the session handle from `Set-Cookie`.
async fn sign_in(base: &str, http: &reqwest::Client, token: &str) -> String {
    let r = post_sign_in(base, http, FORM, format!("token={token}"), None).await;
    assert_eq!(r.status(), 303, "sign-in refused: {:?}", r.headers());
    r.headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .and_then(|kv| kv.strip_prefix("dgw_console="))
        .expect("a session cookie")
        .to_owned()
}

/// Whether the `Cookie` header `cookie` is signed in: the console's home
/// lists rooftops to a signed-in manager and shows the sign-in form
/// otherwise.
async fn signed_in(app: &TestApp, http: &reqwest::Client, cookie: &str) -> bool {
    let r = http
        .get(format!("{}/console/", app.base()))
        .header("cookie", cookie)
        .send()
        .await
        .expect("request sent");
    assert_eq!(r.status(), 200);
    let body = r.text().await.expect("body");
    let signed = body.contains("Your rooftops");
    assert_ne!(
        signed,
        body.contains(r#"action="/console/sign-in""#),
        "{body}"
    );
    signed
}

/// Before, the table held 10,000 sessions across every organization and,
/// full, dropped the one nearest its expiry: the 10,100 sign-ins of one
/// token signed everybody else out. Now they replace only that subject's
/// own oldest sessions.
#[tokio::test]
async fn ten_thousand_sign_ins_with_one_token_leave_another_organizations_manager_signed_in() {
    let app = common::spawn_with(|s| s.rate_limit_ip_per_minute = 1_000_000).await;
    let http = client();
    let maplecrest = console_token(&app, MAPLECREST, "manager:toronto").await;
    let other = sign_in(&app.base(), &http, &maplecrest).await;
    let flooder = console_token(&app, LAKESHORE, "manager:chicago").await;

    let total = MAX_SESSIONS + 100;
    let workers = 4;
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..workers {
        let (base, http, flooder) = (app.base(), http.clone(), flooder.clone());
        tasks.spawn(async move {
            let mut last = String::new();
            for _ in (w..total).step_by(workers) {
                last = sign_in(&base, &http, &flooder).await;
            }
            last
        });
    }
    let mut last_of_each = Vec::new();
    while let Some(done) = tasks.join_next().await {
        last_of_each.push(done.expect("worker"));
    }

    assert!(
        signed_in(&app, &http, &format!("dgw_console={other}")).await,
        "the other organization's manager was signed out"
    );
    // The flood's own: the newest five of its subject stay, every older
    // one is gone.
    let newest: Vec<String> = {
        let mut v = Vec::new();
        for _ in 0..=MAX_SESSIONS_PER_SUBJECT {
            v.push(sign_in(&app.base(), &http, &flooder).await);
        }
        v
    };
    assert!(!signed_in(&app, &http, &format!("dgw_console={}", newest[0])).await);
    for handle in &newest[1..] {
        assert!(signed_in(&app, &http, &format!("dgw_console={handle}")).await);
    }
    for handle in &last_of_each {
        assert!(!signed_in(&app, &http, &format!("dgw_console={handle}")).await);
    }
    assert!(
        signed_in(&app, &http, &format!("dgw_console={other}")).await,
        "the other organization's manager was signed out"
    );
}

/// Before, the 429 of a throttled sign-in said "wait a minute" with no
/// `Retry-After`, which docs/console.md promises.
#[tokio::test]
async fn a_throttled_sign_in_says_when_to_retry() {
    let app = common::spawn_with(|s| s.rate_limit_ip_per_minute = 2).await;
    let http = client();
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let r = post_sign_in(&app.base(), &http, FORM, "token=dgw_wrong".into(), None).await;
        statuses.push((r.status().as_u16(), r.headers().clone()));
    }
    let (status, headers) = &statuses[2];
    assert_eq!(*status, 429, "{statuses:?}");
    let seconds: u64 = headers
        .get("retry-after")
        .expect("Retry-After")
        .to_str()
        .unwrap()
        .parse()
        .expect("delay-seconds");
    assert!((1..=60).contains(&seconds), "{seconds}");
    assert_eq!(headers.get("content-security-policy").unwrap(), CSP);
}

/// Before, axum answered these itself: plain text, no
/// `Content-Security-Policy`, `X-Frame-Options` or `Cache-Control`, and
/// (for a form without its field) the deserializer's words.
#[tokio::test]
async fn what_the_framework_would_refuse_on_sign_in_is_a_console_page_in_the_consoles_headers() {
    let app = common::spawn().await;
    let http = client();
    let base = app.base();
    let cases: Vec<(&str, reqwest::RequestBuilder, u16)> = vec![
        (
            "GET of the sign-in form's address",
            http.get(format!("{base}/console/sign-in")),
            405,
        ),
        (
            "PUT of the sign-out form's address",
            http.put(format!("{base}/console/sign-out"))
                .header("origin", &base),
            405,
        ),
        (
            "a JSON body",
            http.post(format!("{base}/console/sign-in"))
                .header("origin", &base)
                .header("content-type", "application/json")
                .body(r#"{"token":"x"}"#),
            415,
        ),
        (
            "a form without the token field",
            http.post(format!("{base}/console/sign-in"))
                .header("origin", &base)
                .header("content-type", FORM)
                .body("tokn=SECRET-ECHO"),
            400,
        ),
        (
            "a body of 1 MiB",
            http.post(format!("{base}/console/sign-in"))
                .header("origin", &base)
                .header("content-type", FORM)
                .body(format!("token={}", "a".repeat(1 << 20))),
            413,
        ),
    ];
    for (what, request, status) in cases {
        let r = request.send().await.expect("request sent");
        assert_eq!(r.status().as_u16(), status, "{what}");
        let h = r.headers().clone();
        assert_eq!(
            h.get("content-security-policy")
                .map(|v| v.to_str().unwrap()),
            Some(CSP),
            "{what}: {h:?}"
        );
        for (name, value) in [
            ("x-frame-options", "DENY"),
            ("cache-control", "no-store"),
            ("x-content-type-options", "nosniff"),
            ("referrer-policy", "same-origin"),
        ] {
            assert_eq!(
                h.get(name).map(|v| v.to_str().unwrap()),
                Some(value),
                "{what}: {name}"
            );
        }
        assert!(
            h.get("content-type")
                .is_some_and(|v| v.to_str().unwrap().starts_with("text/html")),
            "{what}: {h:?}"
        );
        if status == 405 {
            assert!(h.contains_key("allow"), "{what}: Allow kept");
        }
        let body = r.text().await.unwrap();
        assert!(!body.contains("SECRET-ECHO"), "{what}: echoes the body");
        assert!(body.contains("<h1>"), "{what}: not a console page: {body}");
    }
}

/// Before, the first `dgw_console` cookie won: a cookie planted ahead of
/// the manager's own (another `Path` or `Domain`) chose whose session the
/// browser was in.
#[tokio::test]
async fn a_request_with_two_session_cookies_is_signed_out_and_cannot_sign_in() {
    let app = common::spawn().await;
    let http = client();
    let token = console_token(&app, LAKESHORE, "manager:chicago").await;
    let own = sign_in(&app.base(), &http, &token).await;
    let planted = sign_in(
        &app.base(),
        &http,
        &console_token(&app, LAKESHORE, "attacker:planted").await,
    )
    .await;
    assert!(signed_in(&app, &http, &format!("dgw_console={own}")).await);
    for cookie in [
        format!("dgw_console={planted}; dgw_console={own}"),
        format!("dgw_console={own}; dgw_console={planted}"),
        format!("dgw_console={own}; theme=dark; dgw_console={own}"),
    ] {
        assert!(!signed_in(&app, &http, &cookie).await, "{cookie}");
        let page = http
            .get(format!("{}/console/", app.base()))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            page.contains("more than one console session cookie"),
            "{page}"
        );
        let r = post_sign_in(
            &app.base(),
            &http,
            FORM,
            format!("token={token}"),
            Some(&cookie),
        )
        .await;
        assert_eq!(r.status(), 400, "{cookie}");
        assert!(!r.headers().contains_key("set-cookie"), "{cookie}");
    }
    // Two `Cookie` header lines are one cookie list.
    let r = http
        .get(format!("{}/console/", app.base()))
        .header("cookie", format!("dgw_console={own}"))
        .header("cookie", format!("dgw_console={planted}"))
        .send()
        .await
        .unwrap();
    assert!(
        r.text()
            .await
            .unwrap()
            .contains(r#"action="/console/sign-in""#)
    );
    // Exactly one still signs in.
    assert!(signed_in(&app, &http, &format!("dgw_console={own}; theme=dark")).await);
}
