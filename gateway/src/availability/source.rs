//! The http availability source: one GET to the dealer system per check,
//! and the validation of its answer
//! (`availability-source.schema.json#/$defs/availabilitySourceResponse`).
//!
//! A check FAILS — and its answer is never trusted — on: no answer within
//! the source's `timeout_ms` (the whole exchange, body included), a
//! transport error, a non-2xx status, a body over 64 KiB, malformed JSON,
//! a schema violation, an `observed_at` more than 60 s in the future, or an
//! answer about another unit (its VIN differs from the vehicle's; for a
//! vehicle without a VIN, its stock number differs or is missing).
//! Redirects are not followed. HTTP 404 is not a failure: the dealer
//! system has no record of the unit, so there is no observation (band
//! `unknown`).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::store::HttpAvailabilitySource;

/// Largest accepted answer body.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// Tolerated clock skew of a dealer system's `observed_at`.
pub const MAX_FUTURE_SKEW_SECONDS: i64 = 60;

/// What is checked: the vehicle's identifiers.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub vehicle_id: &'a str,
    pub vin: Option<&'a str>,
    pub stock_number: Option<&'a str>,
}

/// A validated answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: String,
    pub observed_at: DateTime<Utc>,
}

/// Why a check failed (logged; never sent to the caller).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckFailure {
    #[error("the URL template needs a {0} the vehicle does not have")]
    MissingIdentifier(&'static str),
    #[error("no answer within the timeout")]
    Timeout,
    #[error("transport error: {0}")]
    Transport(String),
    #[error("HTTP status {0}")]
    Status(u16),
    #[error("the dealer system has no record of the unit (HTTP 404)")]
    NoRecord,
    #[error("answer body larger than {MAX_BODY_BYTES} bytes")]
    TooLarge,
    #[error("malformed JSON")]
    MalformedJson,
    #[error("answer violates availabilitySourceResponse: {0}")]
    Schema(String),
    #[error("answer is about another unit")]
    WrongVehicle,
    #[error("observed_at is in the future")]
    FutureObservation,
}

/// The HTTP client and the compiled answer schema.
pub struct SourceClient {
    http: reqwest::Client,
    validator: jsonschema::Validator,
}

impl SourceClient {
    /// Build the client (rustls with the ring provider; no redirects).
    pub fn new() -> Result<Self, String> {
        // Installing twice fails harmlessly: the provider is process-wide.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("dealer-agent-gateway/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("availability http client: {e}"))?;
        Ok(Self {
            http,
            validator: response_validator()?,
        })
    }

    /// One check of `target` against `source`.
    pub async fn check(
        &self,
        source: &HttpAvailabilitySource,
        target: &Target<'_>,
        now: DateTime<Utc>,
    ) -> Result<Answer, CheckFailure> {
        let url = fill_template(&source.url_template, target)?;
        let timeout = Duration::from_millis(u64::from(source.timeout_ms));
        let exchange = async {
            let mut request = self.http.get(&url).header("accept", "application/json");
            // The request's trace goes upstream as a child span of ours,
            // with the caller's tracestate untouched (docs/availability.md,
            // docs/operations.md "Tracing").
            if let Some(trace) = crate::trace_context::current() {
                request = request.header("traceparent", trace.child_traceparent());
                if let Some(state) = trace.tracestate() {
                    request = request.header("tracestate", state);
                }
            }
            let mut response = request.send().await.map_err(|e| {
                if e.is_timeout() {
                    CheckFailure::Timeout
                } else {
                    CheckFailure::Transport(e.without_url().to_string())
                }
            })?;
            if response.status() == reqwest::StatusCode::NOT_FOUND {
                return Err(CheckFailure::NoRecord);
            }
            if !response.status().is_success() {
                return Err(CheckFailure::Status(response.status().as_u16()));
            }
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| CheckFailure::Transport(e.without_url().to_string()))?
            {
                if body.len() + chunk.len() > MAX_BODY_BYTES {
                    return Err(CheckFailure::TooLarge);
                }
                body.extend_from_slice(&chunk);
            }
            Ok(body)
        };
        let body = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| CheckFailure::Timeout)??;
        validate(&self.validator, &body, target, now)
    }
}

/// The compiled `availabilitySourceResponse` schema.
pub fn response_validator() -> Result<jsonschema::Validator, String> {
    let mut documents = BTreeMap::new();
    for (file, text) in crate::catalog::SCHEMA_FILES {
        let doc: Value = serde_json::from_str(text).map_err(|e| format!("{file}: {e}"))?;
        documents.insert((*file).to_owned(), doc);
    }
    let schema = crate::catalog::bundle_reference(
        &documents,
        "availability-source.schema.json#/$defs/availabilitySourceResponse",
    )
    .map_err(|e| e.to_string())?;
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .map_err(|e| format!("availabilitySourceResponse: {e}"))
}

/// Validate an answer body for `target` (see the module rules).
pub fn validate(
    validator: &jsonschema::Validator,
    body: &[u8],
    target: &Target<'_>,
    now: DateTime<Utc>,
) -> Result<Answer, CheckFailure> {
    let doc: Value = serde_json::from_slice(body).map_err(|_| CheckFailure::MalformedJson)?;
    if let Some(error) = validator.iter_errors(&doc).next() {
        return Err(CheckFailure::Schema(format!(
            "at '{}': {}",
            error.instance_path(),
            error.kind().keyword()
        )));
    }
    let text = |k: &str| doc.get(k).and_then(Value::as_str);
    let same_unit = match target.vin {
        Some(vin) => text("vin") == Some(vin),
        None => target
            .stock_number
            .is_some_and(|s| text("stock_number") == Some(s)),
    };
    if !same_unit {
        return Err(CheckFailure::WrongVehicle);
    }
    let observed_at = DateTime::parse_from_rfc3339(text("observed_at").unwrap_or_default())
        .map_err(|_| CheckFailure::Schema("at '/observed_at': format".into()))?
        .with_timezone(&Utc);
    if (observed_at - now).num_seconds() > MAX_FUTURE_SKEW_SECONDS {
        return Err(CheckFailure::FutureObservation);
    }
    Ok(Answer {
        status: text("status").unwrap_or("unknown").to_owned(),
        observed_at,
    })
}

/// The URL of one check: placeholders replaced by the percent-encoded
/// identifiers.
pub fn fill_template(template: &str, target: &Target<'_>) -> Result<String, CheckFailure> {
    let mut url = template.to_owned();
    for (placeholder, name, value) in [
        ("{vin}", "vin", target.vin),
        ("{stock_number}", "stock_number", target.stock_number),
        ("{vehicle_id}", "vehicle_id", Some(target.vehicle_id)),
    ] {
        if url.contains(placeholder) {
            let value = value
                .filter(|v| !v.is_empty())
                .ok_or(CheckFailure::MissingIdentifier(name))?;
            url = url.replace(placeholder, &percent_encode(value));
        }
    }
    Ok(url)
}

/// RFC 3986 unreserved characters stay; every other byte becomes `%XX`.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The source's name in provenance: scheme and host of the template (never
/// its path or query, which may carry credentials).
pub fn source_name(source: &HttpAvailabilitySource) -> String {
    let sample = source
        .url_template
        .replace("{vin}", "x")
        .replace("{stock_number}", "x")
        .replace("{vehicle_id}", "x");
    match reqwest::Url::parse(&sample) {
        Ok(url) => format!(
            "dealer-system:{}://{}",
            url.scheme(),
            url.host_str().unwrap_or("unknown")
        ),
        Err(_) => "dealer-system".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const VIN: &str = "1FTFW1E50MFA00001";

    fn target() -> Target<'static> {
        Target {
            vehicle_id: "veh.1",
            vin: Some(VIN),
            stock_number: Some("A 1/2"),
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-12-01T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn check(body: Value) -> Result<Answer, CheckFailure> {
        let v = response_validator().unwrap();
        validate(&v, body.to_string().as_bytes(), &target(), now())
    }

    #[test]
    fn accepts_a_well_formed_answer() {
        let a = check(json!({"vin": VIN, "status": "sold", "observed_at": "2026-12-01T06:59:00-05:00", "extra": 1}))
            .unwrap();
        assert_eq!(a.status, "sold");
        assert_eq!(a.observed_at.to_rfc3339(), "2026-12-01T11:59:00+00:00");
    }

    #[test]
    fn rejects_bad_answers() {
        let v = response_validator().unwrap();
        assert_eq!(
            validate(&v, b"{not json", &target(), now()),
            Err(CheckFailure::MalformedJson)
        );
        for bad in [
            json!({"status": "available", "observed_at": "2026-12-01T11:59:00Z"}),
            json!({"vin": VIN, "status": "reserved", "observed_at": "2026-12-01T11:59:00Z"}),
            json!({"vin": VIN, "status": "available", "observed_at": "2026-12-01T11:59:00"}),
            json!({"vin": VIN, "status": "available"}),
            json!([1, 2]),
        ] {
            assert!(
                matches!(check(bad.clone()), Err(CheckFailure::Schema(_))),
                "{bad}"
            );
        }
        assert_eq!(
            check(
                json!({"vin": "1FTFW1E50MFA00002", "status": "available", "observed_at": "2026-12-01T11:59:00Z"})
            ),
            Err(CheckFailure::WrongVehicle)
        );
        assert_eq!(
            check(
                json!({"vin": VIN, "status": "available", "observed_at": "2026-12-01T12:05:00Z"})
            ),
            Err(CheckFailure::FutureObservation)
        );
    }

    #[test]
    fn vehicle_without_vin_is_matched_by_stock_number() {
        let v = response_validator().unwrap();
        let t = Target {
            vehicle_id: "veh.1",
            vin: None,
            stock_number: Some("S1"),
        };
        let ok = json!({"vin": VIN, "stock_number": "S1", "status": "on_hold", "observed_at": "2026-12-01T11:59:00Z"});
        assert!(validate(&v, ok.to_string().as_bytes(), &t, now()).is_ok());
        let other = json!({"vin": VIN, "status": "on_hold", "observed_at": "2026-12-01T11:59:00Z"});
        assert_eq!(
            validate(&v, other.to_string().as_bytes(), &t, now()),
            Err(CheckFailure::WrongVehicle)
        );
    }

    #[test]
    fn templates_are_filled_percent_encoded() {
        assert_eq!(
            fill_template(
                "https://dms.example/a/{vin}?s={stock_number}&v={vehicle_id}",
                &target()
            ),
            Ok(format!("https://dms.example/a/{VIN}?s=A%201%2F2&v=veh.1"))
        );
        let no_vin = Target {
            vin: None,
            ..target()
        };
        assert_eq!(
            fill_template("https://dms.example/a/{vin}", &no_vin),
            Err(CheckFailure::MissingIdentifier("vin"))
        );
        let src = HttpAvailabilitySource {
            url_template: "https://dms.example:8443/v1/{vin}?key=secret".into(),
            timeout_ms: 100,
            authority: "authoritative_dealer_system".into(),
        };
        assert_eq!(source_name(&src), "dealer-system:https://dms.example");
    }
}
