//! The one `now` a bundle is generated at. Only timestamps and model years
//! depend on it; no generated timestamp is after it (DAP 6, CSV-002:
//! adapters reject timestamps in the future beyond clock skew).

use chrono::{DateTime, Datelike, Duration, SecondsFormat, Utc};

pub(super) const HOUR: i64 = 3_600;
pub(super) const DAY: i64 = 86_400;

/// `now` truncated to whole seconds, and its calendar year.
pub(super) struct Clock {
    pub(super) now: DateTime<Utc>,
    pub(super) year: i32,
}

impl Clock {
    pub(super) fn new(now: DateTime<Utc>) -> Self {
        let now = DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now);
        Clock {
            now,
            year: now.year(),
        }
    }

    pub(super) fn ago(&self, seconds: i64) -> DateTime<Utc> {
        self.now - Duration::seconds(seconds)
    }
}

/// RFC 3339 in UTC with whole seconds, as the feeds carry it.
pub(super) fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Midnight UTC of `t`'s day.
pub(super) fn day_floor(t: DateTime<Utc>) -> DateTime<Utc> {
    t - Duration::seconds(t.timestamp().rem_euclid(DAY))
}
