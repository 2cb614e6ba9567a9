//! DAP `pricingDisclosure` (pricing.schema.json): the answer of
//! `dealeragent.pricing.get_disclosure`, typed, with its four parts kept
//! separate (docs/pricing.md section 5): the generally available
//! advertised price, the itemized required dealer charges, the
//! conditional adjustments and the government charges, then the
//! completeness score (section 6), the text, uncertainty, provenance and
//! freshness.
//!
//! Every amount is [`Money`] held in a typed record ([`DealerCharge`],
//! [`ConditionalAdjustment`], [`GovernmentChargeLine`]): a reader of a
//! disclosure never parses money back from JSON, so an amount is never
//! "unknown" because a parse failed (DAP-CORE-018..020).
//!
//! Member order is the wire order disclosures have always had, which in
//! three places is not the order of the shared record's fields: the
//! inventory feed's `source` writes `content_digest` before
//! `source_record_id`, `freshness` writes `valid_until` before `state`,
//! and an adjustment made from an incentive program writes its criteria
//! and stacking before its amount. Those three are written by the
//! serializers below from the same typed records, so that a disclosure
//! stays byte-identical (its JSON text is cached and compared) while its
//! data is typed once. The extension bag stays open (DAP 13): the offer
//! evaluation under `dealergateway.offers` is the pricing crate's, kept as
//! JSON, and so is the disclosure lint under
//! `dealergateway.disclosure-lint` (the gateway's `lint` module writes it).

use std::sync::Arc;

use serde::Serialize;
use serde::ser::{SerializeSeq, SerializeStruct, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::pricing::{
    ConditionalAdjustment, DealerCharge, GovernmentChargeLine, Jurisdiction, Money,
};
use super::provenance::{Freshness, Provenance, Source};

/// DAP `pricingDisclosure`.
#[derive(Debug, Clone, Serialize)]
pub struct PricingDisclosure {
    pub disclosure_id: String,
    pub vehicle_id: String,
    pub organization_id: String,
    pub rooftop_id: String,
    pub advertised_price: AdvertisedPrice,
    pub required_dealer_charges: Vec<ListedCharge>,
    pub conditional_adjustments: Vec<ListedAdjustment>,
    pub government_charges: GovernmentCharges,
    pub disclosure_completeness: DisclosureCompleteness,
    /// Always written (the schema leaves it optional).
    pub disclosure_text: String,
    pub uncertainty: Uncertainty,
    /// Its first source is the inventory feed's ([`feed_first`]).
    #[serde(serialize_with = "feed_first")]
    pub provenance: Provenance,
    #[serde(serialize_with = "disclosure_freshness")]
    pub freshness: Freshness,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<DisclosureExtensions>,
}

/// DAP `advertisedPrice`: the price anyone can get, without conditional
/// adjustments (`availability` is the schema's const
/// `generally_available`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AdvertisedPrice {
    pub amount: Money,
    pub availability: String,
    pub includes_required_dealer_charges: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    /// RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
}

impl AdvertisedPrice {
    /// The generally available price, without label or validity (the
    /// feed gives neither).
    pub fn generally_available(amount: Money, includes_required_dealer_charges: bool) -> Self {
        Self {
            amount,
            availability: "generally_available".to_owned(),
            includes_required_dealer_charges,
            label: None,
            valid_from: None,
            valid_until: None,
        }
    }
}

/// One required dealer charge as a disclosure lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedCharge {
    pub charge: DealerCharge,
    /// The charge's provenance was given by the disclosure from the
    /// inventory feed: its one source is written in the feed's order.
    pub feed_provenance: bool,
}

impl Serialize for ListedCharge {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let c = &self.charge;
        let mut s = serializer.serialize_struct("dealerCharge", 8)?;
        s.serialize_field("charge_id", &c.charge_id)?;
        s.serialize_field("name", &c.name)?;
        s.serialize_field("amount", &c.amount)?;
        s.serialize_field("payee", &c.payee)?;
        s.serialize_field(
            "included_in_advertised_price",
            &c.included_in_advertised_price,
        )?;
        optional(&mut s, "taxable_status", c.taxable_status.as_ref())?;
        s.serialize_field("required", &c.required)?;
        provenance_member(&mut s, c.provenance.as_ref(), self.feed_provenance)?;
        s.end()
    }
}

/// Where a listed conditional adjustment comes from, which decides its
/// member order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdjustmentOrigin {
    /// The inventory feed's own, with the provenance it was published
    /// with.
    Feed,
    /// The inventory feed's own, published without provenance: the
    /// disclosure names the feed as its source.
    FeedAttributed,
    /// A published incentive program (docs/pricing.md section 5).
    Program,
}

/// One conditional adjustment as a disclosure lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedAdjustment {
    pub adjustment: ConditionalAdjustment,
    pub origin: AdjustmentOrigin,
}

impl Serialize for ListedAdjustment {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let a = &self.adjustment;
        if self.origin == AdjustmentOrigin::Feed {
            return a.serialize(serializer);
        }
        let mut s = serializer.serialize_struct("conditionalAdjustment", 12)?;
        s.serialize_field("adjustment_id", &a.adjustment_id)?;
        s.serialize_field("name", &a.name)?;
        s.serialize_field("direction", &a.direction)?;
        if self.origin == AdjustmentOrigin::Program {
            // Eligibility and stacking first, then the amount the
            // evaluation resolved for this vehicle.
            s.serialize_field("criteria", &a.criteria)?;
            optional(&mut s, "criteria_mode", a.criteria_mode.as_ref())?;
            s.serialize_field("stacking", &a.stacking)?;
            s.serialize_field("amount_status", &a.amount_status)?;
            optional(&mut s, "amount", a.amount.as_ref())?;
        } else {
            s.serialize_field("amount_status", &a.amount_status)?;
            optional(&mut s, "amount", a.amount.as_ref())?;
            s.serialize_field("criteria", &a.criteria)?;
            optional(&mut s, "criteria_mode", a.criteria_mode.as_ref())?;
        }
        optional(&mut s, "jurisdictions", a.jurisdictions.as_ref())?;
        optional(&mut s, "valid_from", a.valid_from.as_ref())?;
        optional(&mut s, "valid_until", a.valid_until.as_ref())?;
        if self.origin == AdjustmentOrigin::FeedAttributed {
            s.serialize_field("stacking", &a.stacking)?;
        }
        provenance_member(
            &mut s,
            a.provenance.as_ref(),
            self.origin == AdjustmentOrigin::FeedAttributed,
        )?;
        s.end()
    }
}

/// DAP `governmentCharges`: unknown is not zero, so an unknown status has
/// neither lines nor total.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GovernmentCharges {
    /// `unknown|estimated|calculated|not_applicable`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jurisdiction: Option<Jurisdiction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<Vec<GovernmentChargeLine>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<Money>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assumptions: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
}

/// DAP `disclosureCompleteness` (docs/pricing.md section 6 has the
/// weights).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DisclosureCompleteness {
    /// 0..=100.
    pub score: u32,
    pub components: CompletenessComponents,
}

/// DAP `disclosureCompletenessComponents`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompletenessComponents {
    pub advertised_price_present_and_authoritative: bool,
    pub required_dealer_charges_itemized: bool,
    pub conditional_adjustments_have_eligibility_and_stacking: bool,
    pub government_charges_classified: bool,
    /// DAP `availabilityBand`.
    pub availability_band: String,
}

/// DAP `uncertainty` (common.schema.json).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Uncertainty {
    /// `exact|estimated|unknown|not_applicable`.
    pub status: String,
    /// At most 500 characters; absent when exact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// At most 32 of at most 500 characters; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub assumptions: Vec<String>,
}

/// The extension members a disclosure writes (DAP 13: an open bag).
#[derive(Debug, Clone, Default, Serialize)]
pub struct DisclosureExtensions {
    /// The offer evaluation for the default profile (docs/pricing.md
    /// section 5).
    #[serde(
        rename = "dealergateway.offers",
        skip_serializing_if = "Option::is_none"
    )]
    pub offers: Option<OffersExtension>,
    /// The full transformation list when `provenance.transformations` was
    /// abbreviated to DAP's cap.
    #[serde(
        rename = "dealergateway.provenance",
        skip_serializing_if = "Option::is_none"
    )]
    pub provenance: Option<ProvenanceExtension>,
    /// The disclosure lint for the buyer's jurisdiction, else the
    /// rooftop's (docs/lint.md; docs/pricing.md "The disclosure lint"):
    /// the `dealergateway.disclosure-lint` block written by the tool,
    /// concise or full like the offers extension. Last, so a document
    /// without it is byte for byte what it was.
    #[serde(
        rename = "dealergateway.disclosure-lint",
        skip_serializing_if = "Option::is_none"
    )]
    pub lint: Option<Value>,
}

impl DisclosureExtensions {
    pub fn is_empty(&self) -> bool {
        self.offers.is_none() && self.provenance.is_none() && self.lint.is_none()
    }
}

/// The offer evaluation under `extensions["dealergateway.offers"]`: a tree
/// while the disclosure is built and validated (an empty placeholder when
/// the evaluation was serialized once for reuse), then the serialized
/// evaluation written in its place.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum OffersExtension {
    Tree(Value),
    Text(Arc<RawValue>),
}

/// `extensions["dealergateway.provenance"]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProvenanceExtension {
    pub transformations: Vec<String>,
}

/// Writes `value` as member `key`, or skips the member when absent.
fn optional<S: SerializeStruct, T: Serialize>(
    s: &mut S,
    key: &'static str,
    value: Option<&T>,
) -> Result<(), S::Error> {
    match value {
        Some(v) => s.serialize_field(key, v),
        None => s.skip_field(key),
    }
}

/// The `provenance` member of a listed record; `feed` when its first
/// source is the inventory feed's.
fn provenance_member<S: SerializeStruct>(
    s: &mut S,
    provenance: Option<&Provenance>,
    feed: bool,
) -> Result<(), S::Error> {
    match provenance {
        Some(p) if feed => s.serialize_field("provenance", &FeedFirst(p)),
        Some(p) => s.serialize_field("provenance", p),
        None => s.skip_field("provenance"),
    }
}

/// A provenance whose first source is the inventory feed's.
struct FeedFirst<'a>(&'a Provenance);

impl Serialize for FeedFirst<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let p = self.0;
        let mut s = serializer.serialize_struct("provenance", 4)?;
        s.serialize_field("sources", &FeedSources(&p.sources))?;
        s.serialize_field("authority_status", &p.authority_status)?;
        optional(&mut s, "transformed_at", p.transformed_at.as_ref())?;
        if p.transformations.is_empty() {
            s.skip_field("transformations")?;
        } else {
            s.serialize_field("transformations", &p.transformations)?;
        }
        s.end()
    }
}

/// Sources, the first in the feed's member order.
struct FeedSources<'a>(&'a [Source]);

impl Serialize for FeedSources<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for (i, source) in self.0.iter().enumerate() {
            if i == 0 {
                seq.serialize_element(&FeedSource(source))?;
            } else {
                seq.serialize_element(source)?;
            }
        }
        seq.end()
    }
}

/// The inventory feed's `source`: its digest before its record id.
struct FeedSource<'a>(&'a Source);

impl Serialize for FeedSource<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let f = self.0;
        let mut s = serializer.serialize_struct("source", 6)?;
        s.serialize_field("source_name", &f.source_name)?;
        s.serialize_field("authority", &f.authority)?;
        s.serialize_field("observed_at", &f.observed_at)?;
        optional(&mut s, "content_digest", f.content_digest.as_ref())?;
        optional(&mut s, "source_record_id", f.source_record_id.as_ref())?;
        optional(&mut s, "source_uri", f.source_uri.as_ref())?;
        s.end()
    }
}

/// `provenance` of a disclosure: its first source is the inventory
/// feed's.
fn feed_first<S: Serializer>(p: &Provenance, serializer: S) -> Result<S::Ok, S::Error> {
    FeedFirst(p).serialize(serializer)
}

/// `freshness` of a disclosure: the validity limit before the state.
fn disclosure_freshness<S: Serializer>(f: &Freshness, serializer: S) -> Result<S::Ok, S::Error> {
    let mut s = serializer.serialize_struct("freshness", 4)?;
    s.serialize_field("observed_at", &f.observed_at)?;
    optional(&mut s, "valid_until", f.valid_until.as_ref())?;
    s.serialize_field("state", &f.state)?;
    optional(&mut s, "max_age_seconds", f.max_age_seconds.as_ref())?;
    s.end()
}

#[cfg(test)]
mod tests;
