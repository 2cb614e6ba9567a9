//! `dealeragent.pricing.get_disclosure` (profile
//! `dealeragent.pricing.disclosure/0.1`): the pricing disclosure of one
//! vehicle, built by [`crate::disclosure::build`] (docs/pricing.md,
//! sections 5 and 6).
//!
//! Policy first (DAP-CORE-031): the rooftop must be readable by the caller
//! before the vehicle is looked up. The availability band comes from stored
//! observations only (the feed record, or a newer check already made);
//! a disclosure never triggers a live availability check.
//!
//! Every disclosure carries the disclosure lint for the buyer's
//! jurisdiction, else the rooftop's, under
//! `extensions["dealergateway.disclosure-lint"]` (docs/lint.md,
//! docs/pricing.md "The disclosure lint"): concise by default (what did not
//! pass, with the reason), the whole report with the facts in full detail.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use pricing::lint::{Place, Report, Verdict};
use serde_json::{Value, json};

use super::args::{Detail, DisclosureArgs};
use super::target;
use super::{Produced, ToolContext, ToolError};
use crate::availability::{self, Band, Observed, band};
use crate::dap::disclosure::{OffersExtension, PricingDisclosure};
use crate::disclosure::cache::{Document, DocumentKey, EvaluationKey};
use crate::disclosure::{self, Inputs};
use crate::inventory::model::VehicleRecord;
use crate::inventory::render;
use crate::lint::{self, PlaceSource};
use crate::offers::OrgPrograms;

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
        let prologue = prologue(ctx, &args).await?;
        let vehicle_id = prologue.target.record.vehicle_id.clone();
        let stamp = render::json_string(&render::timestamp(prologue.now));
        // The whole document is reused while it would be built the same
        // (disclosure::cache): validated when it was built,
        // only `transformed_at` is this request's. Only the default, concise
        // form is kept; `detail: "full"` is built each time around the
        // reused evaluation.
        let detail = args.detail.unwrap_or_default();
        if detail == Detail::Concise
            && let Some(document) = ctx.evaluations().document(
                &prologue.document_key,
                &prologue.org_programs,
                prologue.target.tenant.directory(),
                prologue.now,
            )
        {
            return Ok(Produced::Assembled {
                json: super::JsonText::trusted(document.with_stamp(&stamp)),
                resource_ids: vec![vehicle_id],
                links: String::new(),
            });
        }
        let Built {
            mut disclosure,
            full_offers,
            concise_offers,
            unchanged_until,
        } = build(ctx, &prologue, &args, detail == Detail::Full).await?;
        // The concise extension keeps what decides the answer and names the
        // rest (docs/pricing.md section 5); made once per evaluation, and the
        // document once, which the cache then serves. The full evaluation
        // is written to text only for a reader who asks for it.
        match (detail, concise_offers) {
            (Detail::Concise, Some(text)) => with_offers(&mut disclosure.document, text),
            (detail, _) => {
                if let Some(full) = full_offers.and_then(|f| f.text()) {
                    with_offers(&mut disclosure.document, full);
                }
                if detail == Detail::Concise {
                    concise(&mut disclosure.document)?;
                }
            }
        }
        let json = serde_json::to_string(&disclosure.document).map_err(ToolError::internal)?;
        if detail == Detail::Concise
            && let Some(split) = Document::split(&json, &stamp)
        {
            let Prologue {
                target,
                now,
                org_programs,
                document_key,
                ..
            } = prologue;
            ctx.evaluations().keep_document(
                document_key,
                &org_programs,
                target.tenant.directory(),
                now,
                unchanged_until,
                Arc::new(split),
            );
        }
        Ok(Produced::Assembled {
            json: super::JsonText::trusted(json),
            resource_ids: vec![vehicle_id],
            links: String::new(),
        })
    }
}

/// The typed disclosure the tool answers `args` with, for an in-process
/// reader such as the console: the same tenancy, inputs and builder, so
/// it is exactly what an agent is sent (the offer evaluation and the lint
/// in their extensions in full), read without serializing and parsing it
/// again.
/// The caller has checked the tool's scope, as [`super::invoke`] does.
pub async fn disclosure(
    ctx: &ToolContext,
    args: &DisclosureArgs,
) -> Result<disclosure::Disclosure, ToolError> {
    let prologue = prologue(ctx, args).await?;
    let Built {
        mut disclosure,
        full_offers,
        ..
    } = build(ctx, &prologue, args, true).await?;
    if let Some(full) = full_offers.and_then(|f| f.text()) {
        with_offers(&mut disclosure.document, full);
    }
    Ok(disclosure)
}

/// What a request's disclosure is built from, and the key its document
/// is reused under.
struct Prologue {
    target: target::VehicleTarget,
    now: DateTime<Utc>,
    band: Band,
    org_programs: Arc<OrgPrograms>,
    document_key: DocumentKey,
}

async fn prologue(ctx: &ToolContext, args: &DisclosureArgs) -> Result<Prologue, ToolError> {
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
    let org_programs = ctx
        .offers()
        .programs(ctx.store(), &org.organization_id)
        .await?;
    let evaluation_key = EvaluationKey {
        organization_id: org.organization_id.clone(),
        vehicle_id: record.vehicle_id.clone(),
        snapshot_version: found.index.version(),
        jurisdiction: serde_json::to_string(&args.jurisdiction.as_ref())
            .map_err(ToolError::internal)?,
        payment_mode: args.payment_mode.clone(),
    };
    let document_key = DocumentKey {
        evaluation: evaluation_key,
        band: band.as_str(),
        withdrawn: found.withdrawn,
    };
    Ok(Prologue {
        target,
        now,
        band,
        org_programs,
        document_key,
    })
}

/// A disclosure built and validated for this request.
struct Built {
    /// Its offers extension is an empty object standing in for the
    /// evaluation ([`with_offers`] writes the form the reader gets).
    disclosure: disclosure::Disclosure,
    /// The evaluation, kept typed; its text is made on first use.
    full_offers: Option<Arc<disclosure::cache::FullEvaluation>>,
    /// The concise form of that extension, made when it was evaluated.
    concise_offers: Option<Arc<serde_json::value::RawValue>>,
    /// Until when the document stays the same (besides `transformed_at`).
    unchanged_until: DateTime<Utc>,
}

async fn build(
    ctx: &ToolContext,
    prologue: &Prologue,
    args: &DisclosureArgs,
    full_lint: bool,
) -> Result<Built, ToolError> {
    let Prologue {
        target,
        now,
        band,
        org_programs,
        document_key,
    } = prologue;
    let now = *now;
    let (org, rooftop) = (target.tenant.organization(), target.tenant.rooftop());
    let (found, record) = (&target.found, &target.record);
    let jurisdiction = args.jurisdiction.as_ref();
    let payment_mode = args.payment_mode.as_deref();
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
            Some(match ctx.evaluations().reusable(&key, org_programs, now) {
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
                    ctx.evaluations().remember(
                        key,
                        org_programs,
                        now,
                        input,
                        super::offers_evaluate::decisive_outcome,
                    )
                }
            })
        }
    };
    let programs = evaluated.as_ref().and_then(|e| e.input.as_deref());
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
        band: *band,
        jurisdiction,
        payment_mode,
        programs,
        now,
    };
    let mut built = disclosure::build(&inputs);
    // The lint reads the document as built (what is published) and is
    // validated with it below: the extension bag admits it (DAP 13).
    let linted = lint_block(ctx, target, args, &built.document, now, full_lint).await;
    built
        .document
        .extensions
        .get_or_insert_with(Default::default)
        .lint = Some(linted.block);
    // Its facts are of `now`'s date (rules take effect on a day), and a
    // price history that could not be read is read again next time.
    unchanged_until = unchanged_until.min(if linted.history_failed {
        now
    } else {
        lint_until(now)
    });
    if let Some(valid_until) = built
        .document
        .freshness
        .valid_until
        .as_deref()
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
    let tree = serde_json::to_value(&built.document).map_err(ToolError::internal)?;
    super::check_part(ctx, NAME, "disclosure", &tree)?;
    let concise_offers = evaluated.as_ref().and_then(|e| e.concise.clone());
    Ok(Built {
        disclosure: built,
        full_offers: evaluated.and_then(|e| e.evaluation),
        concise_offers,
        unchanged_until,
    })
}

/// A lint block and whether the price history it needed could not be read.
struct Linted {
    block: Value,
    history_failed: bool,
}

/// The source named for the price history when the store failed: the
/// lowest prior price stays unknown and the rules that need it say so
/// (never a 500; docs/lint.md "Price reductions").
pub const HISTORY_UNAVAILABLE: &str =
    "gateway price history (unavailable: the store could not be read)";

/// The `dealergateway.disclosure-lint` block of `document` for the buyer's
/// jurisdiction in `args`, else the rooftop's: the whole report with its
/// facts when `full`, else [`concise_block`].
async fn lint_block(
    ctx: &ToolContext,
    target: &target::VehicleTarget,
    args: &DisclosureArgs,
    document: &PricingDisclosure,
    now: DateTime<Utc>,
    full: bool,
) -> Linted {
    let (org, rooftop) = (target.tenant.organization(), target.tenant.rooftop());
    let record = &target.record;
    // The request schema requires a country in a jurisdiction; one
    // without is linted where the rooftop is, and says so.
    let (place, source) =
        lint::place(args.jurisdiction.as_ref(), &rooftop.dap).unwrap_or_else(|| {
            (
                Place {
                    country: rooftop.dap.address.country.clone(),
                    subdivision: rooftop.dap.address.subdivision(),
                },
                PlaceSource::Rooftop,
            )
        });
    let history = lint::history(ctx.store(), record, now).await;
    if history.is_err() {
        tracing::warn!(
            trace.id = %ctx.trace_id,
            tool.name = NAME,
            "price history unavailable for the disclosure lint"
        );
    }
    let subject = lint::Subject {
        record,
        pricing: &rooftop.settings.pricing,
        document,
        config_source: Some(&org.source),
    };
    linted(
        subject,
        (place, source),
        history.as_ref().map(Option::as_ref),
        now,
        full,
    )
}

/// The block of `subject` at `place` once its price history was read (or
/// could not be: then the lowest prior price stays unknown and the price
/// history's source says why).
fn linted(
    subject: lint::Subject<'_>,
    (place, source): (Place, PlaceSource),
    history: Result<Option<&crate::store::PriceHistory>, &crate::store::StoreError>,
    now: DateTime<Utc>,
    full: bool,
) -> Linted {
    let history_failed = history.is_err();
    let mut facts = lint::facts(subject, place, history.ok().flatten(), now);
    if history_failed {
        facts
            .sources
            .insert("price_history".to_owned(), HISTORY_UNAVAILABLE.to_owned());
    }
    let report = lint::report(&facts);
    let block = if full {
        lint::block(&report, &facts, source, true)
    } else {
        concise_block(&report, source)
    };
    Linted {
        block,
        history_failed,
    }
}

/// The concise lint block, the default an agent reads (docs/agents.md
/// budgets): the result, the place and where it came from, the notice,
/// the catalogue version and, per rule that did not pass, its id, verdict,
/// whether it is confirmed and the reason; the rules that passed only
/// counted. The citations, fixes and facts are in `detail: "full"`.
pub fn concise_block(report: &Report, source: PlaceSource) -> Value {
    let not_passed: Vec<Value> = report
        .rules
        .iter()
        .filter(|r| r.verdict != Verdict::Pass)
        .map(|r| {
            json!({
                "rule_id": r.rule_id,
                "verdict": r.verdict,
                "confirmed": r.confirmed,
                "reason": r.reason,
            })
        })
        .collect();
    let passed = report.rules.len() - not_passed.len();
    json!({
        "result": report.result,
        "place": report.place,
        "jurisdiction_source": source.as_str(),
        "notice": lint::NOTICE,
        "catalogue_version": report.catalogue_version,
        "rules": not_passed,
        "rules_passed": passed,
    })
}

/// Until when a lint made at `now` holds: the next UTC midnight, when its
/// `as_of` date (and with it the rules in force) changes.
pub fn lint_until(now: DateTime<Utc>) -> DateTime<Utc> {
    let tomorrow = now.date_naive() + Duration::days(1);
    tomorrow.and_time(chrono::NaiveTime::MIN).and_utc()
}

/// Writes the concise offers extension of `document` in place of the
/// full evaluation: the default form an agent is sent (docs/pricing.md
/// section 5).
pub fn concise(document: &mut PricingDisclosure) -> Result<(), ToolError> {
    if let Some(offers) = document.extensions.as_mut().and_then(|e| e.offers.as_mut())
        && let OffersExtension::Text(full) = offers
    {
        *offers = OffersExtension::Text(concise_extension(full)?);
    }
    Ok(())
}

/// Puts `text` (the evaluation, in full or in its concise form, see
/// [`concise`]) in `document`'s offers extension, in place of what stands
/// there. A document without the extension (no programs) stays without.
fn with_offers(document: &mut PricingDisclosure, text: Arc<serde_json::value::RawValue>) {
    if let Some(offers) = document.extensions.as_mut().and_then(|e| e.offers.as_mut()) {
        *offers = OffersExtension::Text(text);
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            ".{0,12}".prop_map(Value::from),
        ]
    }

    fn tree() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        prop_oneof![
                            prop::sample::select(super::super::offers_evaluate::DECISIVE_KEYS)
                                .prop_map(str::to_owned),
                            "[a-z_]{1,10}",
                        ],
                        inner
                    ),
                    0..8
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn rule(id: &str, verdict: pricing::lint::Verdict) -> pricing::lint::RuleResult {
        pricing::lint::RuleResult {
            rule_id: id.into(),
            verdict,
            confirmed: true,
            citation: "Test Code s. 1".into(),
            reason: format!("{id} reason"),
            fix: Some("fix it".into()),
            facts: vec![pricing::lint::FactUsed {
                fact: "charges".into(),
                value: Value::from("unknown"),
                source: "feed".into(),
            }],
        }
    }

    /// The concise block names only what did not pass, without citation,
    /// fix or facts, and counts the rest (docs/agents.md budgets).
    #[test]
    fn the_concise_lint_block_keeps_what_did_not_pass() {
        use pricing::lint::{Place, Report, Verdict};
        let report = Report {
            catalogue_version: "2026-12-01".into(),
            place: Place {
                country: "US".into(),
                subdivision: Some("US-CA".into()),
            },
            result: Verdict::Fail,
            rules: vec![
                rule("A", Verdict::Pass),
                rule("B", Verdict::Fail),
                rule("C", Verdict::CannotDetermine),
                rule("D", Verdict::Pass),
            ],
        };
        let block = super::concise_block(&report, crate::lint::PlaceSource::Request);
        assert_eq!(
            block,
            serde_json::json!({
                "result": "fail",
                "place": {"country": "US", "subdivision": "US-CA"},
                "jurisdiction_source": "request",
                "notice": crate::lint::NOTICE,
                "catalogue_version": "2026-12-01",
                "rules": [
                    {"rule_id": "B", "verdict": "fail", "confirmed": true, "reason": "B reason"},
                    {"rule_id": "C", "verdict": "cannot_determine", "confirmed": true,
                     "reason": "C reason"},
                ],
                "rules_passed": 2,
            })
        );
    }

    /// A price history the store cannot read leaves the lowest prior price
    /// unknown and says why; the block is still made (never a 500), and the
    /// document is not kept (`history_failed`).
    #[test]
    fn a_failed_price_history_leaves_the_reduction_unknown_and_says_why() {
        use chrono::TimeZone;
        use pricing::lint::{Known, Place, Reduction};
        let now = chrono::Utc.with_ymd_and_hms(2026, 12, 4, 12, 0, 0).unwrap();
        let mut record: crate::domain::vehicle::VehicleRecord =
            serde_json::from_value(serde_json::json!({
                "vehicle_id": "veh.a", "organization_id": "org.a", "rooftop_id": "roof.a",
                "vin": "WVWZZZ00000000001", "stock_number": "A1", "year": 2024,
                "make": "VW", "model": "Golf", "trim": null, "condition": "used",
                "vehicle_type": null, "body_style": null, "exterior_color": null,
                "interior_color": null, "odometer": null, "powertrain": null,
                "features": [], "media": [], "listing_url": null, "window_sticker_url": null,
                "advertised_price": {"amount_minor": 2_000_000, "currency": "EUR"},
                "required_dealer_charges": null, "conditional_adjustments": null,
                "government_charges_status": null, "availability_status": "available",
                "stocked_at": null, "first_public_listing_at": null,
                "history_report_status": null, "history_reports": [],
                "certification_type": null,
                "source": {"source_name": "dap-csv:a.csv", "source_record_id": "A1",
                           "authority": "dealer_asserted",
                           "content_digest": format!("sha256:{}", "ab".repeat(32)),
                           "observed_at": "2026-12-04T11:55:00Z", "transformations": []},
            }))
            .expect("a vehicle record");
        let reference = pricing::Money::from_minor(2_200_000, pricing::Currency::EUR);
        record.claims.reference_price = Some(reference);
        let pricing = crate::store::RooftopPricing::default();
        let built = crate::disclosure::build(&crate::disclosure::Inputs {
            record: &record,
            pricing: &pricing,
            config_source: None,
            inventory_sla_seconds: 3600,
            withdrawn: false,
            snapshot_version: 1,
            band: crate::availability::Band::Asserted,
            jurisdiction: None,
            payment_mode: None,
            programs: None,
            now,
        });
        let subject = crate::lint::Subject {
            record: &record,
            pricing: &pricing,
            document: &built.document,
            config_source: None,
        };
        let place = (
            Place {
                country: "DE".into(),
                subdivision: None,
            },
            crate::lint::PlaceSource::Request,
        );
        let error = crate::store::StoreError::Unavailable("down".into());
        let out = super::linted(subject, place.clone(), Err(&error), now, true);
        assert!(out.history_failed);
        let facts: pricing::lint::Facts =
            serde_json::from_value(out.block["facts"].clone()).expect("facts");
        assert_eq!(
            facts.reduction,
            Reduction::Announced {
                reference_price: reference,
                lowest_prior: Known::Unknown,
                days: 30,
            }
        );
        assert_eq!(facts.sources["price_history"], super::HISTORY_UNAVAILABLE);
        assert!(!out.block.to_string().contains("down"), "no store detail");
        // Read, even if empty: kept, and the source is the history's own.
        let out = super::linted(subject, place, Ok(None), now, false);
        assert!(!out.history_failed);
        assert!(out.block.get("facts").is_none());
    }

    /// A kept document is never served past the day its lint was made for.
    #[test]
    fn a_lint_holds_until_the_next_utc_midnight() {
        use chrono::TimeZone;
        let now = chrono::Utc
            .with_ymd_and_hms(2026, 12, 4, 23, 59, 59)
            .unwrap();
        let until = super::lint_until(now);
        assert_eq!(
            until,
            chrono::Utc.with_ymd_and_hms(2026, 12, 5, 0, 0, 0).unwrap()
        );
        assert_eq!(super::lint_until(until), until + chrono::Duration::days(1));
    }

    proptest! {
        /// The concise form made from the evaluation's tree when it is
        /// evaluated is byte for byte the one parsed back from its text.
        #[test]
        fn concise_from_the_tree_equals_concise_from_the_text(tree in tree()) {
            let full = serde_json::value::to_raw_value(&tree).unwrap();
            let parsed = super::concise_extension(&full).unwrap();
            let direct = serde_json::value::to_raw_value(
                &super::super::offers_evaluate::decisive(&tree),
            )
            .unwrap();
            prop_assert_eq!(parsed.get(), direct.get());
        }
    }
}
