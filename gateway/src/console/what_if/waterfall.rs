//! The price waterfall of one branch's best stack, as numbers and bars.

use super::*;

/// One line of a waterfall: what it is, the change it makes (`None`: an
/// unknown amount, not counted) and the running total after it.
pub(super) struct Step {
    pub(super) label: String,
    pub(super) kind: &'static str,
    pub(super) delta: Option<Money>,
    pub(super) total: Money,
}

/// The waterfall of one branch's best stack: advertised price, each
/// required dealer charge not in it (`None`: the charges are unknown, said
/// in a note and in the net's label, never counted as zero), each
/// discount, each surcharge, the floor at zero when it applied, net. `Err`
/// names what cannot be added (a currency other than the price's, an
/// overflow).
pub(super) fn waterfall(
    advertised: Money,
    charges: Option<&[&DealerCharge]>,
    branch: &Value,
) -> Result<(Vec<Step>, Vec<String>), String> {
    let known_charges = charges.is_some();
    let charges = charges.unwrap_or_default();
    let best = &branch["best_stack"];
    let reports: Vec<&Value> = branch["programs"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let name = |r: &(String, u64)| {
        reports
            .iter()
            .find(|x| key(x) == *r)
            .map_or_else(|| r.0.clone(), |x| h::text(x, "name").to_owned())
    };
    let amount = |r: &(String, u64)| {
        reports
            .iter()
            .find(|x| key(x) == *r)
            .and_then(|x| known_amount(x))
    };
    let overflow = |_| "the amounts cannot be summed within the money range".to_owned();
    let mut notes = Vec::new();
    if !known_charges {
        notes.push("The required dealer charges are unknown (neither the feed nor the rooftop lists them), so none is in the waterfall; they are not zero.".to_owned());
    }
    let mut total = advertised;
    let mut steps = vec![Step {
        label: "Advertised price".to_owned(),
        kind: "price",
        delta: Some(advertised),
        total,
    }];
    for c in charges {
        let label = format!("+ {} (required dealer charge)", c.name);
        if c.included_in_advertised_price {
            notes.push(format!(
                "{} is already included in the advertised price.",
                c.name
            ));
            continue;
        }
        // Typed money: never an amount unknown because it failed to parse.
        let m = c.amount;
        if m.currency() != advertised.currency() {
            return Err(format!("{} is in another currency than the price", c.name));
        }
        total = total.checked_add(m).map_err(overflow)?;
        steps.push(Step {
            label,
            kind: "charge",
            delta: Some(m),
            total,
        });
    }
    let mut before_offers = Money::zero(advertised.currency());
    for r in refs(best, "program_ids") {
        let label = format!("\u{2212} {} (discount)", name(&r));
        match amount(&r) {
            Some(m) => {
                total = total.checked_sub(m).map_err(overflow)?;
                before_offers = before_offers.checked_sub(m).map_err(overflow)?;
                steps.push(Step {
                    label,
                    kind: "discount",
                    delta: Some(m.checked_neg().map_err(overflow)?),
                    total,
                });
            }
            None => steps.push(Step {
                label,
                kind: "discount",
                delta: None,
                total,
            }),
        }
    }
    for r in refs(best, "surcharge_ids") {
        let label = format!("+ {} (surcharge)", name(&r));
        match amount(&r) {
            Some(m) => {
                total = total.checked_add(m).map_err(overflow)?;
                before_offers = before_offers.checked_add(m).map_err(overflow)?;
                steps.push(Step {
                    label,
                    kind: "surcharge",
                    delta: Some(m),
                    total,
                });
            }
            None => steps.push(Step {
                label,
                kind: "surcharge",
                delta: None,
                total,
            }),
        }
    }
    // The engine floors advertised − discounts + surcharges at zero
    // (docs/pricing.md): the charges come on top of that floor.
    let offered = advertised.checked_add(before_offers).map_err(overflow)?;
    if best["floored_at_zero"] == json!(true) && offered.is_negative() {
        let lift = offered.checked_neg().map_err(overflow)?;
        total = total.checked_add(lift).map_err(overflow)?;
        steps.push(Step {
            label: "+ floor at zero (the discounts exceed the price)".to_owned(),
            kind: "floor",
            delta: Some(lift),
            total,
        });
    }
    steps.push(Step {
        label: if known_charges {
            "Net price with required dealer charges, before government charges".to_owned()
        } else {
            "Net price before the unknown dealer charges and government charges".to_owned()
        },
        kind: "net",
        delta: None,
        total,
    });
    Ok((steps, notes))
}

/// "+349.00 USD", "−1,500.00 USD" (a true minus sign).
fn signed_money(m: Money) -> String {
    match m.checked_abs() {
        Ok(abs) if m.is_negative() => format!("\u{2212}{abs}"),
        _ => format!("+{m}"),
    }
}

/// A waterfall as a table: each line's change and the running total as
/// text, and a decorative bar (inline SVG, hidden from assistive
/// technology) from the total before the line to the total after it.
pub(super) fn waterfall_table(mode: &str, steps: &[Step]) -> Markup {
    let scale = steps
        .iter()
        .map(|s| i128::from(s.total.amount_minor()).max(0))
        .max()
        .unwrap_or(0)
        .max(1);
    let x = |minor: i64| (i128::from(minor).max(0) * BAR_WIDTH / scale).clamp(0, BAR_WIDTH);
    // Each bar spans the running total before the line to the one after
    // it; the price and the net start at zero.
    let mut before: i64 = 0;
    let bars: Vec<(i128, i128)> = steps
        .iter()
        .map(|s| {
            let after = s.total.amount_minor();
            let (from, to) = match s.kind {
                "price" | "net" => (0, after),
                _ => (before.min(after), before.max(after)),
            };
            before = after;
            (x(from), (x(to) - x(from)).max(1))
        })
        .collect();
    html! {
        div.scroll tabindex="0" {
            table.waterfall id={"waterfall-" (mode)} {
                caption { "Price waterfall of the best " (words::plain(V::PaymentMode, mode)) " stack" }
                thead { tr {
                    th scope="col" { "Line" } th.num scope="col" { "Change" } th.num scope="col" { "Running total" }
                    th scope="col" { span.sr { "Bar" } }
                } }
                tbody {
                    @for (s, (start, width)) in steps.iter().zip(bars) {
                        tr class={"step " (s.kind)} {
                            th scope="row" { (s.label) }
                            td.num.delta {
                                @match (s.kind, s.delta) {
                                    ("net", _) => { "= " (s.total.to_string()) },
                                    ("price", Some(m)) => (m.to_string()),
                                    (_, Some(m)) => (signed_money(m)),
                                    (_, None) => "unknown, not counted",
                                }
                            }
                            td.num.total { @if s.kind == "net" { strong { (s.total.to_string()) } } @else { (s.total.to_string()) } }
                            td {
                                svg.bar width=(BAR_WIDTH) height="14" viewBox={"0 0 " (BAR_WIDTH) " 14"} aria-hidden="true" focusable="false" {
                                    rect x=(start) y="0" width=(width) height="14" fill=(bar_colour(s.kind)) {}
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Bar fills (contrast against white at least 3:1, WCAG 1.4.11).
fn bar_colour(kind: &str) -> &'static str {
    match kind {
        "discount" => "#1d6b2f",
        "charge" | "surcharge" | "floor" => "#8a4b00",
        "net" => "#12263f",
        _ => "#0b4f9c",
    }
}
