//! A dealer rooftop as published (dealer.schema.json `rooftop`): its
//! postal address (common.schema.json `address`), departments, contact
//! points and opening hours.
//!
//! The definition is closed, and so is every type here
//! (`deny_unknown_fields`): a member the schema gains and the type lacks
//! refuses the dealers file at import (and a stored row at read) instead of
//! being dropped. Only `extensions` stays open, as the schema's
//! `extensionBag` is (DAP 13: unknown extensions are ignored, never
//! redefine core fields). Member order is the schema's, which is the order
//! the dealers file writes them (docs/dealers-file.md), and an optional
//! member is absent when `None`. The optional lists stay `None` when the
//! file leaves them out, so a stored `[]` is stored and served as `[]`.
//! Enumerated members hold the DAP wire strings the dealers-file import
//! checked against the schema enums.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// dealer.schema.json `rooftop`: one physical dealership location.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rooftop {
    pub rooftop_id: String,
    /// `displayName`, 1..200 characters.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legal_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website: Option<String>,
    pub address: Address,
    /// IANA time zone name; the import checks it against the tz database.
    pub timezone: String,
    /// `sales|internet_sales|service|parts`, at least one, no duplicates.
    pub departments: Vec<String>,
    /// Every contact as imported, public or not: only
    /// [`Rooftop::published`] leaves the gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contacts: Option<Vec<ContactPoint>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hours: Option<Vec<HoursInterval>>,
    /// Language tags such as `en-US`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supported_languages: Option<Vec<String>>,
    /// ISO 4217 codes; the import requires the rooftop's price currency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supported_currencies: Option<Vec<String>>,
    /// The open `extensionBag`, in the key order imported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
}

/// common.schema.json `address`: a postal address, international (free
/// lines, optional region).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Address {
    /// 1 to 5 lines, most specific first.
    pub lines: Vec<String>,
    /// City or town.
    pub locality: String,
    /// State, province or region as written locally, e.g. `IL` or `ON`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postal_code: Option<String>,
    /// ISO 3166-1 alpha-2.
    pub country: String,
}

/// dealer.schema.json `contactPoint`: one way to reach a department.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContactPoint {
    /// `sales|internet_sales|service|parts|general`.
    pub department: String,
    /// `phone|email|web`.
    pub channel: String,
    pub value: String,
    /// Only `Some(true)` is published; absent means not public.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public: Option<bool>,
}

/// dealer.schema.json `hoursInterval`: one opening interval on one
/// weekday, local to the rooftop's time zone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HoursInterval {
    /// `monday` .. `sunday`.
    pub day: String,
    /// `HH:MM`, 24-hour.
    pub opens: String,
    /// `HH:MM`, 24-hour.
    pub closes: String,
}

impl Rooftop {
    /// The rooftop as it is published: only contacts explicitly marked
    /// `public: true`, and no `contacts` member when none is. An absent
    /// flag means not public and no grant unlocks a private contact (the
    /// catalog's `pii_output: public_business_contact_only` for
    /// dealeragent.dealer.get, docs/dealers-file.md "Contact point").
    pub fn published(&self) -> Rooftop {
        let mut out = self.clone();
        out.contacts = out
            .contacts
            .take()
            .map(|all| {
                all.into_iter()
                    .filter(|c| c.public == Some(true))
                    .collect::<Vec<_>>()
            })
            .filter(|public| !public.is_empty());
        out
    }
}

impl Address {
    /// The region as an ISO 3166-2 subdivision (`US-IL` for region `IL`
    /// in `US`); a region already written with its country is kept
    /// (docs/pricing.md section 5).
    pub fn subdivision(&self) -> Option<String> {
        self.region.as_deref().map(|region| {
            if region.contains('-') {
                region.to_owned()
            } else {
                format!("{}-{region}", self.country)
            }
        })
    }
}

#[cfg(test)]
mod tests;
