//! DAPC-AVL: availability authority and freshness
//! (dealeragent.inventory.availability/0.1).

use serde_json::{Value, json};

use super::Check;
use crate::client::{Caller, ClientError, Exchange};
use crate::context::{Ctx, VERIFY, normalized_error, time_of};
use crate::report::Outcome;

const G: &str = "availability";

pub const CHECKS: &[Check] = &[
    Check {
        id: "DAPC-AVL-001",
        group: G,
        title: "verify_availability states status, authority, times and verification need",
        section: "DAP 0.1 section 8 (inventory.availability); errors",
        keyword: "MUST",
        text: "each result states status, authority_status, observed_at, valid_until (after observed_at) and whether human verification is required; a structured error DAP permits (stale, unavailable, upstream, rate limit, authorization) is no result and is accepted; skipped when no sampled vehicle answered with a result",
        required: true,
        roles: &[],
        run: |cx| Box::pin(complete_answer(cx)),
    },
    Check {
        id: "DAPC-AVL-002",
        group: G,
        title: "authoritative only from a source the gateway names",
        section: "DAP 0.1 inventory.availability; manifest authority_policy",
        keyword: "MUST NOT",
        text: "an answer is authoritative only when its provenance names a non-asserted source that the manifest or policy document names",
        required: true,
        roles: &[],
        run: |cx| Box::pin(authority_named(cx)),
    },
    Check {
        id: "DAPC-AVL-003",
        group: G,
        title: "an unknown vehicle gets the same answer as a foreign one",
        section: "DAP 0.1 inventory.availability; section 7",
        keyword: "MUST",
        text: "verify_availability for a made-up vehicle of a published rooftop answers exactly like one for a vehicle the caller may not see",
        required: true,
        roles: &["partner"],
        run: |cx| Box::pin(unknown_like_foreign(cx)),
    },
];

/// The DAP error codes a gateway may answer `verify_availability` with for
/// a vehicle it listed. DAP 0.1 section 8: "if authority or freshness is
/// insufficient, the gateway MUST return an explicit unknown/stale result
/// or a structured error, never infer availability"; the error registry
/// (error.schema.json, errors.md) names the ones that fit: fresh
/// availability is required (`vehicle.stale`), the vehicle is
/// authoritatively unavailable, the authoritative system is down, the
/// caller is throttled, and the authorization failures (a gateway may
/// verify only for an authenticated caller or a narrower grant than the
/// one that may search). Any other code for a listed vehicle is a fault.
pub const PERMITTED_VERIFY_ERRORS: &[&str] = &[
    "dealeragent.vehicle.stale",
    "dealeragent.vehicle.unavailable",
    "dealeragent.upstream.unavailable",
    "dealeragent.rate_limited",
    "dealeragent.auth.required",
    "dealeragent.auth.invalid",
    "dealeragent.scope.insufficient",
    "dealeragent.tenant.forbidden",
];

/// Every `verify_availability` the context asked about a listed vehicle:
/// the samples', then the further ones asked when no sample answered with
/// a result.
fn verifications(cx: &Ctx) -> Vec<(&str, &Exchange)> {
    cx.samples
        .iter()
        .filter_map(|s| s.verify.as_ref().map(|ex| (s.vehicle_id.as_str(), ex)))
        .chain(
            cx.further_verifications
                .iter()
                .map(|(vehicle, ex)| (vehicle.as_str(), ex)),
        )
        .collect()
}

/// What is missing from one availability result (empty when complete).
fn incomplete(out: &Value) -> Vec<String> {
    let a = out.get("availability").cloned().unwrap_or(Value::Null);
    let mut bad = Vec::new();
    for member in ["status", "authority_status"] {
        if a.get(member).and_then(Value::as_str).is_none() {
            bad.push(format!("availability.{member} missing"));
        }
    }
    if !a
        .get("human_verification_required")
        .is_some_and(Value::is_boolean)
    {
        bad.push("availability.human_verification_required missing".to_owned());
    }
    match (time_of(&a, "observed_at"), time_of(&a, "valid_until")) {
        (Some(observed), Some(until)) if until > observed => {}
        (Some(_), Some(_)) => bad.push("valid_until is not after observed_at".to_owned()),
        _ => bad.push("observed_at or valid_until missing".to_owned()),
    }
    bad
}

async fn complete_answer(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let list = verifications(cx);
    if list.is_empty() {
        return Ok(o.skip("no vehicle was found to verify"));
    }
    let mut problems = Vec::new();
    let mut answered = 0usize;
    // Permitted structured errors, by code (DAP 0.1 section 8).
    let mut refused: std::collections::BTreeMap<&str, usize> = Default::default();
    for (vehicle, ex) in &list {
        let Some(out) = ex.tool_ok() else {
            match ex.dap_code() {
                Some(code) if ex.is_tool_error() && PERMITTED_VERIFY_ERRORS.contains(&code) => {
                    *refused.entry(code).or_default() += 1;
                }
                code => {
                    o.saw_first(ex);
                    problems.push(format!(
                        "{vehicle}: verify_availability failed with {code:?}, which is neither a result nor a structured error DAP permits here"
                    ));
                }
            }
            continue;
        };
        answered += 1;
        let bad = incomplete(out);
        if !bad.is_empty() {
            o.saw_first(ex);
            problems.push(format!("{vehicle}: {}", bad.join(", ")));
        }
    }
    let errors = refused
        .iter()
        .map(|(code, n)| format!("{n} {code}"))
        .collect::<Vec<_>>()
        .join(", ");
    if answered == 0 && problems.is_empty() {
        let hint = if refused.keys().all(|c| *c == "dealeragent.rate_limited") {
            " (raise the gateway's anonymous quota or supply the inventory role)"
        } else {
            ""
        };
        return Ok(o.skip(format!(
            "no sampled vehicle answered with an availability result ({} asked; permitted structured errors: {errors}){hint}",
            list.len()
        )));
    }
    let ok = if refused.is_empty() {
        format!("{answered} answers complete")
    } else {
        format!("{answered} answers complete; permitted structured errors: {errors}")
    };
    Ok(o.conclude(&problems, ok))
}

/// The policy document named by the manifest, as text.
async fn policy_text(cx: &Ctx) -> String {
    let Some(uri) = cx.manifest.get("policy_uri").and_then(Value::as_str) else {
        return String::new();
    };
    let uri = uri.split('#').next().unwrap_or(uri);
    match cx.client.get_bytes(uri).await {
        Ok((200, bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
        _ => String::new(),
    }
}

async fn authority_named(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let list = verifications(cx);
    if list.is_empty() {
        return Ok(o.skip("no vehicle was found to verify"));
    }
    let named = format!("{}\n{}", cx.manifest, policy_text(cx).await);
    let mut problems = Vec::new();
    let mut authoritative = 0usize;
    for (vehicle, ex) in &list {
        let Some(out) = ex.tool_ok() else { continue };
        let authority = out
            .get("availability")
            .and_then(|a| a.get("authority_status"))
            .and_then(Value::as_str);
        if authority != Some("authoritative") {
            continue;
        }
        authoritative += 1;
        let sources: Vec<&Value> = out
            .get("provenance")
            .and_then(|p| p.get("sources"))
            .and_then(Value::as_array)
            .map(|s| s.iter().collect())
            .unwrap_or_default();
        let good = sources.iter().any(|s| {
            let asserted = matches!(
                s.get("authority").and_then(Value::as_str),
                Some("dealer_asserted" | "unknown") | None
            );
            let name = s.get("source_name").and_then(Value::as_str).unwrap_or("");
            !asserted && !name.is_empty() && named.contains(name)
        });
        if !good {
            o.saw_first(ex);
            problems.push(format!(
                "{vehicle}: authoritative without a non-asserted source named by the manifest or policy"
            ));
        }
    }
    let ok = if authoritative == 0 {
        format!(
            "none of {} answers claims authority, so none overclaims",
            list.len()
        )
    } else {
        format!("{authoritative} authoritative answers name their source")
    };
    Ok(o.conclude(&problems, ok))
}

async fn unknown_like_foreign(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let Some(p) = &cx.partner else {
        return Ok(
            o.skip("the partner grant's manifest lists no rooftop the anonymous manifest lacks")
        );
    };
    let Some(foreign_vehicle) = &p.vehicle_id else {
        return Ok(o.skip("the partner rooftop has no vehicle"));
    };
    let Some(published) = cx
        .public_rooftops()
        .into_iter()
        .find(|r| cx.rooftop_org.get(r) == Some(&p.organization_id))
        .or_else(|| cx.public_rooftops().into_iter().next())
    else {
        return Ok(o.skip("the anonymous manifest lists no rooftop"));
    };
    let org = cx
        .rooftop_org
        .get(&published)
        .cloned()
        .unwrap_or_else(|| p.organization_id.clone());
    let anon = Caller::Anonymous;
    let unknown = cx
        .call(
            &anon,
            VERIFY,
            json!({"organization_id": org, "rooftop_id": published, "vehicle_id": cx.absent("veh")}),
        )
        .await?;
    let foreign = cx
        .call(
            &anon,
            VERIFY,
            json!({"organization_id": p.organization_id, "rooftop_id": p.rooftop_id, "vehicle_id": foreign_vehicle}),
        )
        .await?;
    o.saw(&unknown);
    o.saw(&foreign);
    if unknown.dap_code() == Some("dealeragent.rate_limited")
        || foreign.dap_code() == Some("dealeragent.rate_limited")
    {
        return Ok(o.skip("the gateway rate-limited anonymous verification"));
    }
    if !foreign.is_tool_error() {
        return Ok(o.fail("the foreign vehicle was verified for an anonymous caller"));
    }
    if normalized_error(&unknown) == normalized_error(&foreign) {
        Ok(o.pass("identical after removing error_id, trace_id, created_at"))
    } else {
        Ok(o.fail(format!(
            "unknown and foreign answers differ: {} vs {}",
            crate::report::cap(&normalized_error(&unknown), 200),
            crate::report::cap(&normalized_error(&foreign), 200)
        )))
    }
}
