//! What a feed says about its own pricing that DAP has no member for: the
//! class of each required dealer charge (`charge_classes_json`) and an
//! announced earlier price (`reference_price_minor`), read by the
//! disclosure lint (docs/lint.md; docs/inventory-feeds.md "Columns").
//!
//! Both are optional: an empty cell is "not said" (the charge stays
//! unclassified, no reduction is announced), never a default class or a
//! zero price. Every rule below words its problem without the cell's text
//! beyond a short, identifier-like key (docs/inventory-feeds.md "Problem
//! reports": no echo of long input).

use std::collections::{BTreeMap, HashSet};

use pricing::lint::ChargeClass;
use pricing::{Currency, Money};
use serde_json::Value;

use super::rules;

/// The class words, in the order docs/lint.md "Charge classes" lists them
/// (the snake_case wire words of [`ChargeClass`]).
pub const CLASS_WORDS: &[&str] = &[
    "documentation_fee",
    "dealer_add_on",
    "delivery_transfer",
    "dealer_preparation",
    "emission_test",
    "registration",
    "electronic_filing",
    "tax",
    "tire_fee",
    "finance",
    "other",
];

/// At most as many classes as a row may carry charges
/// (`inventory-cells.schema.json` caps `required_dealer_charges_json` at
/// 100 items), so the cell is bounded like the cell it classifies.
pub const MAX_CLASSES: usize = 100;

/// The longest key a problem names verbatim; a longer or odd key is named
/// by its position, so a problem never echoes long input.
const MAX_NAMED_KEY: usize = 64;

/// One class word as a [`ChargeClass`], or the rule it breaks, listing
/// the allowed words. Shared with the dealers file
/// (`gateway_settings.pricing.charge_classes`).
pub fn class(word: &str) -> Result<ChargeClass, String> {
    serde_json::from_value(Value::String(word.to_owned())).map_err(|_| {
        format!(
            "not a charge class: one of {} (docs/lint.md \"Charge classes\")",
            CLASS_WORDS.join("|")
        )
    })
}

/// How a problem names the key at `index` (0-based): its JSON pointer when
/// the key is short and identifier-like, else its position.
pub fn key_pointer(key: &str, index: usize) -> String {
    let plain = !key.is_empty()
        && key.len() <= MAX_NAMED_KEY
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':'));
    if plain {
        format!("/{key}")
    } else {
        format!("/(key {})", index + 1)
    }
}

/// What the row says about its charges, which the classes' keys must name.
#[derive(Debug, Clone, Copy)]
pub enum RowCharges<'a> {
    /// `required_dealer_charges_json` is empty (unknown): there is no
    /// charge to classify, so every key is refused.
    Unknown,
    /// That cell was refused for its own rules: the keys are not checked
    /// against it (the row is refused already).
    Refused,
    /// The row's charge ids.
    Ids(&'a HashSet<&'a str>),
}

/// `charge_classes_json`: a JSON object `charge_id` -> class word, each key
/// a `charge_id` of the same row's `required_dealer_charges_json`. Returns
/// the classes or every rule broken, each `at <pointer>: <why>`.
pub fn charge_classes(
    text: &str,
    charges: RowCharges<'_>,
) -> Result<BTreeMap<String, ChargeClass>, Vec<String>> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        vec![format!(
            "not valid JSON (line {}, column {} of the cell); an empty cell means not said, \
             {{}} means no charge classified",
            e.line(),
            e.column()
        )]
    })?;
    let Value::Object(map) = value else {
        return Err(vec![
            "at /: not a JSON object: the cell maps each charge_id of \
             required_dealer_charges_json to its class, {\"doc-fee\": \"documentation_fee\"}"
                .to_owned(),
        ]);
    };
    if map.len() > MAX_CLASSES {
        return Err(vec![format!(
            "at /: more than {MAX_CLASSES} keys: a row carries at most {MAX_CLASSES} required \
             dealer charges to classify"
        )]);
    }
    let mut rules = Vec::new();
    let mut classes = BTreeMap::new();
    for (i, (key, word)) in map.iter().enumerate() {
        let at = key_pointer(key, i);
        match charges {
            RowCharges::Unknown => rules.push(format!(
                "at {at}: required_dealer_charges_json is empty (unknown), so this row has no \
                 charge to classify; classify only the row's own charges"
            )),
            RowCharges::Ids(ids) if !ids.contains(key.as_str()) => rules.push(format!(
                "at {at}: not a charge_id of this row's required_dealer_charges_json; a class \
                 classifies one of the row's own charges"
            )),
            RowCharges::Ids(_) | RowCharges::Refused => {}
        }
        match word.as_str().ok_or_else(|| {
            format!(
                "not a string: the class is one of {} (docs/lint.md \"Charge classes\")",
                CLASS_WORDS.join("|")
            )
        }) {
            Err(why) => rules.push(format!("at {at}: {why}")),
            Ok(word) => match class(word) {
                Ok(c) => {
                    classes.insert(key.clone(), c);
                }
                Err(why) => rules.push(format!("at {at}: {why}")),
            },
        }
    }
    if rules.is_empty() {
        Ok(classes)
    } else {
        Err(rules)
    }
}

/// `reference_price_minor`: whole minor units of the rooftop currency,
/// like `advertised_price_minor` ([`rules::minor_units`]), and above the
/// advertised price (`advertised_minor`, when that cell is valid): a
/// reference price announces a reduction from an earlier, higher price.
pub fn reference_price(
    cell: &str,
    currency: Option<Currency>,
    advertised_minor: Option<i64>,
) -> Result<Option<Money>, String> {
    let minor = rules::minor_units_of(cell, currency, "reference_price_minor")?;
    if let Some(advertised) = advertised_minor
        && minor <= advertised
    {
        return Err(
            "must be above advertised_price_minor: a reference price announces a reduction \
             from an earlier, higher price (docs/lint.md); leave the cell empty when no \
             reduction is announced"
                .to_owned(),
        );
    }
    Ok(currency.map(|c| Money::from_minor(minor, c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_word_is_a_charge_class_and_back() {
        for word in CLASS_WORDS {
            let c = class(word).unwrap();
            assert_eq!(serde_json::to_value(c).unwrap(), Value::from(*word));
        }
        assert!(class("doc_fee").unwrap_err().contains("documentation_fee|"));
    }

    #[test]
    fn a_long_or_odd_key_is_named_by_position() {
        assert_eq!(key_pointer("doc-fee", 0), "/doc-fee");
        assert_eq!(key_pointer(&"x".repeat(65), 2), "/(key 3)");
        assert_eq!(key_pointer("a/b", 0), "/(key 1)");
        assert_eq!(key_pointer("", 0), "/(key 1)");
    }
}
