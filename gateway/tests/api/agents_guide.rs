//! docs/agents.md is executed: every session it shows is sent, call by
//! call, to a real gateway on the bundled demo, and every answer it shows
//! must be what the gateway answers. A guide that drifts from the code
//! fails here instead of misleading an agent developer.
//!
//! The guide's contract (docs/agents.md "How this guide is tested"):
//! - a ```` ```json agent-call ```` block is the `params` of one
//!   `tools/call` (`name` and `arguments`), sent on `/mcp`, or on the path
//!   written after `agent-call` (an AAP endpoint);
//! - the next ```` ```json agent-answer ```` or ```` ```json agent-error ````
//!   block is the result's `structuredContent`, trimmed: `isError` must be
//!   false or true accordingly, every member shown must be there with the
//!   value shown, and members left out are not compared. The string `"…"`
//!   stands for any value; a string ending in `…` for any string that
//!   starts with what precedes it; an array ending in `"…"` for an array
//!   that starts with the elements shown;
//! - the text block must be the same JSON as `structuredContent`, and a
//!   default answer must fit the result budget (docs/mcp.md "Content blocks
//!   and the result budget").

use serde_json::{Value, json};

use crate::common::{TestApp, spawn};

const GUIDE: &str = include_str!("../../../docs/agents.md");

/// The structured content the guide's answers are held to: what a harness
/// of 25,000 characters or 25 KiB can hand to a model whole.
const RESULT_BUDGET_BYTES: usize = 25_000;

#[derive(Debug)]
struct Step {
    /// 1-based line of the call block in docs/agents.md.
    line: usize,
    path: String,
    params: Value,
    expect_error: bool,
    expected: Value,
}

/// The fenced blocks of the guide whose info string starts with `json
/// agent-`: (line, info after `json `, body).
fn blocks(guide: &str) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    let mut lines = guide.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```json agent-") else {
            continue;
        };
        let mut body = String::new();
        for (_, l) in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            body.push_str(l);
            body.push('\n');
        }
        out.push((i + 1, format!("agent-{}", info.trim()), body));
    }
    out
}

fn steps(guide: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut pending: Option<(usize, String, Value)> = None;
    for (line, info, body) in blocks(guide) {
        let value: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("docs/agents.md:{line}: block is not JSON: {e}"));
        let mut words = info.split_whitespace();
        match words.next() {
            Some("agent-call") => {
                assert!(
                    pending.is_none(),
                    "docs/agents.md:{line}: a call before the previous call's answer"
                );
                let path = words.next().unwrap_or("/mcp").to_owned();
                assert!(
                    value["name"].is_string() && value["arguments"].is_object(),
                    "docs/agents.md:{line}: a call is {{\"name\", \"arguments\"}}"
                );
                pending = Some((line, path, value));
            }
            Some(kind @ ("agent-answer" | "agent-error")) => {
                let (call_line, path, params) = pending
                    .take()
                    .unwrap_or_else(|| panic!("docs/agents.md:{line}: an answer without a call"));
                steps.push(Step {
                    line: call_line,
                    path,
                    params,
                    expect_error: kind == "agent-error",
                    expected: value,
                });
            }
            other => panic!("docs/agents.md:{line}: unknown block kind {other:?}"),
        }
    }
    assert!(
        pending.is_none(),
        "docs/agents.md: the last call has no answer"
    );
    steps
}

/// Where `expected` (trimmed, with wildcards) and `actual` differ, as a
/// JSON pointer and a reason; `None` when the trimmed form matches.
fn mismatch(expected: &Value, actual: &Value, at: &str) -> Option<String> {
    match (expected, actual) {
        (Value::String(e), _) if e == "…" => None,
        (Value::String(e), Value::String(a)) if e.ends_with('…') => {
            let prefix = e.trim_end_matches('…');
            (!a.starts_with(prefix)).then(|| format!("{at}: {a:?} does not start with {prefix:?}"))
        }
        (Value::Object(e), Value::Object(a)) => e.iter().find_map(|(k, v)| match a.get(k) {
            None => Some(format!("{at}/{k}: missing from the answer")),
            Some(av) => mismatch(v, av, &format!("{at}/{k}")),
        }),
        (Value::Array(e), Value::Array(a)) => {
            let open = e.last() == Some(&json!("…"));
            let shown = if open { &e[..e.len() - 1] } else { &e[..] };
            if (open && a.len() < shown.len()) || (!open && a.len() != shown.len()) {
                return Some(format!(
                    "{at}: the answer has {} elements, the guide shows {}{}",
                    a.len(),
                    shown.len(),
                    if open { " and more" } else { "" }
                ));
            }
            shown
                .iter()
                .zip(a)
                .enumerate()
                .find_map(|(i, (ev, av))| mismatch(ev, av, &format!("{at}/{i}")))
        }
        (e, a) => (e != a).then(|| format!("{at}: the guide shows {e}, the answer is {a}")),
    }
}

async fn run(app: &TestApp, step: &Step) -> Value {
    let client = if step.path == "/mcp" {
        TestApp::attach(&app.base())
    } else {
        let mut c = TestApp::attach(&app.base());
        c.url = format!("{}{}", app.base(), step.path);
        c
    };
    let reply = client.modern("tools/call", step.params.clone()).await;
    assert_eq!(
        reply.status, 200,
        "docs/agents.md:{}: HTTP {}: {}",
        step.line, reply.status, reply.raw
    );
    reply.result().clone()
}

#[tokio::test]
async fn every_session_in_the_agents_guide_runs_as_shown() {
    let steps = steps(GUIDE);
    // One session per tool at least (docs/agents.md "Sessions"): the
    // twelve tools of both endpoints each appear in a call.
    let app = spawn().await;
    let tools: std::collections::BTreeSet<&str> = steps
        .iter()
        .filter_map(|s| s.params["name"].as_str())
        .collect();
    for endpoint in ["/mcp", "/aap/org.lakeshore-auto-group/mcp"] {
        let mut client = TestApp::attach(&app.base());
        client.url = format!("{}{}", app.base(), endpoint);
        let listed = client.modern("tools/list", json!({})).await;
        for tool in listed.result()["tools"].as_array().expect("tools") {
            let name = tool["name"].as_str().expect("name");
            assert!(
                tools.contains(name),
                "docs/agents.md shows no session for {name}"
            );
        }
    }
    let mut errors = 0;
    for step in &steps {
        let result = run(&app, step).await;
        let is_error = result["isError"] == json!(true);
        let structured = &result["structuredContent"];
        let text: Value = serde_json::from_str(
            result["content"][0]["text"]
                .as_str()
                .unwrap_or_else(|| panic!("docs/agents.md:{}: no text block", step.line)),
        )
        .expect("the text block is JSON");
        assert_eq!(&text, structured, "docs/agents.md:{}", step.line);
        assert_eq!(
            is_error,
            step.expect_error,
            "docs/agents.md:{}: the guide shows {}, the gateway answered {}",
            step.line,
            if step.expect_error {
                "an error"
            } else {
                "an answer"
            },
            serde_json::to_string_pretty(structured).unwrap_or_default()
        );
        if is_error {
            errors += 1;
        }
        let size = structured.to_string().len();
        assert!(
            size <= RESULT_BUDGET_BYTES,
            "docs/agents.md:{}: a {size}-byte answer is past the result budget",
            step.line
        );
        if let Some(why) = mismatch(&step.expected, structured, "") {
            panic!(
                "docs/agents.md:{}: the answer differs from the guide at {why}\nthe gateway answered:\n{}",
                step.line,
                serde_json::to_string_pretty(structured).unwrap_or_default()
            );
        }
    }
    // The guide teaches the typical errors too, not only the happy path.
    assert!(errors >= 8, "docs/agents.md shows {errors} errors");
}

/// The matcher the guide is held to can fail: a changed value, a member
/// that is not there, a shorter array and a wrong prefix are each caught,
/// and the wildcards match only what they say.
#[test]
fn the_guide_matcher_catches_drift() {
    let actual = json!({"a": 1, "b": ["x", "y", "z"], "c": {"d": "hello world"}});
    assert_eq!(mismatch(&json!({"a": 1}), &actual, ""), None);
    assert_eq!(mismatch(&json!({"b": ["x", "…"]}), &actual, ""), None);
    assert_eq!(mismatch(&json!({"c": {"d": "hello…"}}), &actual, ""), None);
    assert_eq!(mismatch(&json!({"c": "…"}), &actual, ""), None);
    assert!(mismatch(&json!({"a": 2}), &actual, "").is_some());
    assert!(mismatch(&json!({"e": 1}), &actual, "").is_some());
    assert!(mismatch(&json!({"b": ["x", "y"]}), &actual, "").is_some());
    assert!(mismatch(&json!({"b": ["y", "…"]}), &actual, "").is_some());
    assert!(mismatch(&json!({"c": {"d": "world…"}}), &actual, "").is_some());
    assert!(mismatch(&json!({"b": ["x", "y", "z", "w", "…"]}), &actual, "").is_some());
    let guide = "x\n```json agent-call /aap/o/mcp\n{\"name\": \"t\", \"arguments\": {}}\n```\n\
                 ```json agent-error\n{\"code\": \"c\"}\n```\n";
    let parsed = steps(guide);
    assert_eq!(parsed.len(), 1);
    assert_eq!(parsed[0].path, "/aap/o/mcp");
    assert!(parsed[0].expect_error);
    assert_eq!(parsed[0].line, 2);
}
