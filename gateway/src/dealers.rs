//! The dealers file: parsing, validation and conversion to store records.
//!
//! Format: `schemas/dealers-file.schema.json`, documented in
//! docs/dealers-file.md. Organizations use the DAP `dealerOrganization`
//! wire names; each rooftop carries one `gateway_settings` object. A bad
//! file is reported whole by the shared reporter ([`crate::report`]: every
//! problem, each with the file, line and column, the JSON pointer, the rule
//! and what was expected) and nothing is written.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::catalog::Catalog;
use crate::dap::Rooftop;
use crate::report::explain::{MAX_PROBLEMS, Schema};
use crate::report::{self, FileReport, Syntax, Target, money};
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

pub use crate::report::{Position, Problem};

/// A dealers file that cannot be imported: every problem, in file order
/// (docs/dealers-file.md "Error report").
pub type DealersFileError = FileReport;

/// What a refused dealers file did not do.
const NOT_IMPORTED: &str = "nothing was imported";

/// Definition the dealers file is validated against.
const DEALERS_FILE: &str = "dealers-file.schema.json#/$defs/dealersFile";

/// The dealers-file schema, compiled once, for the words of its problems.
static SCHEMA: std::sync::LazyLock<Result<Schema, String>> =
    std::sync::LazyLock::new(|| Schema::compile(DEALERS_FILE, "docs/dealers-file.md", |_| {}));

/// Money in the dealers file: integers within the range served exactly;
/// currencies are tied to the rooftop's by the `rooftop_currency` rule.
const MONEY: money::Checks = money::Checks {
    range: money::Range::Safe,
    currencies: false,
};

/// A dealers file that passed every rule, and what it should still fix.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedDealers {
    pub records: Vec<OrganizationRecord>,
    /// Not errors: the import goes ahead. Today: contacts without a
    /// `public` flag, which are not published (docs/dealers-file.md).
    pub warnings: Vec<Problem>,
}

impl ParsedDealers {
    /// The warnings as report lines, like the problems of a failed file
    /// but marked `warning:`.
    pub fn warning_lines(&self, file: &str) -> Vec<String> {
        self.warnings
            .iter()
            .map(|w| format!("warning: {}", w.line(file)))
            .collect()
    }
}

/// Parse, validate and convert a dealers file; warnings are logged (one
/// `warn` event per warning, with file, pointer, line and column) so every
/// caller reports them: `import dealers` (also with `--dry-run`),
/// `import bundle` and `serve --seed-dealers`.
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
    let parsed = parse_with_warnings(catalog, name, bytes, source_name, observed_at)?;
    for (w, line) in parsed.warnings.iter().zip(parsed.warning_lines(name)) {
        tracing::warn!(
            file = name,
            pointer = %w.pointer,
            rule = %w.rule,
            line = w.position.map(|p| p.line),
            column = w.position.map(|p| p.column),
            "{line}"
        );
    }
    Ok(parsed.records)
}

/// [`parse`], returning the warnings instead of logging them. The schema
/// is the dealers-file schema shipped in the binary (the catalog loads the
/// same one); money is checked as docs/dealers-file.md "Money" says.
pub fn parse_with_warnings(
    _catalog: &Catalog,
    name: &str,
    bytes: &[u8],
    source_name: &str,
    observed_at: DateTime<Utc>,
) -> Result<ParsedDealers, DealersFileError> {
    let refused = |problems: Vec<Problem>| FileReport::new(name, problems, NOT_IMPORTED);
    let syntax = Syntax::of(name);
    let (text, doc) = report::parse_document(bytes, syntax).map_err(|p| refused(vec![p]))?;
    let locate = |problems: &mut Vec<Problem>, targets: &[Target]| {
        report::locate_all(text, syntax, problems, targets);
    };
    let schema = SCHEMA.as_ref().map_err(|e| {
        refused(vec![Problem::new(
            "",
            "schema",
            format!("schema defect: {e}"),
        )])
    })?;
    // Money is checked where the number is read, and reported with the
    // schema's problems or with the cross-record rules, in its place.
    let (located, money_problems) = schema.problems_with_money(&doc, MAX_PROBLEMS, MONEY);
    let (targets, mut schema_problems): (Vec<Target>, Vec<Problem>) =
        located.into_iter().map(|l| (l.target, l.problem)).unzip();
    if !schema_problems.is_empty() {
        schema_problems.extend(money_problems);
        locate(&mut schema_problems, &targets);
        return Err(refused(schema_problems));
    }

    let mut problems = money_problems;
    let mut warnings = Vec::new();
    let records = convert(
        &doc,
        source_name,
        &digest(bytes),
        observed_at,
        &mut problems,
        &mut warnings,
    );
    if problems.is_empty() {
        locate(&mut warnings, &[]);
        Ok(ParsedDealers {
            records,
            warnings: report::sorted(warnings),
        })
    } else {
        locate(&mut problems, &[]);
        Err(refused(problems))
    }
}

/// A stored rooftop as it is published (`dealer.get`, the organization and
/// rooftop resources): only contacts explicitly marked `public: true`
/// ([`crate::dap::Rooftop::published`]): the catalog's `pii_output:
/// public_business_contact_only` for dealeragent.dealer.get
/// (docs/dealers-file.md, "Contact point"). Applied when serving, so rows
/// stored before this rule are filtered too.
pub fn published_rooftop(dap: &Rooftop) -> Rooftop {
    dap.published()
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
    warnings: &mut Vec<Problem>,
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
            problems.push(Problem::new(
                format!("{org_ptr}/organization_id"),
                "unique",
                "duplicate organization_id: each organization appears once per file",
            ));
        }
        let mut rooftops = Vec::new();
        for (ri, rooftop) in org["rooftops"].as_array().into_iter().flatten().enumerate() {
            let ptr = format!("{org_ptr}/rooftops/{ri}");
            let rooftop_id = rooftop["rooftop_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if let Some(first) = rooftop_ids.insert(rooftop_id.clone(), ptr.clone()) {
                problems.push(Problem::new(
                    format!("{ptr}/rooftop_id"),
                    "unique",
                    format!(
                        "duplicate rooftop_id: also used at {first}/rooftop_id; rooftop ids are unique across the gateway"
                    ),
                ));
            }
            // The schema bounds the length; only the tz database knows the
            // names. `hours` are local to this zone, so a misspelt zone
            // would misstate every opening time (docs/dealers-file.md).
            if rooftop["timezone"]
                .as_str()
                .is_none_or(|tz| tz.parse::<chrono_tz::Tz>().is_err())
            {
                problems.push(Problem::new(
                    format!("{ptr}/timezone"),
                    "iana_timezone",
                    "not an IANA time zone name (tz database), e.g. America/Chicago or \
                     America/Toronto; names are case-sensitive",
                ));
            }
            contact_warnings(rooftop, &ptr, warnings);
            let gs = &rooftop["gateway_settings"];
            let currency = gs["currency"].as_str().unwrap_or_default().to_owned();
            if iso_currency::Currency::from_code(&currency).is_none() {
                problems.push(Problem::new(
                    format!("{ptr}/gateway_settings/currency"),
                    "iso_4217",
                    "not an active ISO 4217 currency code",
                ));
            }
            if let Some(list) = rooftop["supported_currencies"].as_array()
                && !list.iter().any(|c| c.as_str() == Some(currency.as_str()))
            {
                problems.push(Problem::new(
                    format!("{ptr}/supported_currencies"),
                    "includes_currency",
                    "must include gateway_settings.currency, the currency of this rooftop's prices",
                ));
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
            // Schema-valid, so it reads as its type unless the schema and
            // `crate::dap` drift apart: then the file is refused, precisely.
            if let Some(dap) = typed(&dap, ptr, problems) {
                rooftops.push(RooftopRecord {
                    rooftop_id,
                    dap,
                    settings,
                });
            }
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

/// A warning for each contact without a `public` flag: it is not published
/// (only `public: true` is), which the operator may not intend.
fn contact_warnings(rooftop: &Value, pointer: &str, warnings: &mut Vec<Problem>) {
    for (i, contact) in rooftop["contacts"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if contact.get("public").is_none() {
            warnings.push(Problem::new(
                format!("{pointer}/contacts/{i}"),
                "public",
                "the contact has no public flag, so it is not published; add public: true to \
                 publish it, or public: false to keep it private and silence this warning",
            ));
        }
    }
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
            problems.push(Problem::new(
                at,
                "rooftop_currency",
                "must be in the rooftop currency (gateway_settings.currency)",
            ));
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
    let mut beyond = Vec::new();
    for (i, estimate) in value["government_charge_estimates"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let lines = estimate["lines"].as_array().cloned().unwrap_or_default();
        let mut total: i128 = 0;
        for (j, line) in lines.iter().enumerate() {
            check_currency(
                &line["amount"],
                format!("{pointer}/government_charge_estimates/{i}/lines/{j}/amount/currency"),
            );
            total += i128::from(line["amount"]["amount_minor"].as_i64().unwrap_or(0));
        }
        // The disclosure states the lines' total as money: it must be
        // served exactly too, or the estimate would be dropped as unknown.
        if total > i128::from(money::MAX_SAFE_MINOR) {
            beyond.push(Problem::new(
                format!("{pointer}/government_charge_estimates/{i}/lines"),
                "safe_range",
                format!(
                    "the lines of this estimate sum to {total} minor units, beyond the range \
                     served exactly (at most {} minor units): the disclosure states their total",
                    money::MAX_SAFE_MINOR
                ),
            ));
        }
        estimates.push((
            estimate["jurisdiction"].clone(),
            lines,
            estimate["assumptions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect::<Vec<String>>(),
        ));
    }
    problems.extend(beyond);
    problems.extend(duplicates.into_iter().map(|pointer| {
        Problem::new(
            pointer,
            "unique",
            "duplicate charge_id: each required dealer charge of a rooftop has its own id",
        )
    }));
    let required_dealer_charges = charges
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            typed(
                c,
                format!("{pointer}/required_dealer_charges/{i}"),
                problems,
            )
        })
        .collect();
    let government_charge_estimates = estimates
        .into_iter()
        .enumerate()
        .filter_map(|(i, (jurisdiction, lines, assumptions))| {
            let at = format!("{pointer}/government_charge_estimates/{i}");
            Some(GovernmentChargeEstimate {
                jurisdiction: typed(&jurisdiction, format!("{at}/jurisdiction"), problems)?,
                lines: typed(&Value::Array(lines), format!("{at}/lines"), problems)?,
                assumptions,
            })
        })
        .collect();
    RooftopPricing {
        required_dealer_charges,
        government_charge_estimates,
        charge_classes: charge_classes(&value["charge_classes"], &charge_ids, pointer, problems),
        advertised_prices_include_vat: value["advertised_prices_include_vat"].as_bool(),
    }
}

/// `pricing.charge_classes` (schema-valid already: identifier keys, class
/// words): each key must be a `charge_id` of the rooftop's own
/// `required_dealer_charges`, which is what it classifies for the
/// disclosure lint (docs/dealers-file.md "Pricing", docs/lint.md).
fn charge_classes(
    value: &Value,
    charge_ids: &HashSet<&str>,
    pointer: &str,
    problems: &mut Vec<Problem>,
) -> BTreeMap<String, pricing::lint::ChargeClass> {
    let mut classes = BTreeMap::new();
    for (key, word) in value.as_object().into_iter().flatten() {
        // The schema's propertyNames makes the key a DAP identifier, which
        // needs no JSON Pointer escaping (RFC 6901: only `~` and `/` do).
        let at = format!("{pointer}/charge_classes/{key}");
        if !charge_ids.contains(key.as_str()) {
            problems.push(Problem::new(
                at.clone(),
                "charge_id",
                "not a charge_id of this rooftop's required_dealer_charges: a class classifies \
                 one of the rooftop's own charges",
            ));
        }
        match crate::ingest::claims::class(word.as_str().unwrap_or_default()) {
            Ok(class) => {
                classes.insert(key.clone(), class);
            }
            Err(why) => problems.push(Problem::new(at, "enum", why)),
        }
    }
    classes
}

/// A schema-valid part of the file as its type. The import is refused when
/// any problem was found; a record that does not read as its type (only if
/// the schema and `crate::dap` drift apart) is then a problem too, never
/// dropped in silence.
fn typed<T: serde::de::DeserializeOwned>(
    value: &Value,
    at: String,
    problems: &mut Vec<Problem>,
) -> Option<T> {
    serde_json::from_value(value.clone())
        .map_err(|e| {
            problems.push(Problem::new(
                at,
                "schema",
                format!("does not match its schema definition: {e}"),
            ));
        })
        .ok()
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
        problems.push(Problem::new(
            url_pointer.clone(),
            "url_template",
            "must contain at least one placeholder: {vin}, {stock_number} or {vehicle_id}",
        ));
    }
    // Parse with placeholders filled by a harmless value.
    let sample = template
        .replace("{vin}", "X")
        .replace("{stock_number}", "X")
        .replace("{vehicle_id}", "X");
    match reqwest::Url::parse(&sample) {
        Err(_) => problems.push(Problem::new(
            url_pointer,
            "url_template",
            "not a valid absolute URL",
        )),
        Ok(url) => {
            if url.scheme() != "https" && !(url.scheme() == "http" && is_loopback(&url)) {
                problems.push(Problem::new(
                    url_pointer,
                    "url_template",
                    "must use https: plain http is allowed only for a loopback host (127.0.0.1, localhost, [::1])",
                ));
            } else if !url.username().is_empty() || url.password().is_some() {
                problems.push(Problem::new(
                    url_pointer,
                    "url_template",
                    "must not carry credentials in the URL",
                ));
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
#[path = "dealers_tests.rs"]
mod tests;
