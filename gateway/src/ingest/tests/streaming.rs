//! Streaming: parse from a reader, check then stream.

use super::json::json_vehicle;
use super::lines::rows_with_terminator;
use super::*;

/// Hands out at most `chunk` bytes per read (a file read in pieces).
struct Chunked<'a> {
    rest: &'a [u8],
    chunk: usize,
}

impl std::io::Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.chunk.min(buf.len()).min(self.rest.len());
        buf[..n].copy_from_slice(&self.rest[..n]);
        self.rest = &self.rest[n..];
        Ok(n)
    }
}

fn chunked(bytes: &[u8], chunk: usize) -> Chunked<'_> {
    Chunked { rest: bytes, chunk }
}

/// A valid two-rooftop DAP CSV file and a JSON feed.
pub(super) fn feeds() -> Vec<(FeedFormat, String)> {
    let csv_text = csv(
        &header(),
        &[
            row(&[("features_json", "[\"Sunroof\",\n\"Heated seats\"]")]),
            row(&[
                ("rooftop_id", CA),
                ("currency", "CAD"),
                ("odometer_unit", "km"),
            ]),
            row(&[("vin", "1HGCY2F50RA000103"), ("stock_number", "S3")]),
        ],
    );
    let mut second = json_vehicle();
    second["vin"] = json!("2T3P1RFV8RC000607");
    second["stock_number"] = json!("MT2");
    let json_text = serde_json::to_string_pretty(&json!([json_vehicle(), second])).unwrap();
    vec![
        (FeedFormat::DapCsv, csv_text),
        (FeedFormat::Json, json_text),
    ]
}

#[test]
fn a_feed_read_in_small_pieces_parses_exactly_like_the_bytes() {
    for (format, text) in feeds() {
        let whole = parse_feed(format, "f", text.as_bytes(), &ctx(None)).unwrap();
        for chunk in [1, 7, 4096] {
            let streamed = parse_feed_reader(
                format,
                "f",
                chunked(text.as_bytes(), chunk),
                text.len() as u64,
                &ctx(None),
                &mut |_| {},
            )
            .unwrap();
            assert_eq!(streamed, whole, "{format:?} in {chunk}-byte reads");
        }
        assert_eq!(
            whole.content_digest,
            crate::dealers::digest(text.as_bytes())
        );
        assert!(
            vehicles(&whole)
                .iter()
                .all(|v| v.source.content_digest == whole.content_digest)
        );
    }
}

#[test]
fn check_then_stream_yields_the_parsed_vehicles_and_the_same_problems() {
    for (format, text) in feeds() {
        let parsed = parse_feed(format, "f", text.as_bytes(), &ctx(None)).unwrap();
        let check = check_feed(
            format,
            "f",
            chunked(text.as_bytes(), 5),
            text.len() as u64,
            &ctx(None),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(check.content_digest, parsed.content_digest);
        assert_eq!(check.rows_read, parsed.rows_read);
        let counts: Vec<(String, usize)> = parsed
            .rooftops
            .iter()
            .map(|r| (r.rooftop_id.clone(), r.vehicles.len()))
            .collect();
        assert_eq!(check.rooftops, counts, "{format:?}");
        let mut streamed = Vec::new();
        stream_feed(
            &check,
            "f",
            chunked(text.as_bytes(), 3),
            text.len() as u64,
            &ctx(None),
            &mut |v| streamed.push(v),
        )
        .unwrap();
        let mut expected: Vec<VehicleRecord> = vehicles(&parsed).into_iter().cloned().collect();
        expected.sort_by_cached_key(|v| v.vehicle_id.clone());
        streamed.sort_by_cached_key(|v| v.vehicle_id.clone());
        assert_eq!(streamed, expected, "{format:?}");

        // The file changed between the passes: refused (the writer rolls back).
        let changed = text.replace("Accord", "Civic").replace("RAV4", "RAV5");
        let r = stream_feed(
            &check,
            "f",
            changed.as_bytes(),
            changed.len() as u64,
            &ctx(None),
            &mut |_| {},
        );
        assert!(
            matches!(&r, Err(IngestError::Unreadable { reason, .. }) if reason.contains("changed")),
            "{r:?}"
        );
    }
    // Pass 1 reports every problem, exactly as parse_feed does.
    let bad = rows_with_terminator("\r\n");
    let check = check_feed(
        FeedFormat::DapCsv,
        "lines.csv",
        bad.as_bytes(),
        bad.len() as u64,
        &ctx(None),
        &mut |_| {},
    );
    assert_eq!(
        problems(check.map(|_| unreachable_feed())),
        problems(parse_feed(
            FeedFormat::DapCsv,
            "lines.csv",
            bad.as_bytes(),
            &ctx(None)
        ))
    );
}

/// Never called: `check_feed` failed above (a `map` to reuse `problems`).
fn unreachable_feed() -> ParsedFeed {
    panic!("the check must fail")
}

#[test]
fn json_streaming_still_refuses_non_arrays_and_reports_syntax_positions() {
    for (text, reason) in [
        ("{\"not\": \"an array\"}", "must be a JSON array"),
        ("\"text\"", "must be a JSON array"),
        ("[\n{\"vin\": 1},\n{oops}\n]", "not valid JSON (line 3"),
        ("[] []", "not valid JSON (line 1"),
    ] {
        let r = parse_feed(FeedFormat::Json, "v.json", text.as_bytes(), &ctx(Some(CA)));
        assert!(
            matches!(&r, Err(IngestError::Unreadable { reason: got, .. }) if got.contains(reason)),
            "{text}: {r:?}"
        );
    }
    let empty = parse_feed(FeedFormat::Json, "v.json", b"[]", &ctx(Some(CA))).unwrap();
    assert_eq!(empty.rooftops.len(), 1);
    assert!(empty.rooftops[0].vehicles.is_empty());
}
