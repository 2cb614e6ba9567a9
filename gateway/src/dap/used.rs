//! Used-vehicle evidence as a feed publishes it (inventory-cells.schema.json
//! `csvTitle`, `csvInspection`, `csvReconditioning`, and the same shapes in a
//! JSON record's evidence extension): the DAP `titleDisclosure`,
//! `conditionReport` and `reconditioning` names without the provenance and
//! freshness the gateway adds when it renders them (DAP-UV-011,
//! [`super::used_details`]).
//!
//! Every definition is closed, and so is every type here
//! (`deny_unknown_fields`): a member the schema gains and the type lacks
//! refuses the row at ingest instead of being dropped. Member order is the
//! schema's, and an optional member is absent when `None`; a list the
//! source may leave out (`components`, `disclosed_damage`) stays `None`
//! rather than becoming an empty list, which would claim "none"
//! (DAP-UV-016). Enumerated members hold the DAP wire strings that ingest
//! checked against the schema enums.

use serde::{Deserialize, Serialize};

/// `csvTitle`: the title as the dealer discloses it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Title {
    /// `clear|branded|pending|in_transit|unknown`.
    pub status: String,
    /// Title brands (`salvage|rebuilt|flood|...|other`); `[]` for none.
    pub brands: Vec<String>,
    /// ISO 3166-1 alpha-2, optionally with an ISO 3166-2 subdivision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jurisdiction: Option<String>,
}

/// DAP `conditionGrade`: a grade with the system that gives it meaning
/// (DAP-UV-022).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConditionGrade {
    pub system: String,
    pub value: String,
}

/// DAP `conditionComponent`: one inspected component and its state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConditionComponent {
    /// `exterior|interior|mechanical|...|battery`.
    pub component: String,
    /// `pass|attention|fail|not_inspected|unknown`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `csvInspection`: the dealer's inspection evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inspection {
    /// `completed|partial|not_inspected|unknown`.
    pub status: String,
    /// `manufacturer_program|independent_third_party|dealer|unknown`.
    pub inspection_authority: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inspector_name: Option<String>,
    /// RFC 3339 as published (ingest refuses one in the future).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inspected_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_url: Option<String>,
    /// 0 to 1000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inspection_point_count: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grade: Option<ConditionGrade>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components: Option<Vec<ConditionComponent>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disclosed_damage: Option<Vec<String>>,
}

/// DAP `reconditioningItem`: one dealer-approved public disclosure (never
/// costs, labor or technician notes, DAP-UV-026).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconditioningItem {
    /// `mechanical|safety|tires|...|recall|other`.
    pub category: String,
    pub description: String,
    /// `planned|in_progress|completed|declined|unknown`.
    pub status: String,
}

/// `csvReconditioning`: the completion state and its public items.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reconditioning {
    /// `not_started|in_progress|completed|unknown`; `completed` only when
    /// nothing disclosed is open (DAP-UV-027, checked by ingest).
    pub status: String,
    /// RFC 3339 as published; status `completed` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    pub items: Vec<ReconditioningItem>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tools::output::drift::check;

    pub(crate) fn title(full: bool) -> Title {
        Title {
            status: if full { "branded" } else { "clear" }.into(),
            brands: if full { vec!["flood".into()] } else { vec![] },
            jurisdiction: full.then(|| "US-IL".into()),
        }
    }

    pub(crate) fn inspection(full: bool) -> Inspection {
        Inspection {
            status: "completed".into(),
            inspection_authority: "dealer".into(),
            inspector_name: full.then(|| "Inspection centre".into()),
            inspected_at: full.then(|| "2026-01-02T03:04:05Z".into()),
            report_url: full.then(|| "https://dealer.example/inspection/1".into()),
            inspection_point_count: full.then_some(172),
            grade: full.then(|| ConditionGrade {
                system: "Dealer retail inspection v2".into(),
                value: "retail ready".into(),
            }),
            components: full.then(|| {
                vec![
                    ConditionComponent {
                        component: "brakes".into(),
                        status: "pass".into(),
                        note: None,
                    },
                    ConditionComponent {
                        component: "exterior".into(),
                        status: "attention".into(),
                        note: Some("Light scratch.".into()),
                    },
                ]
            }),
            disclosed_damage: full.then(|| vec!["Light scratch.".into()]),
        }
    }

    pub(crate) fn reconditioning(full: bool) -> Reconditioning {
        Reconditioning {
            status: if full { "completed" } else { "not_started" }.into(),
            completed_at: full.then(|| "2026-01-02T03:04:05Z".into()),
            items: if full {
                vec![ReconditioningItem {
                    category: "brakes".into(),
                    description: "Front pads replaced.".into(),
                    status: "completed".into(),
                }]
            } else {
                vec![]
            },
        }
    }

    #[test]
    fn the_evidence_records_match_their_definitions() {
        check(
            "inventory-cells.schema.json#/$defs/csvTitle",
            &[title(false), title(true)],
        );
        check(
            "inventory-cells.schema.json#/$defs/csvInspection",
            &[inspection(false), inspection(true)],
        );
        check(
            "inventory-cells.schema.json#/$defs/csvReconditioning",
            &[reconditioning(false), reconditioning(true)],
        );
        let full = inspection(true);
        check(
            "used-vehicle.schema.json#/$defs/conditionGrade",
            &[full.grade.clone().unwrap()],
        );
        check(
            "used-vehicle.schema.json#/$defs/conditionComponent",
            &full.components.clone().unwrap(),
        );
        check(
            "used-vehicle.schema.json#/$defs/reconditioningItem",
            &reconditioning(true).items,
        );
    }

    /// Published cells read back into the same bytes (schema member order),
    /// and an absent list stays absent.
    #[test]
    fn the_evidence_records_round_trip_byte_for_byte() {
        for text in [
            r#"{"status":"clear","brands":[]}"#,
            r#"{"status":"branded","brands":["flood","salvage"],"jurisdiction":"US-FL"}"#,
        ] {
            let t: Title = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&t).unwrap(), text);
        }
        for i in [inspection(false), inspection(true)] {
            let text = serde_json::to_string(&i).unwrap();
            assert_eq!(serde_json::from_str::<Inspection>(&text).unwrap(), i);
        }
        let bare: Inspection =
            serde_json::from_str(r#"{"status":"unknown","inspection_authority":"unknown"}"#)
                .unwrap();
        assert_eq!(bare.components, None);
        assert_eq!(bare.disclosed_damage, None);
        for r in [reconditioning(false), reconditioning(true)] {
            let text = serde_json::to_string(&r).unwrap();
            assert_eq!(serde_json::from_str::<Reconditioning>(&text).unwrap(), r);
        }
    }

    /// A member the definition does not have is refused, never dropped.
    #[test]
    fn an_unknown_member_is_refused() {
        assert!(
            serde_json::from_str::<Title>(r#"{"status":"clear","brands":[],"state":"IL"}"#)
                .is_err()
        );
        assert!(
            serde_json::from_str::<Reconditioning>(
                r#"{"status":"completed","items":[{"category":"brakes","description":"d","status":"completed","cost":1}]}"#
            )
            .is_err()
        );
    }
}
