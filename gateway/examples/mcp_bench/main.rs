//! MCP load generator for the benchmark in `docs/benchmarks.md`.
//!
//! Drives a running gateway over real HTTP (one keep-alive connection per
//! concurrent worker) and measures, per scenario:
//!
//! * latency at concurrency 1: `--requests` timed requests after a short
//!   warm-up; p50/p90/p99/max/mean over every request;
//! * throughput at concurrency `--concurrency` (16): as many requests as the
//!   workers can complete in `--duration` seconds; requests/s and p99.
//!
//! Every response must be an HTTP 200 whose JSON-RPC result has
//! `isError: false`; anything else is counted as an error, and a scenario
//! with errors is reported as INVALID (the process then exits 1).
//!
//! Scenarios (`--scenarios` picks a subset, comma-separated):
//!
//! | name | request |
//! | --- | --- |
//! | `get_manifest` | `dealeragent.discovery.get_manifest {}`: the floor of the MCP path |
//! | `search_broad` | one organization, no filters, default sort, limit 25 |
//! | `search_narrow` | make + model + year range + `price_max` in the org's currency |
//! | `search_text` | a free-text `query` ("toyota rav4", "silver suv", ...) |
//! | `search_price_sort` | sort `advertised_price` asc, limit 25 |
//! | `search_deep` | follow `next_cursor` `--deep-pages` pages deep (limit 25) |
//! | `get_vehicle` | a random sampled `vehicle_id` |
//! | `verify_cache_hit` | `dealeragent.inventory.verify_availability` of one of `--verify-hot` vehicles, each checked once before the scenario: answered from the reuse cache |
//! | `verify_upstream_50ms` | `verify_availability` of a vehicle never checked before (one upstream call each); c=1 runs `--upstream-requests` requests |
//! | `get_disclosure` | `dealeragent.pricing.get_disclosure {organization_id, rooftop_id, vehicle_id}` of a random sampled vehicle |
//! | `offers_evaluate` | `dealergateway.offers.evaluate` of a random sampled vehicle with `profile: {payment_mode: "unknown", jurisdiction: {country}, claims: {}}` (three payment-mode branches; the country is the rooftop's, from `dealeragent.dealer.get`) |
//!
//! The two pricing scenarios (`get_disclosure`, `offers_evaluate`) are not
//! in the default set: they need an organization with incentive
//! programs (the demo dataset has them; `scripts/bench-pricing` runs them).
//! Their vehicles are the sampled ones (anonymous callers only see
//! published rooftops, so every sample is readable).
//!
//! The two `verify_*` scenarios are not in the default set: they need
//! rooftops whose `availability_source` is `http` (an upstream such as the
//! `availability_upstream` example; `scripts/bench-availability` sets it
//! up) and an anonymous quota raised above the request rate. Their vehicles
//! are collected by paging searches (`--verify-vehicles` in all); a
//! vehicle of `verify_upstream_50ms` is used once, and any reuse after the
//! pool runs out is reported as "repeated". The report also counts the
//! answers with `checked_live` true (upstream called) and false (reused).
//!
//! Requests rotate over every organization of the manifest. Before the
//! scenarios run, the tool discovers the organizations (manifest) and
//! samples vehicles of each (two search pages of 100), which give the
//! `get_vehicle` ids and the values of the narrow filters.
//!
//! ```sh
//! cargo run --release -p gateway --example mcp_bench -- \
//!     --url http://127.0.0.1:PORT/mcp --json /tmp/bench.json
//! ```
//!
//! The load generator runs on the same machine as the server, so its own
//! CPU use (HTTP client, JSON parsing of the replies) is part of what a
//! 2-core machine shares; the throughput ratio search/get_manifest cancels
//! most of that out.

#![allow(
    clippy::float_arithmetic,
    reason = "statistics and rates of a benchmark, never money"
)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use serde::Deserialize;
use serde_json::{Value, json};

mod discovery;
mod measure;
mod report;

use discovery::*;
use measure::*;
use report::*;

const PROTOCOL: &str = "2026-07-28";
const MANIFEST: &str = "dealeragent.discovery.get_manifest";
const SEARCH: &str = "dealeragent.inventory.search";
const GET_VEHICLE: &str = "dealeragent.inventory.get_vehicle";
const VERIFY: &str = "dealeragent.inventory.verify_availability";
const DISCLOSURE: &str = "dealeragent.pricing.get_disclosure";
const OFFERS: &str = "dealergateway.offers.evaluate";
const DEALER_GET: &str = "dealeragent.dealer.get";

/// Scenarios run only when named in `--scenarios` (they need http sources).
const VERIFY_SCENARIOS: [&str; 2] = ["verify_cache_hit", "verify_upstream_50ms"];

/// Scenarios run only when named in `--scenarios` (they need programs).
const PRICING_SCENARIOS: [&str; 2] = ["get_disclosure", "offers_evaluate"];

const ALL_SCENARIOS: [&str; 7] = [
    "get_manifest",
    "search_broad",
    "search_narrow",
    "search_text",
    "search_price_sort",
    "search_deep",
    "get_vehicle",
];

/// Free-text queries of `search_text` (every token must match a field).
const TEXT_QUERIES: [&str; 8] = [
    "toyota rav4",
    "silver suv",
    "honda civic",
    "black sedan",
    "2022 ford",
    "white pickup",
    "subaru outback",
    "blue hatchback",
];

#[derive(Debug, Parser)]
#[command(about = "MCP load generator for the dealer gateway benchmark")]
struct Args {
    /// The gateway's MCP endpoint, e.g. http://127.0.0.1:8080/mcp
    #[arg(long)]
    url: String,
    /// Timed requests per scenario at concurrency 1.
    #[arg(long, default_value_t = 1000)]
    requests: usize,
    /// Untimed warm-up requests before each scenario.
    #[arg(long, default_value_t = 50)]
    warmup: usize,
    /// Seconds of load per scenario at the high concurrency.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Concurrent workers of the throughput phase.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Pages followed by `search_deep`.
    #[arg(long, default_value_t = 20)]
    deep_pages: usize,
    /// Seed of the request mix.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Comma-separated subset of scenarios (default: all).
    #[arg(long, value_delimiter = ',')]
    scenarios: Vec<String>,
    /// Skip the concurrency-1 phase (throughput only).
    #[arg(long)]
    no_latency: bool,
    /// Skip the throughput phase (latency only).
    #[arg(long)]
    no_throughput: bool,
    /// PID of the gateway on this machine: reports its CPU time per request
    /// and the share of the machine used by other processes (noise).
    #[arg(long)]
    server_pid: Option<u32>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Distinct vehicles collected for the `verify_*` scenarios (the pool of
    /// `verify_upstream_50ms` is this minus `--verify-hot`).
    #[arg(long, default_value_t = 6000)]
    verify_vehicles: usize,
    /// Vehicles checked over and over by `verify_cache_hit`.
    #[arg(long, default_value_t = 8)]
    verify_hot: usize,
    /// Timed requests of `verify_upstream_50ms` at concurrency 1 (each one
    /// waits for the upstream, so fewer than `--requests`).
    #[arg(long, default_value_t = 300)]
    upstream_requests: usize,
}

// ---------------------------------------------------------------- random

/// SplitMix64: deterministic and dependency-free.
#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n.max(1) as u64)).unwrap_or(0)
    }
}

// ---------------------------------------------------------------- client

/// The part of a `tools/call` reply the hot path needs; the rest of the
/// body is skipped without building a tree.
#[derive(Deserialize)]
struct HotReply {
    result: Option<HotResult>,
    error: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct HotResult {
    #[serde(rename = "isError")]
    is_error: Option<bool>,
    #[serde(rename = "structuredContent", default)]
    structured: Option<HotStructured>,
    /// Where `verify_availability` reports `checked_live` now (the result's
    /// `_meta`, docs/availability.md); `structuredContent.extensions` is
    /// still read for gateways that put it there.
    #[serde(rename = "_meta", default)]
    meta: Option<HotExtensions>,
}

#[derive(Deserialize)]
struct HotStructured {
    #[serde(default)]
    page: Option<HotPage>,
    #[serde(default)]
    extensions: Option<HotExtensions>,
}

#[derive(Deserialize)]
struct HotExtensions {
    #[serde(rename = "dealergateway.availability", default)]
    availability: Option<HotAvailability>,
}

#[derive(Deserialize)]
struct HotAvailability {
    #[serde(default)]
    checked_live: Option<bool>,
}

#[derive(Deserialize)]
struct HotPage {
    #[serde(default)]
    next_cursor: Option<String>,
}

#[derive(Clone)]
struct Mcp {
    http: reqwest::Client,
    url: Arc<str>,
}

/// One successful call: latency, body size and the next cursor if any.
struct Done {
    latency: Duration,
    bytes: usize,
    next_cursor: Option<String>,
    /// `checked_live` of a `verify_availability` answer.
    checked_live: Option<bool>,
}

/// The JSON of an `application/json` or single-event `text/event-stream`
/// body.
fn json_payload<'a>(content_type: &str, body: &'a [u8]) -> &'a [u8] {
    if !content_type.starts_with("text/event-stream") {
        return body;
    }
    // Take the data of the last event that has one.
    let text = std::str::from_utf8(body).unwrap_or("");
    let mut last = "";
    for line in text.lines() {
        if let Some(d) = line.strip_prefix("data:") {
            last = d.trim_start();
        }
    }
    last.as_bytes()
}

impl Mcp {
    fn new(url: &str) -> Result<Self, String> {
        // reqwest is built with `rustls-no-provider`: install the process-wide
        // provider the gateway uses (plain HTTP needs none, but the builder
        // insists). Installing twice fails harmlessly.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(256)
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            http,
            url: Arc::from(url),
        })
    }

    fn body(id: u64, tool: &str, arguments: &Value) -> Vec<u8> {
        let body = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {
                "name": tool,
                "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "mcp_bench", "version": "0"}
                }
            }
        });
        serde_json::to_vec(&body).unwrap_or_default()
    }

    async fn post(&self, tool: &str, body: Vec<u8>) -> Result<(Duration, String, Vec<u8>), String> {
        let start = Instant::now();
        let resp = self
            .http
            .post(&*self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", PROTOCOL)
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", tool)
            .body(body)
            .send()
            .await
            .map_err(|e| format!("transport: {e}"))?;
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| format!("reading body: {e}"))?;
        let latency = start.elapsed();
        if status != 200 {
            let snippet = String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned();
            return Err(format!("HTTP {status}: {snippet}"));
        }
        Ok((latency, content_type, bytes.to_vec()))
    }

    /// A timed call on the hot path: checks 200 and `isError: false`.
    async fn call(&self, id: u64, tool: &str, arguments: &Value) -> Result<Done, String> {
        let body = Self::body(id, tool, arguments);
        let (latency, content_type, bytes) = self.post(tool, body).await?;
        let payload = json_payload(&content_type, &bytes);
        let reply: HotReply =
            serde_json::from_slice(payload).map_err(|e| format!("undecodable reply: {e}"))?;
        if reply.error.is_some() {
            let snippet = String::from_utf8_lossy(&payload[..payload.len().min(300)]).into_owned();
            return Err(format!("JSON-RPC error: {snippet}"));
        }
        let Some(result) = reply.result else {
            return Err("reply without result".into());
        };
        if result.is_error != Some(false) {
            let snippet = String::from_utf8_lossy(&payload[..payload.len().min(400)]).into_owned();
            return Err(format!("isError is not false: {snippet}"));
        }
        let (page, extensions) = result
            .structured
            .map_or((None, None), |s| (s.page, s.extensions));
        Ok(Done {
            latency,
            bytes: bytes.len(),
            next_cursor: page.and_then(|p| p.next_cursor),
            checked_live: [result.meta, extensions]
                .into_iter()
                .flatten()
                .find_map(|e| e.availability.and_then(|a| a.checked_live)),
        })
    }

    /// An untimed call returning the whole `structuredContent`.
    async fn structured(&self, tool: &str, arguments: &Value) -> Result<Value, String> {
        let body = Self::body(0, tool, arguments);
        let (_, content_type, bytes) = self.post(tool, body).await?;
        let payload = json_payload(&content_type, &bytes);
        let reply: Value =
            serde_json::from_slice(payload).map_err(|e| format!("undecodable reply: {e}"))?;
        let result = &reply["result"];
        if result["isError"] != Value::Bool(false) {
            return Err(format!("{tool} failed: {reply}"));
        }
        Ok(result["structuredContent"].clone())
    }
}

// ---------------------------------------------------------------- workload

/// One sampled vehicle.
#[derive(Debug, Clone)]
struct Sample {
    organization_id: String,
    rooftop_id: String,
    vehicle_id: String,
    make: String,
    model: String,
    year: i64,
    /// (amount_minor, currency) of the advertised price.
    price: Option<(i64, String)>,
}

struct Workload {
    organizations: Vec<String>,
    rooftops: usize,
    samples: Vec<Sample>,
    deep_pages: usize,
    /// (organization, rooftop, vehicle) checked over and over by `verify_cache_hit`.
    verify_hot: Vec<(String, String, String)>,
    /// Vehicles of `verify_upstream_50ms`, each meant to be used once.
    verify_fresh: Vec<(String, String, String)>,
    /// Next index into `verify_fresh` (past the end: repeats).
    fresh_next: AtomicUsize,
    /// rooftop_id -> ISO 3166-1 country (from `dealeragent.dealer.get`),
    /// for `offers_evaluate`; empty unless a pricing scenario runs.
    countries: BTreeMap<String, String>,
}

/// One unit of work: a single request, or a chain of pages.
enum Op {
    One { tool: &'static str, args: Value },
    Deep { args: Value, pages: usize },
}

impl Workload {
    fn org(&self, rng: &mut Rng) -> &str {
        &self.organizations[rng.below(self.organizations.len())]
    }

    fn op(&self, scenario: &str, rng: &mut Rng) -> Op {
        match scenario {
            "get_manifest" => Op::One {
                tool: MANIFEST,
                args: json!({}),
            },
            "search_broad" => Op::One {
                tool: SEARCH,
                args: json!({"organization_id": self.org(rng), "page": {"limit": 25}}),
            },
            "search_narrow" => {
                let s = &self.samples[rng.below(self.samples.len())];
                let mut filters = json!({
                    "make": [s.make],
                    "model": [s.model],
                    "year_min": s.year - 2,
                    "year_max": s.year + 1,
                });
                if let Some((amount, currency)) = &s.price {
                    // 20% above the sampled vehicle's price.
                    filters["price_max"] =
                        json!({"amount_minor": amount + amount / 5, "currency": currency});
                }
                Op::One {
                    tool: SEARCH,
                    args: json!({
                        "organization_id": s.organization_id,
                        "filters": filters,
                        "page": {"limit": 25}
                    }),
                }
            }
            "search_text" => Op::One {
                tool: SEARCH,
                args: json!({
                    "organization_id": self.org(rng),
                    "query": TEXT_QUERIES[rng.below(TEXT_QUERIES.len())],
                    "page": {"limit": 25}
                }),
            },
            "search_price_sort" => Op::One {
                tool: SEARCH,
                args: json!({
                    "organization_id": self.org(rng),
                    "sort": {"field": "advertised_price", "order": "asc"},
                    "page": {"limit": 25}
                }),
            },
            "search_deep" => Op::Deep {
                args: json!({"organization_id": self.org(rng), "page": {"limit": 25}}),
                pages: self.deep_pages,
            },
            "get_vehicle" => {
                let s = &self.samples[rng.below(self.samples.len())];
                Op::One {
                    tool: GET_VEHICLE,
                    args: json!({
                        "organization_id": s.organization_id,
                        "rooftop_id": s.rooftop_id,
                        "vehicle_id": s.vehicle_id
                    }),
                }
            }
            "get_disclosure" => {
                let s = &self.samples[rng.below(self.samples.len())];
                Op::One {
                    tool: DISCLOSURE,
                    args: json!({
                        "organization_id": s.organization_id,
                        "rooftop_id": s.rooftop_id,
                        "vehicle_id": s.vehicle_id
                    }),
                }
            }
            "offers_evaluate" => {
                let s = &self.samples[rng.below(self.samples.len())];
                let country = self.countries.get(&s.rooftop_id).map_or("", String::as_str);
                Op::One {
                    tool: OFFERS,
                    args: json!({
                        "organization_id": s.organization_id,
                        "rooftop_id": s.rooftop_id,
                        "vehicle_id": s.vehicle_id,
                        "profile": {
                            "payment_mode": "unknown",
                            "jurisdiction": {"country": country},
                            "claims": {}
                        }
                    }),
                }
            }
            "verify_cache_hit" => {
                let (o, r, v) = &self.verify_hot[rng.below(self.verify_hot.len())];
                verify_op(o, r, v)
            }
            "verify_upstream_50ms" => {
                let i = self.fresh_next.fetch_add(1, Ordering::Relaxed);
                let (o, r, v) = &self.verify_fresh[i % self.verify_fresh.len()];
                verify_op(o, r, v)
            }
            other => panic!("unknown scenario {other}"),
        }
    }
}

fn verify_op(organization_id: &str, rooftop_id: &str, vehicle_id: &str) -> Op {
    Op::One {
        tool: VERIFY,
        args: json!({
            "organization_id": organization_id,
            "rooftop_id": rooftop_id,
            "vehicle_id": vehicle_id
        }),
    }
}

/// What a run of requests produced.
#[derive(Default)]
struct Tally {
    /// Latency of every successful request, microseconds.
    latencies_us: Vec<u64>,
    /// Latency by page number (1-based) for chains.
    by_page_us: BTreeMap<usize, Vec<u64>>,
    bytes: u64,
    errors: u64,
    first_error: Option<String>,
    /// `verify_availability` answers with `checked_live` true / false.
    live: u64,
    reused: u64,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.latencies_us.extend(other.latencies_us);
        for (page, v) in other.by_page_us {
            self.by_page_us.entry(page).or_default().extend(v);
        }
        self.bytes += other.bytes;
        self.errors += other.errors;
        self.live += other.live;
        self.reused += other.reused;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    fn record(&mut self, page: Option<usize>, r: Result<Done, String>) -> Option<String> {
        match r {
            Ok(done) => {
                let us = u64::try_from(done.latency.as_micros()).unwrap_or(u64::MAX);
                self.latencies_us.push(us);
                if let Some(p) = page {
                    self.by_page_us.entry(p).or_default().push(us);
                }
                self.bytes += done.bytes as u64;
                match done.checked_live {
                    Some(true) => self.live += 1,
                    Some(false) => self.reused += 1,
                    None => {}
                }
                done.next_cursor
            }
            Err(e) => {
                self.errors += 1;
                if self.first_error.is_none() {
                    self.first_error = Some(e);
                }
                None
            }
        }
    }
}

/// Run one op; `stop` ends a chain early (throughput deadline).
async fn run_op(mcp: &Mcp, op: Op, id: &mut u64, tally: &mut Tally, stop: Option<Instant>) {
    match op {
        Op::One { tool, args } => {
            *id += 1;
            let r = mcp.call(*id, tool, &args).await;
            tally.record(None, r);
        }
        Op::Deep { args, pages } => {
            let mut args = args;
            for page in 1..=pages {
                if stop.is_some_and(|s| Instant::now() >= s) {
                    break;
                }
                *id += 1;
                let r = mcp.call(*id, SEARCH, &args).await;
                match tally.record(Some(page), r) {
                    Some(cursor) => args["page"]["cursor"] = json!(cursor),
                    None => break,
                }
            }
        }
    }
}

// ---------------------------------------------------------------- phases

async fn latency_phase(
    mcp: &Mcp,
    work: &Workload,
    scenario: &str,
    requests: usize,
    warmup: usize,
    rng: &mut Rng,
) -> Tally {
    let mut id = 0u64;
    let mut scratch = Tally::default();
    // Warm-up: same mix, not recorded.
    let mut done = 0;
    while done < warmup {
        let op = work.op(scenario, rng);
        run_op(mcp, op, &mut id, &mut scratch, None).await;
        done = scratch.latencies_us.len() + scratch.errors as usize;
    }
    // Warm-up errors still make the run invalid.
    let mut tally = Tally {
        errors: scratch.errors,
        first_error: scratch.first_error,
        ..Tally::default()
    };
    let base_errors = tally.errors as usize;
    while tally.latencies_us.len() + tally.errors as usize - base_errors < requests {
        let op = work.op(scenario, rng);
        run_op(mcp, op, &mut id, &mut tally, None).await;
    }
    tally
}

async fn throughput_phase(
    mcp: &Mcp,
    work: Arc<Workload>,
    scenario: &str,
    concurrency: usize,
    duration: Duration,
    seed: u64,
    server_pid: Option<u32>,
) -> (Tally, usize, f64, CpuUse) {
    // Open the connections first so connection set-up is not measured.
    let mut warm = Vec::new();
    for w in 0..concurrency {
        let mcp = mcp.clone();
        let work = work.clone();
        let scenario = scenario.to_owned();
        warm.push(tokio::spawn(async move {
            let mut rng = Rng(seed ^ (w as u64 + 1000));
            let mut t = Tally::default();
            let mut id = 0;
            for _ in 0..3 {
                let op = work.op(&scenario, &mut rng);
                run_op(&mcp, op, &mut id, &mut t, None).await;
            }
        }));
    }
    for h in warm {
        let _ = h.await;
    }

    let mark = CpuMark::now(server_pid);
    let start = Instant::now();
    let deadline = start + duration;
    let mut handles = Vec::new();
    for w in 0..concurrency {
        let mcp = mcp.clone();
        let work = work.clone();
        let scenario = scenario.to_owned();
        handles.push(tokio::spawn(async move {
            let mut rng = Rng(seed ^ (w as u64 + 1));
            let mut tally = Tally::default();
            let mut id = 0u64;
            while Instant::now() < deadline {
                let op = work.op(&scenario, &mut rng);
                run_op(&mcp, op, &mut id, &mut tally, Some(deadline)).await;
            }
            tally
        }));
    }
    let mut total = Tally::default();
    for h in handles {
        match h.await {
            Ok(t) => total.merge(t),
            Err(e) => {
                total.errors += 1;
                total
                    .first_error
                    .get_or_insert_with(|| format!("worker: {e}"));
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let n = total.latencies_us.len() + total.errors as usize;
    let cpu = cpu_use(mark, CpuMark::now(server_pid), n);
    (total, n, seconds, cpu)
}

// ---------------------------------------------------------------- main

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let scenarios: Vec<String> = if args.scenarios.is_empty() {
        ALL_SCENARIOS.iter().map(|s| (*s).to_owned()).collect()
    } else {
        args.scenarios.clone()
    };
    for s in &scenarios {
        if !ALL_SCENARIOS.contains(&s.as_str())
            && !VERIFY_SCENARIOS.contains(&s.as_str())
            && !PRICING_SCENARIOS.contains(&s.as_str())
        {
            eprintln!(
                "unknown scenario {s}; known: {}, {}, {}",
                ALL_SCENARIOS.join(", "),
                VERIFY_SCENARIOS.join(", "),
                PRICING_SCENARIOS.join(", ")
            );
            return ExitCode::from(2);
        }
    }
    let verify = scenarios
        .iter()
        .any(|s| s.starts_with("verify_"))
        .then_some((args.verify_vehicles, args.verify_hot.max(1)));
    let mcp = match Mcp::new(&args.url) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("client: {e}");
            return ExitCode::from(2);
        }
    };
    let pricing = scenarios
        .iter()
        .any(|s| PRICING_SCENARIOS.contains(&s.as_str()));
    let work = match discover(&mcp, args.deep_pages, verify, pricing).await {
        Ok(w) => Arc::new(w),
        Err(e) => {
            eprintln!("discovery failed: {e}");
            return ExitCode::from(2);
        }
    };
    eprintln!(
        "discovered {} organizations, {} rooftops; sampled {} vehicles; {} + {} for the verify scenarios",
        work.organizations.len(),
        work.rooftops,
        work.samples.len(),
        work.verify_hot.len(),
        work.verify_fresh.len()
    );

    let mut rng = Rng(args.seed);
    let mut results = Vec::new();
    let mut invalid = false;
    for scenario in &scenarios {
        let hits = if scenario.starts_with("search_") {
            mean_hits(&mcp, &work, scenario, &mut rng.clone()).await
        } else {
            None
        };
        let mut first_error = None;
        let mut bytes = 0u64;
        let mut ok = 0u64;

        let (mut live, mut reused) = (0u64, 0u64);
        if scenario == "verify_cache_hit" {
            // One check of each hot vehicle: every later one is a reuse.
            for (o, r, v) in &work.verify_hot {
                let mut scratch = Tally::default();
                let mut id = 0u64;
                run_op(&mcp, verify_op(o, r, v), &mut id, &mut scratch, None).await;
                if let Some(e) = scratch.first_error {
                    eprintln!("{scenario}: warm-up check failed: {e}");
                    first_error.get_or_insert(e);
                }
            }
        }
        let requests = if scenario == "verify_upstream_50ms" {
            args.upstream_requests
        } else {
            args.requests
        };

        let mut latency = None;
        let mut deep_pages = None;
        if !args.no_latency {
            eprintln!("{scenario}: {requests} requests at concurrency 1");
            let tally = latency_phase(&mcp, &work, scenario, requests, args.warmup, &mut rng).await;
            live += tally.live;
            reused += tally.reused;
            latency = Some((stats(&tally.latencies_us), tally.errors));
            if scenario == "search_deep" {
                let first = tally.by_page_us.get(&1).cloned().unwrap_or_default();
                let deep: Vec<u64> = tally
                    .by_page_us
                    .range(args.deep_pages / 2 + 1..)
                    .flat_map(|(_, v)| v.iter().copied())
                    .collect();
                deep_pages = Some((stats(&first), stats(&deep)));
            }
            bytes += tally.bytes;
            ok += tally.latencies_us.len() as u64;
            if first_error.is_none() {
                first_error = tally.first_error;
            }
        }

        let mut throughput = None;
        if !args.no_throughput {
            eprintln!(
                "{scenario}: {:.0} s at concurrency {}",
                args.duration, args.concurrency
            );
            let (tally, n, seconds, cpu) = throughput_phase(
                &mcp,
                work.clone(),
                scenario,
                args.concurrency,
                Duration::from_secs_f64(args.duration),
                args.seed,
                args.server_pid,
            )
            .await;
            bytes += tally.bytes;
            ok += tally.latencies_us.len() as u64;
            live += tally.live;
            reused += tally.reused;
            throughput = Some(Throughput {
                cpu,
                concurrency: args.concurrency,
                requests: n,
                seconds,
                rps: tally.latencies_us.len() as f64 / seconds,
                stats: stats(&tally.latencies_us),
                errors: tally.errors,
            });
            if first_error.is_none() {
                first_error = tally.first_error;
            }
        }
        let errors = latency.map_or(0, |(_, e)| e) + throughput.as_ref().map_or(0, |t| t.errors);
        invalid |= errors > 0 || first_error.is_some();
        let repeated = (scenario == "verify_upstream_50ms").then(|| {
            work.fresh_next
                .load(Ordering::Relaxed)
                .saturating_sub(work.verify_fresh.len())
        });
        results.push(ScenarioResult {
            name: scenario.clone(),
            latency,
            deep_pages,
            mean_bytes: bytes.checked_div(ok).unwrap_or(0),
            throughput,
            first_error,
            hits,
            live,
            reused,
            repeated,
        });
    }

    print_report(&results, &work, &args);
    if let Some(path) = &args.json {
        let doc = results_json(&results, &work, &args);
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        if let Err(e) = std::fs::write(path, text + "\n") {
            eprintln!("writing {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    if invalid {
        eprintln!("INVALID RUN: some responses were errors (see above)");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
