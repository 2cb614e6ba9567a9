//! Line numbers: LF, CRLF (RFC 4180, spreadsheets) and lone CR.

use super::*;

/// The same rows with `terminator` between records. Row 1 has a quoted
/// cell spanning two lines, so row 2 starts on line 4.
pub(super) fn rows_with_terminator(terminator: &str) -> String {
    let rows = [
        row(&[("features_json", "[\"Sunroof\",\n\"Heated seats\"]")]),
        row(&[("vin", "1hgcy2f50ra000102"), ("stock_number", "S2")]),
        row(&[
            ("vin", "1HGCY2F50RA000103"),
            ("stock_number", "S3"),
            ("year", "19x4"),
        ]),
    ];
    let mut out = header().join(",");
    for r in &rows {
        out.push_str(terminator);
        out.push_str(&r.iter().map(|c| quote(c)).collect::<Vec<_>>().join(","));
    }
    out.push_str(terminator);
    out
}

#[test]
fn csv_line_numbers_are_the_file_lines_with_any_line_ending() {
    for terminator in ["\n", "\r\n", "\r"] {
        let text = rows_with_terminator(terminator);
        let p = problems(parse_feed(
            FeedFormat::DapCsv,
            "lines.csv",
            text.as_bytes(),
            &ctx(None),
        ));
        let at: Vec<(usize, &str)> = p.iter().map(|p| (p.row, p.column.as_str())).collect();
        assert_eq!(at, [(4, "vin"), (5, "year")], "{terminator:?}: {p:#?}");
    }
    // A header-only problem is on line 1, after a BOM too.
    let text = format!("\u{feff}{},colour\r\n", header().join(","));
    let p = problems(parse_feed(
        FeedFormat::DapCsv,
        "h.csv",
        text.as_bytes(),
        &ctx(None),
    ));
    assert_eq!((p[0].row, p[0].column.as_str()), (1, "colour"), "{p:#?}");
}

#[test]
fn dealer_com_line_numbers_are_right_with_crlf() {
    let good = r#"1HGCY2F50RA000707,S1,2024,Honda,Accord,N,https://d.example/S1,2026-09-01T12:00:00Z,$1,In Stock,10,"#;
    let bad = r#"1HGCY2F50RA000708,S2,2024,Honda,Accord,N,https://d.example/S2,2026-09-01T12:00:00Z,,In Stock,10,"#;
    for terminator in ["\n", "\r\n"] {
        let text = [
            DEALER_COM_HEADER,
            good,
            good.replace("S1", "S3").replace("707", "709").as_str(),
            bad,
        ]
        .join(terminator)
            + terminator;
        let p = problems(parse_feed(
            FeedFormat::DealerComCsv,
            "export.csv",
            text.as_bytes(),
            &ctx(Some(US)),
        ));
        assert_eq!(p.len(), 1, "{p:#?}");
        assert_eq!(
            (p[0].row, p[0].column.as_str()),
            (4, "InternetPrice"),
            "{terminator:?}"
        );
    }
}

#[test]
fn the_line_counter_handles_terminators_split_across_reads() {
    use std::io::Read as _;
    /// Hands out one byte per read, the worst case for a pending `\r`.
    struct OneByte<'a>(&'a [u8]);
    impl std::io::Read for OneByte<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match self.0.split_first() {
                Some((b, rest)) if !buf.is_empty() => {
                    buf[0] = *b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }
    let text = b"a\r\nb\rc\nd\r";
    let mut counter = dap_csv::LineCounter::new(OneByte(text));
    let mut sink = Vec::new();
    counter.read_to_end(&mut sink).unwrap();
    assert_eq!(sink, text);
    // Record starts: a@0, b@3 (or @2, the LF the reader has not skipped),
    // c@5, d@7.
    assert_eq!(counter.line_at(0), 1);
    assert_eq!(counter.line_at(2), 2);
    assert_eq!(counter.line_at(3), 2);
    assert_eq!(counter.line_at(5), 3);
    assert_eq!(counter.line_at(7), 4);
    assert_eq!(counter.line_at(10), 5);
}
