//! `dealeragent.pricing.get_disclosure` (profile
//! `dealeragent.pricing.disclosure/0.1`): the pricing disclosure of one
//! vehicle, built by [`crate::disclosure::build`] (docs/pricing.md,
//! sections 5 and 6).
//!
//! Policy first (DAP-CORE-031): the rooftop must be readable by the caller
//! before the vehicle is looked up. The availability band comes from stored
//! observations only (the feed record, or a newer check already made);
//! a disclosure never triggers a live availability check.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::args::{Detail, DisclosureArgs};
use super::target;
use super::{Produced, ToolContext, ToolError};
use crate::availability::{self, Band, Observed, band};
use crate::disclosure::cache::{Document, DocumentKey, EvaluationKey};
use crate::disclosure::{self, Inputs};
use crate::inventory::model::VehicleRecord;
use crate::inventory::render;

pub const NAME: &str = "dealeragent.pricing.get_disclosure";

/// The band of a vehicle at `now` from what is already known: a stored
/// live observation newer than the feed record, else the feed record
/// itself. Withdrawn vehicles are `unknown`.
pub fn stored_band(
    record: &VehicleRecord,
    withdrawn: bool,
    overlay: Option<&crate::store::AvailabilityObservation>,
    now: DateTime<Utc>,
) -> Band {
    if withdrawn {
        return Band::Unknown;
    }
    match overlay.filter(|o| o.observed_at > record.source.observed_at) {
        Some(o) => band::band(Some(&availability::observed(o)), now),
        None => band::band(
            Some(&Observed {
                status: &record.availability_status,
                authority: &record.source.authority,
                observed_at: record.source.observed_at,
            }),
            now,
        ),
    }
}

/// The tool (see [`super::Tool`]).
pub struct GetDisclosure;

impl super::Tool for GetDisclosure {
    const NAME: &'static str = NAME;
    type Args = DisclosureArgs;
    type Output = Produced;

    async fn call(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        // Tenancy before the lookup (DAP-CORE-031); the selector is
        // `vehicle_id`, `vin` or `stock_number`, exactly one (the schema's
        // `oneOf`), resolved like get_vehicle's.
        let target = target::resolve_vehicle(ctx, args.target()).await?;
        let (org, rooftop) = (target.tenant.organization(), target.tenant.rooftop());
        let (found, record) = (&target.found, &target.record);
        let now = Utc::now();
        let overlay = if found.withdrawn {
            None
        } else {
            ctx.availability()
                .overlay_or_store(ctx.store(), rooftop, &record.vehicle_id)
                .await
        };
        let band = stored_band(record, found.withdrawn, overlay.as_ref(), now);
        let jurisdiction = args.jurisdiction.as_ref();
        let payment_mode = args.payment_mode.as_deref();
        let org_programs = ctx
            .offers()
            .programs(ctx.store(), &org.organization_id)
            .await?;
        let evaluation_key = EvaluationKey {
            organization_id: org.organization_id.clone(),
            vehicle_id: record.vehicle_id.clone(),
            snapshot_version: found.index.version(),
            jurisdiction: serde_json::to_string(&jurisdiction).map_err(ToolError::internal)?,
            payment_mode: payment_mode.map(str::to_owned),
        };
        let document_key = DocumentKey {
            evaluation: evaluation_key,
            band: band.as_str(),
            withdrawn: found.withdrawn,
        };
        let stamp = render::json_string(&render::timestamp(now));
        let directory = target.tenant.directory();
        // The whole document is reused while it would be built the same
        // (disclosure::cache): validated when it was built,
        // only `transformed_at` is this request's. Only the default, concise
        // form is kept; `detail: "full"` is built each time around the
        // reused evaluation.
        let detail = args.detail.unwrap_or_default();
        if detail == Detail::Concise
            && let Some(document) =
                ctx.evaluations()
                    .document(&document_key, &org_programs, directory, now)
        {
            return Ok(Produced::Assembled {
                json: super::JsonText::trusted(document.with_stamp(&stamp)),
                resource_ids: vec![record.vehicle_id.clone()],
                links: String::new(),
            });
        }
        // The offer evaluation is reused per vehicle, program set and profile
        // for a short window (disclosure::cache); everything else below is
        // computed for this request. A new one runs on the bounded evaluation
        // pool within the evaluation's budget and deadline (docs/pricing.md
        // section 4), never on this async worker.
        let evaluated = match disclosure::profile_jurisdiction(jurisdiction, &rooftop.dap) {
            None => None,
            Some(j) => {
                let key = EvaluationKey {
                    jurisdiction: serde_json::to_string(&j).map_err(ToolError::internal)?,
                    ..document_key.evaluation.clone()
                };
                Some(match ctx.evaluations().reusable(&key, &org_programs, now) {
                    Some(evaluated) => evaluated,
                    None => {
                        let job_record = record.clone();
                        let job_programs = org_programs.clone();
                        let job_mode = payment_mode.map(str::to_owned);
                        let input = ctx
                            .offers()
                            .pool()
                            .run(move |deadline| {
                                // One document for every reader of the
                                // vehicle: public detail (docs/security.md
                                // "Who reads why a rule failed").
                                disclosure::programs_input(
                                    &job_record,
                                    &job_programs
                                        .at(now.fixed_offset())
                                        .with_deadline(deadline)
                                        .with_detail(crate::offers::Detail::Public),
                                    job_programs.loaded_at,
                                    j,
                                    job_mode.as_deref(),
                                    now,
                                )
                            })
                            .await
                            .map_err(super::offers_evaluate::pool_error)?;
                        ctx.evaluations().remember(key, &org_programs, now, input)
                    }
                })
            }
        };
        let programs = evaluated.as_ref().and_then(|e| e.input.as_deref()).cloned();
        // Until when this document stays the same (besides `transformed_at`):
        // the evaluation's own reuse and validity, the feed's adjustment
        // windows, and the freshness state's flip at `valid_until`.
        let mut unchanged_until = evaluated
            .as_ref()
            .map_or(now + disclosure::cache::REUSE, |e| {
                e.as_of + disclosure::cache::REUSE
            });
        if let Some(t) = programs.as_ref().and_then(|p| p.evaluation_valid_until) {
            unchanged_until = unchanged_until.min(t);
        }
        if let Some(t) = disclosure::next_feed_change(record, now) {
            unchanged_until = unchanged_until.min(t);
        }
        let inputs = Inputs {
            record,
            pricing: &rooftop.settings.pricing,
            config_source: Some(&org.source),
            inventory_sla_seconds: found.index.inventory_sla_seconds(),
            withdrawn: found.withdrawn,
            snapshot_version: found.index.version(),
            band,
            jurisdiction,
            payment_mode,
            programs,
            now,
        };
        let document = disclosure::build(&inputs).document;
        if let Some(valid_until) = document
            .pointer("/freshness/valid_until")
            .and_then(Value::as_str)
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc))
            .filter(|t| *t >= now)
        {
            // `now <= valid_until` is current; the instant after it, stale.
            unchanged_until = unchanged_until.min(valid_until);
        }
        // Validated here as built, for the tree and the assembled form alike:
        // the document carries an empty placeholder under the offers
        // extension (the extension bag admits any object under a well-formed
        // key), then is written with the evaluation's bytes in its place.
        super::check_part(ctx, NAME, "disclosure", &document)?;
        let evaluation = evaluated.and_then(|e| e.evaluation);
        // The concise extension keeps what decides the answer and names the
        // rest (docs/pricing.md section 5); made once per document, which the
        // cache then serves.
        let evaluation = match (detail, evaluation) {
            (Detail::Concise, Some(full)) => Some(concise_extension(&full)?),
            (_, evaluation) => evaluation,
        };
        let json = match &evaluation {
            Some(evaluation) => serde_json::to_string(&WithEvaluation {
                document: &document,
                evaluation,
            }),
            None => serde_json::to_string(&document),
        }
        .map_err(ToolError::internal)?;
        if detail == Detail::Concise
            && let Some(split) = Document::split(&json, &stamp)
        {
            ctx.evaluations().keep_document(
                document_key,
                &org_programs,
                directory,
                now,
                unchanged_until,
                Arc::new(split),
            );
        }
        Ok(Produced::Assembled {
            json: super::JsonText::trusted(json),
            resource_ids: vec![record.vehicle_id.clone()],
            links: String::new(),
        })
    }
}

/// The concise offers extension ([`super::offers_evaluate::decisive`]) of
/// a serialized evaluation. The evaluation was serialized by this gateway,
/// so it parses; a failure would be a defect.
fn concise_extension(
    full: &serde_json::value::RawValue,
) -> Result<Arc<serde_json::value::RawValue>, ToolError> {
    let tree: Value = serde_json::from_str(full.get()).map_err(ToolError::internal)?;
    let summary = super::offers_evaluate::decisive(&tree);
    serde_json::value::to_raw_value(&summary)
        .map(Arc::from)
        .map_err(ToolError::internal)
}

/// The member of `extensions` that holds the offer evaluation.
const OFFERS_EXTENSION: &str = "dealergateway.offers";

/// A disclosure document written with the serialized evaluation in place
/// of its `extensions."dealergateway.offers"` placeholder.
struct WithEvaluation<'a> {
    document: &'a Value,
    evaluation: &'a serde_json::value::RawValue,
}

impl serde::Serialize for WithEvaluation<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(members) = self.document else {
            return self.document.serialize(serializer);
        };
        let mut map = serializer.serialize_map(Some(members.len()))?;
        for (key, value) in members {
            match (key.as_str(), value) {
                ("extensions", Value::Object(extensions)) => {
                    map.serialize_entry(
                        key,
                        &Extensions {
                            extensions,
                            evaluation: self.evaluation,
                        },
                    )?;
                }
                _ => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

struct Extensions<'a> {
    extensions: &'a serde_json::Map<String, Value>,
    evaluation: &'a serde_json::value::RawValue,
}

impl serde::Serialize for Extensions<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.extensions.len()))?;
        for (key, value) in self.extensions {
            if key == OFFERS_EXTENSION {
                map.serialize_entry(key, self.evaluation)?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}
