//! Where a record came from and how fresh it is: DAP `source`,
//! `provenance` and `freshness` (DAP 6.4), shared by every layer that
//! serves a record.

use serde::{Deserialize, Serialize};

use super::wire::{MAX_TRANSFORMATION_CHARS, MAX_TRANSFORMATIONS, truncate};

/// DAP `source`: one named source of a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    pub source_name: String,
    pub authority: String,
    pub observed_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_record_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_digest: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_uri: Option<String>,
}

/// DAP `provenance` (DAP 6.4: where a record came from).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    pub sources: Vec<Source>,
    pub authority_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transformed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transformations: Vec<String>,
}

impl Provenance {
    /// The one way a record's provenance is built: `asserted` (a claim
    /// of its sources, not verified by the gateway), with the
    /// transformations held to the schema (empty steps dropped, at most
    /// [`MAX_TRANSFORMATIONS`] of at most 160 characters each, in order).
    pub fn asserted<S: AsRef<str>>(
        sources: Vec<Source>,
        transformed_at: Option<String>,
        transformations: impl IntoIterator<Item = S>,
    ) -> Self {
        Self {
            sources,
            authority_status: "asserted".to_owned(),
            transformed_at,
            transformations: transformations
                .into_iter()
                .filter(|t| !t.as_ref().is_empty())
                .take(MAX_TRANSFORMATIONS)
                .map(|t| truncate(t.as_ref(), MAX_TRANSFORMATION_CHARS).to_owned())
                .collect(),
        }
    }
}

/// DAP `freshness.state`. A stale or unknown record stays so (DAP 6.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FreshnessState {
    Current,
    Stale,
    Unknown,
    Withdrawn,
}

/// DAP `freshness` (DAP 6.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Freshness {
    pub observed_at: String,
    pub state: FreshnessState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_age_seconds: Option<u32>,
}
