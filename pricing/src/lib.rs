//! Exact money and offer evaluation for the Dealer Agent Gateway.
//!
//! Pure: no I/O, no async, no floats (docs/architecture.md). Money rules:
//! DAP-CORE-018..020; the conventions are written up in `docs/money.md`.
//!
//! - [`money`]: integer minor-unit [`Money`] in an ISO 4217 [`Currency`],
//!   exact decimal conversion, the named feed adapter, checked arithmetic,
//!   rate math with a named [`RoundingMode`], allocation, unknown amounts and
//!   the DAP wire shape.
//! - [`incentives`]: incentive programs (docs/pricing.md section 1) and their
//!   validation ([`ProgramSet::validate`]).
//! - [`rules`]: the one rhai sandbox for `rule_defined` stacking rules
//!   (docs/pricing.md section 4).
//! - [`stacking`]: applicability, tri-state eligibility and the branch and
//!   bound stacking search ([`evaluate`], docs/pricing.md section 2).
//!
//! ```
//! use pricing::{Currency, Money, RoundingMode};
//!
//! let msrp = Money::from_decimal_str("42875.00", Currency::USD)?;
//! let rebate = msrp.percent("12.5".parse()?, RoundingMode::HalfUp)?;
//! assert_eq!(rebate.money.amount_minor(), 535_938);
//! assert_eq!(rebate.money.to_string(), "5,359.38 USD");
//! assert_eq!(
//!     rebate.transformation,
//!     "percent 12.5% of 42875.00 USD rounded half_up to 2 decimals"
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod incentives;
pub mod lint;
pub mod money;
mod program;
pub mod rules;
pub mod stacking;

pub use incentives::{Program, ProgramProblem, ProgramSet, ProgramsFile, ValidatedPrograms};
pub use money::{Currency, Money, MoneyError, RoundingMode};
pub use stacking::{Evaluation, Profile, SearchBudget, Vehicle, evaluate};
