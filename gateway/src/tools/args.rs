//! Typed tool arguments.
//!
//! The JSON Schema check at the wire stays the authority on what is
//! accepted (it gives the precise `field_errors`); each tool then reads its
//! arguments once, through serde, into the type declared here, instead of
//! picking members out of a `Value` by hand. The types mirror the published
//! input definitions member for member (`deny_unknown_fields`; a member the
//! schema requires is not an `Option`), and the unit test below diffs every
//! type against its definition, so the two cannot drift apart silently.
//!
//! Nested objects are typed too (`searchRequest`'s filters, sort, page,
//! money and distance bounds) and diffed against their own definitions.
//! `offers.evaluate`'s buyer profile is typed here and turned into the
//! pricing engine's own `Profile` by `offers_evaluate::profile`.

use std::collections::BTreeMap;

use pricing::incentives::Criterion;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ToolError;
use super::target::{Selector, Target};
/// The `detail` argument of the tools that have one (`concise` or `full`;
/// docs/mcp.md "Detail"), one type for all of them.
pub use crate::inventory::render::Detail;

/// Arguments of one tool, and the input definition they mirror.
pub trait ToolArgs: DeserializeOwned {
    /// `file#/$defs/name` of the published input definition.
    const INPUT: &'static str;
}

/// Read schema-valid arguments. A failure here means the type and the
/// schema disagree (the schema accepted what the type cannot hold): a
/// defect of this gateway, answered `dealeragent.internal`.
pub fn parse<T: ToolArgs>(args: &Value) -> Result<T, ToolError> {
    T::deserialize(args).map_err(|e| {
        ToolError::internal(format!(
            "schema-valid arguments do not fit {}: {e}",
            T::INPUT
        ))
    })
}

/// `dealeragent.discovery.get_manifest`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestArgs {
    pub organization_id: Option<String>,
}

impl ToolArgs for ManifestArgs {
    const INPUT: &'static str = "manifest.schema.json#/$defs/manifestRequest";
}

/// `dealeragent.dealer.get`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DealerArgs {
    pub organization_id: Option<String>,
    pub rooftop_ids: Option<Vec<String>>,
}

impl ToolArgs for DealerArgs {
    const INPUT: &'static str = "dealer.schema.json#/$defs/dealerRequest";
}

/// `dealeragent.inventory.get_vehicle`: exactly one selector (the schema's
/// `oneOf`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VehicleArgs {
    pub organization_id: String,
    pub rooftop_id: String,
    pub vehicle_id: Option<String>,
    pub vin: Option<String>,
    pub stock_number: Option<String>,
    /// `concise` or `full` (the default here: one vehicle fits the budget).
    pub detail: Option<Detail>,
}

impl ToolArgs for VehicleArgs {
    const INPUT: &'static str = "vehicle.schema.json#/$defs/vehicleRequest";
}

/// `dealeragent.inventory.get_used_vehicle_details`: exactly one selector
/// (the schema's `oneOf`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsedVehicleArgs {
    pub organization_id: String,
    pub rooftop_id: String,
    pub vehicle_id: Option<String>,
    pub vin: Option<String>,
    pub stock_number: Option<String>,
}

impl ToolArgs for UsedVehicleArgs {
    const INPUT: &'static str = "used-vehicle.schema.json#/$defs/usedVehicleRequest";
}

/// `dealeragent.inventory.verify_availability`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AvailabilityArgs {
    pub organization_id: String,
    pub rooftop_id: String,
    pub vehicle_id: Option<String>,
    pub vin: Option<String>,
    pub stock_number: Option<String>,
    /// Why the caller checks (free text the schema bounds; not used).
    pub purpose: Option<String>,
}

impl ToolArgs for AvailabilityArgs {
    const INPUT: &'static str = "vehicle.schema.json#/$defs/availabilityRequest";
}

/// `dealeragent.pricing.get_disclosure`: exactly one of `vehicle_id`, `vin`
/// or `stock_number`, like the other vehicle tools (docs/pricing.md
/// section 5; the schema's `oneOf` leaves one).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DisclosureArgs {
    pub organization_id: String,
    pub rooftop_id: String,
    pub vehicle_id: Option<String>,
    pub vin: Option<String>,
    pub stock_number: Option<String>,
    /// A DAP `jurisdiction` object, kept as given for
    /// `disclosure::profile_jurisdiction` and the document.
    pub jurisdiction: Option<Value>,
    pub payment_mode: Option<String>,
    /// How much of the offer evaluation the extension carries (default
    /// concise: docs/pricing.md section 5).
    pub detail: Option<Detail>,
}

impl ToolArgs for DisclosureArgs {
    const INPUT: &'static str = "pricing.schema.json#/$defs/disclosureRequest";
}

/// `dealergateway.offers.evaluate`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffersArgs {
    pub organization_id: String,
    pub rooftop_id: String,
    pub vehicle_id: Option<String>,
    pub vin: Option<String>,
    pub stock_number: Option<String>,
    pub profile: OffersProfile,
    /// How much of the evaluation to return (default concise:
    /// docs/pricing.md section 2, "Output").
    pub detail: Option<Detail>,
}

impl ToolArgs for OffersArgs {
    const INPUT: &'static str = "offers.schema.json#/$defs/offersEvaluateRequest";
}

/// `offersProfile`: a hypothetical, PII-free buyer (the schema closes every
/// object, so nothing personal fits). `offers_evaluate::profile` turns it
/// into the pricing engine's `Profile` with the rules the schema cannot
/// express.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffersProfile {
    pub payment_mode: OffersPaymentMode,
    pub jurisdiction: OffersJurisdiction,
    /// Keyed by the engine's own criterion names (the schema's closed
    /// `offersClaims` members; `claims_name_only_engine_criteria` checks
    /// that each is one).
    pub claims: Option<BTreeMap<Criterion, OffersClaim>>,
    /// RFC 3339; parsed by the tool, which names the field on failure.
    pub as_of: Option<String>,
}

/// `offersProfile.payment_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OffersPaymentMode {
    Cash,
    Finance,
    Lease,
    Unknown,
}

/// `offersJurisdiction`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffersJurisdiction {
    pub country: String,
    pub subdivision: Option<String>,
    pub postal_code: Option<String>,
}

/// One claim: `true`, `false` or `"unknown"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum OffersClaim {
    Known(bool),
    Unknown(UnknownWord),
}

/// The word `"unknown"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownWord {
    Unknown,
}

/// `dealeragent.inventory.search`: `searchRequest` and its nested
/// objects. They are declared beside their compiler,
/// `inventory::search::SearchQuery::compile` (the inventory layer imports
/// nothing of `tools`: no import circles), and typed here like every other
/// tool's arguments.
pub use crate::inventory::search::{
    DistanceBound, DistanceUnit, MoneyBound, PageRequest, SearchArgs, SearchFilters, SearchSort,
    SearchSortField, SortOrder,
};

impl ToolArgs for SearchArgs {
    const INPUT: &'static str = "vehicle.schema.json#/$defs/searchRequest";
}

/// `aap_dealer_information` (docs/compatibility.md): AAP's request plus this
/// gateway's optional `dealer_id` (see `aap_map::dealer`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AapDealerInformationArgs {
    /// AAP's discriminator; the schema fixes its value.
    #[serde(rename = "type")]
    pub kind: String,
    pub dealer_id: Option<String>,
}

impl ToolArgs for AapDealerInformationArgs {
    const INPUT: &'static str =
        "aap-dealer-information.schema.json#/$defs/aapDealerInformationRequest";
}

/// `aap_inventory_facets`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AapFacetsArgs {
    #[serde(rename = "type")]
    pub kind: String,
    pub dealer_id: Option<String>,
    pub filters: Option<super::aap_map::Filters>,
}

impl ToolArgs for AapFacetsArgs {
    const INPUT: &'static str = "aap-inventory.schema.json#/$defs/aapFacetsRequest";
}

/// `aap_inventory_search`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AapSearchArgs {
    #[serde(rename = "type")]
    pub kind: String,
    pub dealer_id: Option<String>,
    pub filters: Option<super::aap_map::Filters>,
    pub pagination: Option<super::aap_map::Pagination>,
    pub sort: Option<super::aap_map::Sort>,
    pub privacy: Option<super::aap_map::Privacy>,
}

impl ToolArgs for AapSearchArgs {
    const INPUT: &'static str = "aap-inventory.schema.json#/$defs/aapSearchRequest";
}

/// `aap_inventory_vehicle`: at least one identifier (the schema's
/// `dependentSchemas`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AapVehicleArgs {
    #[serde(rename = "type")]
    pub kind: String,
    pub dealer_id: Option<String>,
    pub vin: Option<String>,
    pub stock: Option<String>,
    pub vehicle_id: Option<String>,
}

impl ToolArgs for AapVehicleArgs {
    const INPUT: &'static str = "aap-inventory.schema.json#/$defs/aapVehicleRequest";
}

/// The target of schema-valid members (the schemas' `oneOf` leaves exactly
/// one selector; `None` only if the type and schema disagree).
fn target<'a>(
    organization_id: &'a str,
    rooftop_id: &'a str,
    vehicle_id: Option<&'a str>,
    vin: Option<&'a str>,
    stock_number: Option<&'a str>,
) -> Option<Target<'a>> {
    let selector = vehicle_id
        .map(Selector::VehicleId)
        .or_else(|| vin.map(Selector::Vin))
        .or_else(|| stock_number.map(Selector::StockNumber))?;
    Some(Target {
        organization_id,
        rooftop_id,
        selector,
    })
}

impl VehicleArgs {
    pub fn target(&self) -> Option<Target<'_>> {
        target(
            &self.organization_id,
            &self.rooftop_id,
            self.vehicle_id.as_deref(),
            self.vin.as_deref(),
            self.stock_number.as_deref(),
        )
    }
}

impl UsedVehicleArgs {
    pub fn target(&self) -> Option<Target<'_>> {
        target(
            &self.organization_id,
            &self.rooftop_id,
            self.vehicle_id.as_deref(),
            self.vin.as_deref(),
            self.stock_number.as_deref(),
        )
    }
}

impl AvailabilityArgs {
    pub fn target(&self) -> Option<Target<'_>> {
        target(
            &self.organization_id,
            &self.rooftop_id,
            self.vehicle_id.as_deref(),
            self.vin.as_deref(),
            self.stock_number.as_deref(),
        )
    }
}

impl DisclosureArgs {
    pub fn target(&self) -> Option<Target<'_>> {
        target(
            &self.organization_id,
            &self.rooftop_id,
            self.vehicle_id.as_deref(),
            self.vin.as_deref(),
            self.stock_number.as_deref(),
        )
    }
}

impl OffersArgs {
    pub fn target(&self) -> Option<Target<'_>> {
        target(
            &self.organization_id,
            &self.rooftop_id,
            self.vehicle_id.as_deref(),
            self.vin.as_deref(),
            self.stock_number.as_deref(),
        )
    }
}

#[cfg(test)]
mod drift {
    //! Every typed argument struct against its published input definition:
    //! the same member names, and a member is an `Option` exactly when the
    //! definition does not require it.

    use std::collections::BTreeSet;

    use serde::de::{self, Visitor};
    use serde_json::{Map, Value, json};

    use super::*;

    /// A deserializer that only records the member names a struct asks
    /// for (serde derive passes them to `deserialize_struct`).
    struct Names(Option<&'static [&'static str]>);

    #[derive(Debug)]
    struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("names recorded")
        }
    }
    impl std::error::Error for Stop {}
    impl de::Error for Stop {
        fn custom<T: std::fmt::Display>(_: T) -> Self {
            Stop
        }
    }

    impl<'de> de::Deserializer<'de> for &mut Names {
        type Error = Stop;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            self.0 = Some(fields);
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }

    fn names<T: DeserializeOwned>() -> BTreeSet<String> {
        let mut n = Names(None);
        let _ = T::deserialize(&mut n);
        n.0.expect("a struct")
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    }

    /// A definition's members, its required members, its properties and
    /// the bundle's `$defs` (to resolve references).
    struct Definition {
        members: BTreeSet<String>,
        required: BTreeSet<String>,
        properties: Map<String, Value>,
        defs: Map<String, Value>,
    }

    fn definition(reference: &str) -> Definition {
        let catalog = crate::catalog::Catalog::load().expect("catalog");
        let bundle =
            crate::catalog::bundle_reference(&catalog.schema_documents, reference).expect("bundle");
        // `{"$ref": "#/$defs/NAME", "$defs": {…}}`: the definition itself.
        let name = reference.rsplit('/').next().unwrap_or_default();
        let defs = bundle["$defs"].as_object().cloned().unwrap_or_default();
        let schema = &defs[name];
        assert!(schema.is_object(), "{reference} not found in its bundle");
        let properties = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let required = schema["required"]
            .as_array()
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Definition {
            members: properties.keys().cloned().collect(),
            required,
            properties,
            defs,
        }
    }

    /// A value the member's schema accepts, enough for serde: references
    /// are followed, enumerations give their first value and objects their
    /// required members.
    fn sample(property: &Value, defs: &Map<String, Value>) -> Value {
        if let Some(target) = property["$ref"].as_str() {
            let name = target.rsplit('/').next().unwrap_or_default();
            return sample(&defs[name], defs);
        }
        if let Some(first) = property["enum"].as_array().and_then(|e| e.first()) {
            return first.clone();
        }
        match property["type"].as_str() {
            Some("array") => json!([]),
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("object") => Value::Object(
                property["required"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|k| (k.to_owned(), sample(&property["properties"][k], defs)))
                    .collect(),
            ),
            _ if property.get("properties").is_some() => json!({}),
            _ => json!("x"),
        }
    }

    fn check<T: ToolArgs>() {
        check_definition::<T>(T::INPUT);
    }

    /// `T` against the definition `reference` (a tool's input or an object
    /// nested in one).
    fn check_definition<T: DeserializeOwned>(reference: &str) {
        let Definition {
            members,
            required,
            properties,
            defs,
        } = definition(reference);
        assert_eq!(names::<T>(), members, "{reference}: members differ");
        // Only the required members: the type accepts it (nothing else is
        // required by the type)...
        let minimal: Map<String, Value> = required
            .iter()
            .map(|k| (k.clone(), sample(&properties[k], &defs)))
            .collect();
        if let Err(e) = T::deserialize(&Value::Object(minimal.clone())) {
            panic!("{reference}: the required members alone do not fit: {e}");
        }
        // ...and without any one of them it refuses (each is required).
        for k in &required {
            let mut less = minimal.clone();
            less.remove(k);
            assert!(
                T::deserialize(&Value::Object(less)).is_err(),
                "{reference}: {k} is required by the schema but optional in the type"
            );
        }
        // Every member alone, with a value of its schema, fits its field
        // (a nested type that cannot hold what the schema admits is caught).
        for (k, property) in &properties {
            let mut one = minimal.clone();
            one.insert(k.clone(), sample(property, &defs));
            if let Err(e) = T::deserialize(&Value::Object(one)) {
                panic!("{reference}: a schema-valid {k} does not fit: {e}");
            }
        }
    }

    #[test]
    fn every_typed_argument_struct_matches_its_input_definition() {
        check::<ManifestArgs>();
        check::<DealerArgs>();
        check::<VehicleArgs>();
        check::<UsedVehicleArgs>();
        check::<AvailabilityArgs>();
        check::<DisclosureArgs>();
        check::<OffersArgs>();
        check::<AapDealerInformationArgs>();
        check::<AapFacetsArgs>();
        check::<AapSearchArgs>();
        check::<AapVehicleArgs>();
        check::<SearchArgs>();
        // The objects nested in a search request, each against its own
        // definition.
        check_definition::<SearchFilters>("vehicle.schema.json#/$defs/searchFilters");
        check_definition::<SearchSort>("vehicle.schema.json#/$defs/searchSort");
        check_definition::<PageRequest>("common.schema.json#/$defs/pageRequest");
        check_definition::<MoneyBound>("common.schema.json#/$defs/nonNegativeMoney");
        check_definition::<DistanceBound>("common.schema.json#/$defs/distance");
        // The buyer profile of offers.evaluate.
        check_definition::<OffersProfile>("offers.schema.json#/$defs/offersProfile");
        check_definition::<OffersJurisdiction>("offers.schema.json#/$defs/offersJurisdiction");
    }

    /// `offersClaims` is read as a map keyed by the engine's criteria: each
    /// member the schema defines must be one, with every value the schema
    /// admits, and a criterion the schema leaves out (`payment_mode`,
    /// decided by the branch) stays out.
    #[test]
    fn claims_name_only_engine_criteria() {
        let Definition { members, .. } = definition("offers.schema.json#/$defs/offersClaims");
        assert!(!members.is_empty());
        for member in &members {
            for value in [json!(true), json!(false), json!("unknown")] {
                let claims = json!({ member.as_str(): value });
                let read: Result<BTreeMap<Criterion, OffersClaim>, _> =
                    serde_json::from_value(claims.clone());
                assert!(read.is_ok(), "{claims}");
            }
        }
        assert!(!members.contains("payment_mode"));
        assert!(serde_json::from_value::<OffersClaim>(json!("maybe")).is_err());
    }

    /// Every schema-valid value of the search request's enumerations fits
    /// the typed enums (the samples above try only the first).
    #[test]
    fn every_enumerated_search_value_fits() {
        let Definition { defs, .. } = definition(SearchArgs::INPUT);
        let values = |name: &str, member: Option<&str>| -> Vec<Value> {
            let schema = match member {
                Some(m) => &defs[name]["properties"][m],
                None => &defs[name],
            };
            schema["enum"].as_array().cloned().expect("an enumeration")
        };
        for field in values("searchSort", Some("field")) {
            for order in values("searchSort", Some("order")) {
                let sort = json!({"field": field, "order": order});
                assert!(SearchSort::deserialize(&sort).is_ok(), "{sort}");
            }
        }
        for unit in values("distanceUnit", None) {
            let d = json!({"value": 1, "unit": unit});
            assert!(DistanceBound::deserialize(&d).is_ok(), "{d}");
        }
    }

    /// The diff can fail: a struct with a member the schema lacks, or an
    /// optional member the schema requires, is caught.
    #[test]
    fn the_diff_catches_a_drifted_type() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Extra {
            organization_id: Option<String>,
            nickname: Option<String>,
        }
        impl ToolArgs for Extra {
            const INPUT: &'static str = "manifest.schema.json#/$defs/manifestRequest";
        }
        assert!(std::panic::catch_unwind(check::<Extra>).is_err());

        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Loose {
            organization_id: Option<String>,
            rooftop_id: String,
            vehicle_id: String,
            jurisdiction: Option<Value>,
            payment_mode: Option<String>,
        }
        impl ToolArgs for Loose {
            const INPUT: &'static str = "pricing.schema.json#/$defs/disclosureRequest";
        }
        assert!(std::panic::catch_unwind(check::<Loose>).is_err());
    }
}
