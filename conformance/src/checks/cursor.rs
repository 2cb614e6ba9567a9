//! DAPC-CUR: cursor scope. A search cursor is bound to its query, caller
//! and rooftop set (DAP 0.1 inventory.read, pagination); anywhere else it
//! is rejected, and the rejection discloses nothing.

use serde_json::{Value, json};

use super::Check;
use crate::client::{Caller, ClientError, Exchange};
use crate::context::{Ctx, SEARCH};
use crate::report::Outcome;

const G: &str = "cursor";

pub const CHECKS: &[Check] = &[
    Check {
        id: "DAPC-CUR-001",
        group: G,
        title: "a tampered cursor is rejected without echo",
        section: "DAP 0.1 inventory.read (pagination); errors",
        keyword: "MUST",
        text: "a cursor with one character changed is rejected with dealeragent.validation.invalid that echoes neither cursor and holds no vehicle data",
        required: true,
        roles: &[],
        run: |cx| Box::pin(tampered(cx)),
    },
    Check {
        id: "DAPC-CUR-002",
        group: G,
        title: "a cursor replayed with another query is rejected",
        section: "DAP 0.1 inventory.read (pagination)",
        keyword: "MUST",
        text: "a next_cursor sent with a different sort or filter is rejected",
        required: true,
        roles: &[],
        run: |cx| Box::pin(other_query(cx)),
    },
    Check {
        id: "DAPC-CUR-003",
        group: G,
        title: "a cursor replayed by another caller is rejected",
        section: "DAP 0.1 inventory.read (pagination); section 7",
        keyword: "MUST",
        text: "an anonymous cursor sent with the inventory token, and the inventory grant's cursor sent anonymously, are rejected",
        required: true,
        roles: &["inventory"],
        run: |cx| Box::pin(other_caller(cx)),
    },
    Check {
        id: "DAPC-CUR-004",
        group: G,
        title: "a cursor replayed with another rooftop set is rejected",
        section: "DAP 0.1 inventory.read (pagination); section 7",
        keyword: "MUST",
        text: "a cursor of a search over some rooftops sent with a different rooftop set is rejected",
        required: true,
        roles: &[],
        run: |cx| Box::pin(other_rooftops(cx)),
    },
];

/// The first page of a search with limit 1: the arguments and its cursor.
async fn first_page(
    cx: &Ctx,
    caller: &Caller,
    args: Value,
) -> Result<(Exchange, Option<String>), ClientError> {
    let ex = cx.call(caller, SEARCH, args).await?;
    let cursor = ex
        .tool_ok()
        .and_then(|r| r.get("page"))
        .and_then(|p| p.get("next_cursor"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok((ex, cursor))
}

/// A published rooftop with two or more vehicles: (organization, rooftop).
fn target(cx: &Ctx) -> Result<(String, String), String> {
    cx.rooftop_with_vehicles(2)
        .ok_or_else(|| "no published rooftop has two vehicles, so no search has a next page".into())
}

fn base_args(org: &str, rooftops: Option<&[String]>) -> Value {
    let mut a = json!({"organization_id": org, "page": {"limit": 1}});
    if let Some(r) = rooftops {
        a["rooftop_ids"] = json!(r);
    }
    a
}

/// Vehicle ids of `ex`'s first page, to find them in a rejection.
fn vehicle_ids(ex: &Exchange) -> Vec<String> {
    ex.tool_ok()
        .and_then(|r| r.get("vehicles"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            v.get("vehicle_id")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

/// Whether `replay` is a clean rejection: an error result that echoes no
/// cursor and holds no vehicle data. Adds what is wrong to `problems`.
fn rejected(
    what: &str,
    replay: &Exchange,
    cursors: &[&str],
    vehicles: &[String],
    problems: &mut Vec<String>,
) {
    if !replay.is_tool_error() {
        problems.push(format!(
            "{what}: accepted (HTTP {}, not an error result)",
            replay.status
        ));
        return;
    }
    let all = replay.everything();
    if cursors.iter().any(|c| !c.is_empty() && all.contains(c)) {
        problems.push(format!("{what}: the rejection echoes the cursor"));
    }
    if replay
        .structured()
        .is_some_and(|s| s.get("vehicles").is_some())
        || vehicles.iter().any(|v| all.contains(v.as_str()))
    {
        problems.push(format!("{what}: the rejection holds vehicle data"));
    }
}

async fn tampered(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let (org, rooftop) = match target(cx) {
        Ok(t) => t,
        Err(why) => return Ok(o.skip(why)),
    };
    let args = base_args(&org, Some(std::slice::from_ref(&rooftop)));
    let (first, cursor) = first_page(cx, &Caller::Anonymous, args.clone()).await?;
    o.saw(&first);
    let Some(cursor) = cursor else {
        return Ok(o.fail("a limit-1 search of a rooftop with two vehicles gave no next_cursor"));
    };
    // Change one character in the middle: a valid-looking but forged cursor.
    let mut chars: Vec<char> = cursor.chars().collect();
    let at = chars.len() / 2;
    chars[at] = if chars[at] == 'A' { 'B' } else { 'A' };
    let forged: String = chars.into_iter().collect();
    let mut replay_args = args;
    replay_args["page"]["cursor"] = json!(forged);
    let replay = cx.call(&Caller::Anonymous, SEARCH, replay_args).await?;
    o.saw(&replay);
    let mut problems = Vec::new();
    rejected(
        "tampered cursor",
        &replay,
        &[&cursor, &forged],
        &vehicle_ids(&first),
        &mut problems,
    );
    if replay.is_tool_error() && replay.dap_code() != Some("dealeragent.validation.invalid") {
        problems.push(format!(
            "tampered cursor: code {:?}, expected dealeragent.validation.invalid",
            replay.dap_code()
        ));
    }
    Ok(o.conclude(&problems, "rejected as invalid, nothing echoed"))
}

async fn other_query(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let (org, rooftop) = match target(cx) {
        Ok(t) => t,
        Err(why) => return Ok(o.skip(why)),
    };
    let args = base_args(&org, Some(std::slice::from_ref(&rooftop)));
    let (first, cursor) = first_page(cx, &Caller::Anonymous, args.clone()).await?;
    o.saw(&first);
    let Some(cursor) = cursor else {
        return Ok(o.fail("a limit-1 search of a rooftop with two vehicles gave no next_cursor"));
    };
    let vehicles = vehicle_ids(&first);
    let mut problems = Vec::new();
    let mut sorted = args.clone();
    sorted["sort"] = json!({"field": "year", "order": "desc"});
    sorted["page"]["cursor"] = json!(cursor);
    let replay = cx.call(&Caller::Anonymous, SEARCH, sorted).await?;
    o.saw(&replay);
    rejected(
        "cursor with another sort",
        &replay,
        &[&cursor],
        &vehicles,
        &mut problems,
    );
    let mut filtered = args;
    filtered["filters"] = json!({"year_min": 1990});
    filtered["page"]["cursor"] = json!(cursor);
    let replay = cx.call(&Caller::Anonymous, SEARCH, filtered).await?;
    o.saw(&replay);
    rejected(
        "cursor with another filter",
        &replay,
        &[&cursor],
        &vehicles,
        &mut problems,
    );
    Ok(o.conclude(&problems, "rejected under another sort and filter"))
}

async fn other_caller(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let inv = Caller::role("inventory");
    let visible = cx.role_rooftops("inventory");
    let Some((org, rooftop)) = cx
        .rooftop_with_vehicles(2)
        .filter(|(_, r)| visible.contains(r))
    else {
        return Ok(
            o.skip("no rooftop both anonymous and the inventory grant may read has two vehicles")
        );
    };
    let args = base_args(&org, Some(std::slice::from_ref(&rooftop)));
    let mut problems = Vec::new();
    for (from, to) in [
        (Caller::Anonymous, inv.clone()),
        (inv.clone(), Caller::Anonymous),
    ] {
        let (first, cursor) = first_page(cx, &from, args.clone()).await?;
        let Some(cursor) = cursor else {
            o.saw(&first);
            problems.push(format!("{}: no next_cursor", from.label()));
            continue;
        };
        let mut replay_args = args.clone();
        replay_args["page"]["cursor"] = json!(cursor);
        let replay = cx.call(&to, SEARCH, replay_args).await?;
        o.saw(&replay);
        rejected(
            &format!("{}'s cursor sent by {}", from.label(), to.label()),
            &replay,
            &[&cursor],
            &vehicle_ids(&first),
            &mut problems,
        );
    }
    Ok(o.conclude(&problems, "rejected in both directions"))
}

async fn other_rooftops(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let (org, rooftop) = match target(cx) {
        Ok(t) => t,
        Err(why) => return Ok(o.skip(why)),
    };
    let public = cx.public_rooftops();
    let Some(other) = cx
        .rooftop_org
        .iter()
        .find(|(r, g)| **g == org && **r != rooftop && public.contains(*r))
        .map(|(r, _)| r.clone())
    else {
        return Ok(o.skip("the organization has a single published rooftop"));
    };
    let one = vec![rooftop.clone()];
    let args = base_args(&org, Some(&one));
    let (first, cursor) = first_page(cx, &Caller::Anonymous, args).await?;
    o.saw(&first);
    let Some(cursor) = cursor else {
        return Ok(o.fail("a limit-1 search of a rooftop with two vehicles gave no next_cursor"));
    };
    let mut problems = Vec::new();
    let vehicles = vehicle_ids(&first);
    for (what, set) in [
        (
            "cursor with a wider rooftop set",
            Some(vec![rooftop.clone(), other.clone()]),
        ),
        ("cursor with another rooftop", Some(vec![other.clone()])),
        ("cursor with every rooftop (group search)", None),
    ] {
        let mut replay_args = base_args(&org, set.as_deref());
        replay_args["page"]["cursor"] = json!(cursor);
        let replay = cx.call(&Caller::Anonymous, SEARCH, replay_args).await?;
        o.saw(&replay);
        rejected(what, &replay, &[&cursor], &vehicles, &mut problems);
    }
    Ok(o.conclude(&problems, "rejected under other rooftop sets"))
}
