//! The gateway side of the lint: the place, the prior-window lowest price.

use chrono::{DateTime, Duration, TimeZone, Utc};
use pricing::lint::{Known, Place};
use pricing::{Currency, Money};
use serde_json::json;

use super::*;
use crate::store::{PriceHistory, PricePoint};

fn eur(minor: i64) -> Money {
    Money::from_minor(minor, Currency::EUR)
}

fn day(n: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + Duration::days(n)
}

fn history(points: &[(i64, i64)], begins: Option<i64>) -> PriceHistory {
    PriceHistory {
        points: points
            .iter()
            .map(|&(d, minor)| PricePoint {
                amount: eur(minor),
                from: day(d),
            })
            .collect(),
        begins_at: begins.map(day),
    }
}

#[test]
fn lowest_prior_reads_the_thirty_days_before_the_reduction() {
    // 100 from day 0, 90 from day 20, 110 from day 40, reduced to 95 on day 60:
    // the window is days 30..60, where 90 (until day 40) and 110 applied.
    let h = history(&[(0, 100), (20, 90), (40, 110), (60, 95)], Some(0));
    assert_eq!(lowest_prior(&h, eur(95), 30), Known::Known(eur(90)));
    // A price that ended exactly when the window starts is not in it.
    let h = history(&[(0, 80), (30, 110), (60, 95)], Some(0));
    assert_eq!(lowest_prior(&h, eur(95), 30), Known::Known(eur(110)));
}

#[test]
fn lowest_prior_is_unknown_without_the_whole_window() {
    // History begins 20 days before the reduction: the first 10 days of the
    // window are not known, so the lowest is not either.
    let h = history(&[(40, 110), (60, 95)], Some(40));
    assert_eq!(lowest_prior(&h, eur(95), 30), Known::Unknown);
    // The current price is not the newest point: the history lags the feed.
    let h = history(&[(0, 110), (60, 95)], Some(0));
    assert_eq!(lowest_prior(&h, eur(90), 30), Known::Unknown);
    // Nothing stored.
    assert_eq!(
        lowest_prior(&PriceHistory::default(), eur(95), 30),
        Known::Unknown
    );
    // Only the current price: no reduction happened within what is known.
    let h = history(&[(0, 95)], Some(0));
    assert_eq!(lowest_prior(&h, eur(95), 30), Known::Unknown);
}

#[test]
fn the_place_is_the_buyers_else_the_rooftops() {
    let rooftop: crate::dap::Rooftop = serde_json::from_value(json!({
        "rooftop_id": "roof.a",
        "name": "A",
        "address": {"lines": ["1 Main"], "locality": "Sacramento", "region": "CA",
                    "postal_code": "95814", "country": "US"},
        "timezone": "America/Los_Angeles", "departments": ["sales"],
    }))
    .unwrap();
    let (p, s) = place(None, &rooftop).unwrap();
    assert_eq!(
        (p, s),
        (
            Place {
                country: "US".into(),
                subdivision: Some("US-CA".into())
            },
            PlaceSource::Rooftop
        )
    );
    let wanted = json!({"country": "CA", "subdivision": "ON"});
    let (p, s) = place(Some(&wanted), &rooftop).unwrap();
    assert_eq!(p.subdivision.as_deref(), Some("CA-ON"));
    assert_eq!(s, PlaceSource::Request);
    assert!(place(Some(&json!({"subdivision": "ON"})), &rooftop).is_none());
}

#[test]
fn cli_places_parse_strictly() {
    assert_eq!(
        parse_place("us-ca"),
        Some(Place {
            country: "US".into(),
            subdivision: Some("US-CA".into())
        })
    );
    assert_eq!(parse_place("DE").unwrap().subdivision, None);
    for bad in ["", "USA", "U", "US-", "US-CALI", "D€", "US-C A"] {
        assert_eq!(parse_place(bad), None, "{bad}");
    }
}
