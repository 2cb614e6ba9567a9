use super::*;

fn jwks_error(keys: Value) -> String {
    Jwks::from_value(&keys).unwrap_err().to_string()
}

#[test]
fn jwks_rules_name_the_key_and_the_rule() {
    let ec = ec_jwk(&ec_key(0x11), "ec-1");
    assert!(jwks_error(json!({"keys": []})).contains("no keys"));
    assert!(jwks_error(json!([ec.clone()])).contains("\"keys\" array"));
    assert!(
        Jwks::parse("{")
            .unwrap_err()
            .to_string()
            .contains("not valid JSON")
    );
    let oct = json!({"kty": "oct", "k": "c2VjcmV0", "kid": "h"});
    assert!(jwks_error(json!({"keys": [ec.clone(), oct]})).starts_with("JWKS key 1: "));
    let okp = json!({"kty": "OKP", "crv": "Ed25519", "x": "AA", "kid": "ed"});
    let message = jwks_error(json!({"keys": [ec.clone(), okp]}));
    assert!(
        message.contains("key 1") && message.contains("\"OKP\" is not supported"),
        "{message}"
    );
    let p384 = with(ec.clone(), "crv", json!("P-384"));
    let message = jwks_error(json!({"keys": [p384]}));
    assert!(
        message.contains("key 0") && message.contains("\"P-384\""),
        "{message}"
    );
    let short_x = with(ec.clone(), "x", json!(b64(&[1; 31])));
    assert!(jwks_error(json!({"keys": [short_x]})).contains("32 bytes"));
    let off_curve = with(ec.clone(), "y", json!(b64(&[1; 32])));
    assert!(jwks_error(json!({"keys": [off_curve]})).contains("not a point"));
    let padded = with(
        ec.clone(),
        "x",
        json!(format!("{}=", ec["x"].as_str().unwrap())),
    );
    assert!(jwks_error(json!({"keys": [padded]})).contains("base64url"));
    // RSA: a 1024-bit modulus (odd, top bit set) is refused by size.
    let mut small = vec![0xC5u8; 128];
    small[127] = 0x01;
    let rsa_small = json!({"kty": "RSA", "n": b64(&small), "e": "AQAB", "kid": "small"});
    let message = jwks_error(json!({"keys": [ec.clone(), rsa_small]}));
    assert!(
        message.contains("key 1") && message.contains("1024 bits") && message.contains("2048"),
        "{message}"
    );
    let private = with(rsa_jwk("r"), "d", rsa_fixture()["d"].clone());
    assert!(jwks_error(json!({"keys": [private]})).contains("private key material"));
    let dup = json!({"keys": [ec.clone(), rsa_jwk("rsa-1"), rsa_jwk("ec-1")]});
    let message = jwks_error(dup);
    assert!(
        message.contains("key 2") && message.contains("already used by key 0"),
        "{message}"
    );
    let unnamed = without(rsa_jwk("x"), "kid");
    let message = jwks_error(json!({"keys": [ec.clone(), unnamed]}));
    assert!(
        message.contains("key 1") && message.contains("kid"),
        "{message}"
    );
    let enc = with(ec.clone(), "use", json!("enc"));
    assert!(jwks_error(json!({"keys": [enc]})).contains("\"use\""));
    let wrong_alg = with(rsa_jwk("r"), "alg", json!("PS256"));
    assert!(jwks_error(json!({"keys": [wrong_alg]})).contains("\"PS256\""));
    let ec_as_rs = with(ec.clone(), "alg", json!("RS256"));
    assert!(jwks_error(json!({"keys": [ec_as_rs]})).contains("only ES256"));
    let jwks = Jwks::from_value(&json!({"keys": [ec, rsa_jwk("rsa-1")]})).unwrap();
    assert_eq!(jwks.len(), 2);
    assert_eq!(
        jwks.describe(),
        vec![
            (Some("ec-1"), JwsAlgorithm::Es256),
            (Some("rsa-1"), JwsAlgorithm::Rs256)
        ]
    );
}

#[test]
fn load_reads_the_file_and_checks_the_settings() {
    let dir = std::env::temp_dir().join(format!("jwt-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("jwks.json");
    let doc = json!({"keys": [ec_jwk(&ec_key(0x11), "ec-1")]});
    std::fs::write(&path, doc.to_string()).unwrap();
    let config = JwtConfig::load(ISSUER, AUDIENCE, &path, 60).unwrap();
    assert!(config.verify(&es256(&claims()), now()).is_ok());
    assert!(matches!(
        JwtConfig::load(ISSUER, AUDIENCE, &dir.join("missing.json"), 60),
        Err(JwtConfigError::Read { .. })
    ));
    assert!(JwtConfig::load(ISSUER, "gw.example", &path, 60).is_err());
    assert!(JwtConfig::load(ISSUER, "https://gw.example/mcp#x", &path, 60).is_err());
    assert!(JwtConfig::load("", AUDIENCE, &path, 60).is_err());
    assert!(JwtConfig::load(ISSUER, AUDIENCE, &path, MAX_LEEWAY_SECONDS + 1).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn protected_resource_metadata() {
    let doc = well_known_metadata(
        AUDIENCE,
        &[ISSUER.to_owned()],
        &["dealeragent:inventory:read".to_owned()],
    );
    assert_eq!(
        doc,
        json!({
            "resource": AUDIENCE,
            "authorization_servers": [ISSUER],
            "scopes_supported": ["dealeragent:inventory:read"],
            "bearer_methods_supported": ["header"],
            "resource_name": "Dealer Agent Gateway",
        })
    );
    assert!(
        well_known_metadata(AUDIENCE, &[], &[])
            .get("scopes_supported")
            .is_none()
    );
}

#[test]
fn bearer_challenges() {
    let url = "https://gw.example/.well-known/oauth-protected-resource";
    assert_eq!(
        www_authenticate(url, None),
        format!("Bearer resource_metadata=\"{url}\"")
    );
    assert_eq!(
        www_authenticate(
            url,
            Some(("invalid_token", &JwtRejection::Expired.to_string()))
        ),
        format!(
            "Bearer resource_metadata=\"{url}\", error=\"invalid_token\", error_description=\"the access token has expired\""
        )
    );
    let nasty = www_authenticate(
        "https://x/\"a\\b\r\nSet-Cookie: y",
        Some(("invalid_token\"", "say \"hi\" \\ ok\r\n")),
    );
    assert_eq!(
        nasty,
        "Bearer resource_metadata=\"https://x/\\\"a\\\\b??Set-Cookie: y\", error=\"invalid_token\", error_description=\"say 'hi' / ok??\""
    );
    assert_eq!(
        www_authenticate_insufficient_scope(
            url,
            &["a:read".to_owned(), "b:read".to_owned()],
            "more scope needed"
        ),
        format!(
            "Bearer resource_metadata=\"{url}\", error=\"insufficient_scope\", scope=\"a:read b:read\", error_description=\"more scope needed\""
        )
    );
}

/// Verification cost per token (measured before and after the switch
/// to jsonwebtoken). Not a correctness test, so ignored:
/// `cargo test -p gateway --release --lib auth::jwt::tests::verification_time_per_token -- --ignored --nocapture`.
#[test]
#[ignore = "timing loop, run by hand"]
fn verification_time_per_token() {
    let config = config();
    let es = es256(&claims());
    let rs = mint(
        &json!({"alg": "RS256", "kid": "rsa-1"}),
        &claims(),
        &Signing::Rs256,
    );
    let forged = {
        let parts: Vec<&str> = es.split('.').collect();
        let other = b64(with(claims(), "sub", json!("x")).to_string().as_bytes());
        format!("{}.{other}.{}", parts[0], parts[2])
    };
    for (name, token, ok) in [
        ("ES256", &es, true),
        ("RS256", &rs, true),
        ("ES256 forged", &forged, false),
    ] {
        let rounds = 2000u32;
        // Warm up caches and lazy statics before timing.
        for _ in 0..50 {
            assert_eq!(config.verify(token, now()).is_ok(), ok);
        }
        let start = std::time::Instant::now();
        for _ in 0..rounds {
            assert_eq!(
                config.verify(std::hint::black_box(token), now()).is_ok(),
                ok
            );
        }
        let per = start.elapsed() / rounds;
        println!("{name}: {per:?} per token ({rounds} rounds)");
    }
}
