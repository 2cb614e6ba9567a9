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
