//! DAPC-SCH: every tool output the suite obtained, success and error,
//! validates unchanged against the DAP 0.1 schema for it ("schema validity
//! alone is not conformance", but it is required). Runs last, over every
//! output the other groups collected.

use serde_json::{Value, json};

use super::Check;
use crate::client::{Caller, ClientError};
use crate::context::{Ctx, GET_VEHICLE, SEARCH};
use crate::report::Outcome;
use crate::schemas::Kind;

const G: &str = "schema";

pub const CHECKS: &[Check] = &[
    Check {
        id: "DAPC-SCH-001",
        group: G,
        title: "manifest outputs validate",
        section: "DAP 0.1 schemas (manifest)",
        keyword: "MUST",
        text: "every get_manifest output validates against the DAP manifest schema",
        required: true,
        roles: &[],
        run: |cx| Box::pin(kind(cx, Kind::Manifest)),
    },
    Check {
        id: "DAPC-SCH-002",
        group: G,
        title: "dealer.get outputs validate",
        section: "DAP 0.1 schemas (dealer)",
        keyword: "MUST",
        text: "every dealer.get output validates against the DAP dealer response schema",
        required: true,
        roles: &[],
        run: |cx| Box::pin(kind(cx, Kind::Dealer)),
    },
    Check {
        id: "DAPC-SCH-003",
        group: G,
        title: "search outputs validate",
        section: "DAP 0.1 schemas (vehicle: search result)",
        keyword: "MUST",
        text: "every inventory.search output validates against the DAP search result schema",
        required: true,
        roles: &[],
        run: |cx| Box::pin(kind(cx, Kind::Search)),
    },
    Check {
        id: "DAPC-SCH-004",
        group: G,
        title: "get_vehicle outputs validate",
        section: "DAP 0.1 schemas (vehicle detail)",
        keyword: "MUST",
        text: "every inventory.get_vehicle output validates against the DAP vehicle schema",
        required: true,
        roles: &[],
        run: |cx| Box::pin(kind(cx, Kind::Vehicle)),
    },
    Check {
        id: "DAPC-SCH-005",
        group: G,
        title: "verify_availability outputs validate",
        section: "DAP 0.1 schemas (availability result)",
        keyword: "MUST",
        text: "every inventory.verify_availability output validates against the DAP availability result schema",
        required: true,
        roles: &[],
        run: |cx| Box::pin(kind(cx, Kind::Availability)),
    },
    Check {
        id: "DAPC-SCH-006",
        group: G,
        title: "get_disclosure outputs validate",
        section: "DAP 0.1 schemas (pricing disclosure)",
        keyword: "MUST",
        text: "every pricing.get_disclosure output validates against the DAP pricing disclosure schema",
        required: true,
        roles: &[],
        run: |cx| Box::pin(kind(cx, Kind::Disclosure)),
    },
    Check {
        id: "DAPC-SCH-007",
        group: G,
        title: "every error output validates as a DAP error",
        section: "DAP 0.1 schemas (error); errors",
        keyword: "MUST",
        text: "every isError result's structuredContent validates against the DAP error schema",
        required: true,
        roles: &[],
        run: |cx| Box::pin(errors_valid(cx)),
    },
    Check {
        id: "DAPC-SCH-008",
        group: G,
        title: "field errors point at members with JSON pointers",
        section: "DAP 0.1 errors (field_errors)",
        keyword: "MUST",
        text: "every field_errors[].instance_location is a JSON pointer starting with \"/\" (a root error points at the member, e.g. /organization_id)",
        required: true,
        roles: &[],
        run: |cx| Box::pin(pointers(cx)),
    },
];

async fn kind(cx: &Ctx, kind: Kind) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let outputs: Vec<_> = cx
        .observed()
        .into_iter()
        .filter(|x| !x.is_error && Kind::of_tool(&x.tool) == Some(kind))
        .collect();
    if outputs.is_empty() {
        let mut reason = format!("no successful {} was obtained", kind.label());
        if kind == Kind::Availability {
            // The context verified further vehicles before giving up
            // (context::MAX_FURTHER_VERIFICATIONS): say how many were asked.
            let sampled = cx.samples.iter().filter(|s| s.verify.is_some()).count();
            reason.push_str(&format!(
                " ({sampled} sampled and {} further vehicles asked)",
                cx.further_verifications.len()
            ));
        }
        return Ok(o.skip(reason));
    }
    let mut problems = Vec::new();
    for x in &outputs {
        let errors = cx.schemas.errors(kind, &x.content);
        if !errors.is_empty() {
            if o.evidence.len() < 2 {
                o.evidence.push(json!({
                    "tool": x.tool, "caller": x.caller,
                    "output": crate::report::trim(&x.content, 0),
                    "schema_errors": errors.iter().take(5).collect::<Vec<_>>(),
                }));
            }
            problems.push(format!("{} ({}): {}", x.tool, x.caller, errors.join("; ")));
        }
    }
    Ok(o.conclude(
        &problems,
        format!(
            "{} outputs valid against {} ({})",
            outputs.len(),
            cx.schemas.pointer(kind),
            cx.schemas.source
        ),
    ))
}

/// Provoke a root-level and a nested validation error so there is always
/// something to look at.
async fn provoke(cx: &Ctx) -> Result<(), ClientError> {
    let (org, rooftop) = cx
        .public_rooftops()
        .into_iter()
        .find_map(|r| cx.rooftop_org.get(&r).map(|o| (o.clone(), r)))
        .unwrap_or_else(|| (cx.absent("org"), cx.absent("roof")));
    for (tool, args) in [
        (SEARCH, json!({"organization_id": org, "dapc_unknown": 1})),
        (
            SEARCH,
            json!({"organization_id": org, "page": {"limit": 0}}),
        ),
        (SEARCH, json!({})),
        (
            GET_VEHICLE,
            json!({"organization_id": org, "rooftop_id": rooftop}),
        ),
    ] {
        cx.call(&Caller::Anonymous, tool, args).await?;
    }
    Ok(())
}

async fn errors_valid(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    provoke(cx).await?;
    let errors: Vec<_> = cx
        .observed_dap()
        .into_iter()
        .filter(|x| x.is_error)
        .collect();
    let mut problems = Vec::new();
    for x in &errors {
        let found = cx.schemas.errors(Kind::Error, &x.content);
        if !found.is_empty() {
            if o.evidence.len() < 2 {
                o.evidence.push(json!({
                    "tool": x.tool, "caller": x.caller,
                    "output": crate::report::trim(&x.content, 0),
                    "schema_errors": found.iter().take(5).collect::<Vec<_>>(),
                }));
            }
            problems.push(format!("{} error: {}", x.tool, found.join("; ")));
        }
    }
    Ok(o.conclude(
        &problems,
        format!(
            "{} error outputs valid against {}",
            errors.len(),
            cx.schemas.pointer(Kind::Error)
        ),
    ))
}

async fn pointers(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    provoke(cx).await?;
    let mut problems = Vec::new();
    let mut seen = 0usize;
    for x in cx.observed().into_iter().filter(|x| x.is_error) {
        let fields = x
            .content
            .get("details")
            .and_then(|d| d.get("field_errors"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for f in fields {
            let Some(loc) = f.get("instance_location") else {
                continue;
            };
            seen += 1;
            if !loc.as_str().is_some_and(|s| s.starts_with('/')) {
                if o.evidence.len() < 2 {
                    o.evidence
                        .push(json!({"tool": x.tool, "field_error": f.clone()}));
                }
                problems.push(format!(
                    "{}: instance_location {loc} ({:?}) is not a JSON pointer starting with /",
                    x.tool,
                    f.get("keyword")
                ));
            }
        }
    }
    if seen == 0 {
        return Ok(o.skip("no field error with an instance_location was obtained"));
    }
    Ok(o.conclude(&problems, format!("{seen} instance locations are pointers")))
}
