use std::sync::OnceLock;

use hmac::{KeyInit, Mac};
use p256::ecdsa::signature::Signer as _;
use rsa::signature::SignatureEncoding as _;
use sha2::Sha256;

use super::*;

const ISSUER: &str = "https://as.example";
const AUDIENCE: &str = "https://gw.example/mcp";
/// 2030-03-17T17:46:40Z.
const NOW: i64 = 1_900_000_000;
const RSA_FIXTURE: &str =
    include_str!("../../../tests/fixtures/jwt/test-only-rsa-2048.private.jwk.json");

fn now() -> DateTime<Utc> {
    Utc.timestamp_opt(NOW, 0).single().unwrap()
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn ec_key(seed: u8) -> p256::ecdsa::SigningKey {
    p256::ecdsa::SigningKey::from_slice(&[seed; 32]).unwrap()
}

fn rsa_fixture() -> &'static Value {
    static FIXTURE: OnceLock<Value> = OnceLock::new();
    FIXTURE.get_or_init(|| serde_json::from_str(RSA_FIXTURE).unwrap())
}

fn uint(member: &str) -> rsa::BoxedUint {
    let bytes = URL_SAFE_NO_PAD
        .decode(rsa_fixture()[member].as_str().unwrap())
        .unwrap();
    rsa::BoxedUint::from_be_slice(&bytes, u32::try_from(bytes.len() * 8).unwrap()).unwrap()
}

fn rsa_key() -> &'static rsa::pkcs1v15::SigningKey<Sha256> {
    static KEY: OnceLock<rsa::pkcs1v15::SigningKey<Sha256>> = OnceLock::new();
    KEY.get_or_init(|| {
        let private = rsa::PrivateKey::from_components(
            uint("n"),
            uint("e"),
            uint("d"),
            vec![uint("p"), uint("q")],
        )
        .unwrap();
        rsa::pkcs1v15::SigningKey::<Sha256>::new(private)
    })
}

fn ec_jwk(key: &p256::ecdsa::SigningKey, kid: &str) -> Value {
    let point = key.verifying_key().to_sec1_point(false);
    let point = point.as_bytes();
    json!({"kty": "EC", "crv": "P-256", "x": b64(&point[1..33]), "y": b64(&point[33..65]),
               "kid": kid, "alg": "ES256", "use": "sig"})
}

fn rsa_jwk(kid: &str) -> Value {
    json!({"kty": "RSA", "n": rsa_fixture()["n"], "e": rsa_fixture()["e"], "kid": kid})
}

fn config() -> JwtConfig {
    let jwks = json!({"keys": [ec_jwk(&ec_key(0x11), "ec-1"), rsa_jwk("rsa-1")]});
    JwtConfig::new(
        ISSUER,
        AUDIENCE,
        Jwks::from_value(&jwks).unwrap(),
        DEFAULT_LEEWAY_SECONDS,
    )
    .unwrap()
}

fn claims() -> Value {
    json!({
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "user-7f3a",
        "exp": NOW + 600,
        "nbf": NOW - 10,
        "iat": NOW - 10,
        "jti": "tok-0001",
        "scope": "dealeragent:inventory:read dealeragent:dealer:read",
        "dealeragent_organization": "org-acme",
        "dealeragent_rooftops": ["rt-north", "rt-south"],
        "purpose": "answer a shopper's inventory question",
    })
}

enum Signing {
    Es256(u8),
    Rs256,
    Hs256(Vec<u8>),
    Unsigned,
}

fn mint(header: &Value, claims: &Value, signing: &Signing) -> String {
    let input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let signature = match signing {
        Signing::Es256(seed) => {
            let sig: p256::ecdsa::Signature = ec_key(*seed).sign(input.as_bytes());
            sig.to_bytes().to_vec()
        }
        Signing::Rs256 => rsa_key().sign(input.as_bytes()).to_vec(),
        Signing::Hs256(secret) => {
            let mut mac = hmac::Hmac::<Sha256>::new_from_slice(secret).unwrap();
            mac.update(input.as_bytes());
            mac.finalize().into_bytes().to_vec()
        }
        Signing::Unsigned => Vec::new(),
    };
    format!("{input}.{}", b64(&signature))
}

fn es256(claims: &Value) -> String {
    mint(
        &json!({"alg": "ES256", "kid": "ec-1", "typ": "at+jwt"}),
        claims,
        &Signing::Es256(0x11),
    )
}

fn with(mut base: Value, key: &str, value: Value) -> Value {
    base[key] = value;
    base
}

fn without(mut base: Value, key: &str) -> Value {
    base.as_object_mut().unwrap().remove(key);
    base
}

fn reject(token: &str) -> JwtRejection {
    let rejection = config().verify(token, now()).unwrap_err();
    let text = rejection.to_string();
    assert!(token.len() < 4 || !text.contains(token));
    for segment in token.split('.').filter(|s| s.len() > 3) {
        assert!(!text.contains(segment), "{text}");
    }
    for value in [
        "user-7f3a",
        "tok-0001",
        "org-acme",
        "rt-north",
        "shopper",
        "as.example",
        "gw.example",
    ] {
        assert!(!text.contains(value), "{text} contains {value}");
    }
    rejection
}

#[test]
fn es256_token_gives_the_grant() {
    let grant = config().verify(&es256(&claims()), now()).unwrap();
    assert_eq!(grant.subject, "user-7f3a");
    assert_eq!(grant.audience, AUDIENCE);
    assert_eq!(grant.organization_id, "org-acme");
    assert_eq!(
        grant.rooftops,
        RooftopScope::Rooftops(["rt-north".to_owned(), "rt-south".to_owned()].into())
    );
    assert_eq!(
        grant.scopes,
        [
            "dealeragent:dealer:read".to_owned(),
            "dealeragent:inventory:read".to_owned()
        ]
        .into()
    );
    assert_eq!(grant.purpose, "answer a shopper's inventory question");
    assert_eq!(grant.expires_at.timestamp(), NOW + 600);
    assert!(grant.delegation.is_empty());
    assert_eq!(
        grant.credential,
        Credential::Jwt {
            issuer: ISSUER.to_owned(),
            token_id: Some("tok-0001".to_owned())
        }
    );
    assert!(grant.covers("org-acme", "rt-north"));
    assert!(!grant.covers("org-acme", "rt-east"));
}

#[test]
fn rs256_token_with_group_and_delegation_gives_the_grant() {
    let payload = with(
        without(without(claims(), "dealeragent_rooftops"), "jti"),
        "dealeragent_group",
        json!(true),
    );
    let payload = with(
        payload,
        "act",
        json!({"sub": "agent-shopping-assistant", "act": {"sub": "platform-orchestrator"}}),
    );
    let payload = with(payload, "aud", json!(["https://other.example", AUDIENCE]));
    let token = mint(
        &json!({"alg": "RS256", "kid": "rsa-1"}),
        &payload,
        &Signing::Rs256,
    );
    let grant = config().verify(&token, now()).unwrap();
    assert_eq!(grant.rooftops, RooftopScope::Group);
    assert!(grant.covers("org-acme", "any-rooftop"));
    assert!(!grant.covers("org-other", "any-rooftop"));
    assert_eq!(
        grant.delegation,
        vec!["agent-shopping-assistant", "platform-orchestrator"]
    );
    assert_eq!(
        grant.credential,
        Credential::Jwt {
            issuer: ISSUER.to_owned(),
            token_id: None
        }
    );
}

#[test]
fn empty_or_missing_scope_is_an_empty_set() {
    let grant = config()
        .verify(&es256(&without(claims(), "scope")), now())
        .unwrap();
    assert!(grant.scopes.is_empty());
    let grant = config()
        .verify(&es256(&with(claims(), "scope", json!(""))), now())
        .unwrap();
    assert!(grant.scopes.is_empty());
    assert_eq!(
        reject(&es256(&with(claims(), "scope", json!(["a", "b"])))),
        JwtRejection::InvalidClaim("scope")
    );
    assert_eq!(
        reject(&es256(&with(claims(), "scope", json!("a \"b\"")))),
        JwtRejection::InvalidClaim("scope")
    );
}

#[test]
fn a_single_key_set_needs_no_kid() {
    let jwks = Jwks::from_value(&json!({"keys": [ec_jwk(&ec_key(0x11), "ec-1")]})).unwrap();
    let config = JwtConfig::new(ISSUER, AUDIENCE, jwks, 60).unwrap();
    let token = mint(&json!({"alg": "ES256"}), &claims(), &Signing::Es256(0x11));
    assert!(config.verify(&token, now()).is_ok());
    // With two keys, a token without kid selects nothing.
    assert_eq!(reject(&token), JwtRejection::UnknownKey);
}

#[test]
fn alg_none_is_refused() {
    let token = mint(
        &json!({"alg": "none", "kid": "ec-1"}),
        &claims(),
        &Signing::Unsigned,
    );
    assert_eq!(reject(&token), JwtRejection::UnsupportedAlgorithm);
    let token = mint(&json!({"alg": "None"}), &claims(), &Signing::Unsigned);
    assert_eq!(reject(&token), JwtRejection::UnsupportedAlgorithm);
    let token = mint(&json!({"kid": "ec-1"}), &claims(), &Signing::Es256(0x11));
    assert_eq!(reject(&token), JwtRejection::Malformed);
}

#[test]
fn hs256_with_the_public_key_as_secret_is_refused() {
    let point = ec_key(0x11)
        .verifying_key()
        .to_sec1_point(false)
        .as_bytes()
        .to_vec();
    let jwk_text = ec_jwk(&ec_key(0x11), "ec-1").to_string().into_bytes();
    let n = URL_SAFE_NO_PAD
        .decode(rsa_fixture()["n"].as_str().unwrap())
        .unwrap();
    for (kid, secret) in [("ec-1", point), ("ec-1", jwk_text), ("rsa-1", n)] {
        let token = mint(
            &json!({"alg": "HS256", "kid": kid}),
            &claims(),
            &Signing::Hs256(secret),
        );
        assert_eq!(reject(&token), JwtRejection::UnsupportedAlgorithm);
    }
    for alg in ["HS384", "ES384", "PS256", "RS512", "EdDSA", "es256"] {
        let token = mint(
            &json!({"alg": alg, "kid": "ec-1"}),
            &claims(),
            &Signing::Es256(0x11),
        );
        assert_eq!(reject(&token), JwtRejection::UnsupportedAlgorithm, "{alg}");
    }
}

#[test]
fn key_type_must_match_the_algorithm() {
    // RS256 naming the EC key, and ES256 naming the RSA key.
    let token = mint(
        &json!({"alg": "RS256", "kid": "ec-1"}),
        &claims(),
        &Signing::Rs256,
    );
    assert_eq!(reject(&token), JwtRejection::UnsupportedAlgorithm);
    let token = mint(
        &json!({"alg": "ES256", "kid": "rsa-1"}),
        &claims(),
        &Signing::Es256(0x11),
    );
    assert_eq!(reject(&token), JwtRejection::UnsupportedAlgorithm);
}

#[test]
fn unknown_kid_is_refused() {
    let token = mint(
        &json!({"alg": "ES256", "kid": "ec-9"}),
        &claims(),
        &Signing::Es256(0x11),
    );
    assert_eq!(reject(&token), JwtRejection::UnknownKey);
    let token = mint(
        &json!({"alg": "ES256", "kid": 1}),
        &claims(),
        &Signing::Es256(0x11),
    );
    assert_eq!(reject(&token), JwtRejection::Malformed);
}

#[test]
fn bad_signatures_are_refused() {
    // Another key's signature under a configured kid.
    let token = mint(
        &json!({"alg": "ES256", "kid": "ec-1"}),
        &claims(),
        &Signing::Es256(0x22),
    );
    assert_eq!(reject(&token), JwtRejection::BadSignature);
    // A tampered payload keeps the old signature.
    let token = es256(&claims());
    let parts: Vec<&str> = token.split('.').collect();
    let forged = b64(with(claims(), "dealeragent_group", json!(true))
        .to_string()
        .as_bytes());
    let tampered = format!("{}.{forged}.{}", parts[0], parts[2]);
    assert_eq!(reject(&tampered), JwtRejection::BadSignature);
    let rsa_token = mint(
        &json!({"alg": "RS256", "kid": "rsa-1"}),
        &claims(),
        &Signing::Rs256,
    );
    let rparts: Vec<&str> = rsa_token.split('.').collect();
    let tampered = format!("{}.{forged}.{}", rparts[0], rparts[2]);
    assert_eq!(reject(&tampered), JwtRejection::BadSignature);
    // A truncated signature, and a DER-length one.
    let short = format!("{}.{}.{}", parts[0], parts[1], &parts[2][..40]);
    assert_eq!(reject(&short), JwtRejection::BadSignature);
    let long = format!("{}.{}.{}", parts[0], parts[1], b64(&[0x30; 72]));
    assert_eq!(reject(&long), JwtRejection::BadSignature);
}

/// The other signature of the same (r): s' = n - s. Exactly one of
/// (r, s) and (r, n - s) is low-S.
fn twin(signature: &p256::ecdsa::Signature) -> p256::ecdsa::Signature {
    let (r, s) = signature.split_scalars();
    p256::ecdsa::Signature::from_scalars(p256::FieldBytes::from(r), p256::FieldBytes::from(-s))
        .unwrap()
}

/// The low-S and the high-S signature of `claims` (ES256, kid ec-1).
fn low_and_high_s_tokens(claims: &Value) -> (String, String) {
    let token = es256(claims);
    let (input, signature) = token.rsplit_once('.').unwrap();
    let sig =
        p256::ecdsa::Signature::from_slice(&URL_SAFE_NO_PAD.decode(signature).unwrap()).unwrap();
    let low = sig.normalize_s();
    let high = twin(&low);
    assert_ne!(low, high, "the twin differs");
    assert_eq!(high.normalize_s(), low, "n - s is the high-S twin");
    (
        format!("{input}.{}", b64(&low.to_bytes())),
        format!("{input}.{}", b64(&high.to_bytes())),
    )
}

#[test]
fn high_s_es256_twins_are_accepted_by_default_and_refused_with_require_low_s() {
    let (low, high) = low_and_high_s_tokens(&claims());
    let default = config();
    assert!(!default.require_low_s, "accepting high S is the default");
    // Both forms are valid ECDSA signatures of the same input: a
    // mainstream issuer that does not normalise S emits either.
    assert!(default.verify(&low, now()).is_ok());
    assert!(default.verify(&high, now()).is_ok());
    let strict = config().with_require_low_s(true);
    assert!(strict.verify(&low, now()).is_ok());
    assert_eq!(strict.verify(&high, now()), Err(JwtRejection::BadSignature));
    // The flag changes nothing for RS256 (no such malleability).
    let rsa_token = mint(
        &json!({"alg": "RS256", "kid": "rsa-1"}),
        &claims(),
        &Signing::Rs256,
    );
    assert!(strict.verify(&rsa_token, now()).is_ok());
    // A high-S twin of a forged token is still forged.
    let (_, high_forged) = low_and_high_s_tokens(&claims());
    let parts: Vec<&str> = high_forged.split('.').collect();
    let forged = b64(with(claims(), "sub", json!("someone-else"))
        .to_string()
        .as_bytes());
    let tampered = format!("{}.{forged}.{}", parts[0], parts[2]);
    assert_eq!(
        default.verify(&tampered, now()),
        Err(JwtRejection::BadSignature)
    );
}

#[test]
fn malformed_tokens_are_refused() {
    let token = es256(&claims());
    for bad in [
        String::new(),
        "abc".to_owned(),
        format!("{token}.extra"),
        format!("{token}="),
        token.replacen('.', "..", 1),
        format!("!{token}"),
        "a".repeat(MAX_TOKEN_BYTES + 1),
    ] {
        assert_eq!(reject(&bad), JwtRejection::Malformed);
    }
    // A signed payload that is not a JSON object.
    let header = b64(json!({"alg": "ES256", "kid": "ec-1"})
        .to_string()
        .as_bytes());
    let input = format!("{header}.{}", b64(b"[1,2]"));
    let sig: p256::ecdsa::Signature = ec_key(0x11).sign(input.as_bytes());
    assert_eq!(
        reject(&format!("{input}.{}", b64(&sig.to_bytes()))),
        JwtRejection::Malformed
    );
    // Unknown critical extension, and a typ that is not an access token.
    let token = mint(
        &json!({"alg": "ES256", "kid": "ec-1", "crit": ["exp"]}),
        &claims(),
        &Signing::Es256(0x11),
    );
    assert_eq!(reject(&token), JwtRejection::InvalidClaim("crit (header)"));
    let token = mint(
        &json!({"alg": "ES256", "kid": "ec-1", "typ": "dpop+jwt"}),
        &claims(),
        &Signing::Es256(0x11),
    );
    assert_eq!(reject(&token), JwtRejection::InvalidClaim("typ (header)"));
}

/// Signs `header` and `payload` as given, byte for byte (`mint` goes
/// through `Value`, which cannot hold a repeated name).
fn mint_raw(header: &str, payload: &str) -> String {
    let input = format!("{}.{}", b64(header.as_bytes()), b64(payload.as_bytes()));
    let sig: p256::ecdsa::Signature = ec_key(0x11).sign(input.as_bytes());
    format!("{input}.{}", b64(&sig.to_bytes()))
}

#[test]
fn repeated_member_names_are_refused() {
    let header = r#"{"alg":"ES256","kid":"ec-1"}"#;
    let payload = claims().to_string();
    assert!(config().verify(&mint_raw(header, &payload), now()).is_ok());
    // A second `alg` or `kid` in the header: a reader keeping the first
    // and one keeping the last would disagree on the key.
    for repeated in [
        r#"{"alg":"HS256","alg":"ES256","kid":"ec-1"}"#,
        r#"{"alg":"ES256","kid":"rsa-1","kid":"ec-1"}"#,
        r#"{"alg":"ES256","kid":"ec-1","k\u0069d":"ec-1"}"#,
    ] {
        assert_eq!(
            reject(&mint_raw(repeated, &payload)),
            JwtRejection::Malformed,
            "{repeated}"
        );
    }
    // A second `sub`, `aud` or grant claim in a validly signed payload.
    let body = payload.trim_end_matches('}');
    for extra in [
        r#""sub":"someone-else""#,
        r#""aud":"https://gw.example/mcp""#,
        r#""dealeragent_organization":"org-other""#,
        r#""exp":1"#,
    ] {
        let repeated = format!("{body},{extra}}}");
        assert_eq!(
            reject(&mint_raw(header, &repeated)),
            JwtRejection::Malformed,
            "{extra}"
        );
    }
}

#[test]
fn unencoded_payload_and_mistyped_header_members_are_refused() {
    // RFC 7797 `b64: false` (alone or declared critical), or a `b64`
    // that is not a boolean: the payload would not be what was signed.
    for header in [
        json!({"alg": "ES256", "kid": "ec-1", "b64": false}),
        json!({"alg": "ES256", "kid": "ec-1", "b64": "false"}),
    ] {
        let token = mint(&header, &claims(), &Signing::Es256(0x11));
        assert_eq!(reject(&token), JwtRejection::Malformed, "{header}");
    }
    let token = mint(
        &json!({"alg": "ES256", "kid": "ec-1", "b64": false, "crit": ["b64"]}),
        &claims(),
        &Signing::Es256(0x11),
    );
    assert_eq!(reject(&token), JwtRejection::InvalidClaim("crit (header)"));
    // `b64: true` is the default and changes nothing.
    let token = mint(
        &json!({"alg": "ES256", "kid": "ec-1", "b64": true}),
        &claims(),
        &Signing::Es256(0x11),
    );
    assert!(config().verify(&token, now()).is_ok());
    // Registered members are never followed, but must have their
    // registered types.
    for header in [
        json!({"alg": "ES256", "kid": "ec-1", "jwk": "not-a-key"}),
        json!({"alg": "ES256", "kid": "ec-1", "x5c": "not-a-list"}),
        json!({"alg": "ES256", "kid": "ec-1", "jku": 7}),
    ] {
        let token = mint(&header, &claims(), &Signing::Es256(0x11));
        assert_eq!(reject(&token), JwtRejection::Malformed, "{header}");
    }
    // A `jku` naming somewhere else is ignored: only the file's keys count.
    let token = mint(
        &json!({"alg": "ES256", "kid": "ec-1", "jku": "https://evil.example/jwks"}),
        &claims(),
        &Signing::Es256(0x22),
    );
    assert_eq!(reject(&token), JwtRejection::BadSignature);
}

#[test]
fn issuer_must_match_exactly() {
    for iss in [
        "https://evil.example",
        "https://as.example/",
        "HTTPS://AS.EXAMPLE",
    ] {
        assert_eq!(
            reject(&es256(&with(claims(), "iss", json!(iss)))),
            JwtRejection::WrongIssuer
        );
    }
    assert_eq!(
        reject(&es256(&without(claims(), "iss"))),
        JwtRejection::MissingClaim("iss")
    );
    assert_eq!(
        reject(&es256(&with(claims(), "iss", json!(1)))),
        JwtRejection::InvalidClaim("iss")
    );
}

#[test]
fn audience_must_match_exactly() {
    for aud in [
        json!("https://gw.example/mcp-evil"),
        json!("https://gw.example/mcp/"),
        json!("https://gw.example"),
        json!("https://gw.example/mc"),
        json!("HTTPS://gw.example/mcp"),
        json!(["https://gw.example/mcp-evil", "https://other.example"]),
    ] {
        assert_eq!(
            reject(&es256(&with(claims(), "aud", aud))),
            JwtRejection::WrongAudience
        );
    }
    assert_eq!(
        reject(&es256(&without(claims(), "aud"))),
        JwtRejection::MissingClaim("aud")
    );
    assert_eq!(
        reject(&es256(&with(claims(), "aud", json!([])))),
        JwtRejection::InvalidClaim("aud")
    );
    assert_eq!(
        reject(&es256(&with(claims(), "aud", json!([AUDIENCE, 3])))),
        JwtRejection::InvalidClaim("aud")
    );
}

/// At an endpoint that is its own protected resource (an AAP
/// endpoint), a token for that endpoint is accepted and its grant names
/// it; the same token is refused everywhere else, and the endpoint's
/// identifier is compared as exactly as the gateway's.
#[test]
fn an_endpoint_resource_is_accepted_only_where_the_token_is_presented() {
    const ENDPOINT: &str = "https://gw.example/aap/org.lakeshore-auto-group/mcp";
    let token = es256(&with(claims(), "aud", json!(ENDPOINT)));
    let grant = config()
        .verify_at(&token, now(), Some(ENDPOINT))
        .expect("a token for the endpoint it is presented at");
    assert_eq!(grant.audience, ENDPOINT);
    assert_eq!(reject(&token), JwtRejection::WrongAudience);
    let other = "https://gw.example/aap/org.maplecrest-motor-group/mcp";
    assert_eq!(
        config().verify_at(&token, now(), Some(other)).unwrap_err(),
        JwtRejection::WrongAudience
    );
    for near in [format!("{ENDPOINT}/"), ENDPOINT.to_uppercase()] {
        let token = es256(&with(claims(), "aud", json!(near)));
        assert_eq!(
            config()
                .verify_at(&token, now(), Some(ENDPOINT))
                .unwrap_err(),
            JwtRejection::WrongAudience
        );
    }
    // The gateway's own resource stays good at the endpoint too.
    let gateway = config()
        .verify_at(&es256(&claims()), now(), Some(ENDPOINT))
        .expect("a token for the gateway");
    assert_eq!(gateway.audience, AUDIENCE);
    // An invalid `aud` is invalid whatever the endpoint.
    let bad = es256(&with(claims(), "aud", json!([ENDPOINT, 3])));
    assert_eq!(
        config().verify_at(&bad, now(), Some(ENDPOINT)).unwrap_err(),
        JwtRejection::InvalidClaim("aud")
    );
}

#[test]
fn expiry_and_not_before_use_the_leeway() {
    let config = config();
    let ok = |c: Value| config.verify(&es256(&c), now());
    assert!(ok(with(claims(), "exp", json!(NOW - 30))).is_ok());
    assert!(ok(with(claims(), "exp", json!(NOW - 59))).is_ok());
    assert_eq!(
        reject(&es256(&with(claims(), "exp", json!(NOW - 60)))),
        JwtRejection::Expired
    );
    assert_eq!(
        reject(&es256(&with(claims(), "exp", json!(NOW - 3600)))),
        JwtRejection::Expired
    );
    assert!(ok(with(claims(), "exp", json!(NOW as f64 + 10.5))).is_ok());
    assert_eq!(
        reject(&es256(&without(claims(), "exp"))),
        JwtRejection::MissingClaim("exp")
    );
    assert_eq!(
        reject(&es256(&with(claims(), "exp", json!("soon")))),
        JwtRejection::InvalidClaim("exp")
    );
    assert!(ok(with(claims(), "nbf", json!(NOW + 30))).is_ok());
    assert_eq!(
        reject(&es256(&with(claims(), "nbf", json!(NOW + 61)))),
        JwtRejection::NotYetValid
    );
    assert!(ok(without(claims(), "nbf")).is_ok());
    let strict = JwtConfig {
        leeway_seconds: 0,
        ..config.clone()
    };
    assert_eq!(
        strict.verify(&es256(&with(claims(), "exp", json!(NOW))), now()),
        Err(JwtRejection::Expired)
    );
}

#[test]
fn required_claims_are_enforced() {
    assert_eq!(
        reject(&es256(&without(claims(), "sub"))),
        JwtRejection::MissingClaim("sub")
    );
    assert_eq!(
        reject(&es256(&with(claims(), "sub", json!("")))),
        JwtRejection::InvalidClaim("sub")
    );
    assert_eq!(
        reject(&es256(&without(claims(), ORGANIZATION_CLAIM))),
        JwtRejection::MissingClaim(ORGANIZATION_CLAIM)
    );
    assert_eq!(
        reject(&es256(&with(
            claims(),
            ORGANIZATION_CLAIM,
            json!(["org-acme"])
        ))),
        JwtRejection::InvalidClaim(ORGANIZATION_CLAIM)
    );
    assert_eq!(
        reject(&es256(&without(claims(), PURPOSE_CLAIM))),
        JwtRejection::MissingClaim(PURPOSE_CLAIM)
    );
    assert_eq!(
        reject(&es256(&with(
            claims(),
            PURPOSE_CLAIM,
            json!("x".repeat(129))
        ))),
        JwtRejection::InvalidClaim(PURPOSE_CLAIM)
    );
    assert!(
        config()
            .verify(
                &es256(&with(claims(), PURPOSE_CLAIM, json!("é".repeat(128)))),
                now()
            )
            .is_ok()
    );
    assert_eq!(
        reject(&es256(&with(claims(), PURPOSE_CLAIM, json!("two\nlines")))),
        JwtRejection::InvalidClaim(PURPOSE_CLAIM)
    );
    assert_eq!(
        reject(&es256(&with(claims(), "jti", json!(7)))),
        JwtRejection::InvalidClaim("jti")
    );
}

#[test]
fn rooftops_or_group_exactly_one() {
    let both = with(claims(), GROUP_CLAIM, json!(true));
    assert_eq!(
        reject(&es256(&both)),
        JwtRejection::InvalidClaim(ROOFTOPS_AND_GROUP)
    );
    let neither = without(claims(), ROOFTOPS_CLAIM);
    assert_eq!(
        reject(&es256(&neither)),
        JwtRejection::MissingClaim(ROOFTOPS_OR_GROUP)
    );
    let group_false = with(without(claims(), ROOFTOPS_CLAIM), GROUP_CLAIM, json!(false));
    assert_eq!(
        reject(&es256(&group_false)),
        JwtRejection::MissingClaim(ROOFTOPS_OR_GROUP)
    );
    // `false` next to rooftops is just no group grant.
    assert!(
        config()
            .verify(&es256(&with(claims(), GROUP_CLAIM, json!(false))), now())
            .is_ok()
    );
    for bad in [
        json!([]),
        json!("rt-north"),
        json!(["rt-north", 5]),
        json!([""]),
    ] {
        assert_eq!(
            reject(&es256(&with(claims(), ROOFTOPS_CLAIM, bad))),
            JwtRejection::InvalidClaim(ROOFTOPS_CLAIM)
        );
    }
    let group_string = with(
        without(claims(), ROOFTOPS_CLAIM),
        GROUP_CLAIM,
        json!("true"),
    );
    assert_eq!(
        reject(&es256(&group_string)),
        JwtRejection::InvalidClaim(GROUP_CLAIM)
    );
}

#[test]
fn delegation_chain_is_bounded() {
    let mut act = json!({"sub": "actor-8"});
    for depth in (1..8).rev() {
        act = json!({"sub": format!("actor-{depth}"), "act": act});
    }
    let grant = config()
        .verify(&es256(&with(claims(), "act", act.clone())), now())
        .unwrap();
    assert_eq!(grant.delegation.len(), 8);
    assert_eq!(grant.delegation[0], "actor-1");
    assert_eq!(grant.delegation[7], "actor-8");
    let too_deep = json!({"sub": "actor-0", "act": act});
    assert_eq!(
        reject(&es256(&with(claims(), "act", too_deep))),
        JwtRejection::InvalidClaim("act")
    );
    for bad in [
        json!("agent"),
        json!({"iss": "x"}),
        json!({"sub": "a", "act": {"sub": 1}}),
    ] {
        assert_eq!(
            reject(&es256(&with(claims(), "act", bad))),
            JwtRejection::InvalidClaim("act")
        );
    }
}

#[test]
fn rejection_messages_carry_no_values() {
    let all = [
        JwtRejection::Malformed,
        JwtRejection::UnsupportedAlgorithm,
        JwtRejection::UnknownKey,
        JwtRejection::BadSignature,
        JwtRejection::WrongIssuer,
        JwtRejection::WrongAudience,
        JwtRejection::Expired,
        JwtRejection::NotYetValid,
        JwtRejection::MissingClaim(ORGANIZATION_CLAIM),
        JwtRejection::InvalidClaim(ROOFTOPS_AND_GROUP),
    ];
    for rejection in all {
        let text = rejection.to_string();
        assert!(!text.is_empty() && !text.contains('"') && !text.contains('\\'));
        assert!(text.is_ascii());
        assert!(!rejection.code().is_empty());
    }
}

// The key set, the settings file, the protected-resource metadata and the bearer
// challenges: what an operator configures rather than what a token carries.
mod keyset;
