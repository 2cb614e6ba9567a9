use super::*;

#[test]
fn validity_parsing_is_bounded() {
    assert_eq!(parse_validity("30d").unwrap(), Duration::days(30));
    assert_eq!(parse_validity("12h").unwrap(), Duration::hours(12));
    assert_eq!(parse_validity("90m").unwrap(), Duration::minutes(90));
    for bad in ["", "d", "0d", "-1d", "30", "30s", "59m", "367d", "1.5d"] {
        assert!(parse_validity(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn the_schema_compiles() {
    assert!(VALIDATOR.is_ok(), "{:?}", VALIDATOR.as_ref().err());
}

#[test]
fn thumbprint_hashes_the_rfc7638_member_string() {
    let key = SigningKey::from_slice(&[7u8; 32]).unwrap();
    let jwk = public_jwk(key.verifying_key(), "k");
    // RFC 7638 3.2 for an EC key, written out by hand.
    let members = format!(
        r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
        jwk["x"].as_str().unwrap(),
        jwk["y"].as_str().unwrap()
    );
    assert_eq!(
        jwk_thumbprint(key.verifying_key()),
        URL_SAFE_NO_PAD.encode(Sha256::digest(members.as_bytes()))
    );
}

/// Our claim schema's object at dotted `path` (root "").
fn our_object<'a>(schema: &'a Value, path: &str) -> &'a Value {
    path.split('.')
        .filter(|p| !p.is_empty())
        .fold(schema, |at, member| &at["properties"][member])
}

fn names(v: &Value) -> BTreeSet<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .or_else(|| {
            v.as_object()
                .map(|o| o.keys().map(String::as_str).collect())
        })
        .unwrap_or_default()
}

/// Every difference in members or required members between our claim
/// schema and the public one is named by a schema deviation, which every
/// issued claim lists in `exceptions` (DAP 14: deviations are listed, not
/// hidden); and every object of ours is one the public schema has.
#[test]
fn every_difference_from_the_public_claim_schema_is_a_listed_deviation() {
    let schema: Value = serde_json::from_str(CLAIM_SCHEMA).unwrap();
    let named = |member: &str| {
        deviations::SCHEMA_DEVIATIONS
            .iter()
            .any(|d| d.starts_with(&format!("{member}:")))
    };
    let mut unlisted = Vec::new();
    for (path, public_members, public_required) in deviations::PUBLIC_MEMBERS {
        let ours = our_object(&schema, path);
        let ours_members = names(&ours["properties"]);
        let ours_required = names(&ours["required"]);
        let public_members: BTreeSet<&str> = public_members.iter().copied().collect();
        let public_required: BTreeSet<&str> = public_required.iter().copied().collect();
        let dotted = |m: &str| {
            if path.is_empty() {
                m.to_owned()
            } else {
                format!("{path}.{m}")
            }
        };
        for m in ours_members.symmetric_difference(&public_members) {
            if !named(&dotted(m)) {
                unlisted.push(format!("{} (member only on one side)", dotted(m)));
            }
        }
        for m in ours_required.symmetric_difference(&public_required) {
            if !named(&dotted(m)) {
                unlisted.push(format!("{} (required on one side only)", dotted(m)));
            }
        }
        // Every object member of ours is an object the facts describe.
        for (m, def) in ours["properties"].as_object().unwrap() {
            if def["type"] == "object" {
                assert!(
                    deviations::PUBLIC_MEMBERS
                        .iter()
                        .any(|(p, _, _)| *p == dotted(m)),
                    "object {} is not compared",
                    dotted(m)
                );
            }
        }
    }
    assert!(
        unlisted.is_empty(),
        "not listed as deviations: {unlisted:?}"
    );
    for d in deviations::SCHEMA_DEVIATIONS {
        assert!((1..=500).contains(&d.chars().count()), "too long: {d}");
    }
}
