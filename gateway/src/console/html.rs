//! The console's page shell and small rendering helpers (maud escapes
//! every interpolated value). No script, no external font or stylesheet:
//! one stylesheet shipped in the binary and served from `/console/`
//! itself, so the Content-Security-Policy can forbid everything else
//! (docs/console.md).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use maud::{DOCTYPE, Markup, html};
use serde_json::Value;

/// The stylesheet: system fonts, readable at 320 px, contrast at least
/// 4.5:1 for text (WCAG AA, what axe-core's color-contrast rule checks).
pub const CSS: &str = r#"
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1a1a1a; background: #fff; overflow-wrap: anywhere; }
a { color: #0b4f9c; }
a:focus, button:focus, input:focus, select:focus, summary:focus { outline: 3px solid #b35c00; outline-offset: 2px; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.skip { position: absolute; left: -999px; top: 0; background: #fff; padding: .5rem; }
.skip:focus { left: .5rem; }
header.top { background: #12263f; color: #fff; padding: .6rem 1rem; display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; justify-content: space-between; }
header.top a { color: #fff; }
header.top .who { font-size: .9rem; }
header.top form { display: inline; }
nav.sections ul { list-style: none; margin: 0; padding: .5rem 1rem; display: flex; flex-wrap: wrap; gap: .25rem 1rem; background: #eef2f7; border-bottom: 1px solid #c9d3df; }
nav.sections a[aria-current="page"] { font-weight: 700; color: #1a1a1a; text-decoration: none; }
main { padding: 1rem; max-width: 72rem; margin: 0 auto; }
h1 { font-size: 1.5rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.2rem; margin: 1.5rem 0 .5rem; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid #d5dbe3; vertical-align: top; }
th { background: #f4f6f9; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.scroll { overflow-x: auto; max-width: 100%; position: relative; }
fieldset { min-width: 0; }
.scroll table { overflow-wrap: normal; }
.facts { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(13rem, 100%), 1fr)); gap: .75rem; margin: 0 0 1rem; padding: 0; }
.facts div { border: 1px solid #c9d3df; border-radius: 4px; padding: .5rem .75rem; }
.facts dt { font-size: .85rem; color: #4a4a4a; }
.facts dd { margin: 0; font-size: 1.15rem; font-weight: 600; }
.ok { color: #1d6b2f; }
.warn { color: #8a4b00; }
.bad { color: #a4161a; }
.notice { border-left: 4px solid #8a4b00; background: #fff6e8; padding: .5rem .75rem; margin: .75rem 0; }
.error { border-left: 4px solid #a4161a; background: #fdecec; padding: .5rem .75rem; margin: .75rem 0; }
blockquote.agent { margin: .5rem 0 1rem; padding: .75rem 1rem; background: #f4f6f9; border-left: 4px solid #12263f; }
pre { max-width: 100%; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
pre.raw { word-break: break-word; background: #f4f6f9; padding: .75rem; font-size: .85rem; max-height: 40rem; }
pre.rule { background: #f4f6f9; border-left: 4px solid #12263f; padding: .5rem .75rem; font-size: .85rem; max-height: 24rem; }
code.hint { font-size: .8em; color: #4a4a4a; background: #f4f6f9; padding: 0 .25em; border-radius: 3px; }
p.assumed { border-left: 4px solid #0b4f9c; background: #eef2f7; padding: .5rem .75rem; }
dl.props { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(16rem, 100%), 1fr)); gap: .5rem 1rem; margin: .5rem 0 1rem; }
dl.props > div { border-bottom: 1px solid #d5dbe3; padding: .25rem 0; min-width: 0; }
dl.props .wide { grid-column: 1 / -1; }
dl.props dt { font-size: .85rem; color: #4a4a4a; }
dl.props dd { margin: 0; }
dl.props ul { margin: .25rem 0; padding-left: 1.25rem; }
section.program { border-top: 2px solid #c9d3df; margin-top: 2rem; }
details.revision, details.branch { margin: .5rem 0 1rem; }
table.waterfall td.num { white-space: nowrap; }
table.waterfall tr.net th, table.waterfall tr.net td { border-top: 2px solid #12263f; }
tr.out td.standing { color: #4a4a4a; }
form.filters { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: flex-end; margin: 0 0 1rem; }
form.filters label, form.stack label, .field { display: flex; flex-direction: column; font-size: .9rem; }
form.stack fieldset { border: 1px solid #c9d3df; margin: 0 0 1rem; padding: .5rem 1rem; }
form.stack .row { display: flex; flex-wrap: wrap; gap: .5rem 1rem; }
form.stack .row > *, form.filters > * { min-width: 0; max-width: 100%; }
input, select, button { font: inherit; padding: .3rem .45rem; max-width: 100%; }
button { background: #0b4f9c; color: #fff; border: 1px solid #0b4f9c; border-radius: 3px; cursor: pointer; }
header.top button { background: #fff; color: #12263f; border-color: #fff; }
svg.bar { display: block; max-width: 100%; height: auto; }
details summary { cursor: pointer; font-weight: 600; }
@media (max-width: 40rem) { main { padding: .5rem; } th, td { padding: .3rem; } .scroll table { min-width: 36rem; } }
"#;

/// Who is signed in, for the page header.
pub struct Viewer<'a> {
    pub subject: &'a str,
    pub organization: &'a str,
}

/// A section link of the navigation bar.
pub struct NavLink {
    pub href: String,
    pub label: &'static str,
    pub current: bool,
}

/// A whole page. `nav` is empty outside a rooftop.
pub fn page(title: &str, viewer: Option<&Viewer<'_>>, nav: &[NavLink], body: &Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="same-origin";
                title { (title) " · Dealer Agent Gateway console" }
                link rel="stylesheet" href="/console/console.css";
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    a href="/console/" { strong { "Dealer Agent Gateway" } " · rooftop console" }
                    @if let Some(v) = viewer {
                        span.who {
                            "Signed in as " strong { (v.subject) } " (" (v.organization) ") "
                            form method="post" action="/console/sign-out" {
                                button type="submit" { "Sign out" }
                            }
                        }
                    }
                }
                @if !nav.is_empty() {
                    nav.sections aria-label="Rooftop sections" {
                        ul {
                            @for link in nav {
                                li {
                                    @if link.current {
                                        a href=(link.href) aria-current="page" { (link.label) }
                                    } @else {
                                        a href=(link.href) { (link.label) }
                                    }
                                }
                            }
                        }
                    }
                }
                main id="main" tabindex="-1" { (body) }
            }
        }
    }
}

/// An HTML response with the console's headers: no caching (pages show a
/// caller's own data), no framing, no script, nothing loaded from
/// elsewhere, and no referrer to other sites (URLs carry cursors).
/// `same-origin`, not `no-referrer`: under `no-referrer` a browser sends
/// `Origin: null` on the console's own form POSTs (Fetch "serializing a
/// request origin"), which the CSRF check must refuse.
pub fn respond(status: StatusCode, markup: &Markup) -> Response {
    let mut r = (status, markup.clone().into_string()).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    secure_headers(h);
    r
}

/// The console's own answer to what the framework answered itself on a
/// console route (axum's 405 for a method a route does not take, a 413 or
/// 415 for a body it would not read, a 404 of a path parameter it could
/// not decode): recognised by having no `Content-Security-Policy`, since
/// every page of the console is written by [`respond`]. A refusal becomes
/// a console page saying what was refused, in the console's headers, the
/// framework's text never shown; any other answer without the headers (a
/// redirect, the stylesheet) gets those it lacks (docs/console.md
/// "Forged requests").
pub async fn framework_refusal(mut response: Response) -> Response {
    if response
        .headers()
        .contains_key(header::CONTENT_SECURITY_POLICY)
    {
        return response;
    }
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        let h = response.headers_mut();
        let mut complete = axum::http::HeaderMap::new();
        secure_headers(&mut complete);
        for (name, value) in complete {
            if let Some(name) = name {
                h.entry(name).or_insert(value);
            }
        }
        return response;
    }
    let (title, words) = match status {
        StatusCode::METHOD_NOT_ALLOWED => (
            "Method not allowed",
            "This address does not take this request method: the console's pages are read with GET, and its sign-in and sign-out forms are sent with POST.",
        ),
        StatusCode::PAYLOAD_TOO_LARGE => (
            "Request too large",
            "The request body is larger than this address accepts.",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => (
            "Unsupported request body",
            "The request body is not of the media type this address reads: the console's forms are sent as application/x-www-form-urlencoded.",
        ),
        StatusCode::NOT_FOUND => (
            "Not found",
            "There is no such page among the rooftops you can see.",
        ),
        s if s.is_client_error() => (
            "Request refused",
            "The request could not be read. Go back to the console's own page and try again.",
        ),
        _ => (
            "Temporarily unavailable",
            "The gateway could not answer this request. Try again shortly.",
        ),
    };
    let mut r = respond(
        status,
        &page(
            title,
            None,
            &[],
            &html! { h1 { (title) } p { (words) } p { a href="/console/" { "Back to the console" } } },
        ),
    );
    for name in [header::ALLOW, header::RETRY_AFTER] {
        if let Some(value) = response.headers().get(&name) {
            r.headers_mut().insert(name, value.clone());
        }
    }
    r
}

/// The headers every console answer carries.
pub fn secure_headers(h: &mut axum::http::HeaderMap) {
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
}

/// `{amount_minor, currency}` as text ("20,795.00 USD"); `unknown` when it
/// is not a money object (unknown is never shown as zero).
pub fn money(v: Option<&Value>) -> String {
    v.and_then(|m| serde_json::from_value::<pricing::Money>(m.clone()).ok())
        .map_or_else(|| "unknown".to_owned(), |m| m.to_string())
}

/// A typed amount as text; `unknown` when there is none (never zero).
pub fn amount(m: Option<pricing::Money>) -> String {
    m.map_or_else(|| "unknown".to_owned(), |m| m.to_string())
}

/// A string member, or an empty string.
pub fn text<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// "5 min", "2 h 10 min", "3 d 4 h": an age for people.
pub fn duration(seconds: i64) -> String {
    let s = seconds.max(0);
    if s < 90 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min", s / 60)
    } else if s < 86_400 {
        format!("{} h {} min", s / 3600, (s % 3600) / 60)
    } else {
        format!("{} d {} h", s / 86_400, (s % 86_400) / 3600)
    }
}

/// RFC 3339 in UTC to the second, for tables.
pub fn time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// An RFC 3339 member shown as [`time`], or as given when it does not
/// parse, or "–" when absent.
pub fn time_of(v: &Value, key: &str) -> String {
    match v.get(key).and_then(Value::as_str) {
        Some(s) => DateTime::parse_from_rfc3339(s)
            .map_or_else(|_| s.to_owned(), |t| time(t.with_timezone(&Utc))),
        None => "–".to_owned(),
    }
}

/// A horizontal bar for a chart cell: an inline SVG, hidden from assistive
/// technology because the same number is in the table next to it.
pub fn bar(value: usize, max: usize) -> Markup {
    const WIDTH: usize = 240;
    let w = if max == 0 {
        0
    } else {
        (value * WIDTH).div_ceil(max)
    };
    html! {
        svg.bar width=(WIDTH) height="14" viewBox={"0 0 " (WIDTH) " 14"} aria-hidden="true" focusable="false" {
            rect x="0" y="0" width=(w) height="14" fill="#0b4f9c" {}
        }
    }
}

/// The raw structured content of a tool, behind a `<details>` toggle (no
/// script needed; closed by default).
pub fn raw_json(summary: &str, id: &str, value: &Value) -> Markup {
    let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
    html! {
        details.raw id=(id) {
            summary { (summary) }
            // Focusable: a scrollable region must be reachable by keyboard.
            pre.raw tabindex="0" { code { (pretty) } }
        }
    }
}

/// A tool error as the page shows it: the DAP code and message an agent
/// would get, never more.
pub fn tool_error(what: &str, error: &Value) -> Markup {
    html! {
        div.error role="alert" {
            p { strong { (what) ": " } (text(error, "message")) " (" code { (text(error, "code")) } ")" }
            @if let Some(errors) = error.pointer("/details/field_errors").and_then(Value::as_array) {
                ul {
                    @for e in errors {
                        li { code { (text(e, "instance_location")) } ": " (text(e, "explanation")) }
                    }
                }
            }
        }
    }
}
