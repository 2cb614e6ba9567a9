//! The digest leaves out exactly the volatile members (module doc).

use super::*;

#[test]
fn a_version_is_short_stable_and_changes_with_the_content() {
    let a = of_text(r#"{"vehicle_id":"veh.1","price":100}"#);
    assert_eq!(a, of_text(r#"{"vehicle_id":"veh.1","price":100}"#));
    assert!(a.starts_with("cv1-") && a.len() == 26, "{a}");
    assert_ne!(a, of_text(r#"{"vehicle_id":"veh.1","price":101}"#));
    assert_ne!(a, of_text(r#"{"vehicle_id":"veh.2","price":100}"#));
    // Every length around a block boundary hashes, and differs.
    let mut seen = std::collections::BTreeSet::new();
    for n in 0..40 {
        assert!(seen.insert(of_text(&"x".repeat(n))), "{n}");
    }
    assert_ne!(of_text("a"), of_text("a\0"));
}

#[test]
fn the_volatile_members_are_left_out() {
    let one = r#"{"vehicle_id":"veh.1","trace_id":"trace.a","provenance":{"authority_status":"derived","transformed_at":"2026-01-01T00:00:00.1Z"},"inventory_tenure":{"age_as_of":"2026-01-01T00:00:00Z","days":3},"page":{"next_cursor":"c.abc\"x","limit":20}}"#;
    let two = r#"{"vehicle_id":"veh.1","trace_id":"trace.b","provenance":{"authority_status":"derived","transformed_at":"2026-01-01T00:00:09.9Z"},"inventory_tenure":{"age_as_of":"2026-01-01T00:00:05Z","days":3},"page":{"next_cursor":null,"limit":20}}"#;
    assert_eq!(of_text(one), of_text(two));
    // What is kept still counts: the tenure in days, the page size.
    assert_ne!(
        of_text(one),
        of_text(&one.replace("\"days\":3", "\"days\":4"))
    );
    assert_ne!(
        of_text(one),
        of_text(&one.replace("\"limit\":20", "\"limit\":21"))
    );
}

#[test]
fn an_observed_at_that_stands_for_now_is_left_out_and_a_real_one_is_not() {
    let unknown = |t: &str| format!(r#"{{"freshness":{{"observed_at":"{t}","state":"unknown"}}}}"#);
    assert_eq!(
        of_text(&unknown("2026-01-01T00:00:00Z")),
        of_text(&unknown("2026-01-01T00:00:07Z"))
    );
    let derived = |t: &str| {
        format!(
            r#"{{"sources":[{{"source_name":"index","authority":"derived","observed_at":"{t}"}}]}}"#
        )
    };
    assert_eq!(
        of_text(&derived("2026-01-01T00:00:00Z")),
        of_text(&derived("2026-01-01T00:00:07Z"))
    );
    // An evaluation's instant and the program set observed with it.
    let programs = |t: &str| {
        format!(
            r#"{{"as_of":"{t}","sources":[{{"source_name":"dealer-agent-gateway incentive programs","authority":"dealer_asserted","observed_at":"{t}"}}]}}"#
        )
    };
    assert_eq!(
        of_text(&programs("2026-01-01T00:00:00Z")),
        of_text(&programs("2026-01-01T00:00:07Z"))
    );
    let real = |t: &str, state: &str| {
        format!(r#"{{"freshness":{{"observed_at":"{t}","state":"{state}"}}}}"#)
    };
    assert_ne!(
        of_text(&real("2026-01-01T00:00:00Z", "current")),
        of_text(&real("2026-01-01T00:00:07Z", "current"))
    );
    // Fresh to stale changes the version.
    assert_ne!(
        of_text(&real("2026-01-01T00:00:00Z", "current")),
        of_text(&real("2026-01-01T00:00:00Z", "stale"))
    );
}

#[test]
fn a_key_inside_a_string_is_not_a_member() {
    // The text of a description that quotes a member name is data.
    let a = r#"{"note":"see \"trace_id\":\"x\"","n":1}"#;
    let b = r#"{"note":"see \"trace_id\":\"y\"","n":1}"#;
    assert_ne!(of_text(a), of_text(b));
}

#[test]
fn values_of_every_kind_are_skipped_whole() {
    let text = r#"{"trace_id":{"a":[1,"}",{"b":"]"}]},"k":1}"#;
    let start = text.find(':').unwrap() + 1;
    assert_eq!(&text[value_end(text.as_bytes(), start)..], r#","k":1}"#);
    for (text, rest) in [
        (r#"{"trace_id":null}"#, "}"),
        (r#"{"trace_id":[1,2],"k":1}"#, r#","k":1}"#),
        (r#"{"trace_id":"a\\","k":1}"#, r#","k":1}"#),
        (r#"{"trace_id":12.5]"#, "]"),
        (r#"{"trace_id":"unterminated"#, ""),
    ] {
        let start = text.find(':').unwrap() + 1;
        assert_eq!(&text[value_end(text.as_bytes(), start)..], rest, "{text}");
    }
}

#[test]
fn a_tool_version_covers_its_meta_additions() {
    let band = |b: &str| json!({"dealergateway.availability": {"band": b}});
    let text = r#"{"vehicle_id":"veh.1"}"#;
    assert_ne!(
        of_tool(text, Some(&band("stale"))),
        of_tool(text, Some(&band("asserted")))
    );
    assert_ne!(of_tool(text, None), of_tool(text, Some(&band("stale"))));
    assert_eq!(of_tool(text, None), of_text(text));
}

#[test]
fn the_unchanged_answer_matches_its_schema() {
    let schema = jsonschema::validator_for(&unchanged_schema()).unwrap();
    let v = of_text("{}");
    let answer: Value = serde_json::from_str(&unchanged_structured(&v)).unwrap();
    assert!(schema.is_valid(&answer));
    assert!(!schema.is_valid(&json!({"unchanged": false, "contentVersion": v})));
    assert!(!schema.is_valid(&json!({"unchanged": true})));
    assert!(unchanged_words(&v).contains(&v));
    assert_eq!(
        requested(&json!({"_meta": {IF_NONE_MATCH_META: v}})),
        Some(v.as_str())
    );
    assert_eq!(requested(&json!({"_meta": {IF_NONE_MATCH_META: 1}})), None);
    assert_eq!(requested(&json!({})), None);
}

/// The text around a dropped value is hashed piece by piece: whatever the
/// alignment, the digest is that of the text with the value cut out.
#[test]
fn pieces_hash_like_the_whole() {
    for pad in 0..70 {
        let p = "x".repeat(pad);
        let with = |v: &str| format!(r#"{{"p":"{p}","trace_id":"{v}","q":1}}"#);
        let cut = format!(r#"{{"p":"{p}","trace_id":,"q":1}}"#);
        assert_eq!(
            of_text(&with("trace.1")),
            of_text(&with("trace.22")),
            "{pad}"
        );
        assert_eq!(of_text(&with("trace.1")), of_text(&cut), "{pad}");
        assert_ne!(of_text(&with("t")), of_text(&format!("{cut} ")), "{pad}");
    }
}

/// The trace id and the page are looked for in the text's tail only
/// (module doc): one written before a long content is hashed, so the
/// version then changes with it, never the other way round.
#[test]
fn the_tail_members_are_looked_for_near_the_end() {
    let long = "y".repeat(TAIL_BYTES);
    let early = |v: &str| format!(r#"{{"trace_id":"{v}","content":"{long}"}}"#);
    assert_ne!(of_text(&early("trace.1")), of_text(&early("trace.2")));
    let late = |v: &str| format!(r#"{{"content":"{long}","trace_id":"{v}"}}"#);
    assert_eq!(of_text(&late("trace.1")), of_text(&late("trace.2")));
}
