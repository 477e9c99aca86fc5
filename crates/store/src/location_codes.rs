//! A first-seen location in 32 bits beside its key (the payload of a located
//! table's slot), so a located key costs 12 bytes a slot rather than 16.
//!
//! A location's *place* (input file id, high half of the record) is interned: a
//! run has few (feedback and MinHash records are line or paragraph numbers, so a
//! place is a file). A code is then
//! * 0: unknown;
//! * bit 31 set: the location itself, place index in bits 20..31 and the record's
//!   low half in bits 0..20 (the first 2,048 places, records below 2^20: nearly
//!   every location of a run);
//! * otherwise: 1 + the index of the location, packed in 64 bits (place index + 1
//!   and the record's low half), in a side list. A location equal to the last one
//!   listed reuses its entry: a MinHash document's band keys arrive together and
//!   share one.
//!
//! Past 2^32 - 1 places or 2^31 - 1 listed locations a location is not kept
//! (unknown, never wrong), as before.

use crate::Location;
use std::collections::HashMap;

const INLINE: u32 = 1 << 31;
const RECORD_BITS: u32 = 20;
const RECORD_MASK: u32 = (1 << RECORD_BITS) - 1;
const INLINE_PLACES: u32 = 1 << (31 - RECORD_BITS);
const MAX_LISTED: usize = (INLINE - 1) as usize;

/// The codes of one store's locations (see the module docs).
#[derive(Default)]
pub(crate) struct LocationCodes {
    index: HashMap<(u64, u32), u32>,
    places: Vec<(u64, u32)>,
    listed: Vec<u64>,
}

impl LocationCodes {
    /// The code of `loc`, interning its place (and listing it if it has no inline
    /// code).
    pub(crate) fn code(&mut self, loc: Location) -> u32 {
        if loc == Location::UNKNOWN {
            return 0;
        }
        let place = (loc.file, (loc.record >> 32) as u32);
        let next = self.places.len();
        let p = match self.index.get(&place) {
            Some(&p) => p,
            None if next >= u32::MAX as usize => return 0,
            None => {
                self.places.push(place);
                self.index.insert(place, next as u32);
                next as u32
            }
        };
        let low = loc.record as u32;
        if p < INLINE_PLACES && low <= RECORD_MASK {
            return INLINE | p << RECORD_BITS | low;
        }
        let packed = (p as u64 + 1) << 32 | low as u64;
        if self.listed.last() == Some(&packed) {
            return self.listed.len() as u32;
        }
        if self.listed.len() >= MAX_LISTED {
            return 0;
        }
        self.listed.push(packed);
        self.listed.len() as u32
    }

    /// The location a [`code`](Self::code) stands for.
    pub(crate) fn location(&self, code: u32) -> Location {
        let (p, low) = match code {
            0 => return Location::UNKNOWN,
            c if c & INLINE != 0 => ((c & !INLINE) >> RECORD_BITS, c & RECORD_MASK),
            c => {
                let packed = self.listed[c as usize - 1];
                ((packed >> 32) as u32 - 1, packed as u32)
            }
        };
        let (file, high) = self.places[p as usize];
        Location {
            file,
            record: u64::from(high) << 32 | u64::from(low),
        }
    }

    /// The bytes its lists take.
    pub(crate) fn bytes(&self) -> usize {
        self.listed.capacity() * 8
            + self.places.capacity() * 16
            + self.index.capacity() * (16 + 4 + 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_location_comes_back_from_its_code() {
        let mut codes = LocationCodes::default();
        let mut locs = vec![Location::UNKNOWN];
        // Inline and listed ones: many places, small and large records, records
        // with a high half (substring mode's places), repeats in a row.
        for i in 0..5000u64 {
            let record = match i % 4 {
                0 => i + 1,
                1 => (1 << RECORD_BITS) + i,
                2 => (i << 32) | 7,
                _ => u64::MAX - i,
            };
            let loc = Location {
                file: (i % 2500).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
                record,
            };
            locs.extend([loc, loc]);
        }
        let coded: Vec<u32> = locs.iter().map(|&l| codes.code(l)).collect();
        for (&l, &c) in locs.iter().zip(&coded) {
            assert_eq!(codes.location(c), l, "code {c:#x}");
        }
        assert_eq!(coded[0], 0);
        assert!(
            coded[1] & INLINE != 0,
            "a first place and small record inline"
        );
        // A repeat in a row shares the listed entry.
        assert_eq!(coded[3], coded[4]);
        assert!(coded[3] & INLINE == 0);
        assert!(codes.listed.len() < 3 * 5000 / 4 + 1);
    }
}
