//! Rate limits: keyed GCRA token buckets (per client address, per
//! principal, and per-tool quotas for anonymous callers).
//!
//! GCRA keeps one "theoretical arrival time" per key: a request is allowed
//! when it does not arrive earlier than `tat - burst_tolerance`, and pushes
//! `tat` one emission interval further. Integer milliseconds only; an idle
//! key is indistinguishable from a new one, so idle keys are dropped when
//! the table grows (bounded memory under address scans).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Instant;

/// A keyed limiter allowing `per_minute` requests per minute with a burst
/// of `burst`.
pub struct KeyedLimiter<K> {
    interval_ms: u64,
    tolerance_ms: u64,
    start: Instant,
    table: Mutex<HashMap<K, u64>>,
    per_minute: u32,
}

/// When a refused caller may try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryAfter {
    pub millis: u64,
}

impl RetryAfter {
    /// Whole seconds for an HTTP `Retry-After` header (at least 1).
    pub fn seconds(self) -> u64 {
        self.millis.div_ceil(1000).max(1)
    }
}

const CLEANUP_THRESHOLD: usize = 100_000;

impl<K: Eq + Hash + Clone> KeyedLimiter<K> {
    /// `per_minute` must be positive; `burst` of at least 1.
    pub fn new(per_minute: u32, burst: u32) -> Self {
        let per_minute = per_minute.max(1);
        let interval_ms = 60_000 / u64::from(per_minute);
        Self {
            interval_ms: interval_ms.max(1),
            tolerance_ms: interval_ms.max(1) * u64::from(burst.max(1) - 1),
            start: Instant::now(),
            table: Mutex::new(HashMap::new()),
            per_minute,
        }
    }

    pub fn per_minute(&self) -> u32 {
        self.per_minute
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Count one request for `key`: `Ok` when allowed, else when to retry.
    pub fn check(&self, key: &K) -> Result<(), RetryAfter> {
        let now = self.now_ms();
        // A poisoned lock only means another request panicked mid-update of
        // a plain map of integers; it is still consistent.
        let mut table = self
            .table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if table.len() >= CLEANUP_THRESHOLD {
            table.retain(|_, tat| *tat > now);
        }
        let tat = table.get(key).copied().unwrap_or(now).max(now);
        if tat > now + self.tolerance_ms {
            return Err(RetryAfter {
                millis: tat - self.tolerance_ms - now,
            });
        }
        table.insert(key.clone(), tat + self.interval_ms);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allows_the_burst_then_refuses_with_a_retry_time() {
        let limiter = KeyedLimiter::new(30, 30);
        for _ in 0..30 {
            assert!(limiter.check(&"a").is_ok());
        }
        let refused = limiter.check(&"a").unwrap_err();
        assert!(refused.millis > 0 && refused.millis <= 2_000, "{refused:?}");
        assert!(refused.seconds() >= 1);
        assert!(limiter.check(&"b").is_ok(), "keys are independent");
    }

    #[test]
    fn a_burst_of_one_spaces_requests_by_the_interval() {
        let limiter = KeyedLimiter::new(60, 1);
        assert!(limiter.check(&1).is_ok());
        let refused = limiter.check(&1).unwrap_err();
        assert!(refused.millis <= 1_000);
    }
}
