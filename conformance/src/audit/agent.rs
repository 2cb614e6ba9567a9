//! The scripted agent's reach into a gateway: one caller, the tools the
//! gateway says it has, and a [`Session`] per question that keeps every
//! tool result it reads (the evidence and the token cost of its answer).
//!
//! The agent speaks MCP `tools/call` only, to DAP tool names; an extension
//! tool (`dealergateway.offers.evaluate`) is used only when `tools/list`
//! offers it. Every search names its `page.limit`.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::Utc;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::answer::{Citation, Read};
use super::wire::{
    AvailabilityResult, Dealer, Disclosure, Freshness, Provenance, SearchPage, UsedDetails, Vehicle,
};
use crate::client::{Caller, Client, ClientError, Exchange};
use crate::context::{DEALER_GET, DISCLOSURE, GET_VEHICLE, SEARCH, VERIFY};

/// DAP's optional used-vehicle tool and profile.
pub const USED_DETAILS: &str = "dealeragent.inventory.get_used_vehicle_details";
pub const USED_PROFILE: &str = "dealeragent.used-vehicle.read/0.1";
/// This gateway family's offers extension (`dealergateway.offers/0.1`):
/// optional, never required by DAP.
pub const OFFERS_EVALUATE: &str = "dealergateway.offers.evaluate";

/// Longest wait the agent accepts from a `dealeragent.rate_limited`
/// answer's `retry_after_ms` before it gives up on that call.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(65);
/// Attempts per call when the gateway rate-limits it.
const MAX_ATTEMPTS: usize = 3;

/// What the agent knows before any question: who it is, which
/// organization it shops, and what the gateway offers.
pub struct Env {
    pub client: Client,
    pub caller: Caller,
    pub organization_id: String,
    pub dealer: Dealer,
    /// Tool objects of `tools/list` (names and input schemas).
    pub tools: Vec<Value>,
    /// Profiles the manifest lists under `capabilities`.
    pub profiles: BTreeSet<String>,
}

impl Env {
    /// Whether `tools/list` offers `name`.
    pub fn offers(&self, name: &str) -> bool {
        self.tools
            .iter()
            .any(|t| t.get("name").and_then(Value::as_str) == Some(name))
    }

    /// Whether the manifest advertises `profile`.
    pub fn advertises(&self, profile: &str) -> bool {
        self.profiles.contains(profile)
    }

    /// The rooftop `id` of the audited organization.
    pub fn rooftop(&self, id: &str) -> Option<&super::wire::Rooftop> {
        self.dealer.rooftops.iter().find(|r| r.rooftop_id == id)
    }

    /// The argument that asks `tool` for its fullest answer, when its input
    /// schema offers a level of detail (a string member whose allowed values
    /// include `full`). DAP defines none, so this is empty on a gateway
    /// without one; the grader uses it to see everything a record holds.
    pub fn full_detail(&self, tool: &str) -> Option<(String, Value)> {
        crate::context::full_detail(&self.tools, tool)
    }
}

/// One `tools/call`, waiting out `dealeragent.rate_limited` answers as a
/// careful agent would (their `retry_after_ms`, at most
/// [`MAX_RETRY_WAIT`], up to [`MAX_ATTEMPTS`] attempts). Every answer,
/// the refusals included, is returned in order.
pub async fn call_patiently(
    client: &Client,
    caller: &Caller,
    tool: &str,
    args: &Value,
) -> Result<Vec<Exchange>, ClientError> {
    let mut answers = Vec::new();
    for _ in 0..MAX_ATTEMPTS {
        let ex = client.call_tool(caller, tool, args.clone()).await?;
        let wait = (ex.dap_code() == Some("dealeragent.rate_limited"))
            .then(|| {
                ex.structured()
                    .and_then(|s| s.get("retry_after_ms"))
                    .and_then(Value::as_u64)
                    .unwrap_or(1000)
            })
            .map(Duration::from_millis)
            .filter(|w| *w <= MAX_RETRY_WAIT);
        answers.push(ex);
        match wait {
            Some(w) => tokio::time::sleep(w).await,
            None => break,
        }
    }
    Ok(answers)
}

/// A question's conversation with the gateway.
pub struct Session<'e> {
    pub env: &'e Env,
    pub reads: Vec<Read>,
}

impl<'e> Session<'e> {
    pub fn new(env: &'e Env) -> Self {
        Self {
            env,
            reads: Vec::new(),
        }
    }

    /// Call `tool`; returns the index of the read that answered (the last
    /// one, after any rate-limit retries).
    pub async fn call(&mut self, tool: &str, args: Value) -> Result<usize, ClientError> {
        let answers = call_patiently(&self.env.client, &self.env.caller, tool, &args).await?;
        for ex in answers {
            self.reads.push(read_of(tool, &args, &ex));
        }
        Ok(self.reads.len() - 1)
    }

    /// A successful read as `T`; `None` for an error or an answer that is
    /// not the DAP shape.
    pub fn view<T: DeserializeOwned>(&self, read: usize) -> Option<T> {
        let ok = self.reads.get(read)?.ok.clone()?;
        serde_json::from_value(ok).ok()
    }

    /// The error of a read, for the answer's text.
    pub fn error(&self, read: usize) -> String {
        self.reads
            .get(read)
            .and_then(|r| r.error.clone())
            .unwrap_or_else(|| "an answer that is not the DAP shape".to_owned())
    }

    /// `dealeragent.inventory.search` of the organization.
    pub async fn search(
        &mut self,
        filters: Value,
        sort: Option<Value>,
        limit: u64,
    ) -> Result<(usize, Option<SearchPage>), ClientError> {
        let mut args = json!({"organization_id": self.env.organization_id,
            "page": {"limit": limit}});
        if filters.as_object().is_some_and(|f| !f.is_empty()) {
            args["filters"] = filters;
        }
        if let Some(sort) = sort {
            args["sort"] = sort;
        }
        let i = self.call(SEARCH, args).await?;
        Ok((i, self.view(i)))
    }

    /// `get_vehicle` by one selector (`vehicle_id`, `vin` or `stock_number`).
    pub async fn vehicle(
        &mut self,
        rooftop_id: &str,
        selector: &str,
        value: &str,
    ) -> Result<(usize, Option<Vehicle>), ClientError> {
        let args = json!({"organization_id": self.env.organization_id,
            "rooftop_id": rooftop_id, selector: value});
        let i = self.call(GET_VEHICLE, args).await?;
        Ok((i, self.view(i)))
    }

    /// `verify_availability` of a vehicle, for shopping assistance.
    pub async fn verify(
        &mut self,
        rooftop_id: &str,
        vehicle_id: &str,
    ) -> Result<(usize, Option<AvailabilityResult>), ClientError> {
        let args = json!({"organization_id": self.env.organization_id,
            "rooftop_id": rooftop_id, "vehicle_id": vehicle_id,
            "purpose": "shopping_assistance"});
        let i = self.call(VERIFY, args).await?;
        Ok((i, self.view(i)))
    }

    /// `get_disclosure` of a vehicle, for a buyer jurisdiction when given.
    pub async fn disclosure(
        &mut self,
        rooftop_id: &str,
        vehicle_id: &str,
        jurisdiction: Option<&Value>,
    ) -> Result<(usize, Option<Disclosure>), ClientError> {
        let mut args = json!({"organization_id": self.env.organization_id,
            "rooftop_id": rooftop_id, "vehicle_id": vehicle_id});
        if let Some(j) = jurisdiction {
            args["jurisdiction"] = j.clone();
        }
        let i = self.call(DISCLOSURE, args).await?;
        Ok((i, self.view(i)))
    }

    /// `dealer.get` of one rooftop of the organization.
    pub async fn dealer(
        &mut self,
        rooftop_id: &str,
    ) -> Result<(usize, Option<Dealer>), ClientError> {
        let args = json!({"organization_id": self.env.organization_id,
            "rooftop_ids": [rooftop_id]});
        let i = self.call(DEALER_GET, args).await?;
        Ok((i, self.view(i)))
    }

    /// `get_used_vehicle_details` of a vehicle.
    pub async fn used_details(
        &mut self,
        rooftop_id: &str,
        vehicle_id: &str,
    ) -> Result<(usize, Option<UsedDetails>), ClientError> {
        let args = json!({"organization_id": self.env.organization_id,
            "rooftop_id": rooftop_id, "vehicle_id": vehicle_id});
        let i = self.call(USED_DETAILS, args).await?;
        Ok((i, self.view(i)))
    }

    /// A citation of the record at `pointer` of read `read`: its most
    /// direct source (a dealer system, OEM or government source before an
    /// asserted or derived one) and its freshness.
    pub fn cite(
        &self,
        read: usize,
        pointer: &str,
        provenance: &Provenance,
        freshness: &Freshness,
    ) -> Option<Citation> {
        let source = best_source(provenance)?;
        Some(Citation {
            read,
            tool: self.reads.get(read)?.tool.clone(),
            source_name: source.source_name.clone(),
            authority: source.authority.clone(),
            observed_at: source.observed_at.clone(),
            freshness_state: freshness.state.clone(),
            valid_until: freshness.valid_until.clone(),
            pointer: pointer.to_owned(),
        })
    }

    /// When read `read` arrived.
    pub fn received_at(&self, read: usize) -> chrono::DateTime<Utc> {
        self.reads
            .get(read)
            .map_or_else(Utc::now, |r| r.received_at)
    }
}

/// The most direct source of a provenance: DAP's authorities in the order
/// a careful agent trusts them.
pub fn best_source(p: &Provenance) -> Option<&super::wire::Source> {
    const ORDER: [&str; 7] = [
        "authoritative_dealer_system",
        "oem",
        "government",
        "third_party",
        "dealer_asserted",
        "derived",
        "unknown",
    ];
    p.sources.iter().min_by_key(|s| {
        ORDER
            .iter()
            .position(|a| *a == s.authority)
            .unwrap_or(ORDER.len())
    })
}

/// The ledger entry of one exchange.
pub fn read_of(tool: &str, args: &Value, ex: &Exchange) -> Read {
    let error = if let Some(code) = ex.dap_code() {
        Some(code.to_owned())
    } else if let Some(code) = ex.error_code() {
        Some(format!("JSON-RPC error {code}"))
    } else if ex.status != 200 {
        Some(format!("HTTP {}", ex.status))
    } else {
        None
    };
    Read {
        tool: tool.to_owned(),
        arguments: args.clone(),
        bytes: ex.raw.len(),
        received_at: ex.received_at,
        ok: ex.tool_ok().cloned(),
        meta: ex.result().and_then(|r| r.get("_meta")).cloned(),
        error,
    }
}
