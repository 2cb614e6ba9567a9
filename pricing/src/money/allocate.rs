//! Largest-remainder allocation (docs/money.md section 6: the parts always
//! sum to the whole), e.g. spreading a group rebate over lines.

use super::{Money, MoneyError};

impl Money {
    /// Splits `self` in proportion to `weights`, by largest remainder.
    ///
    /// Rule, for a non-negative total `T` and weight sum `W`:
    /// 1. each part first gets `floor(T * w_i / W)` minor units;
    /// 2. the `k` units left over (always fewer than the number of parts)
    ///    go one each to the parts with the largest remainder
    ///    `T * w_i mod W`;
    /// 3. **tie rule:** among equal remainders the earlier part (lower index)
    ///    wins. The result is therefore deterministic and depends only on
    ///    the order of `weights`.
    ///
    /// A negative total is allocated as its magnitude and every part is
    /// negated, so `-0.05` over three equal weights is `-0.02, -0.02, -0.01`.
    /// A zero weight always receives zero. The parts always sum to `self`
    /// and keep its currency; each part is within one minor unit of its
    /// exact share.
    ///
    /// # Errors
    /// [`MoneyError::NoWeights`] for an empty slice,
    /// [`MoneyError::ZeroWeights`] when every weight is zero.
    ///
    /// ```
    /// use pricing::{Currency, Money};
    ///
    /// let rebate = Money::from_minor(100_000, Currency::USD); // 1,000.00
    /// let parts = rebate.allocate(&[1, 1, 1])?;
    /// let minor: Vec<i64> = parts.iter().map(|m| m.amount_minor()).collect();
    /// assert_eq!(minor, [33_334, 33_333, 33_333]);
    /// # Ok::<(), pricing::MoneyError>(())
    /// ```
    pub fn allocate(self, weights: &[u64]) -> Result<Vec<Money>, MoneyError> {
        if weights.is_empty() {
            return Err(MoneyError::NoWeights);
        }
        // At most isize::MAX weights of < 2^64 each: the sum fits in u128.
        let total_weight: u128 = weights.iter().map(|&w| u128::from(w)).sum();
        if total_weight == 0 {
            return Err(MoneyError::ZeroWeights);
        }
        let magnitude = u128::from(self.amount_minor().unsigned_abs());
        // |T| <= 2^63 and w < 2^64, so T * w < 2^127 fits in u128.
        let mut parts: Vec<(u128, u128)> = weights
            .iter()
            .map(|&w| {
                let scaled = magnitude * u128::from(w);
                (scaled / total_weight, scaled % total_weight)
            })
            .collect();
        let floor_sum: u128 = parts.iter().map(|&(q, _)| q).sum();
        let leftover = magnitude - floor_sum;
        let mut order: Vec<usize> = (0..parts.len()).collect();
        // Largest remainder first; the stable sort keeps lower indexes first
        // among equal remainders (the documented tie rule).
        order.sort_by(|&a, &b| parts[b].1.cmp(&parts[a].1));
        for &i in order
            .iter()
            .take(usize::try_from(leftover).unwrap_or(usize::MAX))
        {
            parts[i].0 += 1;
        }
        let negative = self.is_negative();
        parts
            .into_iter()
            .map(|(units, _)| {
                // 0 <= units <= |T| <= 2^63, so the signed part lies between
                // 0 and T and always fits; the error arm is unreachable but
                // kept instead of a silent fallback.
                let signed = i128::try_from(units).map(|u| if negative { -u } else { u });
                signed
                    .ok()
                    .and_then(|s| i64::try_from(s).ok())
                    .map(|m| Money::from_minor(m, self.currency()))
                    .ok_or(MoneyError::Overflow {
                        operation: "allocation",
                        currency: self.currency().code(),
                    })
            })
            .collect()
    }

    /// Splits `self` into `parts` near-equal parts by largest remainder: the
    /// first `|T| mod parts` parts get one extra minor unit (same tie rule as
    /// [`Money::allocate`]).
    ///
    /// # Errors
    /// [`MoneyError::ZeroParts`] when `parts` is 0.
    ///
    /// ```
    /// use pricing::{Currency, Money};
    ///
    /// let minor = |m: Vec<Money>| m.iter().map(|p| p.amount_minor()).collect::<Vec<_>>();
    /// assert_eq!(minor(Money::from_minor(1000, Currency::JPY).split(3)?), [334, 333, 333]);
    /// assert_eq!(minor(Money::from_minor(-5, Currency::EUR).split(3)?), [-2, -2, -1]);
    /// # Ok::<(), pricing::MoneyError>(())
    /// ```
    pub fn split(self, parts: usize) -> Result<Vec<Money>, MoneyError> {
        if parts == 0 {
            return Err(MoneyError::ZeroParts);
        }
        self.allocate(&vec![1; parts])
    }
}
