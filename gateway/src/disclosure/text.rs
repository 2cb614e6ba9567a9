//! `disclosure_text`: the plain-language statement of a disclosure
//! (docs/pricing.md section 5, "Text"), within DAP's 4,000 characters.
//!
//! The text is composed, never cut. Every part a buyer must not miss is
//! always there: the advertised price, every required dealer charge, every
//! surcharge, the government-charge status and the closing "not an
//! out-the-door quote" sentence. What gives way under the length bound is
//! the naming, never the accounting: a list names as many of its items as
//! its share of the room allows (names first shortened from
//! [`NAME_CHARS`] to [`SHORT_NAME_CHARS`] characters) and counts the rest
//! exactly ("and 7 more required charges (every one is listed in
//! required_dealer_charges)"). No item is ever cut in the middle.
//!
//! How the room is shared: every list starts at its compact form (names
//! none, counts all), whose length is bounded by the counts alone, so the
//! compact text always fits. The rest of the room then goes to the lists
//! in order of what a buyer most needs named: charges not included in the
//! price, surcharges, included charges, the government estimate's basis,
//! then conditional discounts (at most [`TEXT_DISCOUNT_LIMIT`] named).

use pricing::Money;

// A name is cut on a character boundary; a phrase never is.
use super::truncate as cut;
use crate::dap::{ConditionalAdjustment, DealerCharge};

/// Longest `disclosure_text` DAP allows (characters).
pub const MAX_TEXT: usize = 4000;
/// How many conditional discounts the text names at most; the rest are
/// counted exactly ("and 3 more conditional offers").
pub const TEXT_DISCOUNT_LIMIT: usize = 10;
/// Longest name (characters) the text quotes for a charge or adjustment
/// while there is room.
const NAME_CHARS: usize = 80;
/// The shorter cut tried before a list gives up names.
const SHORT_NAME_CHARS: usize = 40;
/// Longest evaluation-failure sentence quoted (it is the gateway's own
/// text; the bound keeps the compact form within [`MAX_TEXT`]).
const MAX_FAILURE_CHARS: usize = 600;

/// The closing sentence, always last.
pub const CLOSING: &str = "This is a price disclosure, not a personalized or out-the-door quote.";

/// What the text is written from.
pub struct TextInputs<'a> {
    pub price: Money,
    /// The price includes every required charge (and they are known).
    pub includes_all: bool,
    /// The required charges are known (possibly none).
    pub charges_known: bool,
    /// The required dealer charges, as served: each with its amount.
    pub charges: &'a [&'a DealerCharge],
    /// The conditional adjustments, as served.
    pub adjustments: &'a [&'a ConditionalAdjustment],
    /// DAP `governmentCharges.status`.
    pub gov_status: &'a str,
    /// The estimate's total, when estimated.
    pub gov_total: Option<Money>,
    /// The estimate's basis.
    pub gov_assumptions: &'a [String],
    /// Why the programs could not be evaluated, if they could not.
    pub evaluation_error: Option<&'a str>,
    /// The sentence saying the offer evaluation was bounded, if it was.
    pub evaluation_bounded: Option<&'a str>,
}

/// One item of a list: a name that may be shortened and the rest of its
/// phrase, which never is (` (499.00 USD)`).
struct Item {
    name: String,
    tail: String,
    /// Whether `name` may be shortened (assumptions are whole sentences:
    /// never).
    shortenable: bool,
}

impl Item {
    fn phrase(&self, name_chars: usize) -> String {
        let name = if self.shortenable {
            cut(&self.name, name_chars)
        } else {
            &self.name
        };
        format!("{name}{}", self.tail)
    }
}

/// Which list, for its wording.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    NotIncluded,
    Surcharges,
    Included,
    Basis,
    Discounts,
}

/// A sentence naming some of its items and counting the others.
struct List {
    kind: Kind,
    items: Vec<Item>,
    /// At most this many are named.
    cap: usize,
    /// Government estimate total (for [`Kind::Basis`]).
    total: String,
}

/// How much of a list is named.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Naming {
    named: usize,
    name_chars: usize,
}

const COMPACT: Naming = Naming {
    named: 0,
    name_chars: NAME_CHARS,
};

impl List {
    fn render(&self, n: Naming) -> String {
        let phrases: Vec<String> = self.items[..n.named]
            .iter()
            .map(|i| i.phrase(n.name_chars))
            .collect();
        let rest = self.items.len() - n.named;
        let plural = |one: &'static str, many: &'static str| if rest == 1 { one } else { many };
        match self.kind {
            Kind::NotIncluded => {
                let head = "NOT included in the advertised price and required on every sale:";
                let count = format!(
                    "{rest} {} {} (every one is listed in required_dealer_charges)",
                    if n.named == 0 {
                        "required"
                    } else {
                        "more required"
                    },
                    plural("charge", "charges"),
                );
                format!("{head} {}.", joined(&phrases, ", ", rest, &count))
            }
            Kind::Included => {
                let count = format!(
                    "{rest} {} {} (every one is listed in required_dealer_charges)",
                    if n.named == 0 {
                        "required"
                    } else {
                        "more included"
                    },
                    plural("charge", "charges"),
                );
                format!(
                    "Included in the advertised price: {}.",
                    joined(&phrases, ", ", rest, &count)
                )
            }
            Kind::Surcharges => {
                let count = format!(
                    "{rest} {}{} (every one is listed in conditional_adjustments)",
                    if n.named == 0 { "" } else { "more " },
                    plural("surcharge", "surcharges"),
                );
                format!(
                    "Surcharges, added to the price where their conditions apply and not part of the advertised price: {}.",
                    joined(&phrases, "; ", rest, &count)
                )
            }
            Kind::Discounts => {
                // Unchanged wording since docs/pricing.md section 5 first
                // described it: agents may already match on it.
                let count = format!(
                    "{rest} more conditional {} (every one is listed in conditional_adjustments)",
                    plural("offer", "offers"),
                );
                format!(
                    "Conditional offers, only for buyers who meet their eligibility requirements (eligibility is required and may need proof); they are not part of the advertised price: {}.",
                    joined(&phrases, "; ", rest, &count)
                )
            }
            Kind::Basis => {
                let head = format!(
                    "Government charges (taxes, title, registration) are estimated at {}, not included; basis:",
                    self.total
                );
                if rest == 0 {
                    format!("{head} {}", phrases.join(" "))
                } else {
                    let count = format!(
                        "{rest} {}{} listed in government_charges.assumptions.",
                        if n.named == 0 { "" } else { "more " },
                        plural("assumption", "assumptions"),
                    );
                    if phrases.is_empty() {
                        format!("{head} {count}")
                    } else {
                        format!("{head} {} (and {count})", phrases.join(" "))
                    }
                }
            }
        }
    }

    fn len(&self, n: Naming) -> usize {
        self.render(n).chars().count()
    }

    /// The most detailed naming whose length is at most `room`: every item
    /// with full names, then every item with short names, then as many as
    /// fit with short names (the rest counted). `room` is at least the
    /// compact length, so [`COMPACT`] always qualifies.
    fn fit(&self, room: usize) -> Naming {
        let most = self.items.len().min(self.cap);
        for name_chars in [NAME_CHARS, SHORT_NAME_CHARS] {
            let n = Naming {
                named: most,
                name_chars,
            };
            if self.len(n) <= room {
                return n;
            }
        }
        // Below `most` the length grows with each name (a phrase adds more
        // than the shrinking count can save), so the largest fit is found
        // by bisection over [0, most).
        let (mut lo, mut hi) = (0, most);
        while lo + 1 < hi {
            let mid = usize::midpoint(lo, hi);
            let n = Naming {
                named: mid,
                name_chars: SHORT_NAME_CHARS,
            };
            if self.len(n) <= room {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        if lo == 0 {
            COMPACT
        } else {
            Naming {
                named: lo,
                name_chars: SHORT_NAME_CHARS,
            }
        }
    }
}

/// `a, b and 3 more …`, or `a, b`, or `3 …` when nothing is named.
fn joined(phrases: &[String], sep: &str, rest: usize, count: &str) -> String {
    match (phrases.is_empty(), rest) {
        (_, 0) => phrases.join(sep),
        (true, _) => count.to_owned(),
        (false, _) => format!("{}{sep}and {count}", phrases.join(sep)),
    }
}

/// A known adjustment's amount (`amount_status` `known` requires one).
fn amount_text(a: &ConditionalAdjustment) -> String {
    a.amount
        .map_or_else(|| "an unknown amount".to_owned(), |m| m.to_string())
}

fn charge_item(c: &DealerCharge) -> Item {
    Item {
        name: c.name.clone(),
        tail: format!(" ({})", c.amount),
        shortenable: true,
    }
}

fn adjustment_item(a: &ConditionalAdjustment) -> Item {
    let verb = if a.is_surcharge() {
        "surcharge"
    } else {
        "discount"
    };
    let amount = if a.amount_status == "known" {
        amount_text(a)
    } else {
        "amount unknown".to_owned()
    };
    Item {
        name: a.name.clone(),
        tail: format!(" ({verb}, {amount})"),
        shortenable: true,
    }
}

fn is_included(c: &DealerCharge) -> bool {
    c.included_in_advertised_price
}

/// One part of the text: a fixed sentence or a list.
enum Part {
    Fixed(String),
    List(List),
}

/// The text (docs/pricing.md section 5, "Text").
pub fn disclosure_text(t: &TextInputs<'_>) -> String {
    let price = t.price;
    let charges = t.charges;
    let mut parts: Vec<Part> = Vec::new();
    parts.push(Part::Fixed(format!(
        "Advertised price: {price}, available to every buyer."
    )));
    if t.includes_all && !charges.is_empty() {
        parts.push(Part::Fixed(
            "The advertised price includes every required dealer charge.".to_owned(),
        ));
    }
    if !t.charges_known {
        parts.push(Part::Fixed(
            "Required dealer charges are unknown: the dealer has not listed them, so the price may not include every required charge."
                .to_owned(),
        ));
    } else if charges.is_empty() {
        parts.push(Part::Fixed(
            "The dealer lists no required dealer charges.".to_owned(),
        ));
    } else {
        let (included, not_included): (Vec<&DealerCharge>, Vec<&DealerCharge>) =
            charges.iter().copied().partition(|c| is_included(c));
        if !included.is_empty() {
            parts.push(Part::List(List {
                kind: Kind::Included,
                items: included.iter().map(|c| charge_item(c)).collect(),
                cap: usize::MAX,
                total: String::new(),
            }));
        }
        if !not_included.is_empty() {
            parts.push(Part::List(List {
                kind: Kind::NotIncluded,
                items: not_included.iter().map(|c| charge_item(c)).collect(),
                cap: usize::MAX,
                total: String::new(),
            }));
            // The sum covers every charge left out of the price, named or
            // counted; in another currency or beyond the range there is no
            // sum.
            let sum = Money::checked_sum(
                price.currency(),
                not_included.iter().map(|c| c.amount).chain([price]),
            )
            .ok();
            if let Some(sum) = sum {
                parts.push(Part::Fixed(format!(
                    "Advertised price plus required dealer charges: {sum}, before government charges."
                )));
            }
        }
    }
    match t.gov_status {
        "estimated" => {
            let total = t
                .gov_total
                .map_or_else(|| "an estimated amount".to_owned(), |m| m.to_string());
            parts.push(Part::List(List {
                kind: Kind::Basis,
                items: t
                    .gov_assumptions
                    .iter()
                    .map(|a| Item {
                        name: a.clone(),
                        tail: String::new(),
                        shortenable: false,
                    })
                    .collect(),
                cap: usize::MAX,
                total,
            }));
        }
        "calculated" => parts.push(Part::Fixed(
            "Government charges are calculated by the dealer for this sale; the amounts are not published here, ask the dealer."
                .to_owned(),
        )),
        "not_applicable" => parts.push(Part::Fixed(
            "The dealer reports that no government charges apply.".to_owned(),
        )),
        _ => parts.push(Part::Fixed(
            "Government charges (taxes, title, registration) are unknown and not included; they are not zero and depend on the buyer's jurisdiction."
                .to_owned(),
        )),
    }
    if let Some(e) = t.evaluation_error {
        parts.push(Part::Fixed(format!(
            "Offers from the dealer's incentive programs are not listed because they could not be computed: {}",
            cut(e, MAX_FAILURE_CHARS)
        )));
    }
    if let Some(b) = t.evaluation_bounded {
        parts.push(Part::Fixed(cut(b, MAX_FAILURE_CHARS).to_owned()));
    }
    let (surcharges, discounts): (Vec<&ConditionalAdjustment>, Vec<&ConditionalAdjustment>) = t
        .adjustments
        .iter()
        .copied()
        .partition(|a| a.is_surcharge());
    if !surcharges.is_empty() {
        parts.push(Part::List(List {
            kind: Kind::Surcharges,
            items: surcharges.iter().map(|a| adjustment_item(a)).collect(),
            cap: usize::MAX,
            total: String::new(),
        }));
    }
    if !discounts.is_empty() {
        parts.push(Part::List(List {
            kind: Kind::Discounts,
            items: discounts.iter().map(|a| adjustment_item(a)).collect(),
            cap: TEXT_DISCOUNT_LIMIT,
            total: String::new(),
        }));
    }
    parts.push(Part::Fixed(CLOSING.to_owned()));
    compose(&parts)
}

/// Shares [`MAX_TEXT`] among the parts (module doc) and joins them.
fn compose(parts: &[Part]) -> String {
    let len_of = |p: &Part, n: Naming| match p {
        Part::Fixed(s) => s.chars().count(),
        Part::List(l) => l.len(n),
    };
    let mut naming = vec![COMPACT; parts.len()];
    let separators = parts.len().saturating_sub(1);
    let compact: usize = parts.iter().map(|p| len_of(p, COMPACT)).sum::<usize>() + separators;
    let mut spare = MAX_TEXT.saturating_sub(compact);
    for kind in [
        Kind::NotIncluded,
        Kind::Surcharges,
        Kind::Included,
        Kind::Basis,
        Kind::Discounts,
    ] {
        for (i, p) in parts.iter().enumerate() {
            let Part::List(l) = p else { continue };
            if l.kind != kind {
                continue;
            }
            let least = l.len(COMPACT);
            let n = l.fit(least + spare);
            // A short list named whole can be shorter than its count.
            spare = (spare + least).saturating_sub(l.len(n));
            naming[i] = n;
        }
    }
    let text: Vec<String> = parts
        .iter()
        .zip(&naming)
        .map(|(p, n)| match p {
            Part::Fixed(s) => s.clone(),
            Part::List(l) => l.render(*n),
        })
        .collect();
    let text = text.join(" ");
    debug_assert!(
        text.chars().count() <= MAX_TEXT,
        "the compact form is bounded by counts alone"
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use pricing::Currency;
    use proptest::prelude::*;

    fn usd(minor: i64) -> Money {
        Money::from_minor(minor, Currency::USD)
    }

    /// An adjustment with what the text reads: name, direction, amount.
    fn adjustment_of(name: String, surcharge: bool, amount: Option<i64>) -> ConditionalAdjustment {
        ConditionalAdjustment {
            adjustment_id: "a".into(),
            name,
            direction: if surcharge { "surcharge" } else { "discount" }.into(),
            amount_status: if amount.is_some() { "known" } else { "unknown" }.into(),
            amount: amount.map(usd),
            criteria: Vec::new(),
            criteria_mode: None,
            jurisdictions: None,
            valid_from: None,
            valid_until: None,
            stacking: crate::dap::Stacking {
                group: "g".into(),
                combinability: "stackable".into(),
                combinable_with: None,
            },
            provenance: None,
        }
    }

    fn charge(id: String, name: String, minor: i64, included: bool) -> DealerCharge {
        DealerCharge {
            charge_id: id,
            name,
            amount: Money::from_minor(minor, Currency::USD),
            payee: "dealer".into(),
            included_in_advertised_price: included,
            taxable_status: None,
            required: true,
            provenance: None,
        }
    }

    /// A unique, searchable name: the tag survives both cuts.
    fn name(section: char, i: usize, filler: &str) -> String {
        format!("{section}{i:03}#{filler}")
    }

    #[derive(Debug, Clone)]
    struct Case {
        charges: Vec<DealerCharge>,
        adjustments: Vec<ConditionalAdjustment>,
        gov: (&'static str, Vec<String>),
        evaluation_error: Option<String>,
    }

    fn filler() -> impl Strategy<Value = String> {
        // Multi-byte characters too: lengths are in characters.
        prop::collection::vec(
            prop::sample::select(vec!['a', 'b', ' ', 'é', '€', 'ß']),
            0..160,
        )
        .prop_map(|v| v.into_iter().collect())
    }

    fn case() -> impl Strategy<Value = Case> {
        let charges = (filler(), any::<bool>(), 0_i64..10_000_000);
        let adjustment = (filler(), any::<bool>(), prop::option::of(0_i64..10_000_000));
        (
            prop::collection::vec(charges, 0..70),
            prop::collection::vec(adjustment, 0..90),
            prop::sample::select(vec!["unknown", "estimated", "calculated", "not_applicable"]),
            prop::collection::vec(filler(), 0..25),
            prop::option::of(filler()),
        )
            .prop_map(|(charges, adjustments, status, assumptions, error)| Case {
                charges: charges
                    .into_iter()
                    .enumerate()
                    .map(|(i, (f, included, amount))| {
                        charge(format!("c{i}"), name('C', i, &f), amount, included)
                    })
                    .collect(),
                adjustments: adjustments
                    .into_iter()
                    .enumerate()
                    .map(|(i, (f, surcharge, amount))| {
                        adjustment_of(
                            name(if surcharge { 'S' } else { 'D' }, i, &f),
                            surcharge,
                            amount,
                        )
                    })
                    .collect(),
                gov: (
                    status,
                    assumptions
                        .into_iter()
                        .enumerate()
                        .map(|(i, f)| format!("{}.", name('G', i, &f)))
                        .collect(),
                ),
                evaluation_error: error,
            })
    }

    fn text_of(c: &Case) -> String {
        disclosure_text(&TextInputs {
            price: Money::from_minor(3_249_500, Currency::USD),
            includes_all: !c.charges.is_empty() && c.charges.iter().all(is_included),
            charges_known: true,
            charges: &c.charges.iter().collect::<Vec<_>>(),
            adjustments: &c.adjustments.iter().collect::<Vec<_>>(),
            gov_status: c.gov.0,
            gov_total: Some(Money::from_minor(218_100, Currency::USD)),
            gov_assumptions: &c.gov.1,
            evaluation_error: c.evaluation_error.as_deref(),
            evaluation_bounded: None,
        })
    }

    /// How many of `items` the text names, checking that each one is named
    /// whole (its full phrase at one of the two cuts) or not at all.
    fn named(text: &str, items: &[Item]) -> Result<usize, String> {
        let mut n = 0;
        for item in items {
            let tag = cut(&item.name, 5);
            let whole = [NAME_CHARS, SHORT_NAME_CHARS]
                .iter()
                .any(|&c| text.contains(&item.phrase(c)));
            match (text.contains(tag), whole) {
                (true, true) => n += 1,
                (false, false) => {}
                (true, false) => return Err(format!("{tag} is cut mid-item")),
                (false, true) => unreachable!(),
            }
        }
        Ok(n)
    }

    /// The words that count the items a list leaves out (written out here,
    /// not taken from the code under test).
    fn count_phrase(kind: Kind, total: usize, named: usize) -> Option<String> {
        let rest = total - named;
        if rest == 0 {
            return None;
        }
        let s = if rest == 1 { "" } else { "s" };
        Some(match (kind, named) {
            (Kind::NotIncluded, 0) => format!(
                "required on every sale: {rest} required charge{s} (every one is listed in required_dealer_charges)."
            ),
            (Kind::NotIncluded, _) => format!(
                ", and {rest} more required charge{s} (every one is listed in required_dealer_charges)."
            ),
            (Kind::Included, 0) => format!(
                "Included in the advertised price: {rest} required charge{s} (every one is listed in required_dealer_charges)."
            ),
            (Kind::Included, _) => format!(
                ", and {rest} more included charge{s} (every one is listed in required_dealer_charges)."
            ),
            (Kind::Surcharges, 0) => format!(
                "advertised price: {rest} surcharge{s} (every one is listed in conditional_adjustments)."
            ),
            (Kind::Surcharges, _) => format!(
                "; and {rest} more surcharge{s} (every one is listed in conditional_adjustments)."
            ),
            (Kind::Discounts, 0) => format!(
                "advertised price: {rest} more conditional offer{s} (every one is listed in conditional_adjustments)."
            ),
            (Kind::Discounts, _) => format!(
                "; and {rest} more conditional offer{s} (every one is listed in conditional_adjustments)."
            ),
            (Kind::Basis, 0) => {
                format!("basis: {rest} assumption{s} listed in government_charges.assumptions.")
            }
            (Kind::Basis, _) => format!(
                " (and {rest} more assumption{s} listed in government_charges.assumptions.)"
            ),
        })
    }

    fn accounts_for(text: &str, kind: Kind, total: usize, named: usize) -> bool {
        count_phrase(kind, total, named).is_none_or(|p| text.contains(&p))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(160))]

        /// docs/pricing.md section 5: every required charge and every
        /// surcharge is named or counted, the closing sentence survives, no
        /// item is cut, and the text fits DAP's 4,000 characters.
        #[test]
        fn no_required_part_is_ever_lost(c in case()) {
            let text = text_of(&c);
            prop_assert!(text.chars().count() <= MAX_TEXT, "{} chars", text.chars().count());
            prop_assert!(text.ends_with(CLOSING), "{text}");
            prop_assert!(text.starts_with("Advertised price: 32,495.00 USD"));
            let (inc, not): (Vec<&DealerCharge>, Vec<&DealerCharge>) = c.charges.iter().partition(|x| is_included(x));
            let inc: Vec<Item> = inc.iter().map(|x| charge_item(x)).collect();
            let not: Vec<Item> = not.iter().map(|x| charge_item(x)).collect();
            let (sur, dis): (Vec<&ConditionalAdjustment>, Vec<&ConditionalAdjustment>) =
                c.adjustments.iter().partition(|a| a.is_surcharge());
            let sur: Vec<Item> = sur.iter().map(|x| adjustment_item(x)).collect();
            let dis: Vec<Item> = dis.iter().map(|x| adjustment_item(x)).collect();
            for (items, kind) in [(&not, Kind::NotIncluded), (&inc, Kind::Included), (&sur, Kind::Surcharges), (&dis, Kind::Discounts)] {
                let n = named(&text, items).map_err(TestCaseError::fail)?;
                prop_assert!(accounts_for(&text, kind, items.len(), n), "{kind:?}: {n} of {} named: {text}", items.len());
            }
            prop_assert!(named(&text, &dis).unwrap() <= TEXT_DISCOUNT_LIMIT);
            if !not.is_empty() {
                prop_assert!(text.contains("NOT included in the advertised price"), "{text}");
            }
            match c.gov.0 {
                "estimated" => {
                    prop_assert!(text.contains("estimated at 2,181.00 USD, not included; basis:"), "{text}");
                    let basis: Vec<Item> = c.gov.1.iter().map(|a| Item { name: a.clone(), tail: String::new(), shortenable: false }).collect();
                    let n = named(&text, &basis).map_err(TestCaseError::fail)?;
                    prop_assert!(accounts_for(&text, Kind::Basis, basis.len(), n), "{text}");
                }
                "unknown" => prop_assert!(text.contains("are unknown and not included; they are not zero"), "{text}"),
                _ => {}
            }
        }
    }

    /// The reported case: required charges and surcharges filling the
    /// 4,000 characters. Before, the text was cut mid-item at exactly
    /// 4,000 characters and lost a surcharge and the closing sentence.
    #[test]
    fn many_long_charges_and_surcharges_keep_every_part() {
        let long = |tag: char, i: usize| name(tag, i, &"x".repeat(150));
        let charges: Vec<DealerCharge> = (0..30)
            .map(|i| charge(format!("c{i}"), long('C', i), 10_000 + i as i64, false))
            .collect();
        let adjustments: Vec<ConditionalAdjustment> = (0..30)
            .map(|i| adjustment_of(long('S', i), true, Some(5_000)))
            .collect();
        let c = Case {
            charges,
            adjustments,
            gov: ("unknown", Vec::new()),
            evaluation_error: None,
        };
        let text = text_of(&c);
        assert!(text.chars().count() <= MAX_TEXT);
        assert!(text.ends_with(CLOSING), "{text}");
        // Charges not included come first: all 30 named.
        let not: Vec<Item> = c.charges.iter().map(charge_item).collect();
        assert_eq!(named(&text, &not), Ok(30), "{text}");
        // Surcharges: named while there is room, the rest counted.
        let sur: Vec<Item> = c.adjustments.iter().map(adjustment_item).collect();
        let n = named(&text, &sur).unwrap();
        assert!(n > 0 && n < 30, "{n}: {text}");
        assert!(
            text.contains(&format!(
                "and {} more surcharges (every one is listed in conditional_adjustments)",
                30 - n
            )),
            "{text}"
        );
        // The sum covers all 30 charges.
        assert!(
            text.contains("Advertised price plus required dealer charges: 35,499.35 USD"),
            "{text}"
        );
    }
}
