//! Which rules apply to a disclosure: the rule's jurisdiction covers the
//! place where the disclosure is shown, the rule is in force on the lint
//! date and the vehicle's condition is one the rule names
//! (docs/lint.md "How jurisdictions are chosen").

use super::{Facts, Place, Rule};

/// The jurisdictions the catalogue may name. `EU` covers the member
/// states; a two-letter code is an ISO 3166-1 country; a code with a dash
/// is an ISO 3166-2 subdivision. No `US` entry: no federal advertised-price
/// rule is in force (the FTC CARS Rule was vacated by the Fifth Circuit in
/// January 2025).
pub const JURISDICTIONS: &[&str] = &["US-CA", "US-CT", "CA-ON", "CA-QC", "EU", "DE", "GB"];

/// The 27 member states of the European Union (ISO 3166-1 alpha-2; Greece
/// is `GR`). The United Kingdom left on 2020-01-31 and is `GB`, not here.
pub const EU_MEMBER_STATES: &[&str] = &[
    "AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GR", "HR", "HU", "IE", "IT",
    "LT", "LU", "LV", "MT", "NL", "PL", "PT", "RO", "SE", "SI", "SK",
];

/// The vehicle conditions a rule may name (DAP `condition`).
pub const CONDITIONS: &[&str] = &["new", "used", "certified", "demo"];

/// Whether `rule` applies to the disclosure described by `facts`.
pub(super) fn applies(rule: &Rule, facts: &Facts) -> bool {
    covers(&rule.jurisdiction, &facts.place)
        && in_force(rule, facts.as_of)
        && (rule.conditions.is_empty()
            || rule
                .conditions
                .iter()
                .any(|c| c.eq_ignore_ascii_case(&facts.condition)))
}

/// Whether `jurisdiction` covers `place`.
pub(super) fn covers(jurisdiction: &str, place: &Place) -> bool {
    if jurisdiction == "EU" {
        return EU_MEMBER_STATES
            .iter()
            .any(|m| m.eq_ignore_ascii_case(&place.country));
    }
    if jurisdiction.contains('-') {
        return place
            .subdivision
            .as_deref()
            .is_some_and(|s| s.eq_ignore_ascii_case(jurisdiction));
    }
    jurisdiction.eq_ignore_ascii_case(&place.country)
}

/// Whether `rule` is in force on `day` (both ends inclusive).
fn in_force(rule: &Rule, day: chrono::NaiveDate) -> bool {
    rule.effective_from <= day && rule.effective_until.is_none_or(|until| day <= until)
}
