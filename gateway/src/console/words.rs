//! Plain words for the protocol's enumerated values on the manager's pages
//! (docs/console.md "Plain words"): one mapping, so a value reads the same
//! on every page. A manager who needs the protocol's own word to search the
//! docs finds it in a `<code>` hint ([`hinted`]) or in the raw-JSON toggle.
//!
//! The same wire word means different things in different places
//! (`verified` is an operator and an evidence status, `asserted` an
//! authority and a band), so each value is read in its [`Vocabulary`].

use std::borrow::Cow;

use maud::{Markup, html};

/// Where a wire value comes from (its enum in schemas/).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vocabulary {
    /// `advertisedPrice.availability` (pricing.schema.json).
    PriceAvailability,
    /// `governmentCharges.status`.
    GovernmentStatus,
    /// `uncertainty.status`.
    Uncertainty,
    /// `stacking.combinability` (DAP) of an adjustment or a program.
    Combinability,
    /// `stacking.group_resolution` (programs.schema.json).
    GroupResolution,
    /// `direction` of an adjustment or a program.
    Direction,
    /// `kind` of a program.
    ProgramKind,
    /// `amount_status` / `amount.status`.
    AmountStatus,
    /// A payment mode (`cash`, `finance`, `lease`, `unknown`).
    PaymentMode,
    /// `eligibilityCriterion.criterion`.
    Criterion,
    /// `eligibilityCriterion.operator`.
    Operator,
    /// `eligibilityCriterion.evidence_status`.
    EvidenceStatus,
    /// `criteria_mode`.
    CriteriaMode,
    /// `dealerCharge.taxable_status`.
    TaxableStatus,
    /// `dealerCharge.payee` and government line payees.
    Payee,
    /// A vehicle's listed or verified availability `status`.
    AvailabilityStatus,
    /// `provenance.authority_status` / availability `authority_status`.
    AuthorityStatus,
    /// `source.authority` (common.schema.json `sourceAuthority`).
    SourceAuthority,
    /// An availability band (docs/availability.md "Bands").
    Band,
    /// `freshness.state`.
    Freshness,
    /// A vehicle's `condition`.
    Condition,
    /// The offer search's `optimality.status`.
    Optimality,
    /// `amount.rounding` of a percent program (money.md rounding modes).
    Rounding,
}

/// `value` in plain words, read in `vocabulary`; a value the mapping does
/// not know keeps its own word with underscores as spaces (never empty,
/// never an invented meaning).
pub fn plain(vocabulary: Vocabulary, value: &str) -> Cow<'static, str> {
    use Vocabulary as V;
    let word: Option<&'static str> = match (vocabulary, value) {
        (V::PriceAvailability, "generally_available") => Some("advertised to everyone"),
        (V::GovernmentStatus, "unknown") => Some("unknown (never zero)"),
        (V::GovernmentStatus, "estimated") => Some("estimated by the dealer"),
        (V::GovernmentStatus, "calculated") => Some("calculated by the dealer per sale"),
        (V::GovernmentStatus, "not_applicable") => Some("none apply"),
        (V::Uncertainty, "exact") => Some("exact"),
        (V::Uncertainty, "estimated") => Some("partly estimated"),
        (V::Uncertainty, "unknown") => Some("partly unknown"),
        (V::Combinability, "stackable") => Some("combines with others"),
        (V::Combinability, "exclusive") => Some("combines only with the programs it names"),
        (V::Combinability, "rule_defined") => Some("a combination rule decides"),
        (V::GroupResolution, "all") => Some("every program of the group may combine"),
        (V::GroupResolution, "best_one") => Some("only the best program of the group counts"),
        (V::Direction, "discount") => Some("lowers the price"),
        (V::Direction, "surcharge") => Some("raises the price"),
        (V::ProgramKind, "cash") => Some("customer cash"),
        (V::ProgramKind, "bonus_cash") => Some("bonus cash"),
        (V::ProgramKind, "finance_rate") => Some("subsidized finance rate"),
        (V::ProgramKind, "lease_cash") => Some("lease cash"),
        (V::ProgramKind, "dealer_discount") => Some("dealer discount"),
        (V::ProgramKind, "fee_waiver") => Some("waived fee"),
        (V::ProgramKind, "surcharge") => Some("surcharge"),
        (V::ProgramKind, "other") => Some("other"),
        (V::AmountStatus, "known") => Some("known"),
        (V::AmountStatus, "unknown") => Some("unknown"),
        (V::AmountStatus, "percent_off") => Some("a percentage of the price"),
        (V::PaymentMode, "cash") => Some("cash"),
        (V::PaymentMode, "finance") => Some("finance"),
        (V::PaymentMode, "lease") => Some("lease"),
        (V::PaymentMode, "unknown") => Some("not decided"),
        (V::Criterion, "residency") => Some("residency"),
        (V::Criterion, "loyalty") => Some("brand loyalty"),
        (V::Criterion, "conquest") => Some("owns a competitor's vehicle"),
        (V::Criterion, "military") => Some("military service"),
        (V::Criterion, "first_responder") => Some("first responder"),
        (V::Criterion, "college_graduate") => Some("recent college graduate"),
        (V::Criterion, "finance_provider") => Some("lender"),
        (V::Criterion, "payment_mode") => Some("payment mode"),
        (V::Criterion, "trade_in") => Some("trade-in"),
        (V::Criterion, "lease_return") => Some("lease return"),
        (V::Criterion, "membership") => Some("membership"),
        (V::Criterion, "other") => Some("other condition"),
        (V::Operator, "equals") => Some("is"),
        (V::Operator, "in") => Some("is one of"),
        (V::Operator, "present") => Some("applies to the buyer"),
        (V::Operator, "verified") => Some("is proven"),
        (V::EvidenceStatus, "required") => Some("proof required"),
        (V::EvidenceStatus, "claimed") => Some("the buyer's word"),
        (V::EvidenceStatus, "verified") => Some("already verified"),
        (V::EvidenceStatus, "not_required") => Some("no proof needed"),
        (V::CriteriaMode, "all") => Some("every condition must hold"),
        (V::CriteriaMode, "any") => Some("one condition is enough"),
        (V::TaxableStatus, "taxable") => Some("taxable"),
        (V::TaxableStatus, "not_taxable") => Some("not taxable"),
        (V::TaxableStatus, "unknown") => Some("unknown"),
        (V::TaxableStatus, "jurisdiction_dependent") => Some("depends on where the buyer lives"),
        (V::Payee, "dealer") => Some("the dealer"),
        (V::Payee, "dealer_vendor") => Some("a vendor of the dealer"),
        (V::Payee, "government") => Some("the government"),
        (V::Payee, "government_agent") => Some("an agent of the government"),
        (V::Payee, "other") => Some("someone else"),
        (V::AvailabilityStatus, "available") => Some("available"),
        (V::AvailabilityStatus, "in_transit") => Some("in transit"),
        (V::AvailabilityStatus, "on_hold") => Some("on hold"),
        (V::AvailabilityStatus, "pending_sale") => Some("sale pending"),
        (V::AvailabilityStatus, "sold") => Some("sold"),
        (V::AvailabilityStatus, "unavailable") => Some("not available"),
        (V::AvailabilityStatus, "unknown") => Some("unknown"),
        (V::AuthorityStatus, "authoritative") => Some("from the dealer's system of record"),
        (V::AuthorityStatus, "asserted") => Some("stated, not verified"),
        (V::AuthorityStatus, "derived") => Some("computed by the gateway"),
        (V::AuthorityStatus, "unknown") => Some("unknown"),
        (V::SourceAuthority, "authoritative_dealer_system") => {
            Some("the dealer's system of record")
        }
        (V::SourceAuthority, "dealer_asserted") => Some("stated by the dealer"),
        (V::SourceAuthority, "oem") => Some("the manufacturer"),
        (V::SourceAuthority, "government") => Some("a government source"),
        (V::SourceAuthority, "third_party") => Some("a third party"),
        (V::SourceAuthority, "derived") => Some("computed by the gateway"),
        (V::SourceAuthority, "unknown") => Some("unknown"),
        (V::Band, "verified_current") => Some("checked live in the last 2 minutes"),
        (V::Band, "recent_authoritative") => Some("from the dealer's system, under 15 minutes old"),
        (V::Band, "asserted") => Some("stated, not verified (under 24 hours old)"),
        (V::Band, "stale") => Some("older than 24 hours"),
        (V::Band, "unknown") => Some("no observation"),
        (V::Freshness, "current") => Some("current"),
        (V::Freshness, "stale") => Some("out of date"),
        (V::Freshness, "withdrawn") => Some("withdrawn from the feed"),
        (V::Freshness, "unknown") => Some("unknown"),
        (V::Condition, "new") => Some("new"),
        (V::Condition, "used") => Some("used"),
        (V::Condition, "certified") => Some("certified pre-owned"),
        (V::Condition, "demo") => Some("demonstrator"),
        (V::Optimality, "proven") => Some("proven best"),
        (V::Optimality, "bounded") => Some("best found within the search budget"),
        (V::Rounding, "half_up") => Some("to the nearest minor unit, halves away from zero"),
        (V::Rounding, "half_even") => Some("to the nearest minor unit, halves to even"),
        (V::Rounding, "floor") => Some("down"),
        (V::Rounding, "ceiling") => Some("up"),
        (V::Rounding, "truncate") => Some("toward zero"),
        _ => None,
    };
    word.map_or_else(|| Cow::Owned(value.replace('_', " ")), Cow::Borrowed)
}

/// The plain words, then the wire value as a small `<code>` hint, for the
/// values a manager may look up in the docs (combinability, statuses,
/// bands, authorities).
pub fn hinted(vocabulary: Vocabulary, value: &str) -> Markup {
    html! {
        (plain(vocabulary, value))
        @if !value.is_empty() { " " code.hint { (value) } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_words_read_plainly_and_each_by_its_vocabulary() {
        assert_eq!(
            plain(Vocabulary::PriceAvailability, "generally_available"),
            "advertised to everyone"
        );
        assert_eq!(
            plain(Vocabulary::Combinability, "rule_defined"),
            "a combination rule decides"
        );
        assert_ne!(
            plain(Vocabulary::Band, "asserted"),
            plain(Vocabulary::AuthorityStatus, "asserted")
        );
        // Unmapped values keep their word, never an empty cell.
        assert_eq!(plain(Vocabulary::Band, "some_new_band"), "some new band");
        let hinted = hinted(Vocabulary::Combinability, "rule_defined").into_string();
        assert_eq!(
            hinted,
            r#"a combination rule decides <code class="hint">rule_defined</code>"#
        );
    }

    #[test]
    fn every_schema_value_of_the_mapped_enums_has_words_of_its_own() {
        // The enums of schemas/ the pages show; an added wire value must get
        // words here (or it would read as its raw word with spaces).
        let cases: [(Vocabulary, &[&str]); 8] = [
            (
                Vocabulary::Combinability,
                &["stackable", "exclusive", "rule_defined"],
            ),
            (
                Vocabulary::GovernmentStatus,
                &["unknown", "estimated", "calculated", "not_applicable"],
            ),
            (
                Vocabulary::Band,
                &[
                    "verified_current",
                    "recent_authoritative",
                    "asserted",
                    "stale",
                    "unknown",
                ],
            ),
            (
                Vocabulary::SourceAuthority,
                &[
                    "authoritative_dealer_system",
                    "dealer_asserted",
                    "oem",
                    "government",
                    "third_party",
                    "derived",
                    "unknown",
                ],
            ),
            (
                Vocabulary::AuthorityStatus,
                &["authoritative", "asserted", "derived", "unknown"],
            ),
            (
                Vocabulary::AvailabilityStatus,
                &[
                    "available",
                    "in_transit",
                    "on_hold",
                    "pending_sale",
                    "sold",
                    "unavailable",
                ],
            ),
            (
                Vocabulary::TaxableStatus,
                &[
                    "taxable",
                    "not_taxable",
                    "unknown",
                    "jurisdiction_dependent",
                ],
            ),
            (
                Vocabulary::ProgramKind,
                &[
                    "cash",
                    "bonus_cash",
                    "finance_rate",
                    "lease_cash",
                    "dealer_discount",
                    "fee_waiver",
                    "surcharge",
                    "other",
                ],
            ),
        ];
        for (vocabulary, values) in cases {
            for v in values {
                assert!(
                    matches!(plain(vocabulary, v), Cow::Borrowed(_)),
                    "{vocabulary:?} {v} has no words"
                );
                assert!(!plain(vocabulary, v).contains('_'), "{vocabulary:?} {v}");
            }
        }
    }
}
