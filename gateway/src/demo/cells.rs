//! The JSON cells of a generated feed row as serde types: the DAP pricing
//! objects `dealerCharge`, `conditionalAdjustment` and
//! `eligibilityCriterion` (pricing.schema.json), history-report objects
//! (schemas/inventory-cells.schema.json), image URLs and feature strings.
//! DAP 6 leaves the cell shapes open; we publish the pricing schema's own
//! objects so ingest keeps them as they are.
//!
//! Fields are declared in the order they are written, so a cell reads the
//! same as before the generator moved to serde.

use std::borrow::Cow;

use chrono::Duration;
use serde::Serialize;
use serde_json::{Value, json};

use crate::dap::{
    ConditionComponent, ConditionGrade, HistoryReport, Inspection, Reconditioning,
    ReconditioningItem, Title,
};

use super::clock::{Clock, DAY, day_floor, ts};
use super::data::{
    CAPTIVE_LENDERS, FEATURES_COMMON, FEATURES_EV, FEATURES_SUV, FEATURES_TRUCK, FEATURES_VAN,
    FRANCHISE_MAKES, Model, OTHER_CAPTIVE_LENDER,
};
use super::random::{Rng, fnv1a};
use super::rooftop::FeedRooftop;

/// The condition of a generated vehicle (DAP 6: `new|used|certified`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Condition {
    New,
    Used,
    Certified,
}

impl Condition {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Condition::New => "new",
            Condition::Used => "used",
            Condition::Certified => "certified",
        }
    }
}

/// DAP `money`: integer minor units and an ISO 4217 code.
#[derive(Serialize)]
struct Money<'a> {
    amount_minor: i64,
    currency: &'a str,
}

impl<'a> Money<'a> {
    /// `major` whole units of the rooftop currency.
    fn of(roof: &'a FeedRooftop, major: i64) -> Self {
        Money {
            amount_minor: major * roof.minor_per_major,
            currency: &roof.id.currency,
        }
    }
}

/// DAP `dealerCharge`; `required` is the schema's const `true`.
#[derive(Serialize)]
pub(super) struct DealerCharge<'a> {
    charge_id: &'static str,
    name: &'static str,
    amount: Money<'a>,
    payee: &'static str,
    included_in_advertised_price: bool,
    required: bool,
    taxable_status: &'static str,
}

/// DAP `eligibilityCriterion`.
#[derive(Serialize)]
struct Criterion {
    criterion: &'static str,
    operator: &'static str,
    value: CriterionValue,
    evidence_status: &'static str,
    description: Cow<'static, str>,
}

/// The criterion `value`: DAP allows a string, a boolean or an array of
/// scalars.
#[derive(Serialize)]
#[serde(untagged)]
enum CriterionValue {
    Flag(bool),
    Text(&'static str),
    List(Vec<&'static str>),
}

/// One DAP `jurisdictions[]` entry.
#[derive(Serialize)]
struct Jurisdiction<'a> {
    country: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    subdivision: Option<&'a str>,
}

/// DAP `stacking`; `combinable_with` names adjustment ids of the same row.
#[derive(Serialize)]
struct Stacking<'a> {
    group: &'static str,
    combinability: &'static str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    combinable_with: &'a [String],
}

/// DAP `conditionalAdjustment`; `amount` is present exactly when
/// `amount_status` is `known` (the schema requires it then).
#[derive(Serialize)]
pub(super) struct ConditionalAdjustment<'a> {
    adjustment_id: String,
    name: String,
    direction: &'static str,
    amount_status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    amount: Option<Money<'a>>,
    criteria: Vec<Criterion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    criteria_mode: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    jurisdictions: Option<[Jurisdiction<'a>; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    valid_from: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    valid_until: Option<&'a str>,
    stacking: Stacking<'a>,
}

/// A generated row's history report (DAP `historyReport` as a feed
/// publishes it, [`HistoryReport`]): no summary, and
/// `summary_sharing_authorized` false (DAP 6, CSV-003: false unless the
/// provider agreement permits it).
fn report(
    provider_id: &str,
    provider_name: &str,
    status: &str,
    access: &str,
    report_url: Option<String>,
) -> HistoryReport {
    HistoryReport {
        provider_id: provider_id.into(),
        provider_name: provider_name.into(),
        report_id: None,
        status: status.into(),
        access: access.into(),
        report_url,
        report_generated_at: None,
        observed_at: None,
        summary_sharing_authorized: false,
        summary: None,
    }
}

/// `required_dealer_charges_json`: a documentation/administration fee,
/// freight and PDI on new Canadian units, an e-filing fee at some US
/// stores; `None` (an empty cell: unknown, DAP 6) in a few rows.
pub(super) fn charges<'a>(
    rng: &mut Rng,
    roof: &'a FeedRooftop,
    condition: Condition,
    m: &Model,
) -> Option<Vec<DealerCharge<'a>>> {
    if rng.chance(40) {
        return None;
    }
    // Rooftops whose charges are all in their dealers-file settings list
    // none of their own: the settings' charges then apply to every row.
    if roof.id.charges_in_settings {
        return Some(Vec::new());
    }
    let included = roof.fees_included != rng.chance(120);
    let canada = roof.id.country == Some("CA");
    let charge = |charge_id, name, major, payee, included, taxable_status| DealerCharge {
        charge_id,
        name,
        amount: Money::of(roof, major),
        payee,
        included_in_advertised_price: included,
        required: true,
        taxable_status,
    };
    let mut out = Vec::with_capacity(3);
    let (id, name) = if canada {
        ("admin-fee", "Administration fee")
    } else {
        ("doc-fee", "Documentation fee")
    };
    out.push(charge(
        id,
        name,
        roof.doc_fee_major,
        "dealer",
        included,
        roof.doc_fee_taxable,
    ));
    if canada && condition == Condition::New {
        let freight = 1_795 + (fnv1a(m.make.as_bytes()) % 9) as i64 * 100;
        out.push(charge(
            "freight-pdi",
            "Freight and PDI",
            freight,
            "dealer",
            included,
            "taxable",
        ));
    }
    if roof.e_filing_fee {
        out.push(charge(
            "e-filing-fee",
            "Electronic registration filing fee",
            roof.local(35),
            "dealer_vendor",
            false,
            "not_taxable",
        ));
    }
    Some(out)
}

/// `charge_classes_json`: the class of each charge [`charges`] lists, by
/// `charge_id` (docs/lint.md "Charge classes").
pub(super) fn charge_classes(
    charges: &[DealerCharge<'_>],
) -> std::collections::BTreeMap<&'static str, &'static str> {
    charges
        .iter()
        .map(|c| {
            let class = match c.charge_id {
                "doc-fee" | "admin-fee" => "documentation_fee",
                "freight-pdi" => "delivery_transfer",
                "e-filing-fee" => "electronic_filing",
                _ => "other",
            };
            (c.charge_id, class)
        })
        .collect()
}

/// `conditional_adjustments_json`: manufacturer offers on some new units
/// (military, first responder, graduate, loyalty, conquest, captive-finance
/// bonus), a trade-in offer of unknown amount on some used ones, `[]` for
/// most rows and `None` (unknown) in a few. `scratch` holds the validity
/// window and the affinity ids the adjustments borrow.
pub(super) fn adjustments<'a>(
    rng: &mut Rng,
    roof: &'a FeedRooftop,
    clock: &Clock,
    condition: Condition,
    m: &Model,
    scratch: &'a mut OfferScratch,
) -> Option<Vec<ConditionalAdjustment<'a>>> {
    if rng.chance(30) {
        return None;
    }
    let mut offers: Vec<Offer> = Vec::new();
    if condition == Condition::New && rng.chance(400) {
        let n = rng.range(1, 3) as usize;
        let mut kinds = [
            Offer::Military,
            Offer::FirstResponder,
            Offer::Graduate,
            Offer::Loyalty,
            Offer::Conquest,
            Offer::Finance,
        ];
        for i in 0..n {
            let k = i + rng.below((kinds.len() - i) as u64) as usize;
            kinds.swap(i, k);
        }
        offers.extend_from_slice(&kinds[..n]);
        offers.sort_by_key(|o| *o as u8);
    } else if condition != Condition::New && rng.chance(80) {
        offers.push(Offer::TradeIn);
    }
    let valid_from = day_floor(clock.ago(rng.range(DAY, 20 * DAY)));
    let valid_until =
        day_floor(clock.now + Duration::days(rng.range(10, 45))) + Duration::seconds(DAY - 1);
    scratch.valid_from = ts(valid_from);
    scratch.valid_until = ts(valid_until);
    scratch.affinity_ids = offers
        .iter()
        .filter(|o| o.group() == "affinity")
        .map(|o| o.id(roof))
        .collect();
    let scratch: &'a OfferScratch = scratch;
    Some(
        offers
            .iter()
            .map(|o| o.adjustment(roof, m.make, scratch))
            .collect(),
    )
}

/// What the adjustments of one row borrow.
#[derive(Default)]
pub(super) struct OfferScratch {
    valid_from: String,
    valid_until: String,
    affinity_ids: Vec<String>,
}

/// `history_reports_json` for a used unit: CARFAX (CARFAX Canada at
/// Canadian stores) mostly, AutoCheck at some US ones, else a
/// not-available CARFAX entry.
pub(super) fn history(rng: &mut Rng, roof: &FeedRooftop, vin: &str) -> Vec<HistoryReport> {
    let canada = roof.id.country == Some("CA");
    let mut out = Vec::with_capacity(2);
    let carfax = rng.chance(850);
    let autocheck = !canada && rng.chance(350);
    if carfax {
        let (provider_id, provider_name) = if canada {
            ("ca.carfax", "CARFAX Canada")
        } else {
            ("com.carfax", "CARFAX")
        };
        let roll = rng.below(1000);
        let (status, access, report_url) = if roll < 900 {
            (
                "available",
                "public_link",
                Some(format!("https://vhr.carfax.example/report/{vin}")),
            )
        } else if roll < 960 {
            ("available", "dealer_presented", None)
        } else {
            ("restricted", "restricted", None)
        };
        out.push(report(
            provider_id,
            provider_name,
            status,
            access,
            report_url,
        ));
    }
    if autocheck {
        out.push(report(
            "com.experian.autocheck",
            "AutoCheck",
            "available",
            "on_request",
            None,
        ));
    }
    if !carfax && !autocheck {
        out.push(report(
            "com.carfax",
            "CARFAX",
            "not_available",
            "none",
            None,
        ));
    }
    out
}

/// `features_json`: 3 to 8 distinct features from the common pool plus the
/// body type's and, for an EV, the EV pool, in pool order.
pub(super) fn features(rng: &mut Rng, m: &Model) -> Vec<&'static str> {
    let extra: &[&str] = match m.vehicle_type {
        "suv" => FEATURES_SUV,
        "truck" => FEATURES_TRUCK,
        "van" => FEATURES_VAN,
        _ => &[],
    };
    let ev: &[&str] = if m.electric { FEATURES_EV } else { &[] };
    let pool: Vec<&'static str> = FEATURES_COMMON
        .iter()
        .chain(extra)
        .chain(ev)
        .copied()
        .collect();
    let mut picked: Vec<usize> = (0..pool.len()).collect();
    let n = rng.range(3, 8) as usize;
    for i in 0..n {
        let k = i + rng.below((picked.len() - i) as u64) as usize;
        picked.swap(i, k);
    }
    let mut chosen = picked[..n].to_vec();
    chosen.sort_unstable();
    chosen.into_iter().map(|f| pool[f]).collect()
}

fn captive_lender(make: &str) -> &'static str {
    CAPTIVE_LENDERS
        .iter()
        .find(|(m, _)| *m == make)
        .map_or(OTHER_CAPTIVE_LENDER, |(_, lender)| lender)
}

/// The conditional offers a generated vehicle can carry.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Offer {
    Military,
    FirstResponder,
    Graduate,
    Loyalty,
    Conquest,
    Finance,
    TradeIn,
}

impl Offer {
    fn group(self) -> &'static str {
        match self {
            Offer::Military | Offer::FirstResponder | Offer::Graduate => "affinity",
            Offer::Loyalty | Offer::Conquest => "loyalty-conquest",
            Offer::Finance => "captive-finance",
            Offer::TradeIn => "trade-in",
        }
    }

    /// Amount in whole local units, rounded to 50 (`None` = unknown).
    fn amount(self, roof: &FeedRooftop) -> Option<i64> {
        let usd = match self {
            Offer::Military | Offer::FirstResponder | Offer::Graduate => 500,
            Offer::Loyalty => 750,
            Offer::Conquest => 1_000,
            Offer::Finance => 1_500,
            Offer::TradeIn => return None,
        };
        Some((roof.local(usd) + 25) / 50 * 50)
    }

    /// `<kind>-<amount>`, or `<kind>` when the amount is unknown.
    fn id(self, roof: &FeedRooftop) -> String {
        let kind = match self {
            Offer::Military => "military",
            Offer::FirstResponder => "first-responder",
            Offer::Graduate => "college-graduate",
            Offer::Loyalty => "loyalty",
            Offer::Conquest => "conquest",
            Offer::Finance => "finance-bonus",
            Offer::TradeIn => "trade-in-assistance",
        };
        match self.amount(roof) {
            Some(a) => format!("{kind}-{a}"),
            None => kind.to_owned(),
        }
    }

    fn name(self, make: &str) -> String {
        match self {
            Offer::Military => format!("{make} Military Appreciation Offer"),
            Offer::FirstResponder => format!("{make} First Responder Offer"),
            Offer::Graduate => format!("{make} College Graduate Offer"),
            Offer::Loyalty => format!("{make} Owner Loyalty Cash"),
            Offer::Conquest => "Competitive Owner Conquest Cash".to_owned(),
            Offer::Finance => format!("{} Bonus Cash", captive_lender(make)),
            Offer::TradeIn => "Trade-in Assistance".to_owned(),
        }
    }

    fn criteria(self, canada: bool, make: &'static str) -> Vec<Criterion> {
        let one = |criterion, operator, value, evidence_status, description: Cow<'static, str>| {
            Criterion {
                criterion,
                operator,
                value,
                evidence_status,
                description,
            }
        };
        match self {
            Offer::Military => vec![one(
                "military",
                "verified",
                CriterionValue::Flag(true),
                "required",
                Cow::Borrowed(if canada {
                    "Serving or retired member of the Canadian Armed Forces, or a veteran"
                } else {
                    "Active duty, reserve, retired or veteran member of the U.S. Armed Forces"
                }),
            )],
            Offer::FirstResponder => vec![one(
                "first_responder",
                "verified",
                CriterionValue::Flag(true),
                "required",
                Cow::Borrowed("Active firefighter, police officer, paramedic or EMT"),
            )],
            Offer::Graduate => vec![one(
                "college_graduate",
                "verified",
                CriterionValue::Flag(true),
                "required",
                Cow::Borrowed(
                    "Graduated from an accredited college in the past 2 years or within the next 6 months",
                ),
            )],
            Offer::Loyalty => vec![one(
                "loyalty",
                "equals",
                CriterionValue::Text(make),
                "required",
                Cow::Owned(format!(
                    "Currently owns or leases a {make} vehicle registered in the buyer's name"
                )),
            )],
            Offer::Conquest => vec![one(
                "conquest",
                "in",
                CriterionValue::List(
                    FRANCHISE_MAKES
                        .iter()
                        .copied()
                        .filter(|&r| r != make)
                        .take(4)
                        .collect(),
                ),
                "required",
                Cow::Borrowed(
                    "Currently owns or leases a vehicle of one of these competitive makes",
                ),
            )],
            Offer::Finance => vec![
                one(
                    "finance_provider",
                    "equals",
                    CriterionValue::Text(captive_lender(make)),
                    "not_required",
                    Cow::Borrowed(
                        "Finance or lease through the manufacturer's captive lender, on approved credit",
                    ),
                ),
                one(
                    "payment_mode",
                    "in",
                    CriterionValue::List(vec!["finance", "lease"]),
                    "not_required",
                    Cow::Borrowed("Not available on cash purchases"),
                ),
            ],
            Offer::TradeIn => vec![one(
                "trade_in",
                "present",
                CriterionValue::Flag(true),
                "claimed",
                Cow::Borrowed(
                    "A vehicle traded in toward this purchase; amount depends on the appraisal",
                ),
            )],
        }
    }

    /// One DAP `conditionalAdjustment`. Affinity offers are exclusive; the
    /// loyalty offer stacks, with the row's affinity offers when it has
    /// any; finance bonus and trade-in are `rule_defined` (opaque, DAP has
    /// no rule language).
    fn adjustment<'a>(
        self,
        roof: &'a FeedRooftop,
        make: &'static str,
        scratch: &'a OfferScratch,
    ) -> ConditionalAdjustment<'a> {
        let amount = self.amount(roof);
        let finance = self == Offer::Finance;
        let (combinability, combinable_with): (&'static str, &'a [String]) = match self {
            Offer::Loyalty => ("stackable", &scratch.affinity_ids),
            Offer::Finance | Offer::TradeIn => ("rule_defined", &[]),
            Offer::Military | Offer::FirstResponder | Offer::Graduate | Offer::Conquest => {
                ("exclusive", &[])
            }
        };
        let dated = self != Offer::TradeIn;
        ConditionalAdjustment {
            adjustment_id: self.id(roof),
            name: self.name(make),
            direction: "discount",
            amount_status: if amount.is_some() { "known" } else { "unknown" },
            amount: amount.map(|a| Money::of(roof, a)),
            criteria: self.criteria(roof.id.country == Some("CA"), make),
            criteria_mode: finance.then_some("all"),
            jurisdictions: roof.id.country.filter(|_| finance).map(|country| {
                [Jurisdiction {
                    country,
                    subdivision: roof.id.subdivision.as_deref(),
                }]
            }),
            valid_from: dated.then_some(scratch.valid_from.as_str()),
            valid_until: dated.then_some(scratch.valid_until.as_str()),
            stacking: Stacking {
                group: self.group(),
                combinability,
                combinable_with,
            },
        }
    }
}

/// The used-vehicle evidence a demo row is given on purpose (profile
/// dealeragent.used-vehicle.read/0.1), so every evidence state is on show:
/// `Complete` (a certified unit with every part stated and an authorized
/// history summary), `Partial` (some parts stated, the report's summary not
/// authorized for sharing) and `Conflicting` (two providers and the
/// dealer's title disagree). The fourth state, missing evidence, is the
/// demo's used unit without history, whose evidence columns stay empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Evidence {
    Complete,
    Partial,
    Conflicting,
}

impl Evidence {
    /// The condition a row with this evidence has.
    pub(super) fn condition(self) -> Condition {
        match self {
            Evidence::Complete => Condition::Certified,
            Evidence::Partial | Evidence::Conflicting => Condition::Used,
        }
    }
}

/// What a row with [`Evidence`] fills in: the history cell as its JSON
/// value, the title, inspection and reconditioning cells as the DAP records
/// ingest reads them into (`crate::dap::used`, the shapes of
/// `schemas/inventory-cells.schema.json`).
pub(super) struct EvidenceCells {
    pub(super) history: Value,
    pub(super) title: Option<Title>,
    pub(super) inspection: Option<Inspection>,
    pub(super) reconditioning: Option<Reconditioning>,
    pub(super) odometer_status: &'static str,
    pub(super) certification_type: &'static str,
    pub(super) certification_program: Option<String>,
}

/// Facts of the row the evidence describes.
pub(super) struct EvidenceRow<'a> {
    pub(super) roof: &'a FeedRooftop,
    pub(super) vin: &'a str,
    pub(super) stock: &'a str,
    /// The odometer in the rooftop's unit.
    pub(super) reading: i64,
    /// When the unit was stocked and when it was inspected (RFC 3339).
    pub(super) stocked_at: &'a str,
    pub(super) inspected_at: &'a str,
}

pub(super) fn evidence(e: Evidence, row: &EvidenceRow<'_>) -> EvidenceCells {
    let id = &row.roof.id;
    let unit = id.unit.as_str();
    let canada = id.country == Some("CA");
    let (carfax_id, carfax_name) = if canada {
        ("ca.carfax", "CARFAX Canada")
    } else {
        ("com.carfax", "CARFAX")
    };
    let title = Title {
        status: "clear".into(),
        brands: Vec::new(),
        jurisdiction: id
            .subdivision
            .clone()
            .or_else(|| id.country.map(str::to_owned)),
    };
    let summary = |accidents: &str, brands: &str, last: i64| {
        json!({
            "accident_status": accidents,
            "accident_event_count": if accidents == "events_reported" { 1 } else { 0 },
            "damage_status": if accidents == "events_reported" { "damage_reported" } else { "no_damage_reported" },
            "title_brand_status": brands,
            "odometer_consistency": "consistent",
            "owner_count_status": "known",
            "owner_count": if accidents == "events_reported" { 2 } else { 1 },
            "prior_use": ["personal"],
            "service_record_count": 7,
            "last_reported_odometer": { "value": last, "unit": unit },
        })
    };
    let report = |provider_id: &str, name: &str, access: &str, summary: Option<Value>| {
        let mut r = json!({
            "provider_id": provider_id,
            "provider_name": name,
            "report_id": format!("demo-{provider_id}-{}", row.stock),
            "status": "available",
            "access": access,
            "report_generated_at": row.stocked_at,
            "summary_sharing_authorized": summary.is_some(),
        });
        if access == "public_link" {
            r["report_url"] = json!(format!("https://vhr.carfax.example/report/{}", row.vin));
        }
        if let Some(s) = summary {
            r["summary"] = s;
        }
        r
    };
    let earlier = row.reading * 9 / 10;
    match e {
        Evidence::Complete => EvidenceCells {
            history: json!([report(
                carfax_id,
                carfax_name,
                "public_link",
                Some(summary("no_events_reported", "no_brands_reported", earlier))
            )]),
            title: Some(title),
            inspection: Some(Inspection {
                inspector_name: Some("Certified pre-owned inspection centre".into()),
                inspection_point_count: Some(172),
                grade: Some(ConditionGrade {
                    system: "Dealer retail inspection v2".into(),
                    value: "retail ready".into(),
                }),
                components: Some(vec![
                    component("mechanical", "pass", None),
                    component("brakes", "pass", None),
                    component("tires", "pass", None),
                    component(
                        "exterior",
                        "attention",
                        Some("Light scratch on the rear bumper."),
                    ),
                ]),
                disclosed_damage: Some(vec!["Light scratch on the rear bumper.".into()]),
                ..inspection("completed", row.inspected_at)
            }),
            reconditioning: Some(Reconditioning {
                status: "completed".into(),
                completed_at: Some(row.inspected_at.into()),
                items: vec![
                    item("brakes", "Front brake pads replaced.", "completed"),
                    item("tires", "Four new all-season tires.", "completed"),
                    item(
                        "cosmetic",
                        "Rear bumper scratch left as disclosed.",
                        "declined",
                    ),
                ],
            }),
            odometer_status: "actual",
            certification_type: "dealer_certified",
            certification_program: Some("Dealer Certified Pre-Owned (172-point)".to_owned()),
        },
        Evidence::Partial => EvidenceCells {
            history: json!([report(carfax_id, carfax_name, "dealer_presented", None)]),
            title: Some(title),
            inspection: Some(Inspection {
                components: Some(vec![
                    component("mechanical", "pass", None),
                    component("battery", "not_inspected", None),
                ]),
                ..inspection("partial", row.inspected_at)
            }),
            reconditioning: None,
            odometer_status: "actual",
            certification_type: "not_certified",
            certification_program: None,
        },
        Evidence::Conflicting => EvidenceCells {
            history: json!([
                report(
                    carfax_id,
                    carfax_name,
                    "public_link",
                    Some(summary("no_events_reported", "no_brands_reported", earlier))
                ),
                report(
                    "com.experian.autocheck",
                    "AutoCheck",
                    "on_request",
                    Some(summary(
                        "events_reported",
                        "brands_reported",
                        row.reading + 4_000
                    ))
                ),
            ]),
            title: Some(title),
            inspection: None,
            reconditioning: Some(Reconditioning {
                status: "in_progress".into(),
                completed_at: None,
                items: vec![item("safety", "Open recall repair scheduled.", "planned")],
            }),
            odometer_status: "actual",
            certification_type: "not_certified",
            certification_program: None,
        },
    }
}

/// The dealer's inspection with `status`, done at `inspected_at`; the rest
/// not stated.
fn inspection(status: &str, inspected_at: &str) -> Inspection {
    Inspection {
        status: status.into(),
        inspection_authority: "dealer".into(),
        inspector_name: None,
        inspected_at: Some(inspected_at.into()),
        report_url: None,
        inspection_point_count: None,
        grade: None,
        components: None,
        disclosed_damage: None,
    }
}

fn component(component: &str, status: &str, note: Option<&str>) -> ConditionComponent {
    ConditionComponent {
        component: component.into(),
        status: status.into(),
        note: note.map(str::to_owned),
    }
}

fn item(category: &str, description: &str, status: &str) -> ReconditioningItem {
    ReconditioningItem {
        category: category.into(),
        description: description.into(),
        status: status.into(),
    }
}
