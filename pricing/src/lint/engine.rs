//! One rule's check against one vehicle's facts (docs/lint.md "Verdicts").
//!
//! Each check reads only the facts its rule `needs`. The order of
//! precedence is the same for every check: a breach the known facts prove
//! is `fail` (even when other facts are unknown, since more facts cannot
//! undo it); otherwise any needed fact that is unknown, unclassified, of
//! an unsettled class, in another currency or from too short a history is
//! `cannot_determine`; only then `pass`. Unknown never passes.

use serde_json::{Value, json};

use super::{
    Charge, ChargeClass, Check, FactUsed, Facts, GovernmentStatus, Known, Reduction, Rule,
    RuleResult, UNKNOWN, Verdict,
};
use crate::Money;

/// A check's answer before it is dressed as a [`RuleResult`].
struct Outcome {
    verdict: Verdict,
    reason: String,
    /// The fix specific to a `cannot_determine` (the rule's own `fix`
    /// answers a `fail`).
    unknown_fix: Option<String>,
    facts: Vec<FactUsed>,
}

impl Outcome {
    fn pass(reason: String, facts: Vec<FactUsed>) -> Outcome {
        Outcome {
            verdict: Verdict::Pass,
            reason,
            unknown_fix: None,
            facts,
        }
    }

    fn fail(reason: String, facts: Vec<FactUsed>) -> Outcome {
        Outcome {
            verdict: Verdict::Fail,
            reason,
            unknown_fix: None,
            facts,
        }
    }

    fn unknown(reason: String, fix: String, facts: Vec<FactUsed>) -> Outcome {
        Outcome {
            verdict: Verdict::CannotDetermine,
            reason,
            unknown_fix: Some(fix),
            facts,
        }
    }
}

/// Evaluate one applicable rule.
pub(super) fn evaluate(rule: &Rule, facts: &Facts) -> RuleResult {
    let outcome = match &rule.check {
        Check::IncludedExcept {
            excluded,
            uncertain,
        } => included_except(facts, excluded, uncertain),
        Check::MaxAmount {
            class,
            currency,
            max_minor,
            only_when_excluded,
        } => max_amount(facts, *class, currency, *max_minor, *only_when_excluded),
        Check::VatIncluded => vat_included(facts),
        Check::VinPublished => {
            published(facts, "vin_published", facts.vin_published.clone(), "VIN")
        }
        Check::OdometerPublished => published(
            facts,
            "odometer_published",
            facts.odometer_published.clone(),
            "odometer reading",
        ),
        Check::GovernmentChargesStated => government_charges_stated(facts),
        Check::PriorPriceIsLowest { days } => prior_price_is_lowest(facts, *days),
    };
    let fix = match outcome.verdict {
        Verdict::Pass => None,
        Verdict::Fail => Some(rule.fix.clone()),
        Verdict::CannotDetermine => outcome.unknown_fix.or_else(|| Some(rule.fix.clone())),
    };
    RuleResult {
        rule_id: rule.id.clone(),
        verdict: outcome.verdict,
        confirmed: rule.confirmed,
        citation: rule.citation.clone(),
        reason: outcome.reason,
        fix,
        facts: outcome.facts,
    }
}

/// Provenance of a fact that is not per charge: its own key in
/// `Facts.sources` when the gateway gave one, else the documented key.
fn source_of(facts: &Facts, key: &str, fallback: &str) -> String {
    facts
        .sources
        .get(key)
        .or_else(|| facts.sources.get(fallback))
        .cloned()
        .unwrap_or_else(|| "not stated".to_owned())
}

fn used(fact: impl Into<String>, value: Value, source: impl Into<String>) -> FactUsed {
    FactUsed {
        fact: fact.into(),
        value,
        source: source.into(),
    }
}

/// A fact of one charge (`charges.<id>.<member>`), from the charge's source.
fn charge_fact(charge: &Charge, member: &str, value: Value) -> FactUsed {
    used(
        format!("charges.{}.{member}", charge.charge_id),
        value,
        &charge.source,
    )
}

/// Every charge class, in declaration order.
pub const ALL_CLASSES: &[ChargeClass] = &[
    ChargeClass::DocumentationFee,
    ChargeClass::DealerAddOn,
    ChargeClass::DeliveryTransfer,
    ChargeClass::DealerPreparation,
    ChargeClass::EmissionTest,
    ChargeClass::Registration,
    ChargeClass::ElectronicFiling,
    ChargeClass::Tax,
    ChargeClass::TireFee,
    ChargeClass::Finance,
    ChargeClass::Other,
];

/// The class in plain words (`documentation fee`), for reasons, the
/// console and the CLI.
pub fn class_words(class: ChargeClass) -> &'static str {
    match class {
        ChargeClass::DocumentationFee => "documentation fee",
        ChargeClass::DealerAddOn => "dealer add-on",
        ChargeClass::DeliveryTransfer => "delivery or transfer",
        ChargeClass::DealerPreparation => "dealer preparation",
        ChargeClass::EmissionTest => "emission test",
        ChargeClass::Registration => "registration",
        ChargeClass::ElectronicFiling => "electronic filing",
        ChargeClass::Tax => "tax",
        ChargeClass::TireFee => "tire fee",
        ChargeClass::Finance => "finance",
        ChargeClass::Other => "other",
    }
}

fn class_value(class: Option<ChargeClass>) -> Value {
    class.map_or_else(|| json!(UNKNOWN), |c| json!(c))
}

/// `"Doc fee" (85.00 USD)`.
fn named(charge: &Charge) -> String {
    format!("\"{}\" ({})", charge.name, charge.amount)
}

/// Names the first charge and counts the rest, keeping the reason one
/// sentence however many charges there are.
fn first_and_more(charges: &[&Charge]) -> String {
    match charges {
        [] => String::new(),
        [one] => named(one),
        [first, rest @ ..] => format!("{} and {} more", named(first), rest.len()),
    }
}

fn join_classes(classes: &[ChargeClass]) -> String {
    if classes.is_empty() {
        return "no class".to_owned();
    }
    classes
        .iter()
        .map(|c| class_words(*c))
        .collect::<Vec<_>>()
        .join(", ")
}

fn charges_unknown(facts: &Facts) -> Outcome {
    Outcome::unknown(
        "The required dealer charges are unknown, so what the advertised price leaves out is unknown."
            .to_owned(),
        "Publish the required dealer charges (feed `required_dealer_charges_json` or dealers file `required_dealer_charges`), even when there are none.".to_owned(),
        vec![used(
            "charges",
            json!(UNKNOWN),
            source_of(facts, "charges", "vehicle"),
        )],
    )
}

const CLASSIFY_FIX: &str = "Classify the charge in the feed's `charge_classes_json` or the dealers file's `gateway_settings.pricing.charge_classes`, or include it in the advertised price.";

/// Every required charge is included in the advertised price unless its
/// class is one the rule lets the price leave out.
fn included_except(facts: &Facts, excluded: &[ChargeClass], uncertain: &[ChargeClass]) -> Outcome {
    let Known::Known(charges) = &facts.charges else {
        return charges_unknown(facts);
    };
    let mut read = Vec::new();
    let mut breaches: Vec<&Charge> = Vec::new();
    let mut unclassified: Vec<&Charge> = Vec::new();
    let mut unsettled: Vec<&Charge> = Vec::new();
    for charge in charges {
        read.push(charge_fact(
            charge,
            "included_in_advertised_price",
            json!(charge.included_in_advertised_price),
        ));
        if charge.included_in_advertised_price {
            continue;
        }
        read.push(charge_fact(charge, "class", class_value(charge.class)));
        match charge.class {
            None => unclassified.push(charge),
            Some(class) if excluded.contains(&class) => {}
            Some(class) if uncertain.contains(&class) => unsettled.push(charge),
            Some(_) => breaches.push(charge),
        }
    }
    if let Some(first) = breaches.first() {
        let class = first.class.map_or("unclassified", class_words);
        // Name the shorter list: what the price may leave out, or what it
        // must include (the transfer and add-on rules leave out all but one).
        let required: Vec<ChargeClass> = ALL_CLASSES
            .iter()
            .copied()
            .filter(|c| !excluded.contains(c) && !uncertain.contains(c))
            .collect();
        let rule = if required.len() < excluded.len() {
            format!(
                "which must include every {} charge",
                join_classes(&required)
            )
        } else {
            format!("which may leave out only: {}", join_classes(excluded))
        };
        return Outcome::fail(
            format!(
                "The {class} charge {} is left out of the advertised price, {rule}.",
                first_and_more(&breaches)
            ),
            read,
        );
    }
    if let Some(first) = unclassified.first() {
        return Outcome::unknown(
            format!(
                "The charge {} is left out of the advertised price but has no class, so whether it may be left out is unknown.",
                first_and_more(&unclassified)
            ),
            format!("Charge `{}`: {CLASSIFY_FIX}", first.charge_id),
            read,
        );
    }
    if let Some(first) = unsettled.first() {
        let class = first.class.map_or("unclassified", class_words);
        return Outcome::unknown(
            format!(
                "The {class} charge {} is left out of the advertised price, and whether this rule lets a {class} charge be left out was not confirmed.",
                first_and_more(&unsettled)
            ),
            format!(
                "Include charge `{}` in the advertised price to be certain.",
                first.charge_id
            ),
            read,
        );
    }
    let reason = if charges.is_empty() {
        "No required dealer charge is published, so the advertised price leaves nothing out."
            .to_owned()
    } else {
        format!(
            "Every required dealer charge is in the advertised price or of a class it may leave out ({}).",
            join_classes(excluded)
        )
    };
    Outcome::pass(reason, read)
}

/// Charges of `class` (left out of the price, with `only_when_excluded`)
/// are at most the cap.
fn max_amount(
    facts: &Facts,
    class: ChargeClass,
    currency: &str,
    max_minor: i64,
    only_when_excluded: bool,
) -> Outcome {
    let Known::Known(charges) = &facts.charges else {
        return charges_unknown(facts);
    };
    let words = class_words(class);
    let Ok(cap) = Money::try_new(max_minor, currency) else {
        return Outcome::unknown(
            format!("The rule's cap names currency {currency}, which is not a known currency."),
            "Report the catalogue entry; no operator change can settle it.".to_owned(),
            Vec::new(),
        );
    };
    let mut read = Vec::new();
    let mut over: Vec<&Charge> = Vec::new();
    let mut unclassified: Vec<&Charge> = Vec::new();
    let mut foreign: Vec<&Charge> = Vec::new();
    for charge in charges {
        if only_when_excluded {
            read.push(charge_fact(
                charge,
                "included_in_advertised_price",
                json!(charge.included_in_advertised_price),
            ));
            if charge.included_in_advertised_price {
                continue;
            }
        }
        read.push(charge_fact(charge, "class", class_value(charge.class)));
        match charge.class {
            None => unclassified.push(charge),
            Some(k) if k == class => {
                read.push(charge_fact(charge, "amount", json!(charge.amount)));
                match charge.amount.checked_cmp(cap) {
                    Ok(std::cmp::Ordering::Greater) => over.push(charge),
                    Ok(_) => {}
                    Err(_) => foreign.push(charge),
                }
            }
            Some(_) => {}
        }
    }
    let scope = if only_when_excluded {
        " left out of the advertised price"
    } else {
        ""
    };
    if !over.is_empty() {
        return Outcome::fail(
            format!(
                "The {words} charge {}{scope} is above the cap of {cap}.",
                first_and_more(&over)
            ),
            read,
        );
    }
    if let Some(first) = foreign.first() {
        return Outcome::unknown(
            format!(
                "The {words} charge {} is not in {currency}, the currency of the cap of {cap}, so it cannot be compared.",
                first_and_more(&foreign)
            ),
            format!(
                "Publish charge `{}` in {currency}, the currency the vehicle is sold in.",
                first.charge_id
            ),
            read,
        );
    }
    if let Some(first) = unclassified.first() {
        return Outcome::unknown(
            format!(
                "The charge {}{scope} has no class, so whether it is a {words} charge above the cap of {cap} is unknown.",
                first_and_more(&unclassified)
            ),
            format!("Charge `{}`: {CLASSIFY_FIX}", first.charge_id),
            read,
        );
    }
    Outcome::pass(
        format!("No {words} charge{scope} is above the cap of {cap}."),
        read,
    )
}

fn vat_included(facts: &Facts) -> Outcome {
    let source = source_of(facts, "price_includes_vat", "rooftop_settings");
    match facts.price_includes_vat {
        Known::Known(true) => Outcome::pass(
            "The dealers file says advertised prices include VAT.".to_owned(),
            vec![used("price_includes_vat", json!(true), source)],
        ),
        Known::Known(false) => Outcome::fail(
            "The dealers file says advertised prices do not include VAT.".to_owned(),
            vec![used("price_includes_vat", json!(false), source)],
        ),
        Known::Unknown => Outcome::unknown(
            "Whether advertised prices include VAT is unknown: the dealers file does not say."
                .to_owned(),
            "Set `gateway_settings.pricing.advertised_prices_include_vat` in the dealers file."
                .to_owned(),
            vec![used("price_includes_vat", json!(UNKNOWN), source)],
        ),
    }
}

fn published(facts: &Facts, fact: &str, value: Known<bool>, what: &str) -> Outcome {
    let source = source_of(facts, fact, "vehicle");
    match value {
        Known::Known(true) => Outcome::pass(
            format!("The disclosure publishes the vehicle's {what}."),
            vec![used(fact, json!(true), source)],
        ),
        Known::Known(false) => Outcome::fail(
            format!("The disclosure does not publish the vehicle's {what}."),
            vec![used(fact, json!(false), source)],
        ),
        // A gateway that cannot tell what its listing shows says so; the
        // rule then cannot pass.
        Known::Unknown => Outcome::unknown(
            format!("Whether the vehicle's {what} is published is unknown."),
            format!("Publish the vehicle's {what} in the feed."),
            vec![used(fact, json!(super::UNKNOWN), source)],
        ),
    }
}

fn government_charges_stated(facts: &Facts) -> Outcome {
    let source = source_of(facts, "government_charges", "rooftop_settings");
    match facts.government_charges {
        Known::Known(status @ (GovernmentStatus::Estimated | GovernmentStatus::Calculated)) => {
            Outcome::pass(
                "The disclosure states the government charges added to the advertised price."
                    .to_owned(),
                vec![used("government_charges", json!(status), source)],
            )
        }
        Known::Known(GovernmentStatus::NotApplicable) => Outcome::fail(
            "The disclosure says no government charges apply, so it does not state the taxes and registration fees added to the advertised price.".to_owned(),
            vec![used(
                "government_charges",
                json!(GovernmentStatus::NotApplicable),
                source,
            )],
        ),
        Known::Unknown => Outcome::unknown(
            "The government charges status is unknown, so whether the disclosure states what is added to the price is unknown.".to_owned(),
            "Publish the government charges (estimated or calculated) for this rooftop.".to_owned(),
            vec![used("government_charges", json!(UNKNOWN), source)],
        ),
    }
}

/// An announced reduction's earlier price is the lowest advertised price
/// of at least the prior `days` (docs/lint.md "Price reductions").
fn prior_price_is_lowest(facts: &Facts, days: u32) -> Outcome {
    let history = source_of(facts, "price_history", "price_history");
    let shown = source_of(facts, "reduction", "vehicle");
    let Reduction::Announced {
        reference_price,
        lowest_prior,
        days: window,
    } = &facts.reduction
    else {
        return Outcome::pass(
            "No price reduction is announced, so no earlier price must be shown.".to_owned(),
            vec![used("reduction.announced", json!("no"), shown)],
        );
    };
    let mut read = vec![
        used("reduction.reference_price", json!(reference_price), shown),
        used("reduction.days", json!(window), history.clone()),
    ];
    let Known::Known(lowest) = lowest_prior else {
        read.push(used("reduction.lowest_prior", json!(UNKNOWN), history));
        return Outcome::unknown(
            format!(
                "A reduction from {reference_price} is announced but the lowest advertised price of the prior {days} days is unknown."
            ),
            format!(
                "Keep the price history for at least {days} days before announcing a reduction, or remove the earlier price (`reference_price_minor`)."
            ),
            read,
        );
    };
    read.push(used("reduction.lowest_prior", json!(lowest), history));
    if *window < days {
        return Outcome::unknown(
            format!(
                "The price history covers only {window} days, fewer than the {days} days the rule reads, so the lowest prior price is unknown."
            ),
            format!(
                "Keep the price history for at least {days} days before announcing a reduction, or remove the earlier price (`reference_price_minor`)."
            ),
            read,
        );
    }
    match reference_price.checked_cmp(*lowest) {
        Ok(std::cmp::Ordering::Equal) => Outcome::pass(
            format!(
                "The earlier price shown, {reference_price}, is the lowest advertised price of the prior {window} days."
            ),
            read,
        ),
        Ok(std::cmp::Ordering::Greater) => Outcome::fail(
            format!(
                "The earlier price shown, {reference_price}, is above {lowest}, the lowest advertised price of the prior {window} days."
            ),
            read,
        ),
        Ok(std::cmp::Ordering::Less) => Outcome::fail(
            format!(
                "The earlier price shown, {reference_price}, is below {lowest}, the lowest advertised price of the prior {window} days, so it is not a price that applied."
            ),
            read,
        ),
        Err(_) => Outcome::unknown(
            format!(
                "The earlier price shown, {reference_price}, and the lowest prior price, {lowest}, are in different currencies."
            ),
            "Publish the earlier price in the currency of the advertised price.".to_owned(),
            read,
        ),
    }
}
