//! The stack search of one payment-mode branch: candidates, pairwise
//! compatibility, stack limits, rule verdicts (memoized), and the branch
//! and bound search for the best stack and the guaranteed floor
//! (docs/pricing.md "Stack validity", "Search").

use super::*;

/// A search candidate.
pub(super) struct Cand<'a> {
    vp: &'a ValidatedProgram,
    /// Index of the program in the evaluation's sorted program list: names
    /// it in the rule-verdict memo across searches and branches.
    gidx: usize,
    value: i64,
}

pub(super) fn refs_match(list: &[String], other: &ValidatedProgram) -> bool {
    list.iter().any(|r| {
        if let Some(g) = r.strip_prefix(GROUP_REF_PREFIX) {
            g == other.program.stacking.group
        } else if let Some(t) = r.strip_prefix(TAG_REF_PREFIX) {
            other.program.tags.iter().any(|x| x == t)
        } else {
            *r == other.program.program_id
        }
    })
}

/// Pairwise compatibility (symmetric by construction).
pub fn compatible(a: &ValidatedProgram, b: &ValidatedProgram) -> bool {
    let (sa, sb) = (&a.program.stacking, &b.program.stacking);
    if a.program.program_id == b.program.program_id {
        return false;
    }
    if refs_match(&sa.not_combinable_with, b) || refs_match(&sb.not_combinable_with, a) {
        return false;
    }
    if sa.top_of_deal && sb.top_of_deal {
        return false;
    }
    if sa.group == sb.group && sa.group_resolution == GroupResolution::BestOne {
        return false;
    }
    let side_ok = |x: &ValidatedProgram, y: &ValidatedProgram| {
        let sx = &x.program.stacking;
        sx.combinability != Combinability::Exclusive
            || refs_match(&sx.combinable_with, y)
            || y.program.stacking.always_stackable
    };
    side_ok(a, b) && side_ok(b, a)
}

/// Whether a declarative limit selects `p`.
pub(super) fn limit_selects(limit: &StackLimit, p: &ValidatedProgram) -> bool {
    match (&limit.group, &limit.tag) {
        (Some(g), _) => *g == p.program.stacking.group,
        (None, Some(t)) => p.program.tags.iter().any(|x| x == t),
        (None, None) => true,
    }
}

/// One declarative limit during a search, with the count and sum of the
/// current stack's members it selects (kept incrementally along the path).
pub(super) struct LimitState {
    /// Candidate index of the program declaring it (the limit binds only
    /// while that program is in the stack).
    owner: usize,
    max_programs: Option<u64>,
    max_amount: Option<i128>,
    count: u64,
    sum: i128,
}

impl LimitState {
    fn exceeded(&self, count: u64, sum: i128) -> bool {
        self.max_programs.is_some_and(|m| count > m) || self.max_amount.is_some_and(|m| sum > m)
    }
}

/// A rule's verdict on one stack: `Ok(())` accepts, `Err(why)` rejects.
pub(super) type Verdict = Result<(), String>;

/// Rule verdicts of one evaluation (a stack already judged is not judged
/// again; docs/pricing.md "Search"). Keyed by the rule's program, the stack
/// (sorted program indices) and, for a rule whose source names `ctx`, the branch's
/// payment mode; a rule that never names `ctx` sees the same inputs in every
/// branch (amounts do not depend on the mode), so its verdicts are shared
/// by all branches and by the best-stack and floor searches.
#[derive(Default)]
pub(crate) struct RuleMemo {
    verdicts: HashMap<(usize, Option<PaymentMode>, Vec<usize>), Verdict>,
    /// rhai evaluations actually run.
    pub(crate) evaluations: u64,
    /// Verdicts reused instead of running the rule again.
    pub(crate) reused: u64,
}

pub(super) struct Search<'a, 'e, 'm, 'f, 'i> {
    cands: Vec<Cand<'a>>,
    /// Each candidate's rule-visible value, built once per search.
    maps: Vec<rhai::Dynamic>,
    compat: Vec<Vec<bool>>,
    runner: rules::RuleRunner<'e>,
    memo: &'m mut RuleMemo,
    effort: &'f mut Effort<'i>,
    mode: PaymentMode,
    /// Nodes this search visited.
    nodes: u64,
    exhausted: bool,
    best: Vec<usize>,
    best_total: i128,
    rule_rejections: Vec<(String, String)>,
    rule_rejections_total: u64,
    limits: Vec<LimitState>,
    /// Per candidate: the limits that select it.
    affects: Vec<Vec<usize>>,
    /// Per candidate: the limits it declares that do not select it.
    owned_only: Vec<Vec<usize>>,
    in_set: Vec<bool>,
    /// Extensions refused because they broke a declarative limit.
    limit_refusals: u64,
}

/// What the rules say of one stack.
pub(super) enum Judgement {
    /// Every rule accepts it.
    Accepted,
    /// A rule rejects it; `true` when that rule is declared monotone.
    Rejected(bool),
    /// No verdict: the budget ran out, the caller interrupted, or a rule
    /// failed (the evaluation starts again without its program).
    Stop,
}

/// Rejected stacks traced per search; the rest are counted.
pub(super) const TRACED_REJECTIONS: usize = 20;

impl Search<'_, '_, '_, '_, '_> {
    fn ids(&self, set: &[usize]) -> Vec<(&str, u32)> {
        let mut v: Vec<(&str, u32)> = set.iter().map(|&i| key(self.cands[i].vp)).collect();
        v.sort_unstable();
        v
    }

    /// `true` when `(total, set)` is a better stack than the current best
    /// (larger total, then fewer programs, then ascending ids).
    fn better(&self, total: i128, set: &[usize]) -> bool {
        match total.cmp(&self.best_total) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => match set.len().cmp(&self.best.len()) {
                Ordering::Less => true,
                Ordering::Greater => false,
                Ordering::Equal => self.ids(set) < self.ids(&self.best),
            },
        }
    }

    /// Whether adding candidate `k` to the current stack keeps every
    /// declarative limit (of the members and of `k`) satisfied. Counts and
    /// sums only grow, so a refusal holds for every larger stack too.
    fn limits_allow(&self, k: usize) -> bool {
        let value = i128::from(self.cands[k].value.max(0));
        for &l in &self.affects[k] {
            let st = &self.limits[l];
            if (self.in_set[st.owner] || st.owner == k) && st.exceeded(st.count + 1, st.sum + value)
            {
                return false;
            }
        }
        self.owned_only[k]
            .iter()
            .all(|&l| !self.limits[l].exceeded(self.limits[l].count, self.limits[l].sum))
    }

    fn push(&mut self, set: &mut Vec<usize>, k: usize) {
        let value = i128::from(self.cands[k].value.max(0));
        for &l in &self.affects[k] {
            self.limits[l].count += 1;
            self.limits[l].sum += value;
        }
        self.in_set[k] = true;
        set.push(k);
    }

    fn pop(&mut self, set: &mut Vec<usize>) {
        if let Some(k) = set.pop() {
            let value = i128::from(self.cands[k].value.max(0));
            for &l in &self.affects[k] {
                self.limits[l].count -= 1;
                self.limits[l].sum -= value;
            }
            self.in_set[k] = false;
        }
    }

    /// What the rules of `set`'s members say of it (memoized per rule and
    /// stack; see [`RuleMemo`]).
    fn rules_accept(&mut self, set: &[usize]) -> Judgement {
        let mut order: Vec<usize> = set.to_vec();
        order.sort_by(|&a, &b| key(self.cands[a].vp).cmp(&key(self.cands[b].vp)));
        let stack_key: Vec<usize> = order.iter().map(|&k| self.cands[k].gidx).collect();
        let mut array: Option<rhai::Array> = None;
        for &i in &order {
            let p = self.cands[i].vp;
            let Some(rule) = &p.rule else { continue };
            let mode = rule.reads_ctx.then_some(self.mode);
            let memo_key = (self.cands[i].gidx, mode, stack_key.clone());
            let verdict = if let Some(v) = self.memo.verdicts.get(&memo_key) {
                self.memo.reused += 1;
                v.clone()
            } else {
                if self.effort.check_interrupt() {
                    return Judgement::Stop;
                }
                // Building the stack costs one operation per member.
                let charge = 1 + u64::try_from(order.len()).unwrap_or(u64::MAX);
                let left = self.effort.op_cap.saturating_sub(self.effort.ops);
                if left <= charge {
                    self.effort.stop(BudgetStop::RuleOperations);
                    return Judgement::Stop;
                }
                let a = array
                    .get_or_insert_with(|| order.iter().map(|&k| self.maps[k].clone()).collect())
                    .clone();
                let run = self.runner.run_within(&rule.ast, a, left - charge);
                self.memo.evaluations += 1;
                self.effort.calls += 1;
                self.effort.ops += run.operations + charge;
                let v = match run.verdict {
                    None => {
                        self.effort.stop(BudgetStop::RuleOperations);
                        return Judgement::Stop;
                    }
                    Some(Ok(true)) => Ok(()),
                    Some(Ok(false)) => Err("returned false".to_owned()),
                    Some(Err(failure)) => {
                        // Never a verdict: the program is left out and the
                        // evaluation starts again without it.
                        let members: Vec<&ValidatedProgram> =
                            order.iter().map(|&k| self.cands[k].vp).collect();
                        self.effort.failures.push((
                            self.cands[i].gidx,
                            UnusableRule {
                                program_id: p.program.program_id.clone(),
                                revision: p.program.revision,
                                reason: format!(
                                    "the rule {}, for the stack {} (payment mode {})",
                                    rules::failure_words(&failure),
                                    rules::stack_words(&members),
                                    self.mode.name()
                                ),
                            },
                        ));
                        self.effort.restart = true;
                        return Judgement::Stop;
                    }
                };
                self.memo.verdicts.insert(memo_key, v.clone());
                v
            };
            if let Err(why) = verdict {
                self.rule_rejections_total += 1;
                if self.rule_rejections.len() < TRACED_REJECTIONS {
                    let members: Vec<&str> = order
                        .iter()
                        .map(|&k| self.cands[k].vp.program.program_id.as_str())
                        .collect();
                    self.rule_rejections.push((
                        format!("[{}]", members.join(", ")),
                        format!("rule of {} {why}", p.program.program_id),
                    ));
                }
                return Judgement::Rejected(p.program.stacking.rule_monotone);
            }
        }
        Judgement::Accepted
    }

    /// Visits `set` and its extensions by members of `avail` (candidates
    /// after the last member, compatible with every member and allowed by
    /// every declarative limit).
    fn dfs(&mut self, set: &mut Vec<usize>, total: i128, avail: &[usize]) {
        if !self.effort.take_node() {
            self.exhausted = true;
            return;
        }
        self.nodes += 1;
        if self.better(total, set) {
            match self.rules_accept(set) {
                Judgement::Accepted => {
                    self.best = set.clone();
                    self.best_total = total;
                }
                // A monotone rule rejects every extension too: prune.
                Judgement::Rejected(true) => return,
                Judgement::Rejected(false) => {}
                Judgement::Stop => {
                    self.exhausted = true;
                    return;
                }
            }
        }
        self.extend(set, total, avail);
    }

    /// The children of `set` in [`Search::dfs`].
    fn extend(&mut self, set: &mut Vec<usize>, total: i128, avail: &[usize]) {
        let mut suffix = vec![0_i128; avail.len() + 1];
        for (idx, &k) in avail.iter().enumerate().rev() {
            suffix[idx] = suffix[idx + 1] + i128::from(self.cands[k].value.max(0));
        }
        for (idx, &j) in avail.iter().enumerate() {
            // Bound: even every remaining compatible candidate cannot reach best.
            if total + suffix[idx] < self.best_total {
                break;
            }
            self.push(set, j);
            let mut next = Vec::with_capacity(avail.len() - idx);
            for &k in &avail[idx + 1..] {
                if !self.compat[j][k] {
                    continue;
                }
                if self.limits_allow(k) {
                    next.push(k);
                } else {
                    self.limit_refusals += 1;
                }
            }
            self.dfs(set, total + i128::from(self.cands[j].value), &next);
            self.pop(set);
            if self.exhausted {
                return;
            }
        }
    }
}

pub(super) struct SearchOutcome<'a> {
    members: Vec<&'a ValidatedProgram>,
    optimality: Optimality,
    nodes: u64,
    rule_rejections: Vec<(String, String)>,
    rule_rejections_total: u64,
    limit_refusals: u64,
}

pub(super) fn search<'a>(
    cands: Vec<Cand<'a>>,
    engine: &rhai::Engine,
    ctx: &RuleContext,
    mode: PaymentMode,
    memo: &mut RuleMemo,
    effort: &mut Effort<'_>,
) -> SearchOutcome<'a> {
    let mut cands = cands;
    cands.sort_by(|a, b| {
        b.value
            .cmp(&a.value)
            .then_with(|| key(a.vp).cmp(&key(b.vp)))
    });
    let n = cands.len();
    let compat: Vec<Vec<bool>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| i != j && compatible(cands[i].vp, cands[j].vp))
                .collect()
        })
        .collect();
    let mut limits = Vec::new();
    let mut affects = vec![Vec::new(); n];
    let mut owned_only = vec![Vec::new(); n];
    for (owner, c) in cands.iter().enumerate() {
        for limit in &c.vp.program.stacking.limits {
            let l = limits.len();
            limits.push(LimitState {
                owner,
                max_programs: limit.max_programs.map(u64::from),
                max_amount: limit.max_amount.map(|m| i128::from(m.amount_minor())),
                count: 0,
                sum: 0,
            });
            for (k, other) in cands.iter().enumerate() {
                if limit_selects(limit, other.vp) {
                    affects[k].push(l);
                }
            }
            if !limit_selects(limit, c.vp) {
                owned_only[owner].push(l);
            }
        }
    }
    let needs_maps = cands.iter().any(|c| c.vp.rule.is_some());
    let maps = if needs_maps {
        cands.iter().map(|c| ctx.program_dynamic(c.vp)).collect()
    } else {
        Vec::new()
    };
    let mut s = Search {
        cands,
        maps,
        compat,
        runner: rules::RuleRunner::new(engine, ctx),
        memo,
        effort,
        mode,
        nodes: 0,
        exhausted: false,
        best: Vec::new(),
        best_total: 0,
        rule_rejections: Vec::new(),
        rule_rejections_total: 0,
        limits,
        affects,
        owned_only,
        in_set: vec![false; n],
        limit_refusals: 0,
    };
    let mut set = Vec::new();
    // Warm start: rule calls are the expensive part, and a rule that is not
    // declared monotone does not prune, so first find the best stack without
    // any rhai-ruled program
    // (pairwise constraints and limits only: cheap and exact). It is a valid
    // stack, so it is a sound incumbent; the full search below then bounds
    // against it instead of against nothing. The result is the same total
    // order's maximum either way: the bound only drops branches that cannot
    // reach the incumbent.
    if s.cands.iter().any(|c| c.vp.rule.is_some()) {
        let rule_free: Vec<usize> = (0..n)
            .filter(|&k| s.cands[k].vp.rule.is_none() && s.limits_allow(k))
            .collect();
        s.dfs(&mut set, 0, &rule_free);
    }
    // The empty stack is the first node and always valid (no rule runs on it).
    if !s.exhausted {
        let all: Vec<usize> = (0..n).filter(|&k| s.limits_allow(k)).collect();
        s.limit_refusals += (n - all.len()) as u64;
        s.dfs(&mut set, 0, &all);
    }
    let mut members: Vec<&ValidatedProgram> = s.best.iter().map(|&i| s.cands[i].vp).collect();
    members.sort_by(|a, b| key(a).cmp(&key(b)));
    SearchOutcome {
        members,
        optimality: if s.exhausted {
            Optimality::Bounded {
                nodes_explored: s.nodes,
            }
        } else {
            Optimality::Proven
        },
        nodes: s.nodes,
        rule_rejections: s.rule_rejections,
        rule_rejections_total: s.rule_rejections_total,
        limit_refusals: s.limit_refusals,
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn stack_report(
    label: &str,
    mode: PaymentMode,
    outcome: SearchOutcome<'_>,
    surcharges: &[(&ValidatedProgram, &ResolvedAmount)],
    amounts: &BTreeMap<(String, u32), ResolvedAmount>,
    eligibilities: &BTreeMap<(String, u32), Eligibility>,
    price: Money,
    trace: &mut Vec<String>,
) -> Result<StackReport, MoneyError> {
    let currency: Currency = price.currency();
    let amount_of =
        |p: &ValidatedProgram| amounts.get(&(p.program.program_id.clone(), p.program.revision));
    let mut total = Money::zero(currency);
    let mut unknown_amounts = Vec::new();
    let mut subject = Vec::new();
    for p in &outcome.members {
        match amount_of(p).and_then(ResolvedAmount::known) {
            Some(m) => total = total.checked_add(m)?,
            None => unknown_amounts.push(pref(p)),
        }
        if matches!(
            eligibilities.get(&(p.program.program_id.clone(), p.program.revision)),
            Some(Eligibility::EligibleSubjectToEvidence { .. })
        ) {
            subject.push(pref(p));
        }
    }
    let mut sur = Money::zero(currency);
    for (p, a) in surcharges {
        match a.known() {
            Some(m) => sur = sur.checked_add(m)?,
            None => unknown_amounts.push(pref(p)),
        }
    }
    let raw = price.checked_sub(total)?.checked_add(sur)?;
    let floored = raw.is_negative();
    let net = if floored { Money::zero(currency) } else { raw };
    for (stack, why) in &outcome.rule_rejections {
        trace.push(format!(
            "{}/{label}: stack {stack} rejected: {why}",
            mode.name()
        ));
    }
    if outcome.limit_refusals > 0 {
        trace.push(format!(
            "{}/{label}: {} extensions refused by declarative limits",
            mode.name(),
            outcome.limit_refusals
        ));
    }
    let untraced = outcome.rule_rejections_total - outcome.rule_rejections.len() as u64;
    if untraced > 0 {
        trace.push(format!(
            "{}/{label}: {untraced} more stacks rejected by rules (not listed)",
            mode.name()
        ));
    }
    let ids: Vec<String> = outcome
        .members
        .iter()
        .map(|p| format!("{}@{}", p.program.program_id, p.program.revision))
        .collect();
    let opt = match outcome.optimality {
        Optimality::Proven => "proven".to_owned(),
        Optimality::Bounded { nodes_explored } => format!("bounded after {nodes_explored} nodes"),
    };
    trace.push(format!(
        "{}/{label}: stack [{}] discount {total} surcharges {sur} net {net} ({opt}, {} nodes)",
        mode.name(),
        ids.join(", "),
        outcome.nodes
    ));
    if floored {
        trace.push(format!(
            "{}/{label}: net price {raw} floored at zero",
            mode.name()
        ));
    }
    unknown_amounts.sort();
    Ok(StackReport {
        program_ids: outcome.members.iter().map(|p| pref(p)).collect(),
        surcharge_ids: surcharges.iter().map(|(p, _)| pref(p)).collect(),
        total_discount: total,
        surcharges: sur,
        net_price: net,
        floored_at_zero: floored,
        subject_to_evidence: subject,
        unknown_amounts,
        optimality: outcome.optimality,
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) fn evaluate_branch(
    vehicle: &Vehicle,
    engine: &rhai::Engine,
    programs: &[&ValidatedProgram],
    profile: &Profile,
    mode: PaymentMode,
    excluded: &BTreeMap<usize, UnusableRule>,
    memo: &mut RuleMemo,
    effort: &mut Effort<'_>,
    trace: &mut Vec<String>,
) -> Result<Branch, MoneyError> {
    let m = mode.name();
    let mut reports = Vec::new();
    let mut amounts = BTreeMap::new();
    let mut eligibilities = BTreeMap::new();
    let as_of = profile.as_of.to_rfc3339();
    let claims: Vec<(&str, Option<bool>)> = profile
        .claims
        .iter()
        .map(|(c, v)| {
            (
                c.name(),
                match v {
                    ClaimValue::True => Some(true),
                    ClaimValue::False => Some(false),
                    ClaimValue::Unknown => None,
                },
            )
        })
        .collect();
    let mut ctx = RuleContext::new(
        &RuleVehicle {
            make: &vehicle.make,
            model: &vehicle.model,
            year: i64::from(vehicle.year),
            trim: vehicle.trim.as_deref(),
            condition: &vehicle.condition,
            price_minor: vehicle.advertised_price.amount_minor(),
            currency: vehicle.advertised_price.currency().code(),
        },
        &RuleProfile {
            payment_mode: m,
            country: &profile.jurisdiction.country,
            subdivision: profile.jurisdiction.subdivision.as_deref(),
            claims,
        },
        &as_of,
    );
    // (program, index in `programs`, value, needs no claim)
    let mut discounts: Vec<(&ValidatedProgram, usize, i64, bool)> = Vec::new();
    let mut surcharges: Vec<(&ValidatedProgram, ResolvedAmount)> = Vec::new();
    let mut potential_extra = Vec::new();
    let mut unknown_amount_programs = Vec::new();
    for (gidx, vp) in programs.iter().enumerate() {
        let p = &vp.program;
        let id = format!("{}@{}", p.program_id, p.revision);
        let amount = resolve_amount(vp, vehicle)?;
        // A program whose rule failed on a real stack is out of every stack
        // and of every offer (docs/pricing.md section 3).
        let applies = match excluded.get(&gidx) {
            Some(u) => Err(format!("stacking rule cannot be evaluated: {}", u.reason)),
            None => applicability(vp, vehicle, profile, mode),
        };
        let (applicability, elig) = match applies {
            Err(reason) => {
                trace.push(format!("{m}: {id} not applicable: {reason}"));
                (
                    Applicability::NotApplicable {
                        reason: reason.clone(),
                    },
                    Eligibility::Ineligible {
                        reason: format!("not applicable: {reason}"),
                    },
                )
            }
            Ok(residency_need) => {
                let mut e = eligibility(vp, profile, mode);
                if let Some(need) = residency_need {
                    e = match e {
                        Eligibility::Ineligible { .. } => e,
                        Eligibility::Unknown { mut needs } => {
                            needs.insert(0, need);
                            Eligibility::Unknown { needs }
                        }
                        _ => Eligibility::Unknown { needs: vec![need] },
                    };
                }
                trace.push(format!(
                    "{m}: {id} applicable; eligibility {}",
                    elig_name(&e)
                ));
                (Applicability::Applicable, e)
            }
        };
        let applicable = applicability == Applicability::Applicable;
        let usable = matches!(
            elig,
            Eligibility::Eligible | Eligibility::EligibleSubjectToEvidence { .. }
        );
        if applicable && !matches!(elig, Eligibility::Ineligible { .. }) && amount.known().is_none()
        {
            unknown_amount_programs.push(pref(vp));
        }
        if applicable {
            match p.direction {
                Direction::Surcharge => {
                    if !matches!(elig, Eligibility::Ineligible { .. }) {
                        trace.push(format!("{m}: {id} surcharge always included"));
                        surcharges.push((vp, amount.clone()));
                    }
                }
                Direction::Discount => {
                    if usable {
                        let value = amount.known().map_or(0, Money::amount_minor);
                        let no_claim = needs_no_claim(vp, &elig, profile, mode);
                        discounts.push((vp, gidx, value, no_claim));
                    } else if let Eligibility::Unknown { needs } = &elig {
                        let what = match amount.known() {
                            Some(a) => format!("+{a}"),
                            None => "+amount unknown".to_owned(),
                        };
                        let crits: Vec<&str> = needs.iter().map(|n| n.criterion.as_str()).collect();
                        potential_extra.push(PotentialExtra {
                            program: pref(vp),
                            amount: amount.clone(),
                            needs: needs.clone(),
                            summary: format!(
                                "{} {what} if {} verified",
                                p.name,
                                crits.join(" and ")
                            ),
                        });
                    }
                }
            }
        }
        ctx.set_amount(
            &p.program_id,
            p.revision,
            amount.known().map(Money::amount_minor),
        );
        amounts.insert((p.program_id.clone(), p.revision), amount.clone());
        eligibilities.insert((p.program_id.clone(), p.revision), elig.clone());
        reports.push(ProgramReport {
            program_id: p.program_id.clone(),
            revision: p.revision,
            name: p.name.clone(),
            direction: p.direction,
            applicability,
            eligibility: elig,
            amount,
        });
    }
    let sur_refs: Vec<(&ValidatedProgram, &ResolvedAmount)> =
        surcharges.iter().map(|(p, a)| (*p, a)).collect();
    fn cand<'a>(&(vp, gidx, value, _): &(&'a ValidatedProgram, usize, i64, bool)) -> Cand<'a> {
        Cand { vp, gidx, value }
    }
    let all: Vec<Cand<'_>> = discounts.iter().map(cand).collect();
    let floor: Vec<Cand<'_>> = discounts
        .iter()
        .filter(|(_, _, _, no_claim)| *no_claim)
        .map(cand)
        .collect();
    let best = search(all, engine, &ctx, mode, memo, effort);
    let best_stack = stack_report(
        "best",
        mode,
        best,
        &sur_refs,
        &amounts,
        &eligibilities,
        vehicle.advertised_price,
        trace,
    )?;
    // When every usable discount needs no claim the floor is the best stack.
    let floor = if floor.len() == discounts.len() {
        search_again(
            &best_stack,
            discounts.iter().map(|(vp, _, _, _)| *vp).collect(),
        )
    } else {
        search(floor, engine, &ctx, mode, memo, effort)
    };
    let guaranteed_floor = stack_report(
        "floor",
        mode,
        floor,
        &sur_refs,
        &amounts,
        &eligibilities,
        vehicle.advertised_price,
        trace,
    )?;
    Ok(Branch {
        payment_mode: mode,
        programs: reports,
        best_stack,
        guaranteed_floor,
        potential_extra,
        unknown_amount_programs,
    })
}

/// Rebuilds an outcome from a finished search's report (same candidates,
/// same answer) instead of searching twice.
pub(super) fn search_again<'a>(
    report: &StackReport,
    cands: Vec<&'a ValidatedProgram>,
) -> SearchOutcome<'a> {
    let mut members: Vec<&ValidatedProgram> = cands
        .into_iter()
        .filter(|p| report.program_ids.contains(&pref(p)))
        .collect();
    members.sort_by(|a, b| key(a).cmp(&key(b)));
    SearchOutcome {
        members,
        optimality: report.optimality,
        nodes: 0,
        rule_rejections: Vec::new(),
        rule_rejections_total: 0,
        limit_refusals: 0,
    }
}

/// Whether a usable discount belongs in the guaranteed floor (docs/pricing.md
/// "Output"): the floor counts the programs that need **no claim
/// from the buyer**, not only those with no criteria at all. A program is
/// in it when it is plainly `eligible` in this branch and would still be
/// eligible with every claim withdrawn, i.e. every criterion it relies on
/// is decided by the profile itself (its `payment_mode` criterion, decided
/// by the branch). Eligible only subject to evidence, or eligible because
/// of a claim, is not guaranteed.
pub(super) fn needs_no_claim(
    vp: &ValidatedProgram,
    elig: &Eligibility,
    profile: &Profile,
    mode: PaymentMode,
) -> bool {
    if !matches!(elig, Eligibility::Eligible) {
        return false;
    }
    if vp.program.criteria.is_empty() || profile.claims.is_empty() {
        return true;
    }
    let unclaimed = Profile {
        claims: BTreeMap::new(),
        ..profile.clone()
    };
    matches!(eligibility(vp, &unclaimed, mode), Eligibility::Eligible)
}

pub(super) fn elig_name(e: &Eligibility) -> String {
    match e {
        Eligibility::Eligible => "eligible".into(),
        Eligibility::EligibleSubjectToEvidence { criteria } => {
            format!("eligible subject to evidence ({})", criteria.join(", "))
        }
        Eligibility::Ineligible { reason } => format!("ineligible ({reason})"),
        Eligibility::Unknown { needs } => {
            let c: Vec<&str> = needs.iter().map(|n| n.criterion.as_str()).collect();
            format!("unknown (needs {})", c.join(", "))
        }
    }
}
