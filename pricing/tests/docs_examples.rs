//! The programs example in docs/pricing.md validates and evaluates as the
//! document says.

mod common;

use common::*;
use pricing::incentives::{Criterion, ProgramSet, ProgramsFile};
use pricing::stacking::{Applicability, ClaimValue, Eligibility, ProfilePaymentMode};
use pricing::{Currency, SearchBudget, evaluate};

const DOC: &str = include_str!("../../docs/pricing.md");

fn example() -> ProgramsFile {
    let start = DOC
        .find("```json programs-example\n")
        .expect("example block")
        + 25;
    let end = start + DOC[start..].find("```").expect("block end");
    serde_json::from_str(&DOC[start..end]).expect("example parses")
}

#[test]
fn docs_example_validates_and_evaluates() {
    let ps = ProgramSet::validate_file(example()).expect("example validates");
    let mut p = profile(ProfilePaymentMode::Unknown);
    p.jurisdiction.postal_code = Some("62701".into());
    let p = with_claim(p, Criterion::Loyalty, ClaimValue::True);
    let p = with_claim(p, Criterion::FinanceProvider, ClaimValue::True);
    let e = evaluate(
        &vehicle(3_000_000, Currency::USD),
        &ps,
        &p,
        SearchBudget::default(),
    )
    .unwrap();
    let find = |id: &str| e.programs.iter().find(|r| r.program_id == id).unwrap();
    assert!(matches!(
        find("winter-clearance").applicability,
        Applicability::NotApplicable { .. }
    ));
    assert_eq!(find("il-green").applicability, Applicability::Applicable);
    assert!(matches!(
        find("loyalty").eligibility,
        Eligibility::EligibleSubjectToEvidence { .. }
    ));
    assert!(
        e.potential_extra
            .iter()
            .any(|x| x.summary == "Military Appreciation +500.00 USD if military verified")
    );
    // The surcharge is always in.
    assert_eq!(e.best_stack.surcharges.amount_minor(), 99_500);
    // Cash branch: customer cash + bonus can't both stack with dealer-spring (one oem program max).
    for b in &e.branches {
        let ids: Vec<&str> = b
            .best_stack
            .program_ids
            .iter()
            .map(|r| r.program_id.as_str())
            .collect();
        assert!(
            !(ids.contains(&"oem-cash-camry") && ids.contains(&"oem-apr")),
            "{ids:?}"
        );
        let oem = b
            .best_stack
            .program_ids
            .iter()
            .filter(|r| r.program_id.starts_with("oem"))
            .count();
        if ids.contains(&"dealer-spring") {
            assert!(oem <= 1, "{ids:?}");
        }
    }
    assert_eq!(e.branches.len(), 3);
}
