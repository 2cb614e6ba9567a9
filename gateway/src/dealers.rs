//! The dealers file: parsing, validation and conversion to store records.
//!
//! Format: `schemas/dealers-file.schema.json`, documented in
//! docs/dealers-file.md. Organizations use the DAP `dealerOrganization`
//! wire names; each rooftop carries one `gateway_settings` object. A bad
//! file is reported whole (every problem, each with the file, the JSON
//! pointer and the rule) and nothing is written.

use std::collections::{BTreeMap, HashSet};
use std::fmt;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::catalog::Catalog;
use crate::store::{
    AvailabilitySource, DealersImportSummary, FreshnessSla, GovernmentChargeEstimate,
    HttpAvailabilitySource, OrganizationRecord, RooftopPricing, RooftopRecord, RooftopSettings,
    SourceRecord,
};

/// Default freshness SLAs (seconds) when a rooftop does not configure them:
/// inventory 15 min, availability 2 min (the DAP `verified_current` band),
/// pricing 1 h.
pub const DEFAULT_SLA: FreshnessSla = FreshnessSla {
    inventory: 900,
    availability: 120,
    pricing: 3600,
};

/// One problem in a dealers file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// JSON pointer into the document (`""` = the root).
    pub pointer: String,
    /// What rule failed, without echoing the value.
    pub rule: String,
}

/// A dealers file that cannot be imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DealersFileError {
    pub file: String,
    pub problems: Vec<Problem>,
}

impl fmt::Display for DealersFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {} problem(s); nothing was imported",
            self.file,
            self.problems.len()
        )?;
        for p in &self.problems {
            let pointer = if p.pointer.is_empty() {
                "/"
            } else {
                &p.pointer
            };
            writeln!(f, "  {}: {}: {}", self.file, pointer, p.rule)?;
        }
        Ok(())
    }
}

impl std::error::Error for DealersFileError {}

/// Parse, validate and convert a dealers file.
///
/// `name` is how the file is reported (its path); `source_name` is recorded
/// in provenance. The format is chosen by extension (`.json` is JSON,
/// anything else YAML, which also accepts JSON).
pub fn parse(
    catalog: &Catalog,
    name: &str,
    bytes: &[u8],
    source_name: &str,
    observed_at: DateTime<Utc>,
) -> Result<Vec<OrganizationRecord>, DealersFileError> {
    let fail = |pointer: &str, rule: String| DealersFileError {
        file: name.to_owned(),
        problems: vec![Problem {
            pointer: pointer.to_owned(),
            rule,
        }],
    };
    let doc: Value = if name.ends_with(".json") {
        serde_json::from_slice(bytes).map_err(|e| {
            fail(
                "",
                format!("not valid JSON (line {}, column {})", e.line(), e.column()),
            )
        })?
    } else {
        let text =
            std::str::from_utf8(bytes).map_err(|_| fail("", "not valid UTF-8 text".to_owned()))?;
        yaml_serde::from_str(text).map_err(|e| {
            let at = e
                .location()
                .map(|l| format!(" (line {}, column {})", l.line(), l.column()))
                .unwrap_or_default();
            fail("", format!("not valid YAML{at}"))
        })?
    };

    if let Err(errors) = catalog.validate_dealers_file(&doc) {
        return Err(DealersFileError {
            file: name.to_owned(),
            problems: errors
                .into_iter()
                .map(|e| Problem {
                    pointer: e.instance_location,
                    rule: format!("{} (schema keyword '{}')", e.explanation, e.keyword),
                })
                .collect(),
        });
    }

    let mut problems = Vec::new();
    let records = convert(
        &doc,
        source_name,
        &digest(bytes),
        observed_at,
        &mut problems,
    );
    if problems.is_empty() {
        Ok(records)
    } else {
        Err(DealersFileError {
            file: name.to_owned(),
            problems,
        })
    }
}

/// `sha256:<hex>` of the file bytes (DAP `source.content_digest`).
pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Cross-field rules the schema cannot express, then conversion. The
/// document is already schema-valid, so shapes are trusted here.
fn convert(
    doc: &Value,
    source_name: &str,
    content_digest: &str,
    observed_at: DateTime<Utc>,
    problems: &mut Vec<Problem>,
) -> Vec<OrganizationRecord> {
    let mut org_ids = HashSet::new();
    let mut rooftop_ids: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::new();
    let orgs = doc["organizations"].as_array().cloned().unwrap_or_default();
    for (oi, org) in orgs.iter().enumerate() {
        let org_ptr = format!("/organizations/{oi}");
        let organization_id = org["organization_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if !org_ids.insert(organization_id.clone()) {
            problems.push(Problem {
                pointer: format!("{org_ptr}/organization_id"),
                rule: "duplicate organization_id: each organization appears once per file".into(),
            });
        }
        let mut rooftops = Vec::new();
        for (ri, rooftop) in org["rooftops"].as_array().into_iter().flatten().enumerate() {
            let ptr = format!("{org_ptr}/rooftops/{ri}");
            let rooftop_id = rooftop["rooftop_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if let Some(first) = rooftop_ids.insert(rooftop_id.clone(), ptr.clone()) {
                problems.push(Problem {
                    pointer: format!("{ptr}/rooftop_id"),
                    rule: format!(
                        "duplicate rooftop_id: already used at {first}; rooftop ids are unique across the gateway"
                    ),
                });
            }
            let gs = &rooftop["gateway_settings"];
            let currency = gs["currency"].as_str().unwrap_or_default().to_owned();
            if iso_currency::Currency::from_code(&currency).is_none() {
                problems.push(Problem {
                    pointer: format!("{ptr}/gateway_settings/currency"),
                    rule: "not an active ISO 4217 currency code".into(),
                });
            }
            if let Some(list) = rooftop["supported_currencies"].as_array()
                && !list.iter().any(|c| c.as_str() == Some(currency.as_str()))
            {
                problems.push(Problem {
                    pointer: format!("{ptr}/supported_currencies"),
                    rule: "must include gateway_settings.currency, the currency of this rooftop's prices".into(),
                });
            }
            let sla = &gs["freshness_sla_seconds"];
            let sla_value = |key: &str, default: u32| {
                sla[key]
                    .as_u64()
                    .and_then(|v| u32::try_from(v).ok())
                    .unwrap_or(default)
            };
            let settings = RooftopSettings {
                currency: currency.clone(),
                odometer_unit: gs["odometer_unit"].as_str().unwrap_or_default().to_owned(),
                anonymous_reads: gs["publication"]["anonymous_reads"]
                    .as_bool()
                    .unwrap_or(false),
                freshness_sla_seconds: FreshnessSla {
                    inventory: sla_value("inventory", DEFAULT_SLA.inventory),
                    availability: sla_value("availability", DEFAULT_SLA.availability),
                    pricing: sla_value("pricing", DEFAULT_SLA.pricing),
                },
                availability_source: availability_source(
                    &gs["availability_source"],
                    &format!("{ptr}/gateway_settings/availability_source"),
                    problems,
                ),
                pricing: rooftop_pricing(
                    &gs["pricing"],
                    &currency,
                    &format!("{ptr}/gateway_settings/pricing"),
                    problems,
                ),
            };
            let mut dap = rooftop.clone();
            if let Some(map) = dap.as_object_mut() {
                map.remove("gateway_settings");
            }
            rooftops.push(RooftopRecord {
                rooftop_id,
                dap,
                settings,
            });
        }
        out.push(OrganizationRecord {
            organization_id,
            name: org["name"].as_str().unwrap_or_default().to_owned(),
            legal_name: org["legal_name"].as_str().map(str::to_owned),
            extensions: org.get("extensions").cloned(),
            rooftops,
            source: SourceRecord {
                source_name: source_name.to_owned(),
                authority: "dealer_asserted".to_owned(),
                content_digest: content_digest.to_owned(),
                observed_at,
            },
        });
    }
    out
}

/// The rooftop's pricing configuration (`gateway_settings.pricing`,
/// schema-valid already; empty when absent). Every amount must be in the
/// rooftop currency and charge ids are unique within the rooftop.
fn rooftop_pricing(
    value: &Value,
    currency: &str,
    pointer: &str,
    problems: &mut Vec<Problem>,
) -> RooftopPricing {
    let mut check_currency = |amount: &Value, at: String| {
        if amount["currency"].as_str() != Some(currency) {
            problems.push(Problem {
                pointer: at,
                rule: "must be in the rooftop currency (gateway_settings.currency)".into(),
            });
        }
    };
    let charges = value["required_dealer_charges"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut charge_ids = HashSet::new();
    let mut duplicates = Vec::new();
    for (i, charge) in charges.iter().enumerate() {
        let at = format!("{pointer}/required_dealer_charges/{i}");
        check_currency(&charge["amount"], format!("{at}/amount/currency"));
        if !charge_ids.insert(charge["charge_id"].as_str().unwrap_or_default()) {
            duplicates.push(format!("{at}/charge_id"));
        }
    }
    let mut estimates = Vec::new();
    for (i, estimate) in value["government_charge_estimates"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let lines = estimate["lines"].as_array().cloned().unwrap_or_default();
        for (j, line) in lines.iter().enumerate() {
            check_currency(
                &line["amount"],
                format!("{pointer}/government_charge_estimates/{i}/lines/{j}/amount/currency"),
            );
        }
        estimates.push(GovernmentChargeEstimate {
            jurisdiction: estimate["jurisdiction"].clone(),
            lines,
            assumptions: estimate["assumptions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect(),
        });
    }
    problems.extend(duplicates.into_iter().map(|pointer| Problem {
        pointer,
        rule: "duplicate charge_id: each required dealer charge of a rooftop has its own id".into(),
    }));
    RooftopPricing {
        required_dealer_charges: charges,
        government_charge_estimates: estimates,
    }
}

/// Default timeout of an http availability source (milliseconds).
pub const DEFAULT_AVAILABILITY_TIMEOUT_MS: u32 = 2000;

/// The rooftop's availability source (schema-valid already): the feed when
/// absent. An http source's URL must parse, name at least one placeholder
/// and use https unless its host is loopback (docs/availability.md).
fn availability_source(
    value: &Value,
    pointer: &str,
    problems: &mut Vec<Problem>,
) -> AvailabilitySource {
    if value["type"].as_str() != Some("http") {
        return AvailabilitySource::Feed;
    }
    let template = value["url_template"].as_str().unwrap_or_default();
    let url_pointer = format!("{pointer}/url_template");
    if !["{vin}", "{stock_number}", "{vehicle_id}"]
        .iter()
        .any(|p| template.contains(p))
    {
        problems.push(Problem {
            pointer: url_pointer.clone(),
            rule: "must contain at least one placeholder: {vin}, {stock_number} or {vehicle_id}"
                .into(),
        });
    }
    // Parse with placeholders filled by a harmless value.
    let sample = template
        .replace("{vin}", "X")
        .replace("{stock_number}", "X")
        .replace("{vehicle_id}", "X");
    match reqwest::Url::parse(&sample) {
        Err(_) => problems.push(Problem {
            pointer: url_pointer,
            rule: "not a valid absolute URL".into(),
        }),
        Ok(url) => {
            if url.scheme() != "https" && !(url.scheme() == "http" && is_loopback(&url)) {
                problems.push(Problem {
                    pointer: url_pointer,
                    rule: "must use https: plain http is allowed only for a loopback host (127.0.0.1, localhost, [::1])".into(),
                });
            } else if !url.username().is_empty() || url.password().is_some() {
                problems.push(Problem {
                    pointer: url_pointer,
                    rule: "must not carry credentials in the URL".into(),
                });
            }
        }
    }
    AvailabilitySource::Http(HttpAvailabilitySource {
        url_template: template.to_owned(),
        timeout_ms: value["timeout_ms"]
            .as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .unwrap_or(DEFAULT_AVAILABILITY_TIMEOUT_MS),
        authority: value["authority"]
            .as_str()
            .unwrap_or("authoritative_dealer_system")
            .to_owned(),
    })
}

fn is_loopback(url: &reqwest::Url) -> bool {
    matches!(
        url.host_str().map(str::to_ascii_lowercase).as_deref(),
        Some("localhost" | "127.0.0.1" | "[::1]")
    )
}

/// What importing `incoming` over `existing` would change (for `--dry-run`;
/// the store computes the same numbers when it writes). Provenance (source
/// and observation time) is not content: re-importing an identical file
/// changes nothing.
pub fn plan(
    existing: &[OrganizationRecord],
    incoming: &[OrganizationRecord],
) -> DealersImportSummary {
    let mut s = DealersImportSummary::default();
    for org in incoming {
        match existing
            .iter()
            .find(|o| o.organization_id == org.organization_id)
        {
            None => {
                s.organizations_added += 1;
                s.rooftops_added += count(org.rooftops.len());
            }
            Some(old) => {
                let org_changed = old.name != org.name
                    || old.legal_name != org.legal_name
                    || old.extensions != org.extensions;
                let mut rooftops_changed = false;
                for r in &org.rooftops {
                    match old.rooftops.iter().find(|o| o.rooftop_id == r.rooftop_id) {
                        None => {
                            s.rooftops_added += 1;
                            rooftops_changed = true;
                        }
                        Some(o) if o != r => {
                            s.rooftops_updated += 1;
                            rooftops_changed = true;
                        }
                        Some(_) => {}
                    }
                }
                for o in &old.rooftops {
                    if !org.rooftops.iter().any(|r| r.rooftop_id == o.rooftop_id) {
                        s.rooftops_removed += 1;
                        rooftops_changed = true;
                    }
                }
                if org_changed || rooftops_changed {
                    s.organizations_updated += 1;
                }
            }
        }
    }
    s
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_with_source(source: &str) -> Result<Vec<OrganizationRecord>, DealersFileError> {
        let doc = format!(
            r#"{{"organizations": [{{"organization_id": "org.a", "name": "A", "rooftops": [{{
                "rooftop_id": "roof.a", "name": "A", "timezone": "America/Chicago",
                "address": {{"lines": ["1 Main"], "locality": "Chicago", "region": "IL",
                             "postal_code": "60601", "country": "US"}},
                "departments": ["sales"],
                "gateway_settings": {{"currency": "USD", "odometer_unit": "mi",
                    "publication": {{"anonymous_reads": true}}{source}}}}}]}}]}}"#
        );
        let catalog = Catalog::load().unwrap();
        parse(&catalog, "d.json", doc.as_bytes(), "test", Utc::now())
    }

    fn source_of(orgs: &[OrganizationRecord]) -> AvailabilitySource {
        orgs[0].rooftops[0].settings.availability_source.clone()
    }

    #[test]
    fn pricing_config_converts_and_is_cross_checked() {
        let charge = |id: &str, currency: &str| {
            format!(
                r#"{{"charge_id": "{id}", "name": "Documentation fee", "amount": {{"amount_minor": 34900, "currency": "{currency}"}}, "payee": "dealer", "included_in_advertised_price": false, "taxable_status": "taxable", "required": true}}"#
            )
        };
        let ok = format!(
            r#", "pricing": {{"required_dealer_charges": [{}], "government_charge_estimates": [{{"jurisdiction": {{"country": "US", "subdivision": "US-IL"}}, "lines": [{{"name": "Title", "amount": {{"amount_minor": 16500, "currency": "USD"}}, "payee": "government"}}], "assumptions": ["Passenger vehicle"]}}]}}"#,
            charge("doc-fee", "USD")
        );
        let orgs = parse_with_source(&ok).unwrap();
        let pricing = &orgs[0].rooftops[0].settings.pricing;
        assert_eq!(pricing.required_dealer_charges.len(), 1);
        assert_eq!(
            pricing.government_charge_estimates[0].assumptions,
            ["Passenger vehicle"]
        );
        assert_eq!(
            parse_with_source("").unwrap()[0].rooftops[0]
                .settings
                .pricing,
            RooftopPricing::default()
        );
        let bad = format!(
            r#", "pricing": {{"required_dealer_charges": [{}, {}]}}"#,
            charge("doc-fee", "CAD"),
            charge("doc-fee", "USD")
        );
        let err = parse_with_source(&bad).unwrap_err();
        let base = "/organizations/0/rooftops/0/gateway_settings/pricing/required_dealer_charges";
        let pointers: Vec<&str> = err.problems.iter().map(|p| p.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            [
                format!("{base}/0/amount/currency"),
                format!("{base}/1/charge_id")
            ],
            "{err}"
        );
    }

    #[test]
    fn availability_source_defaults_to_feed() {
        assert_eq!(
            source_of(&parse_with_source("").unwrap()),
            AvailabilitySource::Feed
        );
        assert_eq!(
            source_of(&parse_with_source(r#", "availability_source": {"type": "feed"}"#).unwrap()),
            AvailabilitySource::Feed
        );
    }

    #[test]
    fn http_source_defaults_and_loopback_http() {
        let orgs = parse_with_source(
            r#", "availability_source": {"type": "http", "url_template": "https://dms.example/v1/{vin}"}"#,
        )
        .unwrap();
        assert_eq!(
            source_of(&orgs),
            AvailabilitySource::Http(HttpAvailabilitySource {
                url_template: "https://dms.example/v1/{vin}".into(),
                timeout_ms: DEFAULT_AVAILABILITY_TIMEOUT_MS,
                authority: "authoritative_dealer_system".into(),
            })
        );
        for loopback in ["127.0.0.1:9", "localhost", "[::1]:8080"] {
            let src = format!(
                r#", "availability_source": {{"type": "http", "url_template": "http://{loopback}/a/{{stock_number}}", "timeout_ms": 50, "authority": "dealer_asserted"}}"#
            );
            assert!(parse_with_source(&src).is_ok(), "{loopback}");
        }
    }

    #[test]
    fn http_source_problems_are_precise() {
        let pointer =
            "/organizations/0/rooftops/0/gateway_settings/availability_source/url_template";
        for (template, rule) in [
            ("http://dms.example/v1/{vin}", "must use https"),
            ("https://dms.example/v1/all", "placeholder"),
            ("https://user:pw@dms.example/{vin}", "credentials"),
        ] {
            let src = format!(
                r#", "availability_source": {{"type": "http", "url_template": "{template}"}}"#
            );
            let err = parse_with_source(&src).unwrap_err();
            assert_eq!(err.problems.len(), 1, "{err}");
            assert_eq!(err.problems[0].pointer, pointer);
            assert!(err.problems[0].rule.contains(rule), "{err}");
        }
        // Schema rules: timeout range, unknown authority, unknown type.
        for bad in [
            r#"{"type": "http", "url_template": "https://dms.example/{vin}", "timeout_ms": 20}"#,
            r#"{"type": "http", "url_template": "https://dms.example/{vin}", "authority": "oem"}"#,
            r#"{"type": "ftp"}"#,
        ] {
            let src = format!(r#", "availability_source": {bad}"#);
            assert!(parse_with_source(&src).is_err(), "{bad}");
        }
    }
}
