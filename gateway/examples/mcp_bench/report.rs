//! The benchmark's Markdown report and its JSON results.

use super::*;

// ---------------------------------------------------------------- report

pub(crate) fn f1(x: f64) -> String {
    format!("{x:.2}")
}

pub(crate) fn print_report(results: &[ScenarioResult], work: &Workload, args: &Args) {
    println!();
    println!(
        "## mcp_bench: {} organizations, {} rooftops, {} sampled vehicles",
        work.organizations.len(),
        work.rooftops,
        work.samples.len()
    );
    println!();
    println!(
        "Concurrency 1: {} timed requests per scenario after {} warm-up requests. \
         Concurrency {}: {:.0} s per scenario. Latencies in ms.",
        args.requests, args.warmup, args.concurrency, args.duration
    );
    println!();
    println!(
        "| scenario | c=1 p50 | c=1 p90 | c=1 p99 | c=1 max | c=1 mean | reply bytes | c={c} req/s | c={c} p50 | c={c} p99 | % of get_manifest req/s | matched vehicles | errors |",
        c = args.concurrency
    );
    println!(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    let floor = results
        .iter()
        .find(|r| r.name == "get_manifest")
        .and_then(|r| r.throughput.as_ref())
        .map(|t| t.rps);
    for r in results {
        let (l, lerr) = r.latency.unwrap_or_default();
        let dash = || "–".to_owned();
        let (rps, tp50, tp99, terr) = match &r.throughput {
            Some(t) => (
                format!("{:.0}", t.rps),
                f1(t.stats.p50),
                f1(t.stats.p99),
                t.errors,
            ),
            None => (dash(), dash(), dash(), 0),
        };
        let pct = match (floor, &r.throughput) {
            (Some(f), Some(t)) if f > 0.0 => format!("{:.0}%", 100.0 * t.rps / f),
            _ => dash(),
        };
        let lat = |x: f64| if r.latency.is_some() { f1(x) } else { dash() };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.name,
            lat(l.p50),
            lat(l.p90),
            lat(l.p99),
            lat(l.max),
            lat(l.mean),
            r.mean_bytes,
            rps,
            tp50,
            tp99,
            pct,
            r.hits.map_or_else(dash, |h| format!("{h:.0}")),
            lerr + terr
        );
    }
    if results.iter().any(|r| r.throughput.is_some()) {
        println!();
        println!(
            "CPU during the c={} phase (from /proc): milliseconds of CPU per request, and the share of the machine used by other processes (noise).",
            args.concurrency
        );
        println!();
        println!("| scenario | server CPU ms/req | load generator CPU ms/req | other processes |");
        println!("| --- | ---: | ---: | ---: |");
        let opt = |x: Option<f64>, suffix: &str| {
            x.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}{suffix}"))
        };
        for r in results {
            if let Some(t) = &r.throughput {
                println!(
                    "| {} | {} | {} | {} |",
                    r.name,
                    opt(t.cpu.server_ms_per_request, ""),
                    opt(t.cpu.client_ms_per_request, ""),
                    t.cpu
                        .other_percent
                        .map_or_else(|| "–".to_owned(), |v| format!("{v:.0}%"))
                );
            }
        }
    }
    if results.iter().any(|r| r.name.starts_with("verify_")) {
        println!();
        println!(
            "verify_availability answers (timed requests of both phases): upstream called (`checked_live` true) or reused (false). \
             Pool: {} vehicles for verify_cache_hit, {} distinct for verify_upstream_50ms ({} c=1 timed requests).",
            work.verify_hot.len(),
            work.verify_fresh.len(),
            args.upstream_requests
        );
        println!();
        println!("| scenario | checked live | reused | vehicles repeated |");
        println!("| --- | ---: | ---: | ---: |");
        for r in results.iter().filter(|r| r.name.starts_with("verify_")) {
            println!(
                "| {} | {} | {} | {} |",
                r.name,
                r.live,
                r.reused,
                r.repeated.map_or_else(|| "–".to_owned(), |n| n.to_string())
            );
        }
    }
    if let Some(r) = results.iter().find(|r| r.name == "search_deep")
        && let Some((first, deep)) = r.deep_pages
    {
        println!();
        println!(
            "search_deep at c=1, by page: page 1 p50 {} / p99 {} ms (n={}); pages {}–{} p50 {} / p99 {} ms (n={}).",
            f1(first.p50),
            f1(first.p99),
            first.n,
            work.deep_pages / 2 + 1,
            work.deep_pages,
            f1(deep.p50),
            f1(deep.p99),
            deep.n
        );
    }
    for r in results {
        if let Some(e) = &r.first_error {
            println!();
            println!("INVALID {}: first error: {e}", r.name);
        }
    }
}

pub(crate) fn stats_json(s: &Stats) -> Value {
    json!({"n": s.n, "p50_ms": s.p50, "p90_ms": s.p90, "p99_ms": s.p99, "max_ms": s.max, "mean_ms": s.mean})
}

pub(crate) fn results_json(results: &[ScenarioResult], work: &Workload, args: &Args) -> Value {
    let floor = results
        .iter()
        .find(|r| r.name == "get_manifest")
        .and_then(|r| r.throughput.as_ref())
        .map(|t| t.rps);
    let scenarios: Vec<Value> = results
        .iter()
        .map(|r| {
            let mut o = json!({"name": r.name, "mean_reply_bytes": r.mean_bytes});
            if let Some((s, errors)) = &r.latency {
                o["c1"] = stats_json(s);
                o["c1"]["errors"] = json!(errors);
            }
            if let Some((first, deep)) = &r.deep_pages {
                o["c1_page_1"] = stats_json(first);
                o["c1_deep_pages"] = stats_json(deep);
            }
            if let Some(t) = &r.throughput {
                o["throughput"] = json!({
                    "concurrency": t.concurrency,
                    "requests": t.requests,
                    "seconds": t.seconds,
                    "requests_per_second": t.rps,
                    "latency": stats_json(&t.stats),
                    "errors": t.errors,
                    "percent_of_get_manifest": floor.map(|f| 100.0 * t.rps / f),
                    "server_cpu_ms_per_request": t.cpu.server_ms_per_request,
                    "client_cpu_ms_per_request": t.cpu.client_ms_per_request,
                    "other_processes_cpu_percent": t.cpu.other_percent,
                });
            }
            if let Some(h) = r.hits {
                o["mean_matched_vehicles"] = json!(h);
            }
            if r.name.starts_with("verify_") {
                o["checked_live"] = json!(r.live);
                o["reused"] = json!(r.reused);
                o["vehicles_repeated"] = json!(r.repeated);
            }
            if let Some(e) = &r.first_error {
                o["first_error"] = json!(e);
            }
            o
        })
        .collect();
    json!({
        "url": args.url,
        "organizations": work.organizations.len(),
        "rooftops": work.rooftops,
        "sampled_vehicles": work.samples.len(),
        "requests_c1": args.requests,
        "warmup": args.warmup,
        "duration_seconds": args.duration,
        "concurrency": args.concurrency,
        "deep_pages": args.deep_pages,
        "scenarios": scenarios,
    })
}
