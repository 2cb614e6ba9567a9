//! DAP `nonNegativeMoney`: money with `amount_minor >= 0`.

use serde::{Deserialize, Serialize};

use super::{Money, MoneyError};

/// A [`Money`] whose `amount_minor` is zero or more (DAP
/// `nonNegativeMoney`, e.g. advertised prices and dealer charges). Same wire
/// shape as `Money`; a negative amount is refused on deserialization.
///
/// ```
/// use pricing::{Currency, Money, MoneyError};
/// use pricing::money::NonNegativeMoney;
///
/// let price = NonNegativeMoney::try_from(Money::from_minor(2_499_500, Currency::USD))?;
/// assert_eq!(price.get().amount_minor(), 2_499_500);
/// let err = NonNegativeMoney::try_from(Money::from_minor(-1, Currency::USD)).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "amount_minor -1 USD is negative; a nonNegativeMoney amount must be zero or more"
/// );
/// # Ok::<(), MoneyError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(try_from = "Money", into = "Money")]
pub struct NonNegativeMoney(Money);

impl NonNegativeMoney {
    /// The checked constructor.
    ///
    /// # Errors
    /// [`MoneyError::Negative`] when `money` is below zero.
    pub fn new(money: Money) -> Result<NonNegativeMoney, MoneyError> {
        if money.is_negative() {
            Err(MoneyError::Negative {
                amount_minor: money.amount_minor(),
                currency: money.currency().code(),
            })
        } else {
            Ok(NonNegativeMoney(money))
        }
    }

    /// The wrapped money.
    pub fn get(self) -> Money {
        self.0
    }
}

impl TryFrom<Money> for NonNegativeMoney {
    type Error = MoneyError;

    /// Same as [`NonNegativeMoney::new`].
    fn try_from(money: Money) -> Result<NonNegativeMoney, MoneyError> {
        NonNegativeMoney::new(money)
    }
}

impl From<NonNegativeMoney> for Money {
    fn from(value: NonNegativeMoney) -> Money {
        value.0
    }
}
