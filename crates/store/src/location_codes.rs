//! A first-seen location as a small code beside its key (the field of a located
//! slot, [`crate::located`]), with no entry a location.
//!
//! A location's *place* (input file id, high half of the record) is interned: a
//! run has few (feedback and MinHash records are line or paragraph numbers, so a
//! place is a file). A code is the place's index and the record's low half plus
//! one; unknown is all zero. A located table packs a code in as many bits as its
//! largest place index and record need (20 bits for the records of a file of a
//! million documents), so a code costs bits in the slot and nothing beside it.
//!
//! Past 2^32 places a location is not kept (unknown, never wrong), as before.

use crate::Location;
use std::collections::HashMap;

/// A location's code: its place's index and its record's low half plus one
/// (`record == 0`: unknown, and then `place == 0`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Code {
    pub place: u32,
    pub record: u64,
}

impl Code {
    pub(crate) const UNKNOWN: Code = Code {
        place: 0,
        record: 0,
    };

    /// The bits its place index and record take (0 for 0).
    pub(crate) fn widths(self) -> (u32, u32) {
        (bits(self.place as u64), bits(self.record))
    }
}

/// The bits `v` needs.
pub(crate) fn bits(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// The places of one store's locations (see the module docs).
#[derive(Default)]
pub(crate) struct LocationCodes {
    index: HashMap<(u64, u32), u32>,
    places: Vec<(u64, u32)>,
}

impl LocationCodes {
    /// The code of `loc`, interning its place.
    pub(crate) fn code(&mut self, loc: Location) -> Code {
        if loc == Location::UNKNOWN {
            return Code::UNKNOWN;
        }
        let place = (loc.file, (loc.record >> 32) as u32);
        let next = self.places.len();
        let p = match self.index.get(&place) {
            Some(&p) => p,
            None if next > u32::MAX as usize => return Code::UNKNOWN,
            None => {
                self.places.push(place);
                self.index.insert(place, next as u32);
                next as u32
            }
        };
        Code {
            place: p,
            record: u64::from(loc.record as u32) + 1,
        }
    }

    /// The location a [`code`](Self::code) stands for.
    pub(crate) fn location(&self, code: Code) -> Location {
        if code.record == 0 {
            return Location::UNKNOWN;
        }
        let (file, high) = self.places[code.place as usize];
        Location {
            file,
            record: u64::from(high) << 32 | (code.record - 1),
        }
    }

    /// The bytes its lists take.
    pub(crate) fn bytes(&self) -> usize {
        self.places.capacity() * 16 + self.index.capacity() * (16 + 4 + 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_location_comes_back_from_its_code() {
        let mut codes = LocationCodes::default();
        let mut locs = vec![Location::UNKNOWN];
        // Many places, small and large records, records with a high half
        // (substring mode's places), the largest low half.
        for i in 0..5000u64 {
            let record = match i % 4 {
                0 => i + 1,
                1 => (1 << 20) + i,
                2 => (i << 32) | 7,
                _ => u64::MAX - i,
            };
            let loc = Location {
                file: (i % 2500).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
                record,
            };
            locs.extend([loc, loc]);
        }
        let coded: Vec<Code> = locs.iter().map(|&l| codes.code(l)).collect();
        for (&l, &c) in locs.iter().zip(&coded) {
            assert_eq!(codes.location(c), l, "code {c:?}");
        }
        assert_eq!(coded[0], Code::UNKNOWN);
        assert_eq!(
            coded[1],
            Code {
                place: 0,
                record: 2
            }
        );
        assert_eq!(coded[7].widths(), (2, 32));
        let top = Location {
            file: 9,
            record: u64::from(u32::MAX),
        };
        let c = codes.code(top);
        assert_eq!((codes.location(c), c.widths().1), (top, 33));
        assert_eq!(Code::UNKNOWN.widths(), (0, 0));
    }
}
