//! CPU use from /proc and latency statistics of one scenario.

// ---------------------------------------------------------------- cpu

/// CPU clock ticks (Linux `/proc`; 100 per second on every common kernel).
pub(crate) const TICKS_PER_SECOND: f64 = 100.0;

/// utime + stime of a process, in ticks.
pub(crate) fn process_ticks(pid: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces: fields follow the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // state is field 3, utime 14, stime 15 (1-based, counting pid and comm).
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// (busy, total) ticks of the whole machine.
pub(crate) fn machine_ticks() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest is in user).
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3)? + v.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

#[derive(Clone, Copy)]
pub(crate) struct CpuMark {
    pub(crate) server: Option<u64>,
    pub(crate) client: Option<u64>,
    pub(crate) machine: Option<(u64, u64)>,
}

impl CpuMark {
    pub(crate) fn now(server_pid: Option<u32>) -> Self {
        Self {
            server: server_pid.and_then(|p| process_ticks(&p.to_string())),
            client: process_ticks("self"),
            machine: machine_ticks(),
        }
    }
}

/// CPU use over one phase.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CpuUse {
    /// Server CPU per request, ms.
    pub(crate) server_ms_per_request: Option<f64>,
    /// Load generator CPU per request, ms.
    pub(crate) client_ms_per_request: Option<f64>,
    /// Share of the machine's CPU time used by other processes, percent.
    pub(crate) other_percent: Option<f64>,
}

pub(crate) fn cpu_use(a: CpuMark, b: CpuMark, requests: usize) -> CpuUse {
    let per = |x: Option<u64>, y: Option<u64>| -> Option<f64> {
        let d = y?.checked_sub(x?)?;
        (requests > 0).then(|| d as f64 / TICKS_PER_SECOND * 1000.0 / requests as f64)
    };
    let other_percent = match (a.machine, b.machine, a.client, b.client) {
        (Some((b0, t0)), Some((b1, t1)), Some(c0), Some(c1)) if t1 > t0 => {
            let server = match (a.server, b.server) {
                (Some(s0), Some(s1)) => s1.saturating_sub(s0),
                _ => 0,
            };
            let busy = (b1 - b0).saturating_sub(server + c1.saturating_sub(c0));
            Some(100.0 * busy as f64 / (t1 - t0) as f64)
        }
        _ => None,
    };
    CpuUse {
        server_ms_per_request: per(a.server, b.server),
        client_ms_per_request: per(a.client, b.client),
        other_percent,
    }
}

// ---------------------------------------------------------------- stats

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Stats {
    pub(crate) n: usize,
    pub(crate) p50: f64,
    pub(crate) p90: f64,
    pub(crate) p99: f64,
    pub(crate) max: f64,
    pub(crate) mean: f64,
}

/// Percentiles (nearest rank) of latencies in microseconds, as ms.
pub(crate) fn stats(values: &[u64]) -> Stats {
    if values.is_empty() {
        return Stats::default();
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    let rank = |p: f64| -> f64 {
        let idx = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
        v[idx] as f64 / 1000.0
    };
    let sum: u64 = v.iter().sum();
    Stats {
        n: v.len(),
        p50: rank(0.50),
        p90: rank(0.90),
        p99: rank(0.99),
        max: v[v.len() - 1] as f64 / 1000.0,
        mean: sum as f64 / v.len() as f64 / 1000.0,
    }
}

pub(crate) struct Throughput {
    pub(crate) cpu: CpuUse,
    pub(crate) concurrency: usize,
    pub(crate) requests: usize,
    pub(crate) seconds: f64,
    pub(crate) rps: f64,
    pub(crate) stats: Stats,
    pub(crate) errors: u64,
}

pub(crate) struct ScenarioResult {
    pub(crate) name: String,
    pub(crate) latency: Option<(Stats, u64)>,
    pub(crate) deep_pages: Option<(Stats, Stats)>,
    pub(crate) mean_bytes: u64,
    pub(crate) throughput: Option<Throughput>,
    pub(crate) first_error: Option<String>,
    pub(crate) hits: Option<f64>,
    /// verify scenarios: answers with `checked_live` true and false (timed
    /// requests of both phases), and `verify_upstream_50ms` requests that
    /// reused a vehicle because the pool ran out.
    pub(crate) live: u64,
    pub(crate) reused: u64,
    pub(crate) repeated: Option<usize>,
}
