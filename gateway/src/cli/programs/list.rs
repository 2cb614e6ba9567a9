//! `dealer-gateway programs list --organization ORG [--json]`
//! (docs/pricing.md "Listing"): every stored revision of an organization's
//! programs and what an evaluation makes of it now.
//!
//! The status comes from the evaluation's own choice
//! ([`crate::offers::OrgPrograms::at`], read only): which revision of each
//! program is live, which cannot be evaluated and why, so the list and an
//! `offers.evaluate` at the same instant never disagree.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::Error;
use crate::cli::{Failure, rfc3339};
use crate::offers::OrgPrograms;
use crate::store::{self, ProgramRevisionRecord};

/// What an evaluation makes of one stored revision now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RevisionStatus {
    /// Evaluations use it now: the live revision of its program.
    Active,
    /// Its window starts later.
    Scheduled { starts: String },
    /// Its window ended.
    Expired { ended: String },
    /// Its window contains now, but a higher revision's does too and wins.
    Superseded { reason: String },
    /// Withdrawn (final): never evaluated again.
    Withdrawn { at: String },
    /// It cannot be evaluated: the problems every evaluation reports.
    Unusable { problems: Vec<String> },
}

impl RevisionStatus {
    fn word(&self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Scheduled { .. } => "scheduled",
            Self::Expired { .. } => "expired",
            Self::Superseded { .. } => "superseded",
            Self::Withdrawn { .. } => "withdrawn",
            Self::Unusable { .. } => "unusable",
        }
    }

    /// The status's detail in words (empty for `active`).
    fn detail(&self) -> String {
        match self {
            Self::Active => String::new(),
            Self::Scheduled { starts } => format!("starts {starts}"),
            Self::Expired { ended } => format!("ended {ended}"),
            Self::Superseded { reason } => reason.clone(),
            Self::Withdrawn { at } => format!("withdrawn at {at}"),
            Self::Unusable { problems } => problems.join("; "),
        }
    }
}

/// One row of the list.
#[derive(Debug, Clone, Serialize)]
pub struct ListedRevision {
    pub program_id: String,
    pub revision: u32,
    #[serde(flatten)]
    pub status: RevisionStatus,
    pub name: Option<String>,
    pub kind: Option<String>,
    pub direction: Option<String>,
    /// The amount in words: `1,500.00 USD`, `2.5 % of the advertised
    /// price`, `unknown (reason)`.
    pub amount: String,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub imported_at: String,
}

/// Every stored revision of the organization with its status at `now`,
/// in (program_id, revision) order.
pub fn statuses(revisions: &[ProgramRevisionRecord], now: DateTime<Utc>) -> Vec<ListedRevision> {
    let active: Vec<store::ProgramRecord> = revisions
        .iter()
        .filter(|r| r.withdrawn_at.is_none())
        .map(|r| r.record.clone())
        .collect();
    let selection = OrgPrograms::from_records(&active, now)
        .at(now.fixed_offset())
        .selection;
    revisions
        .iter()
        .map(|r| {
            let id = &r.record.program_id;
            let revision = r.record.revision;
            let doc = &r.record.doc;
            let from = time(doc, "valid_from");
            let until = time(doc, "valid_until");
            let unusable = selection
                .unusable
                .iter()
                .find(|u| &u.program_id == id && u.revision == revision);
            let choice = selection.revisions.iter().find(|c| &c.program_id == id);
            let status = if let Some(at) = r.withdrawn_at {
                RevisionStatus::Withdrawn { at: rfc3339(at) }
            } else if let Some(u) = unusable {
                RevisionStatus::Unusable {
                    problems: u.problems.clone(),
                }
            } else if from.is_some_and(|f| f > now) {
                RevisionStatus::Scheduled {
                    starts: rfc3339(from.unwrap_or(now)),
                }
            } else if until.is_some_and(|u| u <= now) {
                RevisionStatus::Expired {
                    ended: rfc3339(until.unwrap_or(now)),
                }
            } else {
                match choice {
                    Some(c) if c.revision == revision => RevisionStatus::Active,
                    Some(c) => RevisionStatus::Superseded {
                        reason: c
                            .not_used
                            .iter()
                            .find(|n| n.revision == revision)
                            .map_or_else(
                                || format!("revision {} is used instead", c.revision),
                                |n| n.reason.clone(),
                            ),
                    },
                    // Every decodable active revision has a choice; one
                    // without is reported unusable above.
                    None => RevisionStatus::Unusable {
                        problems: vec!["no evaluation considers it".to_owned()],
                    },
                }
            };
            ListedRevision {
                program_id: id.clone(),
                revision,
                status,
                name: text(doc, "name"),
                kind: text(doc, "kind"),
                direction: text(doc, "direction"),
                amount: amount(doc),
                valid_from: from.map(rfc3339),
                valid_until: until.map(rfc3339),
                imported_at: rfc3339(r.record.imported_at),
            }
        })
        .collect()
}

/// The command.
pub async fn run(database_url: &str, organization: &str, json: bool) -> Result<(), Failure> {
    let store = store::open(database_url).await?;
    if store.get_organization(organization).await?.is_none() {
        return Err(Failure::BadInput(format!(
            "organization {organization} is not in the store: import its dealers file first \
             (dealer-gateway import dealers FILE)"
        )));
    }
    let revisions = store.program_revisions(organization).await?;
    let now = Utc::now();
    let listed = statuses(&revisions, now);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&listed).map_err(|e| Error::Io(e.to_string()))?
        );
        return Ok(());
    }
    let programs = {
        let mut ids: Vec<&str> = listed.iter().map(|l| l.program_id.as_str()).collect();
        ids.dedup();
        ids.len()
    };
    let count = |word: &str| listed.iter().filter(|l| l.status.word() == word).count();
    println!(
        "programs of {organization} at {}: {} revision(s) of {programs} program(s) — active {}, \
         scheduled {}, expired {}, superseded {}, withdrawn {}, unusable {}",
        rfc3339(now),
        listed.len(),
        count("active"),
        count("scheduled"),
        count("expired"),
        count("superseded"),
        count("withdrawn"),
        count("unusable"),
    );
    for l in &listed {
        let detail = l.status.detail();
        println!(
            "  {} revision {}: {}{}",
            l.program_id,
            l.revision,
            l.status.word(),
            if detail.is_empty() {
                String::new()
            } else {
                format!(" ({detail})")
            }
        );
        let window = match (&l.valid_from, &l.valid_until) {
            (None, None) => "no validity limit".to_owned(),
            (from, until) => format!(
                "valid from {} until {}",
                from.as_deref().unwrap_or("any time"),
                until.as_deref().unwrap_or("no end")
            ),
        };
        println!(
            "      {} — {} {}, {}; {window}",
            l.name.as_deref().unwrap_or("(no name)"),
            l.kind.as_deref().unwrap_or("?"),
            l.direction.as_deref().unwrap_or("?"),
            l.amount,
        );
    }
    Ok(())
}

fn text(doc: &Value, key: &str) -> Option<String> {
    doc.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn time(doc: &Value, key: &str) -> Option<DateTime<Utc>> {
    doc.get(key)
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// A program's amount in words, from its stored document
/// (`schemas/programs.schema.json`).
fn amount(doc: &Value) -> String {
    let money = |v: Option<&Value>| {
        v.and_then(|m| serde_json::from_value::<pricing::Money>(m.clone()).ok())
            .map(|m| m.to_string())
    };
    match doc.pointer("/amount/status").and_then(Value::as_str) {
        Some("known") => money(doc.pointer("/amount/amount")).unwrap_or_else(|| "?".to_owned()),
        Some("percent_off") => {
            let percent = doc
                .pointer("/amount/percent")
                .and_then(Value::as_str)
                .unwrap_or("?");
            match money(doc.pointer("/amount/cap")) {
                Some(cap) => format!("{percent} % of the advertised price, at most {cap}"),
                None => format!("{percent} % of the advertised price"),
            }
        }
        Some("unknown") => match doc.pointer("/amount/reason").and_then(Value::as_str) {
            Some(reason) => format!("unknown ({reason})"),
            None => "unknown".to_owned(),
        },
        Some(other) => other.to_owned(),
        None => "?".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stored(
        id: &str,
        revision: u32,
        window: (Option<&str>, Option<&str>),
        withdrawn: Option<&str>,
    ) -> ProgramRevisionRecord {
        let mut doc = json!({
            "program_id": id,
            "revision": revision,
            "name": format!("{id} r{revision}"),
            "kind": "cash",
            "direction": "discount",
            "amount": {"status": "known", "amount": {"amount_minor": 50000, "currency": "USD"}},
            "applies_to": {"conditions": ["new"]},
            "stacking": {"group": "oem", "combinability": "stackable"},
        });
        if let Some(f) = window.0 {
            doc["valid_from"] = f.into();
        }
        if let Some(u) = window.1 {
            doc["valid_until"] = u.into();
        }
        let at = |t: &str| DateTime::parse_from_rfc3339(t).unwrap().with_timezone(&Utc);
        ProgramRevisionRecord {
            record: store::ProgramRecord {
                program_id: id.into(),
                revision,
                doc,
                rule_hash: None,
                imported_at: at("2026-11-01T00:00:00Z"),
                source: store::SourceRecord {
                    source_name: "programs-file:p.yaml".into(),
                    authority: "dealer_asserted".into(),
                    content_digest: "sha256:00".into(),
                    observed_at: at("2026-11-01T00:00:00Z"),
                },
            },
            withdrawn_at: withdrawn.map(at),
        }
    }

    #[test]
    fn each_revision_gets_the_status_an_evaluation_gives_it() {
        let now = DateTime::parse_from_rfc3339("2026-12-02T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let revisions = vec![
            stored("cash", 1, (None, None), None),
            stored("cash", 2, (Some("2026-12-01T00:00:00Z"), None), None),
            stored("later", 1, (Some("2027-01-01T00:00:00Z"), None), None),
            stored("old", 1, (None, Some("2026-11-30T00:00:00Z")), None),
            stored("gone", 1, (None, None), Some("2026-11-20T08:00:00Z")),
        ];
        let mut bad = stored("bad", 1, (None, None), None);
        bad.record.doc["amount"] = json!({"status": "known"});
        let mut all = vec![bad];
        all.extend(revisions);
        let listed = statuses(&all, now);
        let words: Vec<(&str, u32, &str)> = listed
            .iter()
            .map(|l| (l.program_id.as_str(), l.revision, l.status.word()))
            .collect();
        assert_eq!(
            words,
            vec![
                ("bad", 1, "unusable"),
                ("cash", 1, "superseded"),
                ("cash", 2, "active"),
                ("later", 1, "scheduled"),
                ("old", 1, "expired"),
                ("gone", 1, "withdrawn"),
            ]
        );
        assert!(
            listed[0].status.detail().contains("does not decode"),
            "{:?}",
            listed[0].status
        );
        assert!(
            listed[1]
                .status
                .detail()
                .contains("superseded by revision 2")
        );
        assert_eq!(listed[3].status.detail(), "starts 2027-01-01T00:00:00Z");
        assert_eq!(listed[4].status.detail(), "ended 2026-11-30T00:00:00Z");
        assert_eq!(
            listed[5].status.detail(),
            "withdrawn at 2026-11-20T08:00:00Z"
        );
        assert_eq!(listed[2].amount, "500.00 USD");
        assert_eq!(listed[2].name.as_deref(), Some("cash r2"));
        let json = serde_json::to_value(&listed[5]).unwrap();
        assert_eq!(json["status"], "withdrawn");
        assert_eq!(json["at"], "2026-11-20T08:00:00Z");
    }
}
