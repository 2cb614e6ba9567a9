//! The isolation matrix over real HTTP (docs/security.md "Threat model").
//!
//! Every credential kind (anonymous, rooftop token, other-rooftop token,
//! group token, other-organization token, missing-scope token, expired,
//! revoked, JWTs with a good, wrong or expired audience/lifetime, garbage,
//! the `Basic` scheme and a token in the query string) against every tool
//! and resource, asserting the exact outcome; foreign existence never leaks
//! (byte-identical errors); audit events are present, name the caller and
//! never hold a token; HTTP rate limits answer 429 with Retry-After; the
//! protected-resource metadata; and a fuzz loop over `Authorization`
//! headers and bodies that must never produce a 5xx.
//!
//! Tokens are created through the library in the gateway's own store (the
//! gateway reads tokens from the store per request), so every test runs on
//! SQLite and, with `DEALER_GATEWAY_TEST_POSTGRES_URL`, on PostgreSQL.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chrono::{DateTime, SubsecRound as _, TimeDelta, Utc};
use gateway::auth::api_token::{self, SCOPE_INVENTORY_READ, SCOPE_PRICING_READ, TokenRequest};
use gateway::auth::{Credential, RooftopScope};
use gateway::store::{ApiTokenRecord, AuditEvent, Store};
use p256::ecdsa::signature::Signer as _;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

use crate::common::{MODERN, Reply, TestApp};

pub(crate) const ORG: &str = "org.lakeshore-auto-group";
pub(crate) const OTHER_ORG: &str = "org.maplecrest-motor-group";
/// The demo's partner-only rooftop (`anonymous_reads: false`).
pub(crate) const FLEET: &str = "roof.lakeshore-fleet-wholesale";
/// A public rooftop of the same organization.
pub(crate) const CHICAGO: &str = "roof.lakeshore-chicago";
/// A rooftop id no organization has.
pub(crate) const ABSENT: &str = "roof.lakeshore-does-not-exist";
/// This gateway's resource URL (the audience every credential must name).
pub(crate) const RESOURCE: &str = "https://gateway.security.test/mcp";
pub(crate) const ISSUER: &str = "https://auth.security.test";
pub(crate) const KID: &str = "security-test-ec";
pub(crate) const NOT_FOUND: &str = "dealeragent.resource.not_found";
/// The availability tool: covered when the catalog serves it.
pub(crate) const VERIFY: &str = "dealeragent.inventory.verify_availability";
/// Every tool the matrix covers; a test checks the catalog has no other.
pub(crate) const MATRIX_TOOLS: [&str; 7] = [
    "dealeragent.discovery.get_manifest",
    "dealeragent.dealer.get",
    "dealeragent.inventory.search",
    "dealeragent.inventory.get_vehicle",
    VERIFY,
    DISCLOSURE,
    OFFERS,
];
pub(crate) const DISCLOSURE: &str = "dealeragent.pricing.get_disclosure";
pub(crate) const OFFERS: &str = "dealergateway.offers.evaluate";
pub(crate) const SCOPE_INSUFFICIENT: &str = "dealeragent.scope.insufficient";

// ---------------------------------------------------------------------------
// Credentials
// ---------------------------------------------------------------------------

/// Every kind of caller of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Who {
    Anonymous,
    /// API token: the fleet rooftop, inventory scope.
    RooftopToken,
    /// API token: another rooftop of the same organization.
    OtherRooftopToken,
    /// API token: group grant over the whole organization.
    GroupToken,
    /// API token: group grant over another organization.
    OtherOrganizationToken,
    /// API token: the fleet rooftop, but only the pricing scope.
    MissingScopeToken,
    /// JWT: group grant, inventory scope.
    GroupJwt,
    /// JWT: group grant, no `scope` claim at all.
    NoScopeJwt,
    ExpiredToken,
    RevokedToken,
    WrongAudienceJwt,
    ExpiredJwt,
    /// `Bearer` with something that is no credential.
    Garbage,
    /// `Basic user:password`.
    BasicScheme,
    /// The valid rooftop token, but in `?access_token=`.
    TokenInQuery,
}

impl Who {
    pub(crate) const ALL: [Who; 15] = [
        Who::Anonymous,
        Who::RooftopToken,
        Who::OtherRooftopToken,
        Who::GroupToken,
        Who::OtherOrganizationToken,
        Who::MissingScopeToken,
        Who::GroupJwt,
        Who::NoScopeJwt,
        Who::ExpiredToken,
        Who::RevokedToken,
        Who::WrongAudienceJwt,
        Who::ExpiredJwt,
        Who::Garbage,
        Who::BasicScheme,
        Who::TokenInQuery,
    ];

    /// The OAuth error of the 401 when this caller's credential is refused.
    pub(crate) fn refusal(self) -> Option<&'static str> {
        match self {
            Who::ExpiredToken
            | Who::RevokedToken
            | Who::WrongAudienceJwt
            | Who::ExpiredJwt
            | Who::Garbage => Some("invalid_token"),
            Who::BasicScheme | Who::TokenInQuery => Some("invalid_request"),
            _ => None,
        }
    }

    /// May this caller see the partner-only fleet rooftop?
    pub(crate) fn sees_fleet(self) -> bool {
        matches!(
            self,
            Who::RooftopToken
                | Who::GroupToken
                | Who::MissingScopeToken
                | Who::GroupJwt
                | Who::NoScopeJwt
        )
    }

    /// Authenticated, but without `dealeragent:inventory:read`.
    pub(crate) fn lacks_inventory_scope(self) -> bool {
        matches!(self, Who::MissingScopeToken | Who::NoScopeJwt)
    }

    /// Authenticated, but without `dealeragent:pricing:read` (only the
    /// pricing-only token holds it).
    pub(crate) fn lacks_pricing_scope(self) -> bool {
        self.authenticated() && self != Who::MissingScopeToken
    }

    pub(crate) fn authenticated(self) -> bool {
        self != Who::Anonymous && self.refusal().is_none()
    }
}

/// The test-only ES256 key of the JWT issuer (a fixed scalar).
pub(crate) fn signing_key() -> p256::ecdsa::SigningKey {
    p256::ecdsa::SigningKey::from_slice(&[0x5a; 32]).expect("a valid P-256 scalar")
}

pub(crate) fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The issuer's PUBLIC key set, as an operator would configure it.
pub(crate) fn public_jwks() -> Value {
    let point = signing_key().verifying_key().to_sec1_point(false);
    let point = point.as_bytes();
    json!({"keys": [{"kty": "EC", "crv": "P-256", "x": b64(&point[1..33]), "y": b64(&point[33..65]),
                     "kid": KID, "alg": "ES256", "use": "sig"}]})
}

/// A signed ES256 access token with these claims.
pub(crate) fn mint_jwt(claims: &Value) -> String {
    let header = json!({"alg": "ES256", "kid": KID, "typ": "at+jwt"});
    let input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let signature: p256::ecdsa::Signature = signing_key().sign(input.as_bytes());
    format!("{input}.{}", b64(&signature.to_bytes()))
}

/// Claims of a valid group JWT for the Lakeshore group.
pub(crate) fn jwt_claims(now: DateTime<Utc>) -> Value {
    json!({
        "iss": ISSUER,
        "aud": RESOURCE,
        "sub": "jwt:partner-dms",
        "exp": now.timestamp() + 600,
        "nbf": now.timestamp() - 10,
        "iat": now.timestamp() - 10,
        "jti": "security-jti-0001",
        "scope": SCOPE_INVENTORY_READ,
        "dealeragent_organization": ORG,
        "dealeragent_group": true,
        "purpose": "isolation matrix",
    })
}

pub(crate) async fn create_token(
    store: &dyn Store,
    subject: &str,
    organization: &str,
    rooftops: RooftopScope,
    scopes: &[&str],
) -> String {
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let known = api_token::known_scopes(&catalog);
    let now = Utc::now();
    let request = TokenRequest {
        subject: subject.to_owned(),
        organization_id: organization.to_owned(),
        rooftops,
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        purpose: "security test".to_owned(),
        expires_at: now + TimeDelta::hours(1),
    };
    api_token::create(store, &request, &known, now)
        .await
        .expect("token created")
        .token
}

/// Does the catalog serve this tool?
pub(crate) fn catalog_has(tool: &str) -> bool {
    gateway::catalog::Catalog::load()
        .expect("catalog")
        .tool(tool)
        .is_some()
}

pub(crate) fn rooftops(ids: &[&str]) -> RooftopScope {
    RooftopScope::Rooftops(ids.iter().map(|s| (*s).to_owned()).collect())
}

/// A gateway with JWTs configured, the demo data, and one credential of
/// every kind.
pub(crate) struct Fixture {
    pub(crate) app: TestApp,
    pub(crate) store: Arc<dyn Store>,
    /// The raw credential of each caller that has one.
    pub(crate) tokens: BTreeMap<Who, String>,
    /// A vehicle of the fleet rooftop, and one of the Chicago rooftop.
    pub(crate) fleet_vehicle: String,
    pub(crate) chicago_vehicle: String,
    /// Before any call was made.
    pub(crate) started: DateTime<Utc>,
    /// The audit events of the fixture's own set-up reads (the group
    /// token's searches for `fleet_vehicle` and `chicago_vehicle`), left out
    /// of [`Fixture::audit_since`]: a test's window starts a few
    /// milliseconds early for stored-time truncation, which on a loaded
    /// host can reach back to the last set-up read.
    pub(crate) setup_events: std::collections::BTreeSet<String>,
}

impl Fixture {
    pub(crate) async fn new() -> Self {
        Self::with(|_| {}).await
    }

    pub(crate) async fn with(adjust: impl FnOnce(&mut gateway::config::ServeSettings)) -> Self {
        let started = Utc::now() - TimeDelta::seconds(1);
        let keys = common::temp_dir();
        let jwks = keys.join("issuer-public.jwks.json");
        std::fs::write(&jwks, public_jwks().to_string()).expect("JWKS written");
        let app = common::spawn_with(|s| {
            s.resource_url = Some(RESOURCE.to_owned());
            s.jwt_issuer = Some(ISSUER.to_owned());
            s.jwt_jwks_file = Some(jwks.clone());
            adjust(s);
        })
        .await;
        let store = gateway::store::open(&app.database_url)
            .await
            .expect("store opens");
        let s = store.as_ref();
        let inv = [SCOPE_INVENTORY_READ];
        let mut tokens = BTreeMap::new();
        tokens.insert(
            Who::RooftopToken,
            create_token(s, "partner:fleet", ORG, rooftops(&[FLEET]), &inv).await,
        );
        tokens.insert(
            Who::OtherRooftopToken,
            create_token(s, "partner:chicago", ORG, rooftops(&[CHICAGO]), &inv).await,
        );
        tokens.insert(
            Who::GroupToken,
            create_token(s, "partner:group", ORG, RooftopScope::Group, &inv).await,
        );
        tokens.insert(
            Who::OtherOrganizationToken,
            create_token(
                s,
                "partner:maplecrest",
                OTHER_ORG,
                RooftopScope::Group,
                &inv,
            )
            .await,
        );
        // `create` refuses an empty scope list: a token holding only another
        // known scope lacks the inventory scope just the same.
        tokens.insert(
            Who::MissingScopeToken,
            create_token(
                s,
                "partner:pricing-only",
                ORG,
                rooftops(&[FLEET]),
                &[SCOPE_PRICING_READ],
            )
            .await,
        );
        // `create` refuses a past expiry: write the record directly.
        let expired = api_token::generate();
        let now = Utc::now().trunc_subsecs(6);
        store
            .create_api_token(&ApiTokenRecord {
                token_id: expired.token_id.clone(),
                secret_hash: expired.secret_hash(),
                subject: "partner:expired".to_owned(),
                organization_id: ORG.to_owned(),
                rooftops: rooftops(&[FLEET]),
                scopes: [SCOPE_INVENTORY_READ.to_owned()].into(),
                purpose: "security test".to_owned(),
                created_at: now - TimeDelta::hours(2),
                expires_at: now - TimeDelta::hours(1),
                revoked_at: None,
            })
            .await
            .expect("expired token stored");
        tokens.insert(Who::ExpiredToken, expired.token);
        let revoked = create_token(s, "partner:revoked", ORG, rooftops(&[FLEET]), &inv).await;
        let (revoked_id, _) = api_token::parse(&revoked).expect("token parses");
        assert!(
            store
                .revoke_api_token(revoked_id, Utc::now())
                .await
                .expect("revoked")
        );
        tokens.insert(Who::RevokedToken, revoked);

        let now = Utc::now();
        tokens.insert(Who::GroupJwt, mint_jwt(&jwt_claims(now)));
        let mut no_scope = jwt_claims(now);
        no_scope.as_object_mut().unwrap().remove("scope");
        no_scope["sub"] = json!("jwt:no-scope");
        tokens.insert(Who::NoScopeJwt, mint_jwt(&no_scope));
        let mut wrong_audience = jwt_claims(now);
        wrong_audience["aud"] = json!("https://another-gateway.test/mcp");
        tokens.insert(Who::WrongAudienceJwt, mint_jwt(&wrong_audience));
        let mut expired_jwt = jwt_claims(now);
        expired_jwt["exp"] = json!(now.timestamp() - 3600);
        expired_jwt["nbf"] = json!(now.timestamp() - 7200);
        expired_jwt["iat"] = json!(now.timestamp() - 7200);
        tokens.insert(Who::ExpiredJwt, mint_jwt(&expired_jwt));
        tokens.insert(Who::Garbage, "not-a-credential-0123456789".to_owned());
        tokens.insert(
            Who::BasicScheme,
            STANDARD.encode("partner:correct-horse-battery-staple"),
        );

        let mut fixture = Fixture {
            app,
            store,
            tokens,
            fleet_vehicle: String::new(),
            chicago_vehicle: String::new(),
            started,
            setup_events: Default::default(),
        };
        fixture.fleet_vehicle = fixture.first_vehicle(FLEET).await;
        fixture.chicago_vehicle = fixture.first_vehicle(CHICAGO).await;
        // An authenticated read's event is written before its answer is
        // sent (docs/security.md "Audit cannot be skipped"), so every
        // set-up event is stored by now.
        fixture.setup_events = fixture
            .audit()
            .await
            .into_iter()
            .map(|e| e.event_id)
            .collect();
        fixture
    }

    pub(crate) fn token(&self, who: Who) -> &str {
        &self.tokens[&who]
    }

    /// The `Authorization` header this caller sends, if any.
    pub(crate) fn authorization(&self, who: Who) -> Option<String> {
        match who {
            Who::Anonymous | Who::TokenInQuery => None,
            Who::BasicScheme => Some(format!("Basic {}", self.token(who))),
            other => Some(format!("Bearer {}", self.token(other))),
        }
    }

    /// A vehicle id of `rooftop` (read with the group token).
    pub(crate) async fn first_vehicle(&self, rooftop: &str) -> String {
        let r = self
            .call(
                Who::GroupToken,
                "tools/call",
                json!({"name": "dealeragent.inventory.search",
                       "arguments": {"organization_id": ORG, "rooftop_ids": [rooftop]}}),
            )
            .await;
        r.result()["structuredContent"]["vehicles"][0]["vehicle_id"]
            .as_str()
            .unwrap_or_else(|| panic!("no vehicle at {rooftop}: {}", r.raw))
            .to_owned()
    }

    /// One modern request with the standard headers as `who`.
    pub(crate) async fn call(&self, who: Who, method: &str, params: Value) -> Reply {
        let body = common::modern_body(1, method, params);
        let url = if who == Who::TokenInQuery {
            format!(
                "{}?access_token={}",
                self.app.url,
                self.token(Who::RooftopToken)
            )
        } else {
            self.app.url.clone()
        };
        let mut req = self
            .app
            .http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", method);
        if let Some(name) = body["params"]
            .get("name")
            .or_else(|| body["params"].get("uri"))
            .and_then(Value::as_str)
        {
            req = req.header("mcp-name", name);
        }
        if let Some(auth) = self.authorization(who) {
            req = req.header("authorization", auth);
        }
        common::send(req.body(body.to_string())).await
    }

    pub(crate) async fn tool(&self, who: Who, name: &str, arguments: Value) -> Reply {
        self.call(
            who,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
        .await
    }

    pub(crate) async fn read(&self, who: Who, uri: &str) -> Reply {
        self.call(who, "resources/read", json!({"uri": uri})).await
    }

    pub(crate) async fn audit(&self) -> Vec<AuditEvent> {
        self.store
            .audit_since(self.started, 10_000)
            .await
            .expect("audit readable")
    }

    /// The audit events from `t0` on, without the fixture's set-up reads.
    pub(crate) async fn audit_since(&self, t0: DateTime<Utc>, limit: u32) -> Vec<AuditEvent> {
        let mut events = self
            .store
            .audit_since(t0, limit)
            .await
            .expect("audit readable");
        events.retain(|e| !self.setup_events.contains(&e.event_id));
        events
    }
}

// ---------------------------------------------------------------------------
// Comparing error answers
// ---------------------------------------------------------------------------

/// A response with the per-request values removed (`error_id`, `trace_id`,
/// `created_at`), including inside JSON text content, serialized again.
pub(crate) fn normalized(raw: &str) -> String {
    pub(crate) fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for key in ["error_id", "trace_id", "created_at"] {
                    if map.contains_key(key) {
                        map.insert(key.to_owned(), json!("<removed>"));
                    }
                }
                for (key, value) in map.iter_mut() {
                    if key == "text"
                        && let Some(Ok(mut inner)) =
                            value.as_str().map(serde_json::from_str::<Value>)
                    {
                        strip(&mut inner);
                        *value = json!(inner.to_string());
                    } else {
                        strip(value);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v: Value = serde_json::from_str(raw).unwrap_or_else(|_| panic!("not JSON: {raw}"));
    strip(&mut v);
    v.to_string()
}

// ---------------------------------------------------------------------------
// The matrix
// ---------------------------------------------------------------------------

/// Every tool and resource call of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Case {
    Manifest,
    DealerFleet,
    DealerOrganization,
    SearchFleet,
    SearchOrganization,
    SearchChicago,
    VehicleFleet,
    VehicleChicago,
    /// The fleet vehicle asked for under another organization.
    VehicleFleetUnderOtherOrganization,
    VerifyFleet,
    VerifyChicago,
    DisclosureFleet,
    DisclosureChicago,
    OffersFleet,
    OffersChicago,
    ResourceManifest,
    ResourceList,
    ResourceOrganization,
    ResourceRooftopFleet,
    ResourceRooftopChicago,
    ResourceVehicleFleet,
    ResourceVehicleChicago,
}

impl Case {
    const ALL: [Case; 22] = [
        Case::Manifest,
        Case::DealerFleet,
        Case::DealerOrganization,
        Case::SearchFleet,
        Case::SearchOrganization,
        Case::SearchChicago,
        Case::VehicleFleet,
        Case::VehicleChicago,
        Case::VehicleFleetUnderOtherOrganization,
        Case::VerifyFleet,
        Case::VerifyChicago,
        Case::DisclosureFleet,
        Case::DisclosureChicago,
        Case::OffersFleet,
        Case::OffersChicago,
        Case::ResourceManifest,
        Case::ResourceList,
        Case::ResourceOrganization,
        Case::ResourceRooftopFleet,
        Case::ResourceRooftopChicago,
        Case::ResourceVehicleFleet,
        Case::ResourceVehicleChicago,
    ];

    /// Served by this build (the availability tool may not be).
    pub(crate) fn served(self) -> bool {
        match self {
            Case::VerifyFleet | Case::VerifyChicago => catalog_has(VERIFY),
            Case::DisclosureFleet | Case::DisclosureChicago => catalog_has(DISCLOSURE),
            Case::OffersFleet | Case::OffersChicago => catalog_has(OFFERS),
            _ => true,
        }
    }

    pub(crate) fn is_resource(self) -> bool {
        matches!(
            self,
            Case::ResourceManifest
                | Case::ResourceList
                | Case::ResourceOrganization
                | Case::ResourceRooftopFleet
                | Case::ResourceRooftopChicago
                | Case::ResourceVehicleFleet
                | Case::ResourceVehicleChicago
        )
    }
}

/// The exact outcome of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A normal answer (tool result without `isError`, or resource contents).
    Ok,
    /// Tool `isError` with `dealeragent.resource.not_found`.
    NotFound,
    /// Tool `isError` with `dealeragent.scope.insufficient`.
    ScopeInsufficient,
    /// JSON-RPC -32602 "Resource not found".
    ResourceNotFound,
    /// HTTP 401 with this OAuth error and a Bearer challenge.
    Unauthorized(&'static str),
}

pub(crate) fn expected(case: Case, who: Who) -> Outcome {
    if let Some(error) = who.refusal() {
        return Outcome::Unauthorized(error);
    }
    let fleet = who.sees_fleet();
    let no_scope = who.lacks_inventory_scope();
    let gated = |visible: bool| {
        if no_scope {
            Outcome::ScopeInsufficient
        } else if visible {
            Outcome::Ok
        } else {
            Outcome::NotFound
        }
    };
    match case {
        Case::Manifest
        | Case::DealerOrganization
        | Case::ResourceManifest
        | Case::ResourceList
        | Case::ResourceOrganization
        | Case::ResourceRooftopChicago
        | Case::ResourceVehicleChicago => Outcome::Ok,
        Case::DealerFleet => {
            if fleet {
                Outcome::Ok
            } else {
                Outcome::NotFound
            }
        }
        Case::SearchFleet | Case::VehicleFleet | Case::VerifyFleet => gated(fleet),
        Case::SearchOrganization
        | Case::SearchChicago
        | Case::VehicleChicago
        | Case::VerifyChicago => gated(true),
        Case::VehicleFleetUnderOtherOrganization => gated(false),
        // The disclosure and the offer evaluation need the pricing scope,
        // not the inventory scope.
        Case::DisclosureFleet
        | Case::DisclosureChicago
        | Case::OffersFleet
        | Case::OffersChicago => {
            let visible = matches!(case, Case::DisclosureChicago | Case::OffersChicago) || fleet;
            if who.lacks_pricing_scope() {
                Outcome::ScopeInsufficient
            } else if visible {
                Outcome::Ok
            } else {
                Outcome::NotFound
            }
        }
        Case::ResourceRooftopFleet | Case::ResourceVehicleFleet => {
            if fleet {
                Outcome::Ok
            } else {
                Outcome::ResourceNotFound
            }
        }
    }
}

impl Fixture {
    pub(crate) fn vehicle_uri(&self, rooftop: &str, vehicle: &str) -> String {
        format!("dealeragent://organization/{ORG}/rooftop/{rooftop}/vehicle/{vehicle}")
    }

    pub(crate) async fn run(&self, case: Case, who: Who) -> Reply {
        let search = "dealeragent.inventory.search";
        let get_vehicle = "dealeragent.inventory.get_vehicle";
        match case {
            Case::Manifest => {
                self.tool(who, "dealeragent.discovery.get_manifest", json!({}))
                    .await
            }
            Case::DealerFleet => {
                self.tool(
                    who,
                    "dealeragent.dealer.get",
                    json!({"organization_id": ORG, "rooftop_ids": [FLEET]}),
                )
                .await
            }
            Case::DealerOrganization => {
                self.tool(who, "dealeragent.dealer.get", json!({"organization_id": ORG}))
                    .await
            }
            Case::SearchFleet => {
                self.tool(
                    who,
                    search,
                    json!({"organization_id": ORG, "rooftop_ids": [FLEET]}),
                )
                .await
            }
            Case::SearchOrganization => {
                self.tool(
                    who,
                    search,
                    json!({"organization_id": ORG, "page": {"limit": 100}}),
                )
                .await
            }
            Case::SearchChicago => {
                self.tool(
                    who,
                    search,
                    json!({"organization_id": ORG, "rooftop_ids": [CHICAGO]}),
                )
                .await
            }
            Case::VehicleFleet => {
                self.tool(
                    who,
                    get_vehicle,
                    json!({"organization_id": ORG, "rooftop_id": FLEET, "vehicle_id": self.fleet_vehicle}),
                )
                .await
            }
            Case::VehicleChicago => {
                self.tool(
                    who,
                    get_vehicle,
                    json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": self.chicago_vehicle}),
                )
                .await
            }
            Case::VehicleFleetUnderOtherOrganization => {
                self.tool(
                    who,
                    get_vehicle,
                    json!({"organization_id": OTHER_ORG, "rooftop_id": FLEET, "vehicle_id": self.fleet_vehicle}),
                )
                .await
            }
            Case::VerifyFleet => {
                self.tool(
                    who,
                    VERIFY,
                    json!({"organization_id": ORG, "rooftop_id": FLEET, "vehicle_id": self.fleet_vehicle}),
                )
                .await
            }
            Case::VerifyChicago => {
                self.tool(
                    who,
                    VERIFY,
                    json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": self.chicago_vehicle}),
                )
                .await
            }
            Case::DisclosureFleet => {
                self.tool(
                    who,
                    DISCLOSURE,
                    json!({"organization_id": ORG, "rooftop_id": FLEET, "vehicle_id": self.fleet_vehicle}),
                )
                .await
            }
            Case::DisclosureChicago => {
                self.tool(
                    who,
                    DISCLOSURE,
                    json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": self.chicago_vehicle}),
                )
                .await
            }
            Case::OffersFleet | Case::OffersChicago => {
                let (rooftop, vehicle) = if case == Case::OffersFleet {
                    (FLEET, &self.fleet_vehicle)
                } else {
                    (CHICAGO, &self.chicago_vehicle)
                };
                self.tool(
                    who,
                    OFFERS,
                    json!({"organization_id": ORG, "rooftop_id": rooftop, "vehicle_id": vehicle,
                           "profile": {"payment_mode": "unknown", "jurisdiction": {"country": "US"}, "claims": {}}}),
                )
                .await
            }
            Case::ResourceManifest => self.read(who, "dealeragent://manifest").await,
            Case::ResourceList => self.call(who, "resources/list", json!({})).await,
            Case::ResourceOrganization => {
                self.read(who, &format!("dealeragent://organization/{ORG}"))
                    .await
            }
            Case::ResourceRooftopFleet => {
                self.read(
                    who,
                    &format!("dealeragent://organization/{ORG}/rooftop/{FLEET}"),
                )
                .await
            }
            Case::ResourceRooftopChicago => {
                self.read(
                    who,
                    &format!("dealeragent://organization/{ORG}/rooftop/{CHICAGO}"),
                )
                .await
            }
            Case::ResourceVehicleFleet => {
                self.read(who, &self.vehicle_uri(FLEET, &self.fleet_vehicle))
                    .await
            }
            Case::ResourceVehicleChicago => {
                self.read(who, &self.vehicle_uri(CHICAGO, &self.chicago_vehicle))
                    .await
            }
        }
    }

    /// Checks one reply against the exact expected outcome; `reference` is
    /// the normalized not-found tool result every not-found must equal.
    pub(crate) fn check(
        &self,
        case: Case,
        who: Who,
        r: &Reply,
        reference: &str,
    ) -> Result<(), String> {
        let want = expected(case, who);
        let fail = |why: String| {
            Err(format!(
                "{case:?} as {who:?} (want {want:?}): {why}; got {} {}",
                r.status, r.raw
            ))
        };
        if let Outcome::Unauthorized(error) = want {
            if r.status != 401 {
                return fail("status is not 401".into());
            }
            let challenge = r
                .headers
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let metadata = format!(
                "resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
                self.app.base()
            );
            if !challenge.starts_with("Bearer ")
                || !challenge.contains(&metadata)
                || !challenge.contains(&format!("error=\"{error}\""))
            {
                return fail(format!("challenge {challenge:?}"));
            }
            if r.body["error"] != json!(error) {
                return fail("body error".into());
            }
            if let Some(token) = self.tokens.get(&who)
                && (r.raw.contains(token.as_str()) || challenge.contains(token.as_str()))
            {
                return fail("the credential is echoed".into());
            }
            return Ok(());
        }
        if r.status != 200 {
            return fail("status is not 200".into());
        }
        // What the caller may not see is never mentioned (a requested URI
        // echoed in a resource-not-found is the caller's own input).
        if !who.sees_fleet() && want != Outcome::ResourceNotFound && r.raw.contains(FLEET) {
            return fail("the private rooftop is mentioned".into());
        }
        let result = &r.body["result"];
        match want {
            Outcome::ResourceNotFound => {
                if r.body["error"]["code"] != json!(-32602)
                    || r.body["error"]["message"] != json!("Resource not found")
                {
                    return fail("not a resource-not-found error".into());
                }
                Ok(())
            }
            Outcome::NotFound | Outcome::ScopeInsufficient => {
                let code = if want == Outcome::NotFound {
                    NOT_FOUND
                } else {
                    SCOPE_INSUFFICIENT
                };
                if result["isError"] != json!(true)
                    || result["structuredContent"]["code"] != json!(code)
                {
                    return fail(format!("not isError {code}"));
                }
                if want == Outcome::NotFound && normalized(&result.to_string()) != reference {
                    return fail(format!("differs from the reference not-found {reference}"));
                }
                Ok(())
            }
            Outcome::Ok => {
                if r.body.get("error").is_some() || result["isError"] == json!(true) {
                    return fail("an error".into());
                }
                self.check_ok(case, who, result).or_else(fail)
            }
            Outcome::Unauthorized(_) => unreachable!(),
        }
    }

    pub(crate) fn check_ok(&self, case: Case, who: Who, result: &Value) -> Result<(), String> {
        let fleet = who.sees_fleet();
        let sc = &result["structuredContent"];
        let doc: Value = result["contents"][0]["text"]
            .as_str()
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or(Value::Null);
        if case.is_resource() {
            let scope = if who.authenticated() {
                "private"
            } else {
                "public"
            };
            if result["cacheScope"] != json!(scope) {
                return Err(format!("cacheScope is not {scope}"));
            }
        }
        let rooftop_ids = |v: &Value| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|r| r.as_str().or_else(|| r["rooftop_id"].as_str()))
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let lists_fleet = |ids: Vec<String>| ids.iter().any(|id| id == FLEET);
        match case {
            Case::Manifest if lists_fleet(rooftop_ids(&sc["rooftop_ids"])) != fleet => {
                Err("manifest rooftop_ids".into())
            }
            Case::ResourceManifest if lists_fleet(rooftop_ids(&doc["rooftop_ids"])) != fleet => {
                Err("manifest resource rooftop_ids".into())
            }
            Case::DealerFleet if rooftop_ids(&sc["rooftops"]) != [FLEET] => {
                Err("dealer.get rooftops".into())
            }
            Case::DealerOrganization if lists_fleet(rooftop_ids(&sc["rooftops"])) != fleet => {
                Err("dealer.get rooftops".into())
            }
            Case::ResourceOrganization if lists_fleet(rooftop_ids(&doc["rooftops"])) != fleet => {
                Err("organization resource rooftops".into())
            }
            Case::ResourceRooftopFleet if rooftop_ids(&doc["rooftops"]) != [FLEET] => {
                Err("rooftop resource".into())
            }
            Case::ResourceRooftopChicago if rooftop_ids(&doc["rooftops"]) != [CHICAGO] => {
                Err("rooftop resource".into())
            }
            Case::ResourceList => {
                let uri = format!("dealeragent://organization/{ORG}/rooftop/{FLEET}");
                let listed = result["resources"]
                    .as_array()
                    .is_some_and(|l| l.iter().any(|e| e["uri"] == json!(uri)));
                if listed == fleet {
                    Ok(())
                } else {
                    Err("resources/list".into())
                }
            }
            Case::SearchFleet | Case::SearchChicago => {
                let want = if case == Case::SearchFleet {
                    FLEET
                } else {
                    CHICAGO
                };
                let vehicles = sc["vehicles"].as_array().cloned().unwrap_or_default();
                if vehicles.is_empty() || vehicles.iter().any(|v| v["rooftop_id"] != json!(want)) {
                    Err(format!("search must return vehicles of {want} only"))
                } else {
                    Ok(())
                }
            }
            Case::VehicleFleet | Case::VerifyFleet
                if sc["vehicle_id"] != json!(self.fleet_vehicle) =>
            {
                Err("not the fleet vehicle".into())
            }
            Case::VehicleChicago | Case::VerifyChicago
                if sc["vehicle_id"] != json!(self.chicago_vehicle) =>
            {
                Err("not the Chicago vehicle".into())
            }
            Case::ResourceVehicleFleet if doc["vehicle_id"] != json!(self.fleet_vehicle) => {
                Err("vehicle resource".into())
            }
            Case::ResourceVehicleChicago if doc["vehicle_id"] != json!(self.chicago_vehicle) => {
                Err("vehicle resource".into())
            }
            _ => Ok(()),
        }
    }

    /// The normalized result of the reference not-found: an anonymous
    /// search of a rooftop that does not exist.
    pub(crate) async fn reference_not_found(&self) -> String {
        let r = self
            .tool(
                Who::Anonymous,
                "dealeragent.inventory.search",
                json!({"organization_id": ORG, "rooftop_ids": [ABSENT]}),
            )
            .await;
        assert_eq!(
            r.result()["structuredContent"]["code"],
            json!(NOT_FOUND),
            "{}",
            r.raw
        );
        normalized(&r.result().to_string())
    }
}

#[tokio::test]
async fn every_credential_gets_the_exact_outcome_from_every_tool_and_resource() {
    let f = Fixture::new().await;
    let reference = f.reference_not_found().await;
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut skipped = 0;
    for who in Who::ALL {
        for case in Case::ALL {
            if !case.served() {
                skipped += 1;
                continue;
            }
            // The vehicle resource without the inventory scope is the
            // ignored BUG test below.
            if who.lacks_inventory_scope()
                && matches!(
                    case,
                    Case::ResourceVehicleFleet | Case::ResourceVehicleChicago
                )
            {
                skipped += 1;
                continue;
            }
            let before = f.audit().await.len();
            let r = f.run(case, who).await;
            checked += 1;
            if let Err(why) = f.check(case, who, &r, &reference) {
                failures.push(why);
            }
            if who.refusal().is_some() {
                let after = f.audit().await.len();
                if after != before {
                    failures.push(format!(
                        "{case:?} as {who:?}: a refused credential wrote {} audit event(s): something executed",
                        after - before
                    ));
                }
            }
        }
    }
    // The figure docs/security.md records from a rerun.
    eprintln!("isolation matrix: {checked} cells checked, {skipped} not served");
    assert!(
        failures.is_empty(),
        "{} of {checked} cells failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(checked + skipped, Who::ALL.len() * Case::ALL.len());
    assert!(checked >= Who::ALL.len() * 16 - 4, "{checked} cells");
}

#[test]
fn the_matrix_covers_every_registered_tool() {
    for tool in gateway::tools::REGISTRY {
        assert!(
            MATRIX_TOOLS.contains(&tool.name)
                || crate::aap::ISOLATION_TOOLS.contains(&tool.name)
                || crate::used_vehicle::ISOLATION_TOOLS.contains(&tool.name),
            "{} is not in the isolation matrix: add its cases",
            tool.name
        );
    }
}

#[tokio::test]
async fn a_vehicle_resource_needs_the_inventory_scope_like_get_vehicle() {
    let f = Fixture::new().await;
    for who in [Who::MissingScopeToken, Who::NoScopeJwt] {
        for (rooftop, vehicle) in [
            (FLEET, f.fleet_vehicle.clone()),
            (CHICAGO, f.chicago_vehicle.clone()),
        ] {
            let tool = f
                .tool(
                    who,
                    "dealeragent.inventory.get_vehicle",
                    json!({"organization_id": ORG, "rooftop_id": rooftop, "vehicle_id": vehicle}),
                )
                .await;
            assert_eq!(
                tool.result()["structuredContent"]["code"],
                json!(SCOPE_INSUFFICIENT)
            );
            let r = f.read(who, &f.vehicle_uri(rooftop, &vehicle)).await;
            assert!(
                r.body.get("result").is_none() && r.body.get("error").is_some(),
                "{who:?} read the vehicle resource at {rooftop} without the inventory scope: {}",
                r.raw
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Foreign existence never leaks
// ---------------------------------------------------------------------------

#[tokio::test]
async fn absent_foreign_and_private_rooftops_get_byte_identical_errors() {
    let f = Fixture::new().await;
    let fv = f.fleet_vehicle.clone();
    // (caller, rooftop) pairs that must all read as "not found", for the
    // absent id, the private rooftop (anonymous) and the foreign one.
    let askers = [
        (Who::Anonymous, ABSENT),
        (Who::Anonymous, FLEET),
        (Who::OtherRooftopToken, FLEET),
        (Who::OtherRooftopToken, ABSENT),
        (Who::OtherOrganizationToken, FLEET),
        (Who::OtherOrganizationToken, ABSENT),
    ];
    let mut bodies: Vec<(String, String)> = Vec::new();
    for (who, rooftop) in askers {
        for (tool, args) in [
            (
                "dealeragent.inventory.search",
                json!({"organization_id": ORG, "rooftop_ids": [rooftop]}),
            ),
            (
                "dealeragent.inventory.get_vehicle",
                json!({"organization_id": ORG, "rooftop_id": rooftop, "vehicle_id": fv}),
            ),
            (
                "dealeragent.dealer.get",
                json!({"organization_id": ORG, "rooftop_ids": [rooftop]}),
            ),
            (
                VERIFY,
                json!({"organization_id": ORG, "rooftop_id": rooftop, "vehicle_id": fv}),
            ),
        ] {
            if !catalog_has(tool) {
                continue;
            }
            let r = f.tool(who, tool, args).await;
            assert_eq!(r.status, 200, "{}", r.raw);
            assert_eq!(
                r.result()["structuredContent"]["code"],
                json!(NOT_FOUND),
                "{tool} {rooftop} as {who:?}: {}",
                r.raw
            );
            assert!(!r.raw.contains(FLEET), "{}", r.raw);
            bodies.push((format!("{tool} {rooftop} as {who:?}"), normalized(&r.raw)));
        }
    }
    // The fleet vehicle asked for at a public rooftop: it exists, elsewhere.
    let r = f
        .tool(
            Who::Anonymous,
            "dealeragent.inventory.get_vehicle",
            json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": fv}),
        )
        .await;
    bodies.push((
        "get_vehicle of the fleet vehicle at Chicago".into(),
        normalized(&r.raw),
    ));
    // Byte-identical across absent, private and foreign, per tool and also
    // across tools (one not-found object for everything).
    let (first_name, first) = &bodies[0];
    for (name, body) in &bodies[1..] {
        assert_eq!(body, first, "{name} differs from {first_name}");
    }

    // Resources: identical once the echoed URI is set aside.
    let mut reads = Vec::new();
    for (who, rooftop) in askers {
        for uri in [
            format!("dealeragent://organization/{ORG}/rooftop/{rooftop}"),
            format!("dealeragent://organization/{ORG}/rooftop/{rooftop}/vehicle/{fv}"),
        ] {
            let r = f.read(who, &uri).await;
            assert_eq!(r.status, 200, "{}", r.raw);
            assert_eq!(r.body["error"]["data"]["uri"], json!(uri), "{}", r.raw);
            let without_uri = r.raw.replace(&uri, "<uri>");
            assert!(!without_uri.contains(FLEET), "{}", r.raw);
            reads.push((format!("{uri} as {who:?}"), normalized(&without_uri)));
        }
    }
    let (first_name, first) = &reads[0];
    for (name, body) in &reads[1..] {
        assert_eq!(body, first, "{name} differs from {first_name}");
    }
}

#[tokio::test]
async fn the_anonymous_manifest_never_mentions_the_private_rooftop() {
    let f = Fixture::new().await;
    for call in [
        f.tool(
            Who::Anonymous,
            "dealeragent.discovery.get_manifest",
            json!({}),
        )
        .await,
        f.read(Who::Anonymous, "dealeragent://manifest").await,
        f.call(Who::Anonymous, "resources/list", json!({})).await,
        f.tool(
            Who::Anonymous,
            "dealeragent.dealer.get",
            json!({"organization_id": ORG}),
        )
        .await,
    ] {
        assert_eq!(call.status, 200, "{}", call.raw);
        assert!(!call.raw.contains(FLEET), "{}", call.raw);
        assert!(!call.raw.contains("fleet"), "{}", call.raw);
    }
    let policy = common::send(f.app.http.get(format!("{}/policy", f.app.base()))).await;
    assert!(!policy.raw.contains(FLEET), "{}", policy.raw);
    let mine = f
        .tool(
            Who::RooftopToken,
            "dealeragent.discovery.get_manifest",
            json!({}),
        )
        .await;
    let ids = &mine.result()["structuredContent"]["rooftop_ids"];
    assert!(
        ids.as_array().unwrap().contains(&json!(FLEET)),
        "{}",
        mine.raw
    );
}

// ---------------------------------------------------------------------------
// 401 handling
// ---------------------------------------------------------------------------

#[tokio::test]
async fn refused_credentials_get_a_bearer_challenge_and_nothing_executes() {
    let f = Fixture::new().await;
    let before = f.audit().await.len();
    let metadata = format!("{}/.well-known/oauth-protected-resource", f.app.base());
    let rooftop = f.token(Who::RooftopToken).to_owned();
    let (_, secret) = api_token::parse(&rooftop).unwrap();
    let headers: Vec<(String, &str)> = vec![
        ("Bearer".to_owned(), "invalid_request"),
        ("Bearer ".to_owned(), "invalid_request"),
        (rooftop.clone(), "invalid_request"),
        (format!("Token {rooftop}"), "invalid_request"),
        (format!("Bearer {rooftop}x"), "invalid_token"),
        (
            format!("Bearer {}", &rooftop[..rooftop.len() - 1]),
            "invalid_token",
        ),
        (
            format!("Bearer {}", rooftop.replace(secret, &"A".repeat(43))),
            "invalid_token",
        ),
        ("Bearer a.b.c".to_owned(), "invalid_token"),
        (format!("Bearer {}", "x".repeat(12_000)), "invalid_token"),
    ];
    for (value, error) in &headers {
        let r = f
            .app
            .post_raw(
                &[("authorization", value.as_str())],
                common::modern_body(
                    1,
                    "tools/call",
                    json!({"name": "dealeragent.inventory.search",
                           "arguments": {"organization_id": ORG, "rooftop_ids": [FLEET]}}),
                )
                .to_string(),
            )
            .await;
        assert_eq!(r.status, 401, "{value:.60}: {}", r.raw);
        let challenge = r.headers["www-authenticate"].to_str().unwrap();
        assert!(challenge.starts_with("Bearer "), "{challenge}");
        assert!(
            challenge.contains(&format!("resource_metadata=\"{metadata}\"")),
            "{challenge}"
        );
        assert!(
            challenge.contains(&format!("error=\"{error}\"")),
            "{value:.60}: {challenge}"
        );
        assert!(!r.raw.contains(secret) && !challenge.contains(secret));
        assert_eq!(r.headers["cache-control"], "no-store");
    }
    // Two Authorization headers are refused whatever they hold (the first
    // used to win), even when both are the same valid token.
    let group = f.token(Who::GroupToken).to_owned();
    for pair in [
        [format!("Bearer {rooftop}"), format!("Bearer {rooftop}")],
        [format!("Bearer {rooftop}"), format!("Bearer {group}")],
        ["Bearer junk".to_owned(), format!("Bearer {rooftop}")],
    ] {
        let r = f
            .app
            .post_raw(
                &[
                    ("authorization", pair[0].as_str()),
                    ("authorization", pair[1].as_str()),
                ],
                common::modern_body(
                    1,
                    "tools/call",
                    json!({"name": "dealeragent.inventory.search",
                           "arguments": {"organization_id": ORG, "rooftop_ids": [FLEET]}}),
                )
                .to_string(),
            )
            .await;
        assert_eq!(r.status, 401, "{}", r.raw);
        let challenge = r.headers["www-authenticate"].to_str().unwrap();
        assert!(
            challenge.contains("error=\"invalid_request\""),
            "{challenge}"
        );
        assert!(!r.raw.contains(secret));
    }
    // Every query parameter that carries tokens elsewhere is refused, even
    // with a valid header beside it.
    for param in ["access_token", "token", "api_key", "ACCESS_TOKEN"] {
        let r = common::send(
            f.app
                .http
                .post(format!("{}?{param}={rooftop}", f.app.url))
                .header("content-type", "application/json")
                .header("authorization", format!("Bearer {rooftop}"))
                .body(common::modern_body(1, "tools/list", json!({})).to_string()),
        )
        .await;
        assert_eq!(r.status, 401, "{param}: {}", r.raw);
        assert_eq!(r.body["error"], "invalid_request");
    }
    // The challenge's metadata URL is served.
    let meta = common::send(f.app.http.get(&metadata)).await;
    assert_eq!(meta.status, 200);
    assert_eq!(f.audit().await.len(), before, "a refused request executed");
}

#[tokio::test]
async fn a_token_stops_working_the_moment_it_is_revoked() {
    let f = Fixture::new().await;
    let token = create_token(
        f.store.as_ref(),
        "partner:to-revoke",
        ORG,
        rooftops(&[FLEET]),
        &[SCOPE_INVENTORY_READ],
    )
    .await;
    let search = |t: String| {
        let app = &f.app;
        async move {
            common::send(
                app.http
                    .post(&app.url)
                    .header("content-type", "application/json")
                    .header("authorization", format!("Bearer {t}"))
                    .body(
                        common::modern_body(
                            1,
                            "tools/call",
                            json!({"name": "dealeragent.inventory.search",
                                   "arguments": {"organization_id": ORG, "rooftop_ids": [FLEET]}}),
                        )
                        .to_string(),
                    ),
            )
            .await
        }
    };
    let ok = search(token.clone()).await;
    assert_eq!(ok.status, 200);
    assert_eq!(common::tool_error_code(ok.result()), None, "{}", ok.raw);
    let (id, _) = api_token::parse(&token).unwrap();
    assert!(f.store.revoke_api_token(id, Utc::now()).await.unwrap());
    let refused = search(token).await;
    assert_eq!(refused.status, 401, "{}", refused.raw);
    assert_eq!(refused.body["error"], "invalid_token");
}

// ---------------------------------------------------------------------------
// Audit
// ---------------------------------------------------------------------------

#[tokio::test]
async fn audit_events_name_the_caller_and_never_hold_a_token() {
    let f = Fixture::new().await;
    let fv = f.fleet_vehicle.clone();
    let calls: Vec<(Who, &str, Value)> = vec![
        (
            Who::RooftopToken,
            "dealeragent.inventory.search",
            json!({"organization_id": ORG, "rooftop_ids": [FLEET]}),
        ),
        (
            Who::RooftopToken,
            "dealeragent.inventory.get_vehicle",
            json!({"organization_id": ORG, "rooftop_id": FLEET, "vehicle_id": fv}),
        ),
        (
            Who::RooftopToken,
            "dealeragent.discovery.get_manifest",
            json!({}),
        ),
        (
            Who::OtherRooftopToken,
            "dealeragent.inventory.get_vehicle",
            json!({"organization_id": ORG, "rooftop_id": FLEET, "vehicle_id": fv}),
        ),
        (
            Who::MissingScopeToken,
            "dealeragent.inventory.search",
            json!({"organization_id": ORG, "rooftop_ids": [FLEET]}),
        ),
        (
            Who::GroupJwt,
            "dealeragent.dealer.get",
            json!({"organization_id": ORG, "rooftop_ids": [FLEET]}),
        ),
    ];
    let t0 = Utc::now() - TimeDelta::milliseconds(5);
    for (who, tool, args) in &calls {
        let r = f.tool(*who, tool, args.clone()).await;
        assert_eq!(r.status, 200, "{}", r.raw);
    }
    let events = f.audit_since(t0, 1000).await;
    assert_eq!(events.len(), calls.len(), "{events:#?}");
    let catalog = gateway::catalog::Catalog::load().unwrap();
    let token_id = |who: Who| api_token::parse(f.token(who)).unwrap().0.to_owned();
    let expect = [
        (
            "partner:fleet",
            Some(token_id(Who::RooftopToken)),
            "dealeragent.inventory.search",
            "allow",
            "ok",
        ),
        (
            "partner:fleet",
            Some(token_id(Who::RooftopToken)),
            "dealeragent.inventory.get_vehicle",
            "allow",
            "ok",
        ),
        (
            "partner:fleet",
            Some(token_id(Who::RooftopToken)),
            "dealeragent.discovery.get_manifest",
            "allow",
            "ok",
        ),
        (
            "partner:chicago",
            Some(token_id(Who::OtherRooftopToken)),
            "dealeragent.inventory.get_vehicle",
            "deny",
            NOT_FOUND,
        ),
        (
            "partner:pricing-only",
            Some(token_id(Who::MissingScopeToken)),
            "dealeragent.inventory.search",
            "deny",
            SCOPE_INSUFFICIENT,
        ),
        (
            "jwt:partner-dms",
            None,
            "dealeragent.dealer.get",
            "allow",
            "ok",
        ),
    ];
    for (event, (subject, token, tool, decision, outcome)) in events.iter().zip(expect) {
        assert_eq!(event.subject, subject, "{event:?}");
        assert_eq!(event.tool, tool, "{event:?}");
        assert_eq!(event.policy_decision, decision, "{event:?}");
        assert_eq!(event.outcome, outcome, "{event:?}");
        assert_eq!(
            event.profile,
            catalog.tool(tool).unwrap().profile,
            "{event:?}"
        );
        match token {
            Some(id) => assert_eq!(
                event.credential,
                Some(Credential::ApiToken { token_id: id }),
                "{event:?}"
            ),
            None => assert_eq!(
                event.credential,
                Some(Credential::Jwt {
                    issuer: ISSUER.to_owned(),
                    token_id: Some("security-jti-0001".to_owned())
                }),
                "{event:?}"
            ),
        }
        if tool != "dealeragent.discovery.get_manifest" {
            assert_eq!(event.organization_id.as_deref(), Some(ORG), "{event:?}");
            assert_eq!(event.rooftop_ids, [FLEET], "{event:?}");
        }
        assert!(!event.trace_id.is_empty());
    }
    // The allowed reads name what they returned.
    assert!(events[0].resource_ids.contains(&fv), "{:?}", events[0]);
    assert_eq!(events[1].resource_ids, [fv.as_str()]);

    // No event, serialized, holds any credential or part of one.
    let all = serde_json::to_string(&f.audit().await).unwrap();
    for (who, token) in &f.tokens {
        assert!(
            !all.contains(token.as_str()),
            "{who:?} token in the audit log"
        );
        if let Some((_, secret)) = api_token::parse(token) {
            assert!(!all.contains(secret), "{who:?} secret in the audit log");
            assert!(
                !all.contains(&api_token::hash_secret(secret)),
                "{who:?} secret hash in the audit log"
            );
        }
        for segment in token.split('.').filter(|s| s.len() > 16) {
            assert!(
                !all.contains(segment),
                "{who:?} JWT segment in the audit log"
            );
        }
    }
}

#[tokio::test]
async fn anonymous_public_reads_write_no_audit_events() {
    let f = Fixture::new().await;
    let t0 = Utc::now() - TimeDelta::milliseconds(5);
    // The availability check is an authoritative read: audited even when
    // anonymous (below); every other read is `access_log` only.
    for case in Case::ALL {
        if matches!(case, Case::VerifyFleet | Case::VerifyChicago) {
            continue;
        }
        let r = f.run(case, Who::Anonymous).await;
        assert_eq!(r.status, 200, "{case:?}: {}", r.raw);
    }
    let events = f.audit_since(t0, 1000).await;
    assert!(events.is_empty(), "{events:#?}");
    if catalog_has(VERIFY) {
        let r = f.run(Case::VerifyChicago, Who::Anonymous).await;
        assert_eq!(common::tool_error_code(r.result()), None, "{}", r.raw);
        let events = f.audit_since(t0, 1000).await;
        assert_eq!(events.len(), 1, "{events:#?}");
        assert_eq!(events[0].subject, "anonymous");
        assert_eq!(events[0].credential, None);
        assert_eq!(events[0].tool, VERIFY);
        assert_eq!(events[0].rooftop_ids, [CHICAGO]);
        assert_eq!(events[0].resource_ids, [f.chicago_vehicle.as_str()]);
    }
}

#[tokio::test]
async fn authenticated_resource_reads_of_nonpublic_data_are_audited() {
    let f = Fixture::new().await;
    let t0 = Utc::now() - TimeDelta::milliseconds(5);
    let fleet_rooftop = format!("dealeragent://organization/{ORG}/rooftop/{FLEET}");
    let fleet_vehicle = f.vehicle_uri(FLEET, &f.fleet_vehicle);
    for uri in [&fleet_rooftop, &fleet_vehicle] {
        let r = f.read(Who::RooftopToken, uri).await;
        assert!(r.body.get("result").is_some(), "{}", r.raw);
    }
    let events = f.audit_since(t0, 1000).await;
    assert_eq!(events.len(), 2, "{events:#?}");
    for event in &events {
        assert_eq!(event.subject, "partner:fleet");
        assert_eq!(event.rooftop_ids, [FLEET]);
    }
}

// ---------------------------------------------------------------------------
// Bounded audit
// ---------------------------------------------------------------------------

/// The stated bound (docs/security.md, "Audit retention"): 1,000 hostile
/// anonymous calls of the availability check add less than this many bytes
/// of audit text. Refused ones become counters per (minute, network, tool,
/// outcome): three outcomes, two windows at most, about 200 bytes each. A
/// valid check that finds a refilled quota token (one every 2 s at the
/// default 30 a minute) is a successful authoritative check and is kept
/// one by one (about 450 bytes). Before the fix every call was one event
/// holding the raw arguments: over 16 MB here.
pub(crate) const HOSTILE_AUDIT_BYTES: u64 = 8 * 1024;

#[tokio::test]
async fn a_thousand_hostile_anonymous_checks_grow_the_audit_log_by_less_than_8_kib() {
    if !catalog_has(VERIFY) {
        eprintln!("skipped: the catalog has no availability check");
        return;
    }
    let f = Fixture::new().await;
    let t0 = Utc::now() - TimeDelta::milliseconds(5);
    let before = f.store.audit_footprint().await.unwrap();
    let huge = "o".repeat(65_536);
    let absent = |n: i32| json!({"organization_id": ORG, "rooftop_id": ABSENT, "vehicle_id": format!("veh.{n}")});
    for n in 0..1_000 {
        let (args, refused) = match n % 4 {
            // Identifiers far beyond the schema's 128 characters.
            0 => (
                json!({"organization_id": huge, "rooftop_id": huge, "vehicle_id": "veh.x"}),
                true,
            ),
            // Arguments of the wrong shape: a number, no selector, an
            // unknown member with a large value.
            1 => (
                json!({"organization_id": ORG, "rooftop_id": 7, "junk": huge}),
                true,
            ),
            // Well-formed ids of nothing: not found while the quota lasts.
            2 => (absent(n), true),
            // Past the quota: a burst of valid checks, rate limited.
            _ if n >= 100 => (
                json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": f.chicago_vehicle}),
                false,
            ),
            _ => (absent(n), true),
        };
        let r = f.tool(Who::Anonymous, VERIFY, args).await;
        assert_eq!(r.status, 200, "call {n}: {}", r.raw);
        if refused {
            assert_eq!(r.result()["isError"], true, "call {n}: {}", r.raw);
        }
    }
    let after = f.store.audit_footprint().await.unwrap();
    let grown = after.bytes - before.bytes;
    println!("1,000 hostile anonymous checks: the audit log grew by {grown} bytes");
    assert!(
        grown < HOSTILE_AUDIT_BYTES,
        "the audit log grew by {grown} bytes ({before:?} -> {after:?})"
    );
    // Only successful checks are single events; everything else is counted.
    let events = f.audit_since(t0, 10_000).await;
    assert!(events.iter().all(|e| e.outcome == "ok"), "{events:#?}");
    // A counter row starts on the minute.
    let window = t0 - TimeDelta::seconds(60);
    let counters = f.store.audit_counts_since(window, 100).await.unwrap();
    assert!(counters.len() <= 6, "{counters:#?}");
    // Nothing is lost: the counters and events add up to every call.
    let counted: u64 = counters.iter().map(|c| c.count).sum();
    assert_eq!(counted + events.len() as u64, 1_000, "{counters:#?}");
    for c in &counters {
        assert_eq!(c.client_network, "127.0.0.0/24", "{c:?}");
        assert_eq!(c.tool, VERIFY);
        let deny = c.outcome != "dealeragent.validation.invalid";
        assert_eq!(c.policy_decision, if deny { "deny" } else { "allow" });
    }
    let outcomes: std::collections::BTreeSet<&str> =
        counters.iter().map(|c| c.outcome.as_str()).collect();
    assert_eq!(
        outcomes,
        [
            "dealeragent.rate_limited",
            NOT_FOUND,
            "dealeragent.validation.invalid"
        ]
        .into(),
    );
}

#[tokio::test]
async fn an_identifier_that_fails_validation_is_audited_as_the_marker() {
    let f = Fixture::new().await;
    let t0 = Utc::now() - TimeDelta::milliseconds(5);
    let huge = "o".repeat(900_000);
    let r = f
        .tool(
            Who::RooftopToken,
            "dealeragent.inventory.search",
            json!({"organization_id": huge, "rooftop_ids": [FLEET, "not an id", 5]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(
        common::tool_error_code(r.result()).as_deref(),
        Some("dealeragent.validation.invalid")
    );
    let events = f.audit_since(t0, 100).await;
    assert_eq!(events.len(), 1, "{} events", events.len());
    let e = &events[0];
    // Authenticated calls are still kept one by one, but never the raw value.
    assert_eq!(e.subject, "partner:fleet");
    assert_eq!(e.organization_id.as_deref(), Some("invalid"));
    // Rooftop ids that name no rooftop are counted, not kept
    // (docs/tokens-and-audit.md "Audit events").
    assert_eq!(e.rooftop_ids, [FLEET]);
    assert_eq!(e.unresolved_rooftops, 2);
    assert_eq!(e.outcome, "dealeragent.validation.invalid");
    let line = serde_json::to_string(e).unwrap();
    assert!(line.len() < 1_024, "{} bytes: {}", line.len(), &line[..200]);
    // A valid identifier is recorded as it is.
    let r = f
        .tool(
            Who::RooftopToken,
            "dealeragent.inventory.search",
            json!({"organization_id": ORG, "rooftop_ids": [FLEET]}),
        )
        .await;
    assert_eq!(common::tool_error_code(r.result()), None, "{}", r.raw);
    let events = f.audit_since(t0, 100).await;
    assert_eq!(events.len(), 2);
    assert_eq!(events[1].organization_id.as_deref(), Some(ORG));
    assert_eq!(events[1].rooftop_ids, [FLEET]);
}

#[tokio::test]
async fn audit_retention_and_the_size_bound_hold_from_start_up() {
    // A store that already holds old and many audit entries.
    let dir = common::temp_dir();
    let url = common::test_database_url(&dir).await;
    let store = gateway::store::open(&url).await.expect("store opens");
    let now = Utc::now().trunc_subsecs(6);
    let event = |n: i64, age: TimeDelta| AuditEvent {
        event_id: uuid::Uuid::now_v7().to_string(),
        occurred_at: now - age,
        trace_id: format!("trace.{n}"),
        subject: "partner:fleet".into(),
        credential: None,
        organization_id: Some(ORG.into()),
        rooftop_ids: vec![FLEET.into()],
        unresolved_rooftops: 0,
        tool: "dealeragent.inventory.search".into(),
        profile: "dealeragent.inventory/0.1".into(),
        policy_decision: "allow".into(),
        resource_ids: vec![],
        outcome: "ok".into(),
        delegation: vec![],
    };
    for n in 0..10 {
        store
            .append_audit(&event(n, TimeDelta::days(40) + TimeDelta::seconds(n)))
            .await
            .unwrap();
    }
    for n in 0..300 {
        store
            .append_audit(&event(n, TimeDelta::seconds(1_000 - n)))
            .await
            .unwrap();
    }
    drop(store);
    let app = common::spawn_on(dir, url, |s| {
        s.audit_retention_days = 30;
        s.audit_max_events = 200;
    })
    .await;
    let store = gateway::store::open(&app.database_url).await.unwrap();
    let kept = store
        .audit_since(now - TimeDelta::days(365), 1_000)
        .await
        .unwrap();
    // Nothing older than 30 days; at most 200 - 200/10 events, the newest.
    assert_eq!(kept.len(), 180);
    assert!(
        kept.iter()
            .all(|e| e.occurred_at > now - TimeDelta::days(30))
    );
    assert_eq!(kept[0].trace_id, "trace.120");
    assert_eq!(kept[179].trace_id, "trace.299");
    // The gateway serves as usual.
    let r = app.modern("tools/list", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.raw);
}

#[test]
fn audit_retention_flags_parse_with_their_defaults() {
    use clap::Parser as _;
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        settings: gateway::config::ServeSettings,
    }
    let defaults = Cli::try_parse_from(["dealer-gateway"]).unwrap().settings;
    assert_eq!(defaults.audit_retention_days, 90);
    assert_eq!(defaults.audit_max_events, 1_000_000);
    let set = Cli::try_parse_from([
        "dealer-gateway",
        "--audit-retention-days",
        "7",
        "--audit-max-events",
        "5000",
    ])
    .unwrap()
    .settings;
    assert_eq!((set.audit_retention_days, set.audit_max_events), (7, 5000));
    for bad in [
        ["--audit-retention-days", "0"],
        ["--audit-max-events", "99"],
    ] {
        assert!(
            Cli::try_parse_from(["dealer-gateway", bad[0], bad[1]]).is_err(),
            "{bad:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// Rate limits and metadata
// ---------------------------------------------------------------------------

#[tokio::test]
async fn the_fourth_request_over_a_limit_of_three_per_address_gets_429_with_retry_after() {
    let app = common::spawn_with(|s| s.rate_limit_ip_per_minute = 3).await;
    for _ in 0..3 {
        let r = app.modern("tools/list", json!({})).await;
        assert_eq!(r.status, 200, "{}", r.raw);
    }
    let r = app.modern("tools/list", json!({})).await;
    assert_eq!(r.status, 429, "{}", r.raw);
    let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    assert!(r.body["error"]["code"].is_i64(), "{}", r.raw);
}

#[tokio::test]
async fn requests_with_refused_credentials_count_against_the_per_address_limit() {
    let app = common::spawn_with(|s| s.rate_limit_ip_per_minute = 3).await;
    // Well-formed gateway tokens that do not exist: each one is a store
    // lookup.
    let guess = |n: usize| format!("Bearer dgw_{n:016x}_{}", "A".repeat(43));
    let mut statuses = Vec::new();
    for n in 0..6 {
        let r = app
            .post_raw(
                &[("authorization", guess(n).as_str())],
                common::modern_body(1, "tools/list", json!({})).to_string(),
            )
            .await;
        statuses.push(r.status);
    }
    assert_eq!(statuses[..3], [401, 401, 401], "{statuses:?}");
    assert!(
        statuses[3..].iter().all(|s| *s == 429),
        "guesses beyond the per-address limit must get 429: {statuses:?}"
    );
}

#[tokio::test]
async fn anonymous_callers_of_the_availability_check_are_held_to_a_per_address_quota() {
    // `anonymous_quota_per_minute` applies to `rate_limited_or_authenticated`
    // tools only: the availability check, when this build serves it.
    if !catalog_has(VERIFY) {
        eprintln!("skipped: the catalog has no rate_limited_or_authenticated tool yet");
        return;
    }
    let f = Fixture::with(|s| s.anonymous_quota_per_minute = 2).await;
    for _ in 0..2 {
        let r = f.run(Case::VerifyChicago, Who::Anonymous).await;
        assert_eq!(common::tool_error_code(r.result()), None, "{}", r.raw);
    }
    let r = f.run(Case::VerifyChicago, Who::Anonymous).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let sc = &r.result()["structuredContent"];
    assert_eq!(sc["code"], "dealeragent.rate_limited", "{}", r.raw);
    assert!(
        sc["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0),
        "{}",
        r.raw
    );
    assert_eq!(sc["retryable"], true);
    // Authenticated callers are not held to it, nor are other tools.
    for _ in 0..3 {
        let r = f.run(Case::VerifyChicago, Who::RooftopToken).await;
        assert_eq!(common::tool_error_code(r.result()), None, "{}", r.raw);
    }
    let r = f.run(Case::VehicleChicago, Who::Anonymous).await;
    assert_eq!(common::tool_error_code(r.result()), None, "{}", r.raw);
}

#[tokio::test]
async fn a_principal_over_its_limit_gets_429_while_others_continue() {
    let f = Fixture::with(|s| {
        s.rate_limit_principal_per_minute = 2;
        s.rate_limit_ip_per_minute = 1000;
    })
    .await;
    // The fixture's setup already used the group token twice.
    let r = f.call(Who::GroupToken, "tools/list", json!({})).await;
    assert_eq!(r.status, 429, "{}", r.raw);
    assert!(r.headers.contains_key("retry-after"));
    for who in [Who::RooftopToken, Who::RooftopToken, Who::Anonymous] {
        let r = f.call(who, "tools/list", json!({})).await;
        assert_eq!(r.status, 200, "{who:?}: {}", r.raw);
    }
    let r = f.call(Who::RooftopToken, "tools/list", json!({})).await;
    assert_eq!(r.status, 429, "{}", r.raw);
}

#[tokio::test]
async fn protected_resource_metadata_names_the_resource_servers_and_scopes() {
    let f = Fixture::new().await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let r = common::send(f.app.http.get(format!("{}{path}", f.app.base()))).await;
        assert_eq!(r.status, 200, "{}", r.raw);
        assert_eq!(r.body["resource"], RESOURCE);
        assert_eq!(r.body["authorization_servers"], json!([ISSUER]));
        assert_eq!(
            r.body["scopes_supported"],
            json!([SCOPE_INVENTORY_READ, SCOPE_PRICING_READ]),
            "{}",
            r.raw
        );
        assert_eq!(r.body["bearer_methods_supported"], json!(["header"]));
    }
    // Without JWT configuration: the default resource URL, no servers.
    let plain = common::spawn().await;
    let r = common::send(plain.http.get(format!(
        "{}/.well-known/oauth-protected-resource",
        plain.base()
    )))
    .await;
    assert_eq!(r.body["resource"], json!(format!("{}/mcp", plain.base())));
    assert_eq!(r.body["authorization_servers"], json!([]));
    // Configured servers win over the issuer.
    let servers = Fixture::with(|s| {
        s.authorization_servers = vec!["https://login.example".to_owned()];
    })
    .await;
    let r = common::send(servers.app.http.get(format!(
        "{}/.well-known/oauth-protected-resource",
        servers.app.base()
    )))
    .await;
    assert_eq!(
        r.body["authorization_servers"],
        json!(["https://login.example"])
    );
}

#[tokio::test]
async fn caller_metadata_never_confers_a_grant() {
    let f = Fixture::new().await;
    let mut body = common::modern_body(
        1,
        "tools/call",
        json!({"name": "dealeragent.inventory.search",
               "arguments": {"organization_id": ORG, "rooftop_ids": [FLEET]}}),
    );
    body["params"]["_meta"]["authorization"] =
        json!(format!("Bearer {}", f.token(Who::GroupToken)));
    body["params"]["_meta"]["dealeragent/grant"] =
        json!({"organization_id": ORG, "rooftops": "group"});
    let r = f
        .app
        .post_raw(
            &TestApp::modern_headers("tools/call", Some("dealeragent.inventory.search")),
            body.to_string(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(
        r.body["result"]["structuredContent"]["code"],
        json!(NOT_FOUND),
        "{}",
        r.raw
    );
    assert!(!r.raw.contains(FLEET), "{}", r.raw);
}

// ---------------------------------------------------------------------------
// Fuzz: Authorization headers and bodies
// ---------------------------------------------------------------------------

/// Random `Authorization` values: raw bytes valid in a header, `Bearer` +
/// junk, truncated or mutated real tokens, other schemes.
pub(crate) fn authorization(token: String) -> impl Strategy<Value = Vec<u8>> {
    let t1 = token.clone();
    let t2 = token.clone();
    let t3 = token.clone();
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..80),
        "[ -~]{0,80}".prop_map(String::into_bytes),
        "[ -~]{0,80}".prop_map(|s| format!("Bearer {s}").into_bytes()),
        (0..token.len()).prop_map(move |n| format!("Bearer {}", &t1[..n]).into_bytes()),
        (0..token.len(), any::<u8>()).prop_map(move |(i, c)| {
            let mut bytes = format!("Bearer {t2}").into_bytes();
            bytes[7 + i] = c;
            bytes
        }),
        (
            prop_oneof![
                Just("Bearer"),
                Just("bearer"),
                Just("BEARER"),
                Just("Basic"),
                Just("DPoP"),
                Just("")
            ],
            "[ \t]{0,3}",
            "[ -~]{0,8}"
        )
            .prop_map(move |(scheme, gap, junk)| format!("{scheme}{gap}{t3}{junk}").into_bytes()),
        Just(format!("Bearer {token}").into_bytes()),
    ]
}

pub(crate) fn body(valid: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(valid),
        prop::collection::vec(any::<u8>(), 0..200),
        "[ -~]{0,120}".prop_map(String::into_bytes),
        (any::<i64>(), "[a-z/]{0,20}", "[ -~]{0,40}").prop_map(|(id, method, junk)| json!({
            "jsonrpc": "2.0", "id": id, "method": method,
            "params": {"_meta": common::meta(), "name": junk, "arguments": {"organization_id": junk}}
        })
        .to_string()
        .into_bytes()),
    ]
}

#[test]
fn random_authorization_headers_and_bodies_never_get_a_server_error() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let f = rt.block_on(Fixture::new());
    let t0 = Utc::now();
    let token = f.token(Who::RooftopToken).to_owned();
    let valid = common::modern_body(
        1,
        "tools/call",
        json!({"name": "dealeragent.inventory.search",
               "arguments": {"organization_id": ORG, "rooftop_ids": [FLEET]}}),
    )
    .to_string()
    .into_bytes();
    let mut runner = TestRunner::new(Config {
        cases: 200,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(
            &(authorization(token.clone()), body(valid)),
            |(auth, body)| {
                let Ok(value) = reqwest::header::HeaderValue::from_bytes(&auth) else {
                    return Ok(()); // not sendable as a header at all
                };
                let r = rt.block_on(common::send(
                    f.app
                        .http
                        .post(&f.app.url)
                        .header("content-type", "application/json")
                        .header("accept", "application/json, text/event-stream")
                        .header("authorization", value.clone())
                        .body(body),
                ));
                prop_assert!(r.status < 500, "{} for {value:?}: {}", r.status, r.raw);
                // Only exactly the valid token passes; anything else is 401.
                let sent = String::from_utf8_lossy(value.as_bytes()).trim().to_owned();
                let is_valid = sent.split_once(' ').is_some_and(|(scheme, rest)| {
                    scheme.eq_ignore_ascii_case("bearer") && rest.trim() == token
                });
                if is_valid {
                    prop_assert!(r.status != 401, "valid token refused: {}", r.raw);
                } else {
                    prop_assert_eq!(r.status, 401, "{:?}: {}", value, r.raw);
                    let challenge = r
                        .headers
                        .get("www-authenticate")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("");
                    prop_assert!(challenge.starts_with("Bearer "), "{}", challenge);
                    prop_assert!(challenge.contains("resource_metadata="), "{}", challenge);
                    if sent.len() >= 16 {
                        prop_assert!(!r.raw.contains(&sent), "credential echoed: {}", r.raw);
                    }
                }
                Ok(())
            },
        )
        .unwrap();
    // Nothing that was refused executed; only the valid token's calls audit.
    let events = rt.block_on(f.store.audit_since(t0, 10_000)).unwrap();
    let id = api_token::parse(&token).unwrap().0.to_owned();
    for event in events {
        assert_eq!(
            event.credential,
            Some(Credential::ApiToken {
                token_id: id.clone()
            }),
            "{event:?}"
        );
    }
}
