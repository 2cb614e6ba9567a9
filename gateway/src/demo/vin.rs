//! Made-up but well-formed VINs (DAP 6, CSV-002: adapters reject invalid
//! VINs): the maker's WMI, the model-year character and a valid check
//! digit (49 CFR 565), unique within one bundle.

use super::random::{Rng, mix};

/// 33 characters allowed in a VIN (no I, O, Q).
const VIN_CHARS: &[u8; 33] = b"0123456789ABCDEFGHJKLMNPRSTUVWXYZ";
/// Model-year characters (position 10) for 1980, 1981, ... (30-year cycle).
const VIN_YEARS: &[u8; 30] = b"ABCDEFGHJKLMNPRSTVWXY123456789";
const VIN_WEIGHTS: [u32; 17] = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2];

fn vin_value(c: u8) -> u32 {
    match c {
        b'0'..=b'9' => u32::from(c - b'0'),
        b'A' | b'J' => 1,
        b'B' | b'K' | b'S' => 2,
        b'C' | b'L' | b'T' => 3,
        b'D' | b'M' | b'U' => 4,
        b'E' | b'N' | b'V' => 5,
        b'F' | b'W' => 6,
        b'G' | b'P' | b'X' => 7,
        b'H' | b'Y' => 8,
        b'R' | b'Z' => 9,
        _ => 0,
    }
}

/// The check digit (position 9) of a VIN: weighted sum mod 11, 10 = `X`.
pub(super) fn vin_check_digit(vin: &[u8; 17]) -> u8 {
    let sum: u32 = vin
        .iter()
        .zip(VIN_WEIGHTS)
        .map(|(c, w)| vin_value(*c) * w)
        .sum();
    match sum % 11 {
        10 => b'X',
        d => b'0' + d as u8,
    }
}

/// Derives unique VINs from (seed, index): the serial (positions 12–17) and
/// positions 7–8 are a bijection of the index for a given seed, so two
/// indexes never share a VIN, whatever the other positions hold.
pub(super) struct VinSpace {
    serial_offset: u64,
    high_offset: u64,
}

impl VinSpace {
    pub(super) fn new(seed: u64) -> Self {
        VinSpace {
            serial_offset: mix(seed ^ 0x56A1_2B0C_33E5_D4F1) % 1_000_000,
            high_offset: mix(seed ^ 0x1F83_D9AB_FB41_BD6B) % (33 * 33),
        }
    }

    pub(super) fn vin(&self, index: u64, wmi: &str, year: i32, rng: &mut Rng) -> String {
        let low = index % 1_000_000;
        let high = (index / 1_000_000 + self.high_offset) % (33 * 33);
        // 738,731 is coprime with 10^6, so this permutes 0..10^6.
        let serial = (low * 738_731 + self.serial_offset) % 1_000_000;
        let mut v = [b'0'; 17];
        v[..3].copy_from_slice(&wmi.as_bytes()[..3]);
        for c in &mut v[3..6] {
            *c = *rng.pick(VIN_CHARS);
        }
        v[6] = VIN_CHARS[(high / 33) as usize];
        v[7] = VIN_CHARS[(high % 33) as usize];
        v[9] = VIN_YEARS[(year - 1980).rem_euclid(30) as usize];
        v[10] = *rng.pick(VIN_CHARS);
        let mut s = serial;
        for c in v[11..].iter_mut().rev() {
            *c = b'0' + (s % 10) as u8;
            s /= 10;
        }
        v[8] = vin_check_digit(&v);
        v.iter().map(|&c| char::from(c)).collect()
    }
}

// ---------------------------------------------------------------------------
// Rooftops as the feed writer sees them
