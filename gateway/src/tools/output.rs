//! Typed tool outputs, the counterpart of `args.rs`.
//!
//! A tool builds its result as one of these `Serialize` types instead of a
//! `json!` tree. The output schema check of `tools::invoke` stays the
//! authority on the wire (DAP 6.4: every result is checked before it
//! leaves); the unit test below diffs every type against the definition it
//! declares: the same member names (a member the schema does not define is
//! caught, and so is an optional one the type forgot), a member the schema
//! requires is never skipped, and real instances validate against the full
//! definition.
//!
//! The DAP records that other layers already build (a rooftop from the
//! dealers file, an availability report of `availability::band`, a
//! disclosure, a rendered vehicle) stay theirs: these types hold them as
//! given rather than copying their shapes.
//!
//! Member order is the order of the trees these types replaced, so the
//! serialized bytes are unchanged.

use serde::Serialize;
use serde_json::Value;

/// A tool's result type, and the definition it mirrors.
pub trait ToolOutput: Serialize {
    /// `file#/$defs/name` of the published definition.
    const OUTPUT: &'static str;
}

pub use crate::dap::provenance::{Freshness, FreshnessState, Provenance, Source};

/// `dealergateway.offers.evaluate` (`offersEvaluation`, `offersOmitted`).
mod offers;
pub use offers::{Additions, OffersEvaluation, Omitted};

/// The AAP vehicle and `aap_inventory_vehicle` (`aapVehicle`,
/// `aapVehicleEvidence`, `aapVehicleResponse`).
mod aap_vehicle;
pub use aap_vehicle::{AapVehicle, AapVehicleEvidence, AapVehicleResponse, Odometer};

/// `dealeragent.dealer.get` and the organization resource:
/// `dealerOrganization`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DealerOrganization {
    pub organization_id: String,
    pub name: String,
    /// The published rooftop records (`dealers::published_rooftop`), as
    /// imported and validated from the dealers file.
    pub rooftops: Vec<crate::dap::Rooftop>,
    pub provenance: Provenance,
    pub freshness: Freshness,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub legal_name: Option<String>,
    /// The organization's extension bag, as imported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
}

impl ToolOutput for DealerOrganization {
    const OUTPUT: &'static str = "dealer.schema.json#/$defs/dealerOrganization";
}

/// `dealeragent.inventory.verify_availability`: `availabilityResult`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AvailabilityResult {
    pub vehicle_id: String,
    pub organization_id: String,
    pub rooftop_id: String,
    /// DAP `availability`, as `availability::band::report` bounds it
    /// (never `available` outside an authoritative band, DAP-CORE-036).
    pub availability: crate::dap::Availability,
    pub provenance: Provenance,
    /// DAP `freshness`, as `availability::band` bounds it.
    pub freshness: crate::dap::Freshness,
    pub trace_id: String,
}

impl ToolOutput for AvailabilityResult {
    const OUTPUT: &'static str = "vehicle.schema.json#/$defs/availabilityResult";
}

/// What `verify_availability` adds in the MCP result's `_meta` (DAP 0.1's
/// `availabilityResult` allows no other member; docs/availability.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AvailabilityMeta {
    #[serde(rename = "dealergateway.availability")]
    pub availability: AvailabilityBand,
}

/// `_meta."dealergateway.availability"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AvailabilityBand {
    pub band: &'static str,
    pub checked_live: bool,
    pub source: &'static str,
}

/// A typed output as the tree the pipeline checks (`Produced::Tree`). Our
/// types hold strings, numbers, booleans and `Value`s, whose serialization
/// cannot fail; a failure would be a defect, answered
/// `dealeragent.internal`.
pub fn tree<T: Serialize>(output: &T) -> Result<Value, super::ToolError> {
    serde_json::to_value(output).map_err(super::ToolError::internal)
}

#[cfg(test)]
pub(crate) mod drift {
    //! Every typed output against its published definition (see the module
    //! doc): member names, required members, and validation of real
    //! instances.

    use std::collections::BTreeSet;

    use serde::Serialize;
    use serde::ser::{self, Impossible};
    use serde_json::Value;

    use super::*;
    use crate::catalog::FieldError;
    use crate::tools::error::{DapError, ErrorDetails};

    #[derive(Debug)]
    pub struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("not a struct")
        }
    }
    impl std::error::Error for Stop {}
    impl ser::Error for Stop {
        fn custom<T: std::fmt::Display>(_: T) -> Self {
            Stop
        }
    }

    /// Records the members a struct serializes and the ones it skips
    /// (serde derive reports a `skip_serializing_if` member through
    /// `skip_field`), without serializing their values.
    #[derive(Default)]
    pub struct Members {
        pub written: BTreeSet<String>,
        pub skipped: BTreeSet<String>,
    }

    impl ser::SerializeStruct for &mut Members {
        type Ok = ();
        type Error = Stop;
        fn serialize_field<T: ?Sized + Serialize>(
            &mut self,
            key: &'static str,
            _: &T,
        ) -> Result<(), Stop> {
            self.written.insert(key.to_owned());
            Ok(())
        }
        fn skip_field(&mut self, key: &'static str) -> Result<(), Stop> {
            self.skipped.insert(key.to_owned());
            Ok(())
        }
        fn end(self) -> Result<(), Stop> {
            Ok(())
        }
    }

    macro_rules! refuse {
        ($($name:ident($($t:ty),*)),* $(,)?) => {
            $(fn $name(self, $(_: $t),*) -> Result<(), Stop> { Err(Stop) })*
        };
    }

    impl<'a> ser::Serializer for &'a mut Members {
        type Ok = ();
        type Error = Stop;
        type SerializeSeq = Impossible<(), Stop>;
        type SerializeTuple = Impossible<(), Stop>;
        type SerializeTupleStruct = Impossible<(), Stop>;
        type SerializeTupleVariant = Impossible<(), Stop>;
        type SerializeMap = Impossible<(), Stop>;
        type SerializeStruct = &'a mut Members;
        type SerializeStructVariant = Impossible<(), Stop>;
        refuse! {
            serialize_bool(bool), serialize_i8(i8), serialize_i16(i16), serialize_i32(i32),
            serialize_i64(i64), serialize_u8(u8), serialize_u16(u16), serialize_u32(u32),
            serialize_u64(u64), serialize_f32(f32), serialize_f64(f64), serialize_char(char),
            serialize_str(&str), serialize_bytes(&[u8]), serialize_none(), serialize_unit(),
            serialize_unit_struct(&'static str),
            serialize_unit_variant(&'static str, u32, &'static str),
        }
        fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<(), Stop> {
            Err(Stop)
        }
        fn serialize_newtype_struct<T: ?Sized + Serialize>(
            self,
            _: &'static str,
            _: &T,
        ) -> Result<(), Stop> {
            Err(Stop)
        }
        fn serialize_newtype_variant<T: ?Sized + Serialize>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result<(), Stop> {
            Err(Stop)
        }
        fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Stop> {
            Err(Stop)
        }
        fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Stop> {
            Err(Stop)
        }
        fn serialize_tuple_struct(
            self,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleStruct, Stop> {
            Err(Stop)
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleVariant, Stop> {
            Err(Stop)
        }
        fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Stop> {
            Err(Stop)
        }
        fn serialize_struct(
            self,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStruct, Stop> {
            Ok(self)
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStructVariant, Stop> {
            Err(Stop)
        }
    }

    pub fn members<T: Serialize>(instance: &T) -> Members {
        let mut m = Members::default();
        instance
            .serialize(&mut m)
            .unwrap_or_else(|_| panic!("{} is not a struct", std::any::type_name::<T>()));
        m
    }

    /// The definition's properties and required members, and a validator
    /// of the full definition.
    fn definition(reference: &str) -> (BTreeSet<String>, BTreeSet<String>, jsonschema::Validator) {
        let catalog = crate::catalog::Catalog::load().expect("catalog");
        let bundle =
            crate::catalog::bundle_reference(&catalog.schema_documents, reference).expect("bundle");
        let name = reference.rsplit('/').next().unwrap_or_default();
        let schema = &bundle["$defs"][name];
        assert!(schema.is_object(), "{reference} not found in its bundle");
        let properties = schema["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
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
        let validator = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&bundle)
            .expect("compiles");
        (properties, required, validator)
    }

    /// `instances` of one type against the definition `reference`: every
    /// instance names exactly the definition's members (written or
    /// skipped), never skips a required one, and validates.
    pub fn check<T: Serialize>(reference: &str, instances: &[T]) {
        assert!(!instances.is_empty(), "{reference}: no instance to check");
        let (properties, required, validator) = definition(reference);
        for instance in instances {
            let m = members(instance);
            let named: BTreeSet<String> = m.written.union(&m.skipped).cloned().collect();
            assert_eq!(named, properties, "{reference}: members differ");
            let skipped_required: Vec<&String> = m.skipped.intersection(&required).collect();
            assert!(
                skipped_required.is_empty(),
                "{reference}: required {skipped_required:?} can be left out"
            );
            let value = serde_json::to_value(instance).expect("serializes");
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{reference}: {errors:?}\n{value}");
        }
    }

    pub fn check_output<T: ToolOutput>(instances: &[T]) {
        check(T::OUTPUT, instances);
    }

    fn source(full: bool) -> Source {
        Source {
            source_name: "dealers.yaml".into(),
            authority: "dealer_asserted".into(),
            observed_at: "2026-01-02T03:04:05Z".into(),
            source_record_id: full.then(|| "org.a".into()),
            content_digest: full.then(|| format!("sha256:{}", "0".repeat(64))),
            source_uri: full.then(|| "https://dealer.example/feed".into()),
        }
    }

    pub fn provenance(full: bool) -> Provenance {
        Provenance {
            sources: vec![source(full)],
            authority_status: "asserted".into(),
            transformed_at: full.then(|| "2026-01-02T03:04:06Z".into()),
            transformations: if full {
                vec!["imported".into()]
            } else {
                Vec::new()
            },
        }
    }

    pub fn freshness(full: bool) -> Freshness {
        Freshness {
            observed_at: "2026-01-02T03:04:05Z".into(),
            state: FreshnessState::Stale,
            valid_until: full.then(|| "2026-01-03T03:04:05Z".into()),
            max_age_seconds: full.then_some(86_400),
        }
    }

    #[test]
    fn the_shared_records_match_their_definitions() {
        check(
            "common.schema.json#/$defs/source",
            &[source(false), source(true)],
        );
        check(
            "common.schema.json#/$defs/provenance",
            &[provenance(false), provenance(true)],
        );
        check(
            "common.schema.json#/$defs/freshness",
            &[freshness(false), freshness(true)],
        );
        let details = ErrorDetails {
            field_errors: vec![FieldError::new("/organization_id", "required", "Missing.")],
            current_freshness: Some(freshness(true)),
        };
        check("error.schema.json#/$defs/errorDetails", &[details]);
        // Every freshness state is one the schema names.
        for state in [
            FreshnessState::Current,
            FreshnessState::Stale,
            FreshnessState::Unknown,
            FreshnessState::Withdrawn,
        ] {
            let f = Freshness {
                state,
                ..freshness(false)
            };
            check("common.schema.json#/$defs/freshness", &[f]);
        }
    }

    /// The diff can fail: a member the schema does not define, a required
    /// member that can be skipped, and an instance that breaks the schema
    /// are each caught.
    #[test]
    fn the_output_diff_catches_a_drifted_type() {
        #[derive(Serialize)]
        struct Extra {
            observed_at: String,
            state: FreshnessState,
            valid_until: Option<String>,
            max_age_seconds: Option<u32>,
            nickname: Option<String>,
        }
        let extra = Extra {
            observed_at: "2026-01-02T03:04:05Z".into(),
            state: FreshnessState::Current,
            valid_until: None,
            max_age_seconds: None,
            nickname: None,
        };
        let reference = "common.schema.json#/$defs/freshness";
        assert!(std::panic::catch_unwind(|| check(reference, &[&extra])).is_err());

        #[derive(Serialize)]
        struct Forgetful {
            observed_at: String,
            state: FreshnessState,
            valid_until: Option<String>,
        }
        let forgetful = Forgetful {
            observed_at: "2026-01-02T03:04:05Z".into(),
            state: FreshnessState::Current,
            valid_until: None,
        };
        assert!(std::panic::catch_unwind(|| check(reference, &[&forgetful])).is_err());

        #[derive(Serialize)]
        struct Skippy {
            #[serde(skip_serializing_if = "String::is_empty")]
            observed_at: String,
            state: FreshnessState,
            valid_until: Option<String>,
            max_age_seconds: Option<u32>,
        }
        let skippy = Skippy {
            observed_at: String::new(),
            state: FreshnessState::Current,
            valid_until: None,
            max_age_seconds: None,
        };
        assert!(std::panic::catch_unwind(|| check(reference, &[&skippy])).is_err());

        // Right members, wrong value: `max_age_seconds` beyond 30 days.
        let invalid = Freshness {
            max_age_seconds: Some(2_592_001),
            ..freshness(true)
        };
        assert!(std::panic::catch_unwind(|| check(reference, &[invalid])).is_err());
        // And the right instance passes.
        check(reference, &[freshness(true)]);
    }

    #[test]
    fn every_dap_error_matches_the_error_definition() {
        use super::super::ToolError;
        let now = chrono::Utc::now();
        let errors = [
            ToolError::Validation {
                field_errors: vec![FieldError::new("/rooftop_id", "required", "Missing.")],
            },
            ToolError::Invalid {
                message: "year_min must not be greater than year_max.".into(),
                field_errors: Vec::new(),
            },
            ToolError::AuthRequired {
                how: "Send a bearer token.".into(),
            },
            ToolError::ScopeInsufficient {
                scope: "dealeragent.inventory.read".into(),
            },
            ToolError::RateLimited {
                retry_after_ms: u64::MAX,
            },
            ToolError::NotFound,
            ToolError::UpstreamUnavailable {
                retry_after_ms: 2_000,
            },
            ToolError::EvaluationsBusy {
                retry_after_ms: 1_000,
            },
            ToolError::AuditUnavailable {
                retry_after_ms: 1_000,
            },
            ToolError::StoreUnavailable {
                detail: "connection refused".into(),
                retry_after_ms: 2_000,
            },
            ToolError::OrganizationNotServedHere {
                retry_after_ms: 500,
            },
            ToolError::internal("boom"),
        ];
        let objects: Vec<DapError> = errors
            .iter()
            .map(|e| e.dap_error("err.1", "0123456789abcdef0123456789abcdef", now))
            .collect();
        check_output(&objects);
        // The tree the pipeline sends is this type's serialization.
        for (error, object) in errors.iter().zip(&objects) {
            assert_eq!(
                error.to_dap("err.1", "0123456789abcdef0123456789abcdef", now),
                serde_json::to_value(object).unwrap()
            );
        }
    }

    /// An error message longer than error.schema.json allows is cut to
    /// its `maxLength` in characters (the one `crate::dap::truncate`),
    /// and the object still validates.
    #[test]
    fn a_long_error_message_is_cut_to_the_published_limit() {
        use super::super::ToolError;
        use super::super::error::MESSAGE_MAX_CHARS;
        let catalog = crate::catalog::Catalog::load().expect("catalog");
        assert_eq!(
            catalog.schema_documents["error.schema.json"]["$defs"]["error"]["properties"]["message"]
                ["maxLength"],
            serde_json::json!(MESSAGE_MAX_CHARS)
        );
        let long = ToolError::Invalid {
            message: "é".repeat(MESSAGE_MAX_CHARS + 100),
            field_errors: Vec::new(),
        };
        let object = long.dap_error(
            "err.1",
            "0123456789abcdef0123456789abcdef",
            chrono::Utc::now(),
        );
        assert_eq!(object.message.chars().count(), MESSAGE_MAX_CHARS);
        check_output(&[object]);
    }
}
