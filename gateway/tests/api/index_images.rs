//! Index images (docs/operations.md "Index images"): a server restarted on
//! the same store with its `--index-cache` reads its indexes from the
//! images written by the first start and answers exactly as it did.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{TestApp, poll_until, spawn_on, temp_dir, test_database_url, tool_error_code};

const ORG: &str = "org.lakeshore-auto-group";

/// Search pages, each vehicle, and the first vehicles' disclosures: the
/// structured content of every reply.
async fn answers(app: &TestApp) -> Vec<Value> {
    let mut out = Vec::new();
    let mut vehicles = Vec::new();
    for args in [
        json!({"organization_id": ORG, "page": {"limit": 100}}),
        json!({"organization_id": ORG, "sort": {"field": "advertised_price", "order": "desc"}}),
        json!({"organization_id": ORG, "query": "red"}),
        json!({"organization_id": ORG, "filters": {"condition": ["used"]}}),
    ] {
        let result = app
            .call_tool("dealeragent.inventory.search", args.clone())
            .await;
        assert_eq!(tool_error_code(&result), None, "{args}: {result}");
        let content = result["structuredContent"].clone();
        for v in content["vehicles"].as_array().into_iter().flatten() {
            vehicles.push((v["rooftop_id"].clone(), v["vehicle_id"].clone()));
        }
        out.push(content);
    }
    assert!(!vehicles.is_empty(), "the demo has vehicles");
    vehicles.sort_by_key(|v| v.1.to_string());
    vehicles.dedup();
    for (i, (rooftop, vehicle)) in vehicles.iter().enumerate() {
        let args = json!({"organization_id": ORG, "rooftop_id": rooftop, "vehicle_id": vehicle});
        let got = app
            .call_tool("dealeragent.inventory.get_vehicle", args.clone())
            .await;
        out.push(got["structuredContent"].clone());
        if i < 3 {
            let disclosed = app
                .call_tool("dealeragent.pricing.get_disclosure", args)
                .await;
            out.push(disclosed["structuredContent"].clone());
        }
    }
    out
}

/// Drops what differs between two calls whatever the index (the time of
/// the reply and values derived from it).
fn stable(mut v: Value) -> Value {
    if let Some(map) = v.as_object_mut() {
        for volatile in [
            "trace_id",
            "response_id",
            "request_id",
            "disclosure_id",
            "generated_at",
            "issued_at",
            "computed_at",
            "evaluated_at",
            "transformed_at",
            "age_as_of",
            "as_of",
            "next_cursor",
        ] {
            map.remove(volatile);
        }
        // When this process loaded the incentive programs (not the index).
        if map.get("source_name") == Some(&json!("dealer-agent-gateway incentive programs")) {
            map.remove("observed_at");
        }
        for value in map.values_mut() {
            *value = stable(value.take());
        }
    } else if let Some(list) = v.as_array_mut() {
        for value in list.iter_mut() {
            *value = stable(value.take());
        }
    }
    v
}

#[tokio::test]
async fn a_restarted_server_reads_its_index_images_and_answers_the_same() {
    let dir = temp_dir();
    let url = test_database_url(&dir).await;
    let images = dir.join("images");
    let setting = images.display().to_string();
    let first = spawn_on(dir.clone(), url.clone(), |s| {
        s.index_cache = Some(setting.clone());
    })
    .await;
    let before = answers(&first).await;
    // Each image with its modification time: a rebuild would write it
    // anew (a new file renamed over it).
    let written = || {
        let mut files: Vec<(String, std::time::SystemTime)> = std::fs::read_dir(&images)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".idx"))
                    .filter_map(|e| {
                        let modified = e.metadata().ok()?.modified().ok()?;
                        Some((e.file_name().to_string_lossy().into_owned(), modified))
                    })
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        files
    };
    assert!(
        poll_until(Duration::from_secs(20), || async { !written().is_empty() }).await,
        "the first start writes its images"
    );
    drop(first);
    let count = written();
    let url_again = url.clone();
    let second = spawn_on(dir.clone(), url, |s| {
        s.index_cache = Some(setting.clone());
    })
    .await;
    let after = answers(&second).await;
    assert_eq!(
        written(),
        count,
        "the restart reads the images, writes none"
    );
    same(&before, after);
    drop(second);

    // A damaged image (truncated by one byte) is refused: the index is
    // built from the store again, answers the same, and its image is
    // written anew.
    let (name, _) = &count[0];
    let damaged = images.join(name);
    let bytes = std::fs::read(&damaged).unwrap();
    std::fs::write(&damaged, &bytes[..bytes.len() - 1]).unwrap();
    let third = spawn_on(dir.clone(), url_again, |s| {
        s.index_cache = Some(setting.clone());
    })
    .await;
    same(&before, answers(&third).await);
    assert_eq!(
        std::fs::read(&damaged).unwrap(),
        bytes,
        "the refused image is written again, whole"
    );
}

fn same(before: &[Value], after: Vec<Value>) {
    assert_eq!(before.len(), after.len());
    for (i, (b, a)) in before.iter().zip(after).enumerate() {
        let (b, a) = (stable(b.clone()), stable(a));
        assert!(
            b == a,
            "reply {i} differs at {}",
            first_difference(&b, &a, "")
        );
    }
}

/// Where two replies first differ (a JSON pointer and both values).
fn first_difference(b: &Value, a: &Value, at: &str) -> String {
    match (b, a) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) if w == v => {}
                    Some(w) => return first_difference(v, w, &format!("{at}/{k}")),
                    None => return format!("{at}/{k}: only before"),
                }
            }
            format!("{at}: keys only after")
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find(|(_, (v, w))| v != w)
            .map_or_else(String::new, |(i, (v, w))| {
                first_difference(v, w, &format!("{at}/{i}"))
            }),
        _ => format!("{at}: {b} != {a}"),
    }
}
