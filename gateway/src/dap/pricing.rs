//! DAP pricing records (pricing.schema.json, common.schema.json): the
//! charges, adjustments, jurisdictions and government charge lines that
//! feeds, the dealers file and disclosures carry.
//!
//! Member names, order and skip rules are the published schema's: an
//! optional member is absent when `None`, never `null`. Enumerated members
//! hold the DAP wire strings (ingest checks them against the schema enums
//! before a record is built), like the rest of the vehicle record. Amounts
//! are [`Money`]: exact minor units with their currency (DAP-CORE-018..020).
//! An amount that is not known is a typed unknown
//! ([`ConditionalAdjustment::known_amount`] is `None`), never zero.

pub use pricing::Money;
use serde::{Deserialize, Serialize};

use super::provenance::Provenance;

/// DAP `jurisdiction` (common.schema.json): where a charge or an offer
/// applies, preferably an ISO 3166-2 subdivision.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Jurisdiction {
    pub country: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdivision: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locality: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postal_code: Option<String>,
}

/// DAP `dealerCharge`: a charge the dealer requires on every sale of the
/// vehicle. `required` is the schema's const `true`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DealerCharge {
    pub charge_id: String,
    pub name: String,
    /// Non-negative, in the rooftop currency (checked by ingest).
    pub amount: Money,
    /// `dealer|dealer_vendor|other`.
    pub payee: String,
    pub included_in_advertised_price: bool,
    /// `taxable|not_taxable|unknown|jurisdiction_dependent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taxable_status: Option<String>,
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
}

/// One scalar of an eligibility criterion's `value`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    Flag(bool),
    Number(serde_json::Number),
    Text(String),
}

/// DAP `eligibilityCriterion.value`: a string, a boolean, a number, or an
/// array of such scalars (for the operator `in`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CriterionValue {
    Scalar(Scalar),
    List(Vec<Scalar>),
}

/// DAP `eligibilityCriterion`: one condition of a conditional adjustment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EligibilityCriterion {
    /// `residency|loyalty|conquest|...|other`.
    pub criterion: String,
    /// `equals|in|present|verified`.
    pub operator: String,
    pub value: CriterionValue,
    /// `required|claimed|verified|not_required`.
    pub evidence_status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// DAP `stacking`: how an adjustment combines with others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stacking {
    pub group: String,
    /// `stackable|exclusive|rule_defined`.
    pub combinability: String,
    /// `None` when the source gave no list (an empty list stays one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub combinable_with: Option<Vec<String>>,
}

/// DAP `conditionalAdjustment`: a discount, rebate, incentive or surcharge
/// that applies only under conditions (never to a buyer whose eligibility
/// is unverified).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConditionalAdjustment {
    pub adjustment_id: String,
    pub name: String,
    /// `discount|surcharge`.
    pub direction: String,
    /// `known|unknown`; the schema requires `amount` when `known`.
    pub amount_status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<Money>,
    pub criteria: Vec<EligibilityCriterion>,
    /// `all|any`; absent means `all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criteria_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jurisdictions: Option<Vec<Jurisdiction>>,
    /// RFC 3339 as published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    /// RFC 3339 as published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
    pub stacking: Stacking,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
}

impl ConditionalAdjustment {
    /// The magnitude when the source states it (`amount_status` `known`);
    /// `None` is unknown, never zero.
    pub fn known_amount(&self) -> Option<Money> {
        if self.amount_status == "known" {
            self.amount
        } else {
            None
        }
    }

    pub fn is_surcharge(&self) -> bool {
        self.direction == "surcharge"
    }
}

/// DAP `governmentChargeLine`: one tax, title, registration or other
/// government charge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GovernmentChargeLine {
    pub name: String,
    pub amount: Money,
    /// `government|government_agent`.
    pub payee: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basis: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dap::provenance::{Provenance, Source};
    use crate::tools::output::drift::check;
    use pricing::Currency;

    fn usd(minor: i64) -> Money {
        Money::from_minor(minor, Currency::USD)
    }

    fn provenance() -> Provenance {
        Provenance::asserted(
            vec![Source {
                source_name: "dealers.yaml".into(),
                authority: "dealer_asserted".into(),
                observed_at: "2026-01-02T03:04:05Z".into(),
                source_record_id: None,
                content_digest: None,
                source_uri: None,
            }],
            None,
            Vec::<String>::new(),
        )
    }

    pub(crate) fn illinois() -> Jurisdiction {
        Jurisdiction {
            country: "US".into(),
            subdivision: Some("US-IL".into()),
            locality: None,
            postal_code: None,
        }
    }

    fn charge(full: bool) -> DealerCharge {
        DealerCharge {
            charge_id: "doc-fee".into(),
            name: "Documentation fee".into(),
            amount: usd(35_000),
            payee: "dealer".into(),
            included_in_advertised_price: false,
            taxable_status: full.then(|| "taxable".into()),
            required: true,
            provenance: full.then(provenance),
        }
    }

    fn adjustment(full: bool) -> ConditionalAdjustment {
        ConditionalAdjustment {
            adjustment_id: "loyalty".into(),
            name: "Loyalty bonus".into(),
            direction: "discount".into(),
            amount_status: if full { "known" } else { "unknown" }.into(),
            amount: full.then(|| usd(50_000)),
            criteria: vec![
                EligibilityCriterion {
                    criterion: "loyalty".into(),
                    operator: "verified".into(),
                    value: CriterionValue::Scalar(Scalar::Flag(true)),
                    evidence_status: "required".into(),
                    description: full.then(|| "Owns a vehicle of the brand.".into()),
                },
                EligibilityCriterion {
                    criterion: "payment_mode".into(),
                    operator: "in".into(),
                    value: CriterionValue::List(vec![
                        Scalar::Text("finance".into()),
                        Scalar::Number(3.into()),
                    ]),
                    evidence_status: "not_required".into(),
                    description: None,
                },
            ],
            criteria_mode: full.then(|| "any".into()),
            jurisdictions: full.then(|| vec![illinois()]),
            valid_from: full.then(|| "2026-01-01T00:00:00Z".into()),
            valid_until: full.then(|| "2026-02-01T00:00:00Z".into()),
            stacking: Stacking {
                group: "brand".into(),
                combinability: "stackable".into(),
                combinable_with: full.then(|| vec!["other".into()]),
            },
            provenance: full.then(provenance),
        }
    }

    fn line(full: bool) -> GovernmentChargeLine {
        GovernmentChargeLine {
            name: "Title".into(),
            amount: usd(16_500),
            payee: "government".into(),
            basis: full.then(|| "State fee schedule".into()),
        }
    }

    #[test]
    fn the_pricing_records_match_their_definitions() {
        check(
            "pricing.schema.json#/$defs/dealerCharge",
            &[charge(false), charge(true)],
        );
        check(
            "pricing.schema.json#/$defs/conditionalAdjustment",
            &[adjustment(false), adjustment(true)],
        );
        check(
            "pricing.schema.json#/$defs/governmentChargeLine",
            &[line(false), line(true)],
        );
        let full = Jurisdiction {
            locality: Some("Chicago".into()),
            postal_code: Some("60601".into()),
            ..illinois()
        };
        check(
            "common.schema.json#/$defs/jurisdiction",
            &[illinois(), full],
        );
    }

    /// The types read the wire back exactly: a round trip through JSON
    /// gives the same value and the same bytes.
    #[test]
    fn the_pricing_records_round_trip() {
        for a in [adjustment(false), adjustment(true)] {
            let text = serde_json::to_string(&a).unwrap();
            let back: ConditionalAdjustment = serde_json::from_str(&text).unwrap();
            assert_eq!(back, a);
            assert_eq!(serde_json::to_string(&back).unwrap(), text);
        }
        for c in [charge(false), charge(true)] {
            let text = serde_json::to_string(&c).unwrap();
            let back: DealerCharge = serde_json::from_str(&text).unwrap();
            assert_eq!(back, c);
        }
        assert_eq!(adjustment(false).known_amount(), None);
        assert_eq!(adjustment(true).known_amount(), Some(usd(50_000)));
    }
}
