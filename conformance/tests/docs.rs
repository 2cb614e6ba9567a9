//! docs/conformance.md describes the suite the code registers: the id
//! range of every group, the total number of checks, which checks are not
//! required, and the report example's summary. A check added, removed or
//! made optional without the documentation fails here, so the published
//! counts cannot drift from the suite (docs/conformance.md "What each
//! group proves").

use std::collections::BTreeMap;

use conformance::checks;

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/conformance.md");
    std::fs::read_to_string(path).expect("docs/conformance.md")
}

/// The number after `prefix` in `text`, e.g. `The suite has 59 checks`.
fn number_after(text: &str, prefix: &str) -> usize {
    let at = text
        .find(prefix)
        .unwrap_or_else(|| panic!("docs/conformance.md says nothing like {prefix:?}"));
    text[at + prefix.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("no number after {prefix:?}"))
}

/// The checks by group prefix (`DAPC-MCP`), each with its numbers.
fn registered() -> BTreeMap<String, Vec<usize>> {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for c in checks::all() {
        let (prefix, n) = c.id.rsplit_once('-').expect("ids are DAPC-XXX-NNN");
        groups
            .entry(prefix.to_owned())
            .or_default()
            .push(n.parse().expect("a numbered id"));
    }
    groups
}

#[test]
fn every_group_range_in_the_docs_is_the_registered_one() {
    let doc = doc();
    for (prefix, mut numbers) in registered() {
        numbers.sort_unstable();
        let expected: Vec<usize> = (1..=numbers.len()).collect();
        assert_eq!(
            numbers, expected,
            "{prefix} ids are not 001..N without gaps"
        );
        let range = if numbers.len() == 1 {
            format!("`{prefix}-001`")
        } else {
            format!("`{prefix}-001..{:03}`", numbers.len())
        };
        assert!(
            doc.contains(&format!("| {range} |")),
            "docs/conformance.md has no group row for {range}"
        );
    }
}

#[test]
fn the_total_and_the_optional_checks_in_the_docs_are_the_registered_ones() {
    let doc = doc();
    let all = checks::all();
    assert_eq!(number_after(&doc, "The suite has "), all.len());
    // The report example's summary adds up to the suite.
    let summary = ["\"passed\": ", "\"failed\": ", "\"skipped\": "]
        .iter()
        .map(|p| number_after(&doc, p))
        .sum::<usize>();
    assert_eq!(summary, all.len(), "the report example's summary");
    // "... is `required` unless noted (not required: `A`, `B`)."
    let at = doc
        .find("not required: ")
        .expect("the docs list the checks that are not required");
    let listed: Vec<&str> = doc[at..]
        .split(')')
        .next()
        .unwrap_or("")
        .split('`')
        .filter(|s| s.starts_with("DAPC-"))
        .collect();
    let optional: Vec<&str> = all.iter().filter(|c| !c.required).map(|c| c.id).collect();
    assert_eq!(listed, optional, "the checks the docs call not required");
}
