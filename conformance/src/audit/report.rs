//! Scoring and the two renderings of an audit: the table a person reads and
//! the JSON a machine reads.
//!
//! Scoring, in integers (parts per million, no floating point): within a
//! question, a dimension scores the share of its applicable rules that
//! passed, or zero after a critical failure (see
//! [`super::grade::CRITICAL_RULES`]); a dimension scores the mean over the questions that exercise it;
//! the weighted score is the weight-averaged dimension scores over the
//! dimensions any question exercised (a dimension no question could
//! exercise is reported as not covered, with its weight, never silently
//! redistributed). Printed with two decimals.

use serde_json::{Value, json};

use super::Graded;
use super::answer::{Outcome, tokens};
use super::grade::{Check, Dimension, Verdict};

const FULL: u64 = 1_000_000;

/// A question's share of `dimension` in parts per million: the passed
/// share of its applicable rules, or nothing after a critical failure;
/// `None` when no rule of the dimension applies.
fn share(checks: &[Check], dimension: Dimension) -> Option<u64> {
    let (passed, applicable) = tally(checks, dimension);
    if applicable == 0 {
        return None;
    }
    let critical = checks
        .iter()
        .any(|c| c.dimension == dimension && c.critical_failure());
    Some(if critical {
        0
    } else {
        passed * FULL / applicable
    })
}

/// (passed, applicable) rules of `dimension` in one question.
fn tally(checks: &[Check], dimension: Dimension) -> (u64, u64) {
    let mut passed = 0;
    let mut applicable = 0;
    for c in checks.iter().filter(|c| c.dimension == dimension) {
        match c.verdict {
            Verdict::Passed => {
                passed += 1;
                applicable += 1;
            }
            Verdict::Failed => applicable += 1,
            Verdict::NotApplicable => {}
        }
    }
    (passed, applicable)
}

/// A dimension's score in parts per million, `None` when no question
/// exercised it.
pub fn dimension_ppm(graded: &[Graded], dimension: Dimension) -> Option<u64> {
    let shares: Vec<u64> = graded
        .iter()
        .filter_map(|g| share(&g.checks, dimension))
        .collect();
    let count = u64::try_from(shares.len()).ok().filter(|c| *c > 0)?;
    Some(shares.iter().sum::<u64>() / count)
}

/// The weighted score in hundredths and the weight it covers.
fn weighted(graded: &[Graded]) -> (u64, u64) {
    let mut sum = 0;
    let mut covered = 0;
    for d in Dimension::ALL {
        if let Some(ppm) = dimension_ppm(graded, d) {
            sum += ppm * d.weight();
            covered += d.weight();
        }
    }
    if covered == 0 {
        return (0, 0);
    }
    (sum / covered / 100, covered)
}

fn hundredths(h: u64) -> String {
    format!("{}.{:02}", h / 100, h % 100)
}

/// The JSON report, the table, and the score in hundredths.
pub fn render(context: &Value, graded: &[Graded]) -> (Value, String, u64) {
    let (score, covered) = weighted(graded);
    let dimensions: Vec<Value> = Dimension::ALL
        .iter()
        .map(|d| {
            let questions = graded.iter().filter(|g| tally(&g.checks, *d).1 > 0).count();
            json!({
                "dimension": d,
                "name": d.name(),
                "weight": d.weight(),
                "score": dimension_ppm(graded, *d).map(|p| hundredths(p / 100)),
                "questions": questions,
            })
        })
        .collect();
    let questions: Vec<Value> = graded.iter().map(question_json).collect();
    let mut report = context.clone();
    report["token_estimate"] =
        json!("tokens = bytes of each tools/call response body read / 4, rounded up");
    report["score"] = json!(hundredths(score));
    report["score_hundredths"] = json!(score);
    report["covered_weight"] = json!(covered);
    report["dimensions"] = json!(dimensions);
    report["questions"] = json!(questions);
    let table = table(context, graded, score, covered);
    (report, table, score)
}

fn question_json(g: &Graded) -> Value {
    let per_dimension: Vec<Value> = Dimension::ALL
        .iter()
        .filter_map(|d| {
            let (passed, applicable) = tally(&g.checks, *d);
            (applicable > 0).then(|| {
                json!({"dimension": d, "passed": passed, "of": applicable,
                    "share": share(&g.checks, *d).map(|p| hundredths(p / 100))})
            })
        })
        .collect();
    let bytes = g.answer.bytes_read();
    json!({
        "id": g.question.code,
        "topic": g.question.topic,
        "question": g.wording,
        "dimensions": g.question.dimensions,
        "budget_tokens": g.budget_tokens,
        "bytes_read": bytes,
        "tokens_read": tokens(bytes),
        "within_budget": tokens(bytes) <= g.budget_tokens,
        "answer": g.answer,
        "checks": g.checks,
        "per_dimension": per_dimension,
    })
}

fn table(context: &Value, graded: &[Graded], score: u64, covered: u64) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "dap-conformance audit of {} ({}) at {}, as {}\n\n",
        context["organization_name"].as_str().unwrap_or(""),
        context["organization_id"].as_str().unwrap_or(""),
        context["target"]["endpoint"].as_str().unwrap_or(""),
        context["caller"].as_str().unwrap_or(""),
    ));
    for g in graded {
        let cells: Vec<String> = Dimension::ALL
            .iter()
            .map(|d| {
                let (passed, applicable) = tally(&g.checks, *d);
                if applicable == 0 {
                    format!("{}  - ", d.code())
                } else {
                    format!("{} {passed}/{applicable}", d.code())
                }
            })
            .collect();
        let used = tokens(g.answer.bytes_read());
        let verdict = match &g.answer.outcome {
            Outcome::NotApplicable(_) => "N/A ",
            _ if g.checks.iter().any(|c| c.verdict == Verdict::Failed) => "LOST",
            _ => "FULL",
        };
        out.push_str(&format!(
            "{verdict} {} {:<42} {}  {used:>6}/{:<6} tokens\n",
            g.question.code,
            g.question.topic,
            cells.join("  "),
            g.budget_tokens
        ));
        if !g.wording.is_empty() {
            out.push_str(&format!("     Q: {}\n", g.wording));
        }
        out.push_str(&format!("     A: {}\n", g.answer.text));
        for note in &g.answer.notes {
            out.push_str(&format!("     note: {note}\n"));
        }
        for c in g.checks.iter().filter(|c| c.verdict == Verdict::Failed) {
            let severity = if c.critical_failure() {
                " (critical)"
            } else {
                ""
            };
            out.push_str(&format!(
                "     lost {} {}{severity}: {}\n",
                c.dimension.code(),
                c.rule,
                c.detail
            ));
        }
    }
    out.push_str("\ndimension                        weight   score  questions\n");
    for d in Dimension::ALL {
        let questions = graded.iter().filter(|g| tally(&g.checks, d).1 > 0).count();
        let shown = dimension_ppm(graded, d)
            .map_or_else(|| "not covered".to_owned(), |p| hundredths(p / 100));
        out.push_str(&format!(
            "{:<32} {:>6}  {:>6}  {questions:>9}\n",
            d.name(),
            d.weight(),
            shown
        ));
    }
    out.push_str(&format!(
        "\nweighted score: {} / 100 (dimensions covering {covered} of 100 weight; tokens = response bytes / 4)\n",
        hundredths(score)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::answer::Answer;
    use crate::audit::questions::QUESTIONS;

    fn graded(checks: Vec<Check>) -> Graded {
        Graded {
            question: &QUESTIONS[0],
            wording: String::new(),
            budget_tokens: 1,
            answer: Answer::new(Vec::new()),
            checks,
        }
    }

    fn pass(d: Dimension, rule: &'static str) -> Check {
        Check::judge(d, rule, Vec::new(), "ok")
    }

    fn fail(d: Dimension, rule: &'static str) -> Check {
        Check::judge(d, rule, vec!["wrong".into()], "")
    }

    #[test]
    fn all_passed_is_exactly_one_hundred() {
        let g: Vec<Graded> = vec![graded(
            Dimension::ALL.iter().map(|d| pass(*d, "X")).collect(),
        )];
        assert_eq!(weighted(&g), (10_000, 100));
    }

    #[test]
    fn a_dimension_is_the_mean_of_its_questions_shares() {
        let inv = Dimension::InventoryAccuracy;
        let g = vec![
            graded(vec![pass(inv, "A"), fail(inv, "B")]),
            graded(vec![
                pass(inv, "A"),
                Check::na(inv, "B", "nothing to judge"),
            ]),
        ];
        assert_eq!(dimension_ppm(&g, inv), Some(750_000));
        // Only inventory is covered: the score is over its weight alone.
        assert_eq!(weighted(&g), (7_500, 25));
        assert_eq!(dimension_ppm(&g, Dimension::RiskFlags), None);
    }

    #[test]
    fn a_critical_failure_costs_the_question_the_whole_dimension() {
        let avl = Dimension::PhantomAvailability;
        let g = vec![graded(vec![
            pass(avl, "AVL-STATUS-AS-READ"),
            pass(avl, "AVL-NOT-OFF-SALE"),
            fail(avl, "AVL-AVAILABLE-NOW-SUPPORTED"),
        ])];
        assert_eq!(dimension_ppm(&g, avl), Some(0));
    }

    #[test]
    fn the_table_and_report_carry_the_score() {
        let g = vec![graded(vec![pass(Dimension::PriceAccuracy, "P")])];
        let context = json!({"organization_name": "Org", "organization_id": "org.a",
            "target": {"endpoint": "http://x/mcp"}, "caller": "anonymous"});
        let (report, table, score) = render(&context, &g);
        assert_eq!(score, 10_000);
        assert_eq!(report["score"], "100.00");
        assert!(table.contains("weighted score: 100.00 / 100"), "{table}");
        assert!(table.contains("not covered"), "{table}");
    }
}
