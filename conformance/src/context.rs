//! What the suite learns about the gateway before the checks run: every id
//! is discovered from the gateway itself (server/discover, tools/list, the
//! manifest of each caller, dealer.get, search), never from demo data.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::client::{Caller, Client, ClientError, Exchange};
use crate::schemas::SchemaSet;

pub const GET_MANIFEST: &str = "dealeragent.discovery.get_manifest";
pub const DEALER_GET: &str = "dealeragent.dealer.get";
pub const SEARCH: &str = "dealeragent.inventory.search";
pub const GET_VEHICLE: &str = "dealeragent.inventory.get_vehicle";
pub const VERIFY: &str = "dealeragent.inventory.verify_availability";
pub const DISCLOSURE: &str = "dealeragent.pricing.get_disclosure";

/// Pages walked per search before the suite stops (kept in the report).
pub const MAX_PAGES: usize = 30;
/// Page size of the walks: small, so that aggregates span several pages.
pub const WALK_LIMIT: u64 = 10;
/// Most vehicles looked at in detail (get_vehicle, verify, disclosure).
const MAX_SAMPLES: usize = 12;
/// Most stale or unknown vehicles among them.
const MAX_STALE_SAMPLES: usize = 6;
/// Most further vehicles verified when no sampled one answered with an
/// availability result: a gateway may answer a listed vehicle with a
/// structured error (DAP 0.1 section 8, e.g. `dealeragent.vehicle.stale`),
/// and the availability schema check (DAPC-SCH-005) should not skip merely
/// because the first few sampled vehicles did.
pub const MAX_FURTHER_VERIFICATIONS: usize = 20;

/// One tool output the suite obtained, for the schema checks.
#[derive(Debug, Clone)]
pub struct Observed {
    pub tool: String,
    pub caller: String,
    pub is_error: bool,
    pub content: Value,
}

/// A paged search: every page's structuredContent, and whether the
/// [`MAX_PAGES`] bound cut it short.
#[derive(Debug, Clone)]
pub struct Walk {
    pub caller: Caller,
    pub organization_id: String,
    /// `None`: the group search (every rooftop the caller may read).
    pub rooftop_ids: Option<Vec<String>>,
    /// The rooftops the caller may read in this organization.
    pub visible: BTreeSet<String>,
    pub pages: Vec<Value>,
    /// When each page arrived.
    pub page_times: Vec<DateTime<Utc>>,
    pub truncated: bool,
    /// A page that came back as an error (the walk stopped there).
    pub error: Option<Exchange>,
}

impl Walk {
    pub fn vehicles(&self) -> impl Iterator<Item = &Value> {
        self.pages
            .iter()
            .filter_map(|p| p.get("vehicles").and_then(Value::as_array))
            .flatten()
    }
}

/// A vehicle looked at in detail, with what each tool said about it.
#[derive(Debug, Clone)]
pub struct Sample {
    pub caller: Caller,
    pub organization_id: String,
    pub rooftop_id: String,
    pub vehicle_id: String,
    /// The record as the search returned it.
    pub search_record: Value,
    pub get_vehicle: Option<Exchange>,
    pub verify: Option<Exchange>,
    pub disclosure: Option<Exchange>,
}

/// A rooftop some caller may read that another may not, with a vehicle.
#[derive(Debug, Clone)]
pub struct HiddenRooftop {
    /// The role that may read it.
    pub owner: String,
    pub organization_id: String,
    pub rooftop_id: String,
    pub vehicle_id: Option<String>,
}

/// Everything the checks share.
pub struct Ctx {
    pub client: Client,
    pub schemas: SchemaSet,
    pub endpoint: String,
    pub discover: Exchange,
    pub tools_list: Option<Exchange>,
    /// The anonymous manifest (structuredContent) and its exchange.
    pub manifest: Value,
    pub manifest_exchange: Option<Exchange>,
    /// Each supplied role's manifest.
    pub role_manifests: BTreeMap<String, Value>,
    /// rooftop id → organization id, from dealer.get of every caller.
    pub rooftop_org: BTreeMap<String, String>,
    /// Anonymous dealer.get output per organization.
    pub dealers: BTreeMap<String, Value>,
    /// The partner's unpublished rooftop (role `partner`).
    pub partner: Option<HiddenRooftop>,
    /// A rooftop `other-org` may read and `inventory` may not.
    pub foreign: Option<HiddenRooftop>,
    pub walks: Vec<Walk>,
    pub samples: Vec<Sample>,
    /// `verify_availability` of further vehicles (vehicle id, exchange),
    /// asked only when no sample answered with a result, and stopped at
    /// the first result (at most [`MAX_FURTHER_VERIFICATIONS`]).
    pub further_verifications: Vec<(String, Exchange)>,
    /// Why fewer details than wanted were gathered, if so.
    pub notes: Vec<String>,
    observed: Mutex<Vec<Observed>>,
    /// A made-up suffix for absent ids, unique per run.
    pub nonce: String,
    /// A browser origin the operator says the gateway allows.
    pub origin: Option<String>,
}

impl Ctx {
    /// Call a tool and keep its output for the schema checks.
    pub async fn call(
        &self,
        caller: &Caller,
        tool: &str,
        args: Value,
    ) -> Result<Exchange, ClientError> {
        let ex = self.client.call_tool(caller, tool, args).await?;
        self.observe(tool, caller, &ex);
        Ok(ex)
    }

    /// Keep a tool exchange's output for the schema checks.
    pub fn observe(&self, tool: &str, caller: &Caller, ex: &Exchange) {
        if let Some(content) = ex.structured()
            && let Ok(mut seen) = self.observed.lock()
        {
            seen.push(Observed {
                tool: tool.to_owned(),
                caller: caller.label(),
                is_error: ex.is_tool_error(),
                content: content.clone(),
            });
        }
    }

    /// Every tool output obtained so far.
    pub fn observed(&self) -> Vec<Observed> {
        self.observed.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Every tool output obtained so far from a tool under DAP's error
    /// rules: all but the tools of the Auto Agent Protocol's MCP binding
    /// (named `aap_<skill>`), which a gateway may serve beside its DAP
    /// tools as a compatibility adapter and which answer with AAP's own
    /// error object (`aap.error`), not DAP's.
    pub fn observed_dap(&self) -> Vec<Observed> {
        self.observed()
            .into_iter()
            .filter(|x| !is_aap_binding_tool(&x.tool))
            .collect()
    }

    /// A made-up id of `prefix` that no gateway has.
    pub fn absent(&self, prefix: &str) -> String {
        format!("{prefix}.dapc-absent-{}", self.nonce)
    }

    /// The anonymous manifest's rooftop ids.
    pub fn public_rooftops(&self) -> BTreeSet<String> {
        ids(&self.manifest, "rooftop_ids")
    }

    /// The rooftop ids `role`'s manifest lists.
    pub fn role_rooftops(&self, role: &str) -> BTreeSet<String> {
        self.role_manifests
            .get(role)
            .map(|m| ids(m, "rooftop_ids"))
            .unwrap_or_default()
    }

    /// The rooftops `caller` may read.
    pub fn visible_to(&self, caller: &Caller) -> BTreeSet<String> {
        match caller {
            Caller::Anonymous => self.public_rooftops(),
            Caller::Role(role) => self.role_rooftops(role),
        }
    }

    /// The manifest's freshness SLA of `rooftop` for `kind` (inventory,
    /// availability, pricing), in seconds.
    /// A rooftop only a grant may read has its SLA in that grant's manifest.
    pub fn sla(&self, rooftop: &str, kind: &str) -> Option<i64> {
        let of = |m: &Value| {
            m.get("freshness_sla_seconds")?
                .get(rooftop)?
                .get(kind)?
                .as_i64()
        };
        of(&self.manifest).or_else(|| self.role_manifests.values().find_map(of))
    }

    /// Names of every tool in tools/list.
    pub fn tool_names(&self) -> Vec<String> {
        self.tools()
            .iter()
            .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
            .collect()
    }

    /// The tool objects of tools/list.
    pub fn tools(&self) -> Vec<Value> {
        self.tools_list
            .as_ref()
            .and_then(|ex| ex.result())
            .and_then(|r| r.get("tools"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    /// A published rooftop of some organization with at least `n`
    /// vehicles in the anonymous walks: (organization, rooftop).
    pub fn rooftop_with_vehicles(&self, n: usize) -> Option<(String, String)> {
        let mut counts: BTreeMap<(String, String), usize> = BTreeMap::new();
        for walk in self.walks.iter().filter(|w| w.caller == Caller::Anonymous) {
            for v in walk.vehicles() {
                if let Some(r) = v.get("rooftop_id").and_then(Value::as_str) {
                    *counts
                        .entry((walk.organization_id.clone(), r.to_owned()))
                        .or_default() += 1;
                }
            }
        }
        counts.into_iter().find(|(_, c)| *c >= n).map(|(k, _)| k)
    }

    /// The best caller for a detail read of a vehicle in `rooftop`: the
    /// `inventory` role when it may read the rooftop (token callers are
    /// not held to the anonymous tool quota), else anonymous.
    pub fn reader_for(&self, rooftop: &str) -> Caller {
        if self.role_rooftops("inventory").contains(rooftop) {
            Caller::role("inventory")
        } else {
            Caller::Anonymous
        }
    }
}

/// A tool of the AAP MCP binding (`aap_<skill>`), outside DAP's error
/// rules.
/// The argument that asks `tool` for its fullest answer, when its input
/// schema in `tools` (the objects of `tools/list`) offers a level of detail:
/// a string member whose allowed values include `full`. DAP defines none,
/// so on a gateway without one this is `None` and its default answer is
/// the whole record; a gateway that answers concise records by default
/// (e.g. to fit an agent's result budget) is read in full, so a check sees
/// every member a record holds, whichever gateway it runs against.
pub fn full_detail(tools: &[Value], tool: &str) -> Option<(String, Value)> {
    let schema = tools
        .iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some(tool))?
        .get("inputSchema")?;
    let props = schema.get("properties")?.as_object()?;
    props.iter().find_map(|(name, p)| {
        let values = p.get("enum")?.as_array()?;
        values
            .iter()
            .any(|v| v == "full")
            .then(|| (name.clone(), json!("full")))
    })
}

pub fn is_aap_binding_tool(name: &str) -> bool {
    name.starts_with("aap_")
}

/// A string array member of `v` as a set.
pub fn ids(v: &Value, member: &str) -> BTreeSet<String> {
    v.get(member)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Parse an RFC 3339 timestamp member.
pub fn time_of(v: &Value, member: &str) -> Option<DateTime<Utc>> {
    v.get(member)
        .and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// The freshness state of a record (`freshness.state`).
pub fn freshness_state(v: &Value) -> Option<&str> {
    v.get("freshness")?.get("state")?.as_str()
}

/// Gather the context: fails only when the endpoint does not answer.
pub async fn discover(
    client: Client,
    schemas: SchemaSet,
    endpoint: &str,
) -> Result<Ctx, ClientError> {
    let anon = Caller::Anonymous;
    let discover = client.modern(&anon, "server/discover", json!({})).await?;
    let tools_list = client.modern(&anon, "tools/list", json!({})).await.ok();
    let mut cx = Ctx {
        client,
        schemas,
        endpoint: endpoint.to_owned(),
        discover,
        tools_list,
        manifest: Value::Null,
        manifest_exchange: None,
        role_manifests: BTreeMap::new(),
        rooftop_org: BTreeMap::new(),
        dealers: BTreeMap::new(),
        partner: None,
        foreign: None,
        walks: Vec::new(),
        samples: Vec::new(),
        further_verifications: Vec::new(),
        notes: Vec::new(),
        observed: Mutex::new(Vec::new()),
        nonce: uuid::Uuid::new_v4().simple().to_string()[..12].to_owned(),
        origin: None,
    };
    let ex = cx.call(&anon, GET_MANIFEST, json!({})).await?;
    cx.manifest = ex.tool_ok().cloned().unwrap_or(Value::Null);
    cx.manifest_exchange = Some(ex);
    for role in cx.client.roles() {
        let ex = cx
            .call(&Caller::role(&role), GET_MANIFEST, json!({}))
            .await?;
        if let Some(m) = ex.tool_ok() {
            cx.role_manifests.insert(role, m.clone());
        }
    }
    learn_dealers(&mut cx).await?;
    cx.partner = hidden_rooftop(&cx, "partner", &cx.public_rooftops()).await?;
    if cx.client.has_role("inventory") {
        let seen = cx.role_rooftops("inventory");
        cx.foreign = hidden_rooftop(&cx, "other-org", &seen).await?;
    }
    walk_all(&mut cx).await?;
    sample(&mut cx).await?;
    verify_further(&mut cx).await?;
    Ok(cx)
}

/// dealer.get of every organization each caller's manifest lists.
async fn learn_dealers(cx: &mut Ctx) -> Result<(), ClientError> {
    let mut callers = vec![(Caller::Anonymous, ids(&cx.manifest, "organization_ids"))];
    for (role, m) in &cx.role_manifests {
        callers.push((Caller::role(role), ids(m, "organization_ids")));
    }
    for (caller, orgs) in callers {
        for org in orgs {
            let ex = cx
                .call(&caller, DEALER_GET, json!({"organization_id": org}))
                .await?;
            let Some(out) = ex.tool_ok() else { continue };
            for r in out
                .get("rooftops")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(id) = r.get("rooftop_id").and_then(Value::as_str) {
                    cx.rooftop_org.insert(id.to_owned(), org.clone());
                }
            }
            if caller == Caller::Anonymous {
                cx.dealers.insert(org.clone(), out.clone());
            }
        }
    }
    Ok(())
}

/// A rooftop `owner`'s manifest lists and `seen` does not, with one of
/// its vehicles found by searching as `owner`.
async fn hidden_rooftop(
    cx: &Ctx,
    owner: &str,
    seen: &BTreeSet<String>,
) -> Result<Option<HiddenRooftop>, ClientError> {
    if !cx.client.has_role(owner) {
        return Ok(None);
    }
    let candidates: Vec<String> = cx.role_rooftops(owner).difference(seen).cloned().collect();
    for rooftop in candidates {
        let Some(org) = cx.rooftop_org.get(&rooftop).cloned() else {
            continue;
        };
        let ex = cx
            .call(
                &Caller::role(owner),
                SEARCH,
                json!({"organization_id": org, "rooftop_ids": [rooftop], "page": {"limit": 5}}),
            )
            .await?;
        let vehicle_id = ex
            .tool_ok()
            .and_then(|o| o.get("vehicles"))
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(|v| v.get("vehicle_id"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        return Ok(Some(HiddenRooftop {
            owner: owner.to_owned(),
            organization_id: org,
            rooftop_id: rooftop,
            vehicle_id,
        }));
    }
    Ok(None)
}

/// Page through a search, at most [`MAX_PAGES`] pages.
pub async fn walk(
    cx: &Ctx,
    caller: &Caller,
    organization_id: &str,
    rooftop_ids: Option<Vec<String>>,
    limit: u64,
) -> Result<Walk, ClientError> {
    let mut args = json!({"organization_id": organization_id, "page": {"limit": limit}});
    if let Some(r) = &rooftop_ids {
        args["rooftop_ids"] = json!(r);
    }
    // The walks feed checks that read optional members (a used vehicle's
    // tenure and history): ask for whole records where the gateway offers
    // a level of detail.
    if let Some((name, full)) = full_detail(&cx.tools(), SEARCH) {
        args[name] = full;
    }
    let visible: BTreeSet<String> = cx
        .visible_to(caller)
        .into_iter()
        .filter(|r| cx.rooftop_org.get(r).map(String::as_str) == Some(organization_id))
        .collect();
    let mut w = Walk {
        caller: caller.clone(),
        organization_id: organization_id.to_owned(),
        rooftop_ids,
        visible,
        pages: Vec::new(),
        page_times: Vec::new(),
        truncated: false,
        error: None,
    };
    loop {
        let ex = cx.call(caller, SEARCH, args.clone()).await?;
        let Some(page) = ex.tool_ok().cloned() else {
            w.error = Some(ex);
            break;
        };
        let next = page
            .get("page")
            .and_then(|p| p.get("next_cursor"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        w.pages.push(page);
        w.page_times.push(ex.received_at);
        let Some(next) = next else { break };
        if w.pages.len() >= MAX_PAGES {
            w.truncated = true;
            break;
        }
        args["page"]["cursor"] = json!(next);
    }
    Ok(w)
}

async fn walk_all(cx: &mut Ctx) -> Result<(), ClientError> {
    let mut walks = Vec::new();
    for org in ids(&cx.manifest, "organization_ids") {
        walks.push(walk(cx, &Caller::Anonymous, &org, None, WALK_LIMIT).await?);
    }
    // The rooftops only a grant may read are walked with that grant.
    for hidden in [cx.partner.clone(), cx.foreign.clone()]
        .into_iter()
        .flatten()
    {
        walks.push(
            walk(
                cx,
                &Caller::role(&hidden.owner),
                &hidden.organization_id,
                Some(vec![hidden.rooftop_id.clone()]),
                WALK_LIMIT,
            )
            .await?,
        );
    }
    for w in &walks {
        if w.truncated {
            cx.notes.push(format!(
                "the search walk of {} ({}) stopped after {MAX_PAGES} pages",
                w.organization_id,
                w.caller.label()
            ));
        }
    }
    cx.walks = walks;
    Ok(())
}

/// Whether a search record is stale or unknown, or older than its
/// rooftop's inventory SLA (both must never read `current` elsewhere).
fn is_doubtful(cx: &Ctx, v: &Value) -> bool {
    let state = freshness_state(v);
    if matches!(state, Some("stale" | "unknown")) {
        return true;
    }
    let rooftop = v.get("rooftop_id").and_then(Value::as_str).unwrap_or("");
    match (
        v.get("freshness").and_then(|f| time_of(f, "observed_at")),
        cx.sla(rooftop, "inventory"),
    ) {
        (Some(observed), Some(sla)) => (Utc::now() - observed).num_seconds() > sla,
        _ => false,
    }
}

/// Look at a few vehicles in detail: every stale or unknown one first (up
/// to a bound), then one per rooftop.
async fn sample(cx: &mut Ctx) -> Result<(), ClientError> {
    let mut picked: Vec<(Caller, String, Value)> = Vec::new();
    let mut seen = BTreeSet::new();
    for w in &cx.walks {
        for v in w.vehicles() {
            if picked.len() >= MAX_STALE_SAMPLES {
                break;
            }
            let id = v.get("vehicle_id").and_then(Value::as_str).unwrap_or("");
            if is_doubtful(cx, v) && seen.insert(id.to_owned()) {
                picked.push((w.caller.clone(), w.organization_id.clone(), v.clone()));
            }
        }
    }
    let mut rooftops_done = BTreeSet::new();
    for w in &cx.walks {
        for v in w.vehicles() {
            if picked.len() >= MAX_SAMPLES {
                break;
            }
            let id = v.get("vehicle_id").and_then(Value::as_str).unwrap_or("");
            let rooftop = v.get("rooftop_id").and_then(Value::as_str).unwrap_or("");
            if rooftops_done.insert(rooftop.to_owned()) && seen.insert(id.to_owned()) {
                picked.push((w.caller.clone(), w.organization_id.clone(), v.clone()));
            }
        }
    }
    let mut samples = Vec::new();
    for (walker, org, record) in picked {
        let rooftop = record
            .get("rooftop_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let vehicle_id = record
            .get("vehicle_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let caller = match walker {
            Caller::Anonymous => cx.reader_for(&rooftop),
            role => role,
        };
        let args = json!({"organization_id": org, "rooftop_id": rooftop, "vehicle_id": vehicle_id});
        let get_vehicle = Some(cx.call(&caller, GET_VEHICLE, args.clone()).await?);
        let verify = Some(cx.call(&caller, VERIFY, args.clone()).await?);
        // The partner grant may lack the pricing scope: disclose published
        // vehicles only (anonymous or inventory).
        let disclosure = if caller == Caller::role("partner") {
            None
        } else {
            Some(cx.call(&caller, DISCLOSURE, args).await?)
        };
        samples.push(Sample {
            caller,
            organization_id: org,
            rooftop_id: rooftop,
            vehicle_id,
            search_record: record,
            get_vehicle,
            verify,
            disclosure,
        });
    }
    cx.samples = samples;
    Ok(())
}

/// When no sampled vehicle's `verify_availability` answered with a
/// result, verify further listed vehicles (bounded, in walk order) until
/// one does, so the checks of availability results have one to look at.
async fn verify_further(cx: &mut Ctx) -> Result<(), ClientError> {
    let answered = cx
        .samples
        .iter()
        .any(|s| s.verify.as_ref().and_then(Exchange::tool_ok).is_some());
    if answered || cx.samples.is_empty() {
        return Ok(());
    }
    let sampled: BTreeSet<&str> = cx.samples.iter().map(|s| s.vehicle_id.as_str()).collect();
    let mut candidates: Vec<(Caller, String, String, String)> = Vec::new();
    let mut seen = BTreeSet::new();
    for w in &cx.walks {
        for v in w.vehicles() {
            let id = v.get("vehicle_id").and_then(Value::as_str).unwrap_or("");
            let rooftop = v.get("rooftop_id").and_then(Value::as_str).unwrap_or("");
            if id.is_empty() || sampled.contains(id) || !seen.insert(id.to_owned()) {
                continue;
            }
            let caller = match &w.caller {
                Caller::Anonymous => cx.reader_for(rooftop),
                role => role.clone(),
            };
            candidates.push((
                caller,
                w.organization_id.clone(),
                rooftop.to_owned(),
                id.to_owned(),
            ));
        }
    }
    let mut further = Vec::new();
    for (caller, org, rooftop, vehicle) in candidates.into_iter().take(MAX_FURTHER_VERIFICATIONS) {
        let args = json!({"organization_id": org, "rooftop_id": rooftop, "vehicle_id": vehicle});
        let ex = cx.call(&caller, VERIFY, args).await?;
        let done = ex.tool_ok().is_some();
        further.push((vehicle, ex));
        if done {
            break;
        }
    }
    if !further.iter().any(|(_, ex)| ex.tool_ok().is_some()) {
        cx.notes.push(format!(
            "no verify_availability answered with a result: {} sampled and {} further vehicles asked",
            cx.samples.len(),
            further.len()
        ));
    }
    cx.further_verifications = further;
    Ok(())
}

/// A tool error's structuredContent without its per-request ids
/// (`error_id`, `trace_id`, `created_at`), serialized in the gateway's
/// own member order, for byte comparison.
pub fn normalized_error(ex: &Exchange) -> String {
    let mut v = ex.structured().cloned().unwrap_or(Value::Null);
    if let Some(map) = v.as_object_mut() {
        for key in ["error_id", "trace_id", "created_at"] {
            map.remove(key);
        }
    }
    format!(
        "HTTP {} isError={} {}",
        ex.status,
        ex.is_tool_error(),
        if v.is_null() {
            ex.raw.clone()
        } else {
            v.to_string()
        }
    )
}
