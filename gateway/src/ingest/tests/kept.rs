//! Checked once (docs/benchmarks.md "Import: checked once"): the vehicles
//! an import keeps from its checking pass are, byte for byte, what the
//! former second pass produced; every problem is reported as before, and a
//! file with a bad row keeps nothing.

use super::streaming::feeds;
use super::*;
use crate::ingest::kept::check_and_keep;
use crate::store::snapshot_write::StoredVehicle;

/// `text` in a temporary file, removed on drop.
struct TempFeed(std::path::PathBuf);

impl TempFeed {
    fn new(text: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "dealer-gateway-kept-test-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::write(&path, text).unwrap();
        Self(path)
    }
}

impl Drop for TempFeed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn keep(format: FeedFormat, text: &str) -> Result<(FeedCheck, Vec<StoredVehicle>), IngestError> {
    let file = TempFeed::new(text);
    let (check, kept) = check_and_keep(
        format,
        "f",
        &file.0,
        text.as_bytes(),
        text.len() as u64,
        &ctx(None),
        &mut |_| {},
    )?;
    assert_eq!(
        kept.len(),
        check.rooftops.iter().map(|(_, n)| n).sum::<usize>()
    );
    let vehicles = kept.read().unwrap().collect::<Result<Vec<_>, _>>().unwrap();
    Ok((check, vehicles))
}

#[test]
fn kept_vehicles_are_the_streamed_vehicles_as_the_store_writes_them() {
    for (format, text) in feeds() {
        let check = check_feed(
            format,
            "f",
            text.as_bytes(),
            text.len() as u64,
            &ctx(None),
            &mut |_| {},
        )
        .unwrap();
        let mut streamed = Vec::new();
        stream_feed(
            &check,
            "f",
            text.as_bytes(),
            text.len() as u64,
            &ctx(None),
            &mut |v| streamed.push(StoredVehicle::of(&v).unwrap()),
        )
        .unwrap();
        let (kept_check, kept) = keep(format, &text).unwrap();
        assert_eq!(kept_check, check, "{format:?}");
        // In file order, and each text exactly what the writer would write.
        assert_eq!(kept, streamed, "{format:?}");
        assert!(kept.iter().all(|v| v.doc.contains(&check.content_digest)));
    }
}

/// A bad row at the very end of a large file: every problem, exactly as
/// `check_feed` reports them, and nothing kept to write.
#[test]
fn a_bad_row_late_in_a_large_file_keeps_nothing_and_reports_what_check_feed_reports() {
    let mut rows: Vec<Vec<String>> = (0..1_500)
        .map(|n| {
            let vin = format!("1HGCY2F5{n:09}");
            let stock = format!("S{n}");
            row(&[("vin", vin.as_str()), ("stock_number", stock.as_str())])
        })
        .collect();
    rows.push(row(&[
        ("vin", "1HGCY2F59RA999999"),
        ("stock_number", "LAST"),
        ("year", "nineteen"),
    ]));
    let text = csv(&header(), &rows);
    let expected = check_feed(
        FeedFormat::DapCsv,
        "f",
        text.as_bytes(),
        text.len() as u64,
        &ctx(None),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(&expected, IngestError::Invalid { problems, .. } if problems.len() == 1
            && problems[0].row == 1_502),
        "{expected}"
    );
    let kept = keep(FeedFormat::DapCsv, &text).unwrap_err();
    assert_eq!(kept, expected);
    assert_eq!(kept.to_string(), expected.to_string());
}

/// The file changed between its digest and its check: refused, with the
/// words the second pass used.
#[test]
fn a_file_that_changed_after_its_digest_is_refused() {
    let (format, text) = feeds().remove(0);
    let file = TempFeed::new(&text.replace("Accord", "Civic"));
    let r = check_and_keep(
        format,
        "f",
        &file.0,
        text.as_bytes(),
        text.len() as u64,
        &ctx(None),
        &mut |_| {},
    );
    assert!(
        matches!(&r, Err(IngestError::Unreadable { reason, .. }) if reason.contains("changed")),
        "{r:?}"
    );
}
