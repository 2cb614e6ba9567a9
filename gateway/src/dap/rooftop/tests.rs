//! The rooftop records against dealer.schema.json `rooftop` and
//! common.schema.json `address`, both ways: every member the definition
//! names is a member of the type (written or skipped) and no other, real
//! instances validate, the published bytes read back into the same bytes,
//! and a member the definition lacks is refused.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::*;
use crate::tools::output::drift::{check, members};

fn address(full: bool) -> Address {
    Address {
        lines: if full {
            vec!["1 Main St".into(), "Suite 2".into()]
        } else {
            vec!["1 Main St".into()]
        },
        locality: "Springfield".into(),
        region: full.then(|| "IL".into()),
        postal_code: full.then(|| "62701".into()),
        country: "US".into(),
    }
}

fn contact(public: Option<bool>) -> ContactPoint {
    ContactPoint {
        department: "sales".into(),
        channel: "phone".into(),
        value: "+12175550100".into(),
        public,
    }
}

fn rooftop(full: bool) -> Rooftop {
    Rooftop {
        rooftop_id: "rt.springfield".into(),
        name: "Springfield Motors".into(),
        legal_name: full.then(|| "Springfield Motors LLC".into()),
        website: full.then(|| "https://springfield.example/".into()),
        address: address(full),
        timezone: "America/Chicago".into(),
        departments: vec!["sales".into(), "service".into()],
        contacts: full.then(|| vec![contact(Some(true)), contact(None), contact(Some(false))]),
        hours: full.then(|| {
            vec![HoursInterval {
                day: "monday".into(),
                opens: "09:00".into(),
                closes: "18:00".into(),
            }]
        }),
        supported_languages: full.then(|| vec!["en-US".into(), "es-US".into()]),
        supported_currencies: full.then(|| vec!["USD".into()]),
        extensions: full.then(|| {
            json!({"dealergateway.department-hours": {"service": []}})
                .as_object()
                .cloned()
                .unwrap()
        }),
    }
}

/// The rooftops of the demo dealers file, as imported.
fn demo_rooftops() -> Vec<Rooftop> {
    let catalog = crate::catalog::Catalog::load().expect("catalog");
    crate::dealers::parse(
        &catalog,
        "dealers.yaml",
        crate::demo::DEMO_DEALERS.as_bytes(),
        "demo dealers file",
        chrono::Utc::now(),
    )
    .expect("the demo dealers file parses")
    .into_iter()
    .flat_map(|o| o.rooftops)
    .map(|r| r.dap)
    .collect()
}

/// The names of `definition`'s properties in the published schema.
fn published(document: &str, definition: &str) -> BTreeSet<String> {
    let catalog = crate::catalog::Catalog::load().expect("catalog");
    catalog.schema_documents[document]["$defs"][definition]["properties"]
        .as_object()
        .expect("a closed definition")
        .keys()
        .cloned()
        .collect()
}

fn named<T: serde::Serialize>(instance: &T) -> BTreeSet<String> {
    let m = members(instance);
    m.written.union(&m.skipped).cloned().collect()
}

#[test]
fn the_rooftop_records_match_their_definitions() {
    let mut rooftops = vec![rooftop(false), rooftop(true), rooftop(true).published()];
    rooftops.extend(demo_rooftops());
    check("dealer.schema.json#/$defs/rooftop", &rooftops);
    check(
        "common.schema.json#/$defs/address",
        &[address(false), address(true)],
    );
    let full = rooftop(true);
    check(
        "dealer.schema.json#/$defs/contactPoint",
        full.contacts.as_ref().unwrap(),
    );
    check(
        "dealer.schema.json#/$defs/hoursInterval",
        full.hours.as_ref().unwrap(),
    );
}

/// The other way: every member each published definition names is a
/// member of its type, and each definition is closed like the type.
#[test]
fn every_published_member_has_its_place() {
    let full = rooftop(true);
    for (document, definition, members) in [
        ("dealer.schema.json", "rooftop", named(&full)),
        ("common.schema.json", "address", named(&full.address)),
        (
            "dealer.schema.json",
            "contactPoint",
            named(&full.contacts.as_ref().unwrap()[0]),
        ),
        (
            "dealer.schema.json",
            "hoursInterval",
            named(&full.hours.as_ref().unwrap()[0]),
        ),
    ] {
        assert_eq!(members, published(document, definition), "{definition}");
        let catalog = crate::catalog::Catalog::load().expect("catalog");
        assert_eq!(
            catalog.schema_documents[document]["$defs"][definition]["additionalProperties"],
            Value::Bool(false),
            "{definition} is closed, as its type is"
        );
    }
}

/// Dealers-file text reads back into the same bytes (schema member order,
/// an empty list kept as given, extension keys in their order).
#[test]
fn a_rooftop_round_trips_byte_for_byte() {
    for text in [
        r#"{"rooftop_id":"a","name":"A","address":{"lines":["1 Main St"],"locality":"X","country":"US"},"timezone":"America/Chicago","departments":["sales"]}"#,
        r#"{"rooftop_id":"a","name":"A","legal_name":"A LLC","website":"https://a.example/","address":{"lines":["1 Main St","Unit 2"],"locality":"X","region":"IL","postal_code":"62701","country":"US"},"timezone":"America/Chicago","departments":["sales","parts"],"contacts":[],"hours":[{"day":"monday","opens":"09:00","closes":"18:00"}],"supported_languages":["en-US"],"supported_currencies":["USD","CAD"],"extensions":{"x.z":1,"x.a":{"b":null,"a":[2,1]}}}"#,
    ] {
        let r: Rooftop = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&r).unwrap(), text);
    }
    for r in demo_rooftops() {
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<Rooftop>(&text).unwrap(), r);
    }
}

/// A member the definition does not have is refused, never dropped.
#[test]
fn an_unknown_member_is_refused() {
    let mut value = serde_json::to_value(rooftop(false)).unwrap();
    value["gateway_settings"] = json!({});
    assert!(serde_json::from_value::<Rooftop>(value).is_err());
    let mut value = serde_json::to_value(rooftop(false)).unwrap();
    value["address"]["city"] = json!("Springfield");
    assert!(serde_json::from_value::<Rooftop>(value).is_err());
    let mut value = serde_json::to_value(rooftop(true)).unwrap();
    value["hours"][0]["note"] = json!("lunch");
    assert!(serde_json::from_value::<Rooftop>(value).is_err());
    let mut value = serde_json::to_value(rooftop(true)).unwrap();
    value["contacts"][0]["name"] = json!("Pat");
    assert!(serde_json::from_value::<Rooftop>(value).is_err());
}

/// Only `public: true` contacts are published; none leaves no member.
#[test]
fn only_public_contacts_are_published() {
    let full = rooftop(true);
    assert_eq!(full.published().contacts, Some(vec![contact(Some(true))]));
    let mut private = full.clone();
    private.contacts = Some(vec![contact(None), contact(Some(false))]);
    assert_eq!(private.published().contacts, None);
    let mut empty = full;
    empty.contacts = Some(Vec::new());
    assert_eq!(empty.published().contacts, None);
    assert_eq!(rooftop(false).published(), rooftop(false));
}

#[test]
fn the_region_is_an_iso_subdivision() {
    assert_eq!(address(true).subdivision().as_deref(), Some("US-IL"));
    assert_eq!(address(false).subdivision(), None);
    let mut written = address(true);
    written.region = Some("US-IL".into());
    assert_eq!(written.subdivision().as_deref(), Some("US-IL"));
}

/// The demo dealers file's rooftops serve the bytes the file's own
/// documents did when the rooftop was kept as a JSON tree: the typed
/// record changes no answer (dealer.get, resources, AAP).
#[test]
fn the_demo_rooftops_serve_the_bytes_of_their_documents() {
    let bytes = crate::demo::DEMO_DEALERS.as_bytes();
    let (_, doc) =
        crate::report::parse_document(bytes, crate::report::Syntax::of("dealers.yaml")).unwrap();
    let documents: Vec<String> = doc["organizations"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|o| o["rooftops"].as_array().unwrap().iter().cloned())
        .map(|mut r| {
            r.as_object_mut().unwrap().remove("gateway_settings");
            serde_json::to_string(&r).unwrap()
        })
        .collect();
    let typed: Vec<String> = demo_rooftops()
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .collect();
    assert!(!typed.is_empty());
    assert_eq!(typed, documents);
}
