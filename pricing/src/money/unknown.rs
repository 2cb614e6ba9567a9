//! Unknown is not zero (docs/money.md section 7): an amount that is not known
//! stays unknown through every sum, and a sum reports what it could not add.

use super::{Currency, Money, MoneyError};

/// An amount that may be unknown. There is no conversion from `Unknown` to a
/// number: no `unwrap_or_zero`, no `Default`.
///
/// ```
/// use pricing::{Currency, Money};
/// use pricing::money::Amount;
///
/// let doc_fee = Amount::unknown("dealer did not publish the documentation fee");
/// assert_eq!(doc_fee.known(), None);
/// let freight: Amount = Money::from_minor(149_500, Currency::USD).into();
/// assert!(freight.checked_add(&doc_fee)?.known().is_none());
/// # Ok::<(), pricing::MoneyError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Amount {
    /// The amount is known exactly.
    Known(Money),
    /// The amount is not known; `reason` says why (for `uncertainty.reason`).
    Unknown {
        /// Why the amount is unknown.
        reason: String,
    },
}

impl Amount {
    /// An unknown amount with a reason.
    pub fn unknown(reason: impl Into<String>) -> Amount {
        Amount::Unknown {
            reason: reason.into(),
        }
    }

    /// The money when known, `None` otherwise.
    pub fn known(&self) -> Option<Money> {
        match self {
            Amount::Known(money) => Some(*money),
            Amount::Unknown { .. } => None,
        }
    }

    /// `true` when the amount is known.
    pub fn is_known(&self) -> bool {
        matches!(self, Amount::Known(_))
    }

    /// Adds two amounts: known + known is checked addition; anything plus an
    /// unknown is unknown (the first unknown reason is kept).
    ///
    /// # Errors
    /// As [`Money::checked_add`] when both are known.
    pub fn checked_add(&self, rhs: &Amount) -> Result<Amount, MoneyError> {
        match (self, rhs) {
            (Amount::Known(a), Amount::Known(b)) => a.checked_add(*b).map(Amount::Known),
            (Amount::Unknown { .. }, _) => Ok(self.clone()),
            (Amount::Known(_), Amount::Unknown { .. }) => Ok(rhs.clone()),
        }
    }
}

impl From<Money> for Amount {
    fn from(money: Money) -> Amount {
        Amount::Known(money)
    }
}

/// A labelled part of a sum whose amount is unknown.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct UnknownPart {
    /// The part's label, e.g. a charge name.
    pub label: String,
    /// Why it is unknown.
    pub reason: String,
}

/// A sum of labelled amounts that keeps unknown parts visible: the subtotal
/// of the known parts plus the list of parts that could not be added.
///
/// ```
/// use pricing::{Currency, Money};
/// use pricing::money::{Amount, AmountSum};
///
/// let freight = Amount::Known(Money::from_minor(149_500, Currency::USD));
/// let doc_fee = Amount::unknown("not published");
/// let sum = AmountSum::from_parts(Currency::USD, [("freight", &freight), ("doc_fee", &doc_fee)])?;
/// assert_eq!(sum.known_subtotal().to_string(), "1,495.00 USD");
/// assert_eq!(sum.unknown_parts()[0].label, "doc_fee");
/// assert_eq!(sum.complete_total(), None); // never "1,495.00 USD"
/// # Ok::<(), pricing::MoneyError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct AmountSum {
    known_subtotal: Money,
    unknown_parts: Vec<UnknownPart>,
}

impl AmountSum {
    /// An empty sum in `currency` (subtotal zero, no unknown parts).
    pub fn new(currency: Currency) -> AmountSum {
        AmountSum {
            known_subtotal: Money::zero(currency),
            unknown_parts: Vec::new(),
        }
    }

    /// Sums labelled parts in order.
    ///
    /// # Errors
    /// As [`AmountSum::add`].
    pub fn from_parts<'a, L, I>(currency: Currency, parts: I) -> Result<AmountSum, MoneyError>
    where
        L: Into<String>,
        I: IntoIterator<Item = (L, &'a Amount)>,
    {
        let mut sum = AmountSum::new(currency);
        for (label, amount) in parts {
            sum.add(label, amount)?;
        }
        Ok(sum)
    }

    /// Adds one labelled part: a known part goes into the subtotal, an
    /// unknown part into [`AmountSum::unknown_parts`].
    ///
    /// # Errors
    /// [`MoneyError::CurrencyMismatch`] or [`MoneyError::Overflow`] for a
    /// known part; the sum is unchanged on error.
    pub fn add(&mut self, label: impl Into<String>, amount: &Amount) -> Result<(), MoneyError> {
        match amount {
            Amount::Known(money) => {
                self.known_subtotal = self.known_subtotal.checked_add(*money)?
            }
            Amount::Unknown { reason } => self.unknown_parts.push(UnknownPart {
                label: label.into(),
                reason: reason.clone(),
            }),
        }
        Ok(())
    }

    /// The sum of the known parts only.
    pub fn known_subtotal(&self) -> Money {
        self.known_subtotal
    }

    /// The unknown parts, in the order they were added.
    pub fn unknown_parts(&self) -> &[UnknownPart] {
        &self.unknown_parts
    }

    /// `true` when no part is unknown.
    pub fn is_complete(&self) -> bool {
        self.unknown_parts.is_empty()
    }

    /// The total, only when every part is known.
    pub fn complete_total(&self) -> Option<Money> {
        self.is_complete().then_some(self.known_subtotal)
    }

    /// The total as an [`Amount`]: known when complete, otherwise unknown
    /// with the reason `unknown parts: <label>, <label>`.
    pub fn total(&self) -> Amount {
        if self.is_complete() {
            return Amount::Known(self.known_subtotal);
        }
        let labels: Vec<&str> = self
            .unknown_parts
            .iter()
            .map(|p| p.label.as_str())
            .collect();
        Amount::unknown(format!("unknown parts: {}", labels.join(", ")))
    }
}
