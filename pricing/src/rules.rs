//! The rhai sandbox for `rule_defined` stacking rules (docs/pricing.md
//! section 4, "The rule sandbox").
//!
//! [`engine`] is the ONE constructor: every limit lives here. Scripts are
//! compiled once at validation ([`compile`]) and evaluated per candidate
//! stack ([`evaluate_rule`]). The crate enables rhai's `no_float`,
//! `only_i64`, `no_time` and `no_module` features: no floats can enter a
//! money script, there is no clock (the context carries `as_of`) and no
//! module can be loaded. rhai has no file or network access of its own;
//! `print`/`debug` are silenced. `unchecked` is never enabled (it would
//! compile out every limit).
//!
//! The budget is counted in rhai *operations*, not wall-clock time, so a
//! verdict is deterministic: the same script on the same stack always
//! succeeds or always runs out. Every operation counts, including those of
//! closures that `filter`, `all`, `map` ... run for each element (rhai
//! restarts its own per-call count inside each closure, so its
//! `set_max_operations` alone would let `stack.map(|p| { 39,000
//! operations })` cost 39,000 operations per program of the stack): the
//! engine's progress callback counts each operation on a per-thread meter
//! that every call resets ([`RuleRunner`]). One call may use at most
//! [`RULE_CALL_OPERATIONS`]; an evaluation may cap a call lower to stay
//! within its own budget (`pricing::stacking`, docs/pricing.md section 4).
//!
//! A rule sees each program of the stack as a read-only `program` value
//! ([`RuleProgram`]) with the same properties a map had (`p.group`,
//! `p["group"]`, `"group" in p`), shared between calls instead of copied:
//! rhai copies a map every time a closure or loop variable receives it, and
//! counts every entry of every map in the stack against its map-size limit
//! (200 entries: a stack of 17 programs of 12 entries each was refused as
//! "too large" before any rule logic ran).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;

use rhai::{AST, Array, Dynamic, Engine, ImmutableString, Map, Scope};

use crate::program::{ProgramAmount, ValidatedProgram};

/// The most rhai operations one rule call may use, over the script and
/// every closure it runs (docs/pricing.md section 4). A rule that needs
/// more on a stack fails there ([`RuleFailure::Budget`]); at import every
/// rule is run on synthetic stacks ([`prove`]) and refused when it needs
/// more on any of them.
pub const RULE_CALL_OPERATIONS: u64 = 10_000;
/// rhai's own per-context operation cap: a backstop behind the meter (which
/// counts every context and stops first).
pub const MAX_OPERATIONS: u64 = RULE_CALL_OPERATIONS + 1;
/// Maximum function call depth.
pub const MAX_CALL_LEVELS: usize = 16;
/// Maximum expression depth (global, in functions).
pub const MAX_EXPR_DEPTHS: (usize, usize) = (64, 32);
/// Maximum string length (bytes).
pub const MAX_STRING_SIZE: usize = 4096;
/// Maximum array length.
pub const MAX_ARRAY_SIZE: usize = 1000;
/// Maximum object-map size.
pub const MAX_MAP_SIZE: usize = 200;
/// Maximum number of variables in scope.
pub const MAX_VARIABLES: usize = 100;
/// Maximum number of script-defined functions.
pub const MAX_FUNCTIONS: usize = 50;

/// The token the progress callback stops a script with.
const STOPPED: &str = "operation budget exhausted";

thread_local! {
    /// Operations counted since the current call began (all contexts).
    static USED: Cell<u64> = const { Cell::new(0) };
    /// The current call's cap.
    static LIMIT: Cell<u64> = const { Cell::new(RULE_CALL_OPERATIONS) };
}

/// Builds the sandboxed engine. The only place rhai limits are set.
///
/// ```
/// let engine = pricing::rules::engine();
/// assert!(engine.compile("eval(\"1\")").is_err());
/// ```
pub fn engine() -> Engine {
    let mut engine = Engine::new();
    engine
        .set_max_operations(MAX_OPERATIONS)
        .set_max_call_levels(MAX_CALL_LEVELS)
        .set_max_expr_depths(MAX_EXPR_DEPTHS.0, MAX_EXPR_DEPTHS.1)
        .set_max_string_size(MAX_STRING_SIZE)
        .set_max_array_size(MAX_ARRAY_SIZE)
        .set_max_map_size(MAX_MAP_SIZE)
        .set_max_variables(MAX_VARIABLES)
        .set_max_functions(MAX_FUNCTIONS);
    // No `set_max_modules(0)`: the `no_module` feature removes modules (and
    // that setter) entirely, which is stronger.
    engine.disable_symbol("eval");
    engine.on_print(|_| {});
    engine.on_debug(|_, _, _| {});
    // Called once per operation in every context (closures included), so
    // the meter sees the call's true total; see the module doc.
    engine.on_progress(|_| {
        let used = USED.get() + 1;
        USED.set(used);
        (used > LIMIT.get()).then(|| Dynamic::from(STOPPED))
    });
    register_program(&mut engine);
    engine
}

/// Compiles a rule once (at validation).
///
/// # Errors
/// The compiler's message.
pub fn compile(engine: &Engine, source: &str) -> Result<AST, String> {
    engine.compile(source).map_err(|e| e.to_string())
}

/// One program as a rule sees it (`stack[i]`, rhai type `program`): its
/// properties are read through getters from one shared copy, so handing
/// it to a closure or a loop variable copies a pointer, not a map. Reading
/// a property it does not have gives `()`, as a map did.
#[derive(Clone, Debug)]
pub struct RuleProgram(Arc<Vec<(&'static str, Dynamic)>>);

/// The properties of [`RuleProgram`], in the order they are stored.
const PROGRAM_FIELDS: [&str; 12] = [
    "program_id",
    "revision",
    "name",
    "kind",
    "direction",
    "amount_minor",
    "currency",
    "group",
    "combinability",
    "top_of_deal",
    "always_stackable",
    "tags",
];

impl RuleProgram {
    fn get(&self, key: &str) -> Dynamic {
        self.0
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(Dynamic::UNIT, |(_, v)| v.clone())
    }
}

/// Registers [`RuleProgram`]: a getter per property (the fast path), the
/// string indexer (`p["group"]`, and the fallback for any other property
/// name), `in` (`"group" in p`), `keys()` and `len()`.
fn register_program(engine: &mut Engine) {
    engine.register_type_with_name::<RuleProgram>("program");
    for (index, name) in PROGRAM_FIELDS.iter().enumerate() {
        engine.register_get(*name, move |p: &mut RuleProgram| p.0[index].1.clone());
    }
    engine.register_indexer_get(|p: &mut RuleProgram, key: &str| p.get(key));
    engine.register_fn("contains", |p: &mut RuleProgram, key: &str| {
        p.0.iter().any(|(k, _)| *k == key)
    });
    engine.register_fn("keys", |p: &mut RuleProgram| -> Array {
        p.0.iter().map(|(k, _)| s(k)).collect()
    });
    engine.register_fn("len", |p: &mut RuleProgram| {
        i64::try_from(p.0.len()).unwrap_or(i64::MAX)
    });
}

/// Why a rule evaluation did not produce `true`/`false`. A failure makes
/// the candidate stack invalid; it never makes a program eligible.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleFailure {
    /// The script raised an error (type error, missing property, ...).
    Error {
        /// The rhai error message.
        message: String,
    },
    /// The script ran out of its operation, depth or size budget.
    Budget {
        /// The rhai error message.
        message: String,
    },
    /// The script returned something other than a boolean.
    NotBool {
        /// The type it returned.
        returned: String,
    },
}

impl std::fmt::Display for RuleFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuleFailure::Error { message } => write!(f, "rule error: {message}"),
            RuleFailure::Budget { message } => write!(f, "rule exceeded its budget: {message}"),
            RuleFailure::NotBool { returned } => {
                write!(
                    f,
                    "rule returned {}, not a boolean",
                    type_in_words(returned)
                )
            }
        }
    }
}

/// A rhai type name as an operator reads it (`i64` is "an integer").
pub fn type_in_words(rhai_type: &str) -> String {
    match rhai_type {
        "i64" | "i32" | "u64" | "u32" | "i128" | "u128" | "i16" | "u16" | "i8" | "u8" => {
            "an integer".to_owned()
        }
        "()" => "nothing (the unit value `()`)".to_owned(),
        "string" | "&str" | "ImmutableString" => "a string".to_owned(),
        "char" => "a character".to_owned(),
        "array" => "an array".to_owned(),
        "map" => "an object map".to_owned(),
        "program" => "a program".to_owned(),
        "Fn" => "a function pointer".to_owned(),
        "blob" => "a blob".to_owned(),
        other => format!("a value of type {other}"),
    }
}

/// What a rule sees besides the stack: `ctx.vehicle`, `ctx.profile`,
/// `ctx.as_of` (a string) plus the resolved amounts of the programs (so a
/// percent-off program shows its `amount_minor` for this vehicle).
#[derive(Clone, Debug)]
pub struct RuleContext {
    ctx: Map,
    amounts: BTreeMap<(String, u32), Option<i64>>,
    currency: String,
}

/// Vehicle facts visible to rules.
#[derive(Clone, Debug)]
pub struct RuleVehicle<'a> {
    /// Make.
    pub make: &'a str,
    /// Model.
    pub model: &'a str,
    /// Model year.
    pub year: i64,
    /// Trim, if any.
    pub trim: Option<&'a str>,
    /// Condition (`new`, `used`, ...).
    pub condition: &'a str,
    /// Advertised price, minor units.
    pub price_minor: i64,
    /// ISO 4217 code of the price.
    pub currency: &'a str,
}

/// Profile facts visible to rules (never PII).
#[derive(Clone, Debug)]
pub struct RuleProfile<'a> {
    /// `cash`, `finance` or `lease` (the branch being evaluated).
    pub payment_mode: &'a str,
    /// ISO 3166-1 country.
    pub country: &'a str,
    /// ISO 3166-2 subdivision.
    pub subdivision: Option<&'a str>,
    /// Claims: criterion -> `true`, `false` or `"unknown"`.
    pub claims: Vec<(&'a str, Option<bool>)>,
}

fn opt_str(s: Option<&str>) -> Dynamic {
    s.map_or(Dynamic::UNIT, |v| Dynamic::from(ImmutableString::from(v)))
}

fn s(v: &str) -> Dynamic {
    Dynamic::from(ImmutableString::from(v))
}

impl RuleContext {
    /// Builds the `ctx` map.
    pub fn new(vehicle: &RuleVehicle<'_>, profile: &RuleProfile<'_>, as_of: &str) -> RuleContext {
        let mut v = Map::new();
        v.insert("make".into(), s(vehicle.make));
        v.insert("model".into(), s(vehicle.model));
        v.insert("year".into(), Dynamic::from(vehicle.year));
        v.insert("trim".into(), opt_str(vehicle.trim));
        v.insert("condition".into(), s(vehicle.condition));
        v.insert("price_minor".into(), Dynamic::from(vehicle.price_minor));
        v.insert("currency".into(), s(vehicle.currency));
        let mut claims = Map::new();
        for (criterion, value) in &profile.claims {
            let d = value.map_or_else(|| s("unknown"), Dynamic::from);
            claims.insert((*criterion).into(), d);
        }
        let mut j = Map::new();
        j.insert("country".into(), s(profile.country));
        j.insert("subdivision".into(), opt_str(profile.subdivision));
        let mut p = Map::new();
        p.insert("payment_mode".into(), s(profile.payment_mode));
        p.insert("jurisdiction".into(), Dynamic::from(j));
        p.insert("claims".into(), Dynamic::from(claims));
        let mut ctx = Map::new();
        ctx.insert("vehicle".into(), Dynamic::from(v));
        ctx.insert("profile".into(), Dynamic::from(p));
        ctx.insert("as_of".into(), s(as_of));
        RuleContext {
            ctx,
            amounts: BTreeMap::new(),
            currency: vehicle.currency.to_owned(),
        }
    }

    /// Records the resolved amount of a program for this vehicle (`None`
    /// when unknown: the script sees `()`).
    pub fn set_amount(&mut self, program_id: &str, revision: u32, amount_minor: Option<i64>) {
        self.amounts
            .insert((program_id.to_owned(), revision), amount_minor);
    }

    /// The value a script sees for one program (built once per search).
    pub(crate) fn program_dynamic(&self, vp: &ValidatedProgram) -> Dynamic {
        Dynamic::from(self.program_value(vp))
    }

    fn program_value(&self, vp: &ValidatedProgram) -> RuleProgram {
        let p = &vp.program;
        let resolved = self
            .amounts
            .get(&(p.program_id.clone(), p.revision))
            .copied()
            .flatten()
            .or(match &p.amount {
                ProgramAmount::Known { amount } => Some(amount.amount_minor()),
                _ => None,
            });
        let currency = match &p.amount {
            ProgramAmount::Known { amount } => amount.currency().code(),
            _ => self.currency.as_str(),
        };
        let tags: Array = p.tags.iter().map(|t| s(t)).collect();
        let values: [Dynamic; 12] = [
            s(&p.program_id),
            Dynamic::from(i64::from(p.revision)),
            s(&p.name),
            s(p.kind.name()),
            s(p.direction.name()),
            resolved.map_or(Dynamic::UNIT, Dynamic::from),
            s(currency),
            s(&p.stacking.group),
            s(p.stacking.combinability.name()),
            Dynamic::from(p.stacking.top_of_deal),
            Dynamic::from(p.stacking.always_stackable),
            Dynamic::from(tags),
        ];
        RuleProgram(Arc::new(PROGRAM_FIELDS.into_iter().zip(values).collect()))
    }
}

/// Runs a compiled rule over a candidate stack. `Ok(true)` accepts it;
/// anything else (false, an error, a non-bool, an exhausted budget)
/// rejects it.
///
/// # Errors
/// [`RuleFailure`] for an error, an exhausted budget or a non-bool result.
pub fn evaluate_rule(
    engine: &Engine,
    ast: &AST,
    stack: &[&ValidatedProgram],
    ctx: &RuleContext,
) -> Result<bool, RuleFailure> {
    let array: Array = stack.iter().map(|p| ctx.program_dynamic(p)).collect();
    RuleRunner::new(engine, ctx).run(ast, array)
}

/// One metered rule call ([`RuleRunner::run_within`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Metered {
    /// The verdict, or `None` when the caller's cap (below
    /// [`RULE_CALL_OPERATIONS`]) stopped the call: no verdict, the rule is
    /// not at fault.
    pub(crate) verdict: Option<Result<bool, RuleFailure>>,
    /// Operations used (at most the cap plus one).
    pub(crate) operations: u64,
}

/// Runs rules of one search against one context (no per-call rebuilding
/// of the script's inputs). The `ctx` map is pushed into the scope once, as
/// a constant (scripts cannot change it); each call pushes `stack` on top
/// and rewinds the scope afterwards, so variables a script declares never
/// leak into the next call.
pub(crate) struct RuleRunner<'e> {
    engine: &'e Engine,
    scope: Scope<'static>,
    base: usize,
}

impl<'e> RuleRunner<'e> {
    /// A runner over `ctx` (cloned once, here).
    pub(crate) fn new(engine: &'e Engine, ctx: &RuleContext) -> RuleRunner<'e> {
        let mut scope = Scope::new();
        scope.push_constant("ctx", ctx.ctx.clone());
        let base = scope.len();
        RuleRunner {
            engine,
            scope,
            base,
        }
    }

    /// Evaluates `ast` with `stack` = `array` under the per-call budget.
    pub(crate) fn run(&mut self, ast: &AST, array: Array) -> Result<bool, RuleFailure> {
        self.run_within(ast, array, RULE_CALL_OPERATIONS)
            .verdict
            .unwrap_or_else(|| {
                Err(RuleFailure::Budget {
                    message: budget_message(),
                })
            })
    }

    /// Evaluates `ast` with `stack` = `array`, stopping it past `cap`
    /// operations (at most [`RULE_CALL_OPERATIONS`]).
    pub(crate) fn run_within(&mut self, ast: &AST, array: Array, cap: u64) -> Metered {
        let cap = cap.min(RULE_CALL_OPERATIONS);
        self.scope.rewind(self.base);
        // A variable, not a constant: rhai copies a constant array for
        // every method call on it (`stack.len()`), and each call pushes a
        // fresh array, so a script changing it changes nothing after it.
        self.scope.push("stack", array);
        USED.set(0);
        LIMIT.set(cap);
        let out = self
            .engine
            .eval_ast_with_scope::<Dynamic>(&mut self.scope, ast);
        let used = USED.get();
        // The operation that crossed the cap was stopped, not run.
        let operations = used.min(cap);
        USED.set(0);
        LIMIT.set(RULE_CALL_OPERATIONS);
        self.scope.rewind(self.base);
        if used > cap {
            // Stopped by the meter: the rule's own budget, or the caller's.
            return Metered {
                verdict: (cap == RULE_CALL_OPERATIONS).then(|| {
                    Err(RuleFailure::Budget {
                        message: budget_message(),
                    })
                }),
                operations,
            };
        }
        Metered {
            verdict: Some(verdict(out)),
            operations,
        }
    }
}

fn budget_message() -> String {
    format!(
        "it needed more than {} rhai operations, the budget of one rule call",
        thousands(RULE_CALL_OPERATIONS)
    )
}

/// `10000` as `10,000`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What a failed rule did, as the end of "the rule ...".
pub fn failure_words(failure: &RuleFailure) -> String {
    match failure {
        RuleFailure::NotBool { returned } => {
            format!("returned {}, not a boolean", type_in_words(returned))
        }
        RuleFailure::Error { message } => format!("raised an error ({message})"),
        RuleFailure::Budget { message } => format!("ran out of its budget ({message})"),
    }
}

fn verdict(out: Result<Dynamic, Box<rhai::EvalAltResult>>) -> Result<bool, RuleFailure> {
    match out {
        Ok(out) => out.as_bool().map_err(|t| RuleFailure::NotBool {
            returned: t.to_owned(),
        }),
        Err(e) => {
            use rhai::EvalAltResult as E;
            let message = e.to_string();
            // A limit hit inside a closure (`stack.all(|p| ...)`) arrives
            // wrapped in the call of the function that ran the closure.
            let mut root: &E = &e;
            while let E::ErrorInFunctionCall(_, _, inner, _) = root {
                root = inner;
            }
            Err(match root {
                E::ErrorTooManyOperations(..)
                | E::ErrorTerminated(..)
                | E::ErrorStackOverflow(..)
                | E::ErrorDataTooLarge(..)
                | E::ErrorTooManyVariables(..) => RuleFailure::Budget { message },
                _ => RuleFailure::Error { message },
            })
        }
    }
}

// ---- proof at import -------------------------------------------------------

/// At most this many partners per rule in the pair stacks of [`prove`]
/// (evenly spread over the others, in `(program_id, revision)` order):
/// bounds the import's cost on large files.
pub const PROOF_PAIRS: usize = 32;

/// Runs the rule of `programs[index]` on the synthetic stacks of
/// docs/pricing.md section 3 ("Rules are proven at import") and returns
/// why it fails, in words, or `None` when it returns a boolean within
/// [`RULE_CALL_OPERATIONS`] on every one of them:
///
/// - the program alone;
/// - the program with each other discount program (up to [`PROOF_PAIRS`]
///   partners);
/// - the program with every other discount program (the whole set);
///
/// each sorted by `(program_id, revision)` as at evaluation, and each for
/// the payment modes cash, finance and lease (one mode suffices for a rule
/// that never names `ctx`: its inputs are the same in every mode). The
/// context is representative of the program: a vehicle of its first listed
/// make, model, year, trim and condition (else `Synthetic`, `Model`, 2026,
/// `Base`, `new`) priced 50,000 units of the program's currency (else USD),
/// the first of its jurisdictions (else `US`), no claims, and `as_of` its
/// `valid_from` (else 2026-01-01T00:00:00Z). Amounts resolve as they would
/// for that vehicle (`percent_off` of its price, capped; unknown is `()`).
pub fn prove(engine: &Engine, programs: &[ValidatedProgram], index: usize) -> Option<String> {
    let owner = programs.get(index)?;
    let rule = owner.rule.as_ref()?;
    let mut others: Vec<&ValidatedProgram> = programs
        .iter()
        .enumerate()
        .filter(|(i, p)| *i != index && p.program.direction == crate::program::Direction::Discount)
        .map(|(_, p)| p)
        .collect();
    others.sort_by(|a, b| order(a).cmp(&order(b)));
    let mut stacks: Vec<Vec<&ValidatedProgram>> = vec![vec![owner]];
    let step = others.len().div_ceil(PROOF_PAIRS).max(1);
    stacks.extend(others.iter().step_by(step).map(|o| vec![owner, *o]));
    if others.len() >= 2 {
        let mut all = others.clone();
        all.push(owner);
        stacks.push(all);
    }
    for stack in &mut stacks {
        stack.sort_by(|a, b| order(a).cmp(&order(b)));
    }
    let modes: &[&str] = if rule.reads_ctx {
        &["cash", "finance", "lease"]
    } else {
        &["cash"]
    };
    let p = &owner.program;
    let currency = match &p.amount {
        ProgramAmount::Known { amount } => amount.currency(),
        _ => p
            .cap
            .map(|c| c.currency())
            .unwrap_or(crate::money::Currency::USD),
    };
    let price =
        crate::money::Money::from_minor(50_000 * 10_i64.pow(currency.exponent().min(6)), currency);
    let first = |l: &Option<Vec<String>>| l.as_ref().and_then(|l| l.first().cloned());
    let make = first(&p.applies_to.makes).unwrap_or_else(|| "Synthetic".to_owned());
    let model = first(&p.applies_to.models).unwrap_or_else(|| "Model".to_owned());
    let trim = first(&p.applies_to.trims).unwrap_or_else(|| "Base".to_owned());
    let condition = first(&p.applies_to.conditions).unwrap_or_else(|| "new".to_owned());
    let year = p
        .applies_to
        .years
        .as_ref()
        .and_then(|y| y.first().copied())
        .unwrap_or(2026);
    let place = p
        .jurisdictions
        .as_ref()
        .and_then(|j| j.first().cloned())
        .unwrap_or_else(|| "US".to_owned());
    let country = place.get(..2).unwrap_or("US").to_owned();
    let subdivision = (place.len() > 2).then_some(place.as_str());
    let as_of = p.valid_from.map_or_else(
        || "2026-01-01T00:00:00+00:00".to_owned(),
        |t| t.to_rfc3339(),
    );
    for mode in modes {
        let mut ctx = RuleContext::new(
            &RuleVehicle {
                make: &make,
                model: &model,
                year: i64::from(year),
                trim: Some(&trim),
                condition: &condition,
                price_minor: price.amount_minor(),
                currency: currency.code(),
            },
            &RuleProfile {
                payment_mode: mode,
                country: &country,
                subdivision,
                claims: Vec::new(),
            },
            &as_of,
        );
        for vp in programs {
            ctx.set_amount(
                &vp.program.program_id,
                vp.program.revision,
                synthetic_amount(vp, price),
            );
        }
        let mut runner = RuleRunner::new(engine, &ctx);
        for stack in &stacks {
            let array: Array = stack.iter().map(|vp| ctx.program_dynamic(vp)).collect();
            let Err(failure) = runner.run(&rule.ast, array) else {
                continue;
            };
            let mode_note = if rule.reads_ctx {
                format!(" with payment mode {mode}")
            } else {
                String::new()
            };
            return Some(format!(
                "the rule {}, for the stack {}{mode_note}; a rule must return true or false within {} operations on every stack (docs/pricing.md section 3, \"Rules are proven at import\")",
                failure_words(&failure),
                stack_words(stack),
                thousands(RULE_CALL_OPERATIONS)
            ));
        }
    }
    None
}

fn order(p: &ValidatedProgram) -> (&str, u32) {
    (p.program.program_id.as_str(), p.program.revision)
}

/// `[a, b]`, or for a long stack `[a, b, c, d, e, ... (40 programs)]`.
pub(crate) fn stack_words(stack: &[&ValidatedProgram]) -> String {
    const SHOWN: usize = 5;
    let ids: Vec<&str> = stack
        .iter()
        .take(SHOWN)
        .map(|p| p.program.program_id.as_str())
        .collect();
    if stack.len() > SHOWN {
        format!("[{}, ... ({} programs)]", ids.join(", "), stack.len())
    } else {
        format!("[{}]", ids.join(", "))
    }
}

/// The amount of `vp` on a vehicle priced `price` (synthetic: [`prove`]).
fn synthetic_amount(vp: &ValidatedProgram, price: crate::money::Money) -> Option<i64> {
    let p = &vp.program;
    let raw = match &p.amount {
        ProgramAmount::Known { amount } => Some(amount.amount_minor()),
        ProgramAmount::Unknown { .. } => None,
        ProgramAmount::PercentOff { rounding, .. } => vp
            .percent
            .and_then(|pct| price.percent(pct, *rounding).ok())
            .map(|r| r.money.amount_minor()),
    };
    match (raw, p.cap) {
        (Some(a), Some(cap)) => Some(a.min(cap.amount_minor())),
        (a, _) => a,
    }
}
