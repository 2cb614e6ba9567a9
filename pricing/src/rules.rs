//! The rhai sandbox for `rule_defined` stacking rules (OFFERS.md section 4,
//! STYLE.md item 15).
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
//! succeeds or always runs out.

use std::collections::BTreeMap;

use rhai::{AST, Array, Dynamic, Engine, ImmutableString, Map, Scope};

use crate::program::{ProgramAmount, ValidatedProgram};

/// Hard cap on rhai operations per rule evaluation.
pub const MAX_OPERATIONS: u64 = 50_000;
/// The `on_progress` budget: evaluation is terminated past this many
/// operations (it fires before [`MAX_OPERATIONS`]).
pub const PROGRESS_BUDGET: u64 = 40_000;
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
    engine.on_progress(|ops| {
        (ops > PROGRESS_BUDGET).then(|| Dynamic::from("operation budget exhausted"))
    });
    engine
}

/// Compiles a rule once (at validation).
///
/// # Errors
/// The compiler's message.
pub fn compile(engine: &Engine, source: &str) -> Result<AST, String> {
    engine.compile(source).map_err(|e| e.to_string())
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
                write!(f, "rule returned {returned}, not a boolean")
            }
        }
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

    /// The map a script sees for one program (built once per search).
    pub(crate) fn program_dynamic(&self, vp: &ValidatedProgram) -> Dynamic {
        Dynamic::from(self.program_map(vp))
    }

    fn program_map(&self, vp: &ValidatedProgram) -> Map {
        let p = &vp.program;
        let mut m = Map::new();
        m.insert("program_id".into(), s(&p.program_id));
        m.insert("revision".into(), Dynamic::from(i64::from(p.revision)));
        m.insert("name".into(), s(&p.name));
        m.insert("kind".into(), s(p.kind.name()));
        m.insert("direction".into(), s(p.direction.name()));
        let resolved = self
            .amounts
            .get(&(p.program_id.clone(), p.revision))
            .copied()
            .flatten()
            .or(match &p.amount {
                ProgramAmount::Known { amount } => Some(amount.amount_minor()),
                _ => None,
            });
        m.insert(
            "amount_minor".into(),
            resolved.map_or(Dynamic::UNIT, Dynamic::from),
        );
        let currency = match &p.amount {
            ProgramAmount::Known { amount } => amount.currency().code(),
            _ => self.currency.as_str(),
        };
        m.insert("currency".into(), s(currency));
        m.insert("group".into(), s(&p.stacking.group));
        m.insert("combinability".into(), s(p.stacking.combinability.name()));
        m.insert("top_of_deal".into(), Dynamic::from(p.stacking.top_of_deal));
        m.insert(
            "always_stackable".into(),
            Dynamic::from(p.stacking.always_stackable),
        );
        let tags: Array = p.tags.iter().map(|t| s(t)).collect();
        m.insert("tags".into(), Dynamic::from(tags));
        m
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
    evaluate_prepared(engine, ast, array, ctx)
}

/// [`evaluate_rule`] with the stack's program maps already built.
pub(crate) fn evaluate_prepared(
    engine: &Engine,
    ast: &AST,
    array: Array,
    ctx: &RuleContext,
) -> Result<bool, RuleFailure> {
    RuleRunner::new(engine, ctx).run(ast, array)
}

/// Runs rules of one search against one context (issue 12 item 7: no
/// per-call rebuilding of the script's inputs). The `ctx` map is pushed
/// into the scope once, as a constant (scripts cannot change it); each call
/// pushes `stack` on top and rewinds the scope afterwards, so variables a
/// script declares never leak into the next call.
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

    /// Evaluates `ast` with `stack` = `array`.
    pub(crate) fn run(&mut self, ast: &AST, array: Array) -> Result<bool, RuleFailure> {
        self.scope.rewind(self.base);
        self.scope.push_constant("stack", array);
        let out = self
            .engine
            .eval_ast_with_scope::<Dynamic>(&mut self.scope, ast);
        self.scope.rewind(self.base);
        verdict(out)
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
            Err(match *e {
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
