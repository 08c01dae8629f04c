//! Sets of node pairs, one per phase (a test on a rail, a pattern's step), the nodes by their
//! place in `--hosts`: which pairs `--resume` found recorded. A phase with few pairs keeps
//! their numbers in a hash set; once that would outgrow a bit per possible pair, it becomes
//! that bitmap (n(n-1)/2 bits, or n(n-1) with `--both-directions`: 64 KiB a phase at 1,024
//! nodes), so a finished phase costs a bit a pair, and a pattern's step a few bytes a flow.

use std::collections::HashSet;

/// Pair sets over `n` nodes, ordered (server, client) or not.
pub struct PairSets {
    n: usize,
    ordered: bool,
    sets: Vec<Set>,
}

enum Set {
    Few(HashSet<u64>),
    Bits(Vec<u64>),
}

impl PairSets {
    pub fn new(n: usize, ordered: bool) -> PairSets {
        PairSets {
            n,
            ordered,
            sets: Vec::new(),
        }
    }

    /// A new empty phase; returns its number.
    pub fn add_phase(&mut self) -> usize {
        self.sets.push(Set::Few(HashSet::new()));
        self.sets.len() - 1
    }

    /// How many pairs a phase can hold.
    fn possible(&self) -> u64 {
        let n = self.n as u64;
        let pairs = n * n.saturating_sub(1);
        if self.ordered {
            pairs
        } else {
            pairs / 2
        }
    }

    /// Pair (a, b)'s number in `0..possible()`; None for a node with itself or past `n`.
    fn number(&self, a: usize, b: usize) -> Option<u64> {
        if a == b || a >= self.n || b >= self.n {
            return None;
        }
        let (n, a, b) = (self.n as u64, a as u64, b as u64);
        if self.ordered {
            // Row a without its diagonal.
            return Some(a * (n - 1) + if b > a { b - 1 } else { b });
        }
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        // The rows above lo's (n-1, n-2, ... pairs), then hi's place in lo's.
        Some(lo * (2 * n - lo - 1) / 2 + (hi - lo - 1))
    }

    /// Adds pair (a, b) to `phase`; true when it was not there. A pair that has no number
    /// (a node with itself, or past `n`) is never added: false.
    pub fn insert(&mut self, phase: usize, a: usize, b: usize) -> bool {
        let Some(k) = self.number(a, b) else {
            return false;
        };
        let possible = self.possible();
        let Some(set) = self.sets.get_mut(phase) else {
            return false;
        };
        let new = match set {
            Set::Few(few) => few.insert(k),
            Set::Bits(bits) => {
                let (w, bit) = ((k / 64) as usize, 1u64 << (k % 64));
                let was = bits[w] & bit != 0;
                bits[w] |= bit;
                !was
            }
        };
        // A hash set entry costs about 16 bytes, 128 bits: past possible/128 the bitmap is smaller.
        if let Set::Few(few) = set {
            if few.len() as u64 > possible / 128 {
                let mut bits = vec![0u64; possible.div_ceil(64) as usize];
                for &k in few.iter() {
                    bits[(k / 64) as usize] |= 1 << (k % 64);
                }
                *set = Set::Bits(bits);
            }
        }
        new
    }

    pub fn contains(&self, phase: usize, a: usize, b: usize) -> bool {
        let (Some(k), Some(set)) = (self.number(a, b), self.sets.get(phase)) else {
            return false;
        };
        match set {
            Set::Few(few) => few.contains(&k),
            Set::Bits(bits) => bits[(k / 64) as usize] & (1 << (k % 64)) != 0,
        }
    }

    /// Is `phase` a bitmap (for tests)?
    #[cfg(test)]
    fn dense(&self, phase: usize) -> bool {
        matches!(self.sets[phase], Set::Bits(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_has_its_own_number() {
        for ordered in [false, true] {
            let s = PairSets::new(7, ordered);
            let mut seen = HashSet::new();
            for a in 0..7 {
                for b in 0..7 {
                    match s.number(a, b) {
                        None => assert_eq!(a, b),
                        Some(k) => {
                            assert!(k < s.possible(), "{a} {b}: {k}");
                            // Unordered: (a, b) and (b, a) are one pair.
                            if ordered || a < b {
                                assert!(seen.insert(k), "{a} {b}: {k} twice");
                            } else {
                                assert_eq!(Some(k), s.number(b, a));
                            }
                        }
                    }
                }
            }
            assert_eq!(seen.len() as u64, s.possible());
            assert_eq!((s.number(7, 0), s.number(0, 9)), (None, None));
        }
    }

    #[test]
    fn a_phase_turns_into_a_bitmap_and_answers_the_same() {
        let n = 64;
        let mut s = PairSets::new(n, false);
        let (full, sparse) = (s.add_phase(), s.add_phase());
        assert!(s.insert(sparse, 3, 5) && !s.insert(sparse, 5, 3));
        let mut added = Vec::new();
        for a in 0..n {
            for b in (a + 1..n).filter(|b| (a * 7 + b) % 3 != 0) {
                assert!(s.insert(full, b, a));
                added.push((a, b));
            }
        }
        assert!(s.dense(full) && !s.dense(sparse));
        for a in 0..n {
            for b in 0..n {
                let (lo, hi) = (a.min(b), a.max(b));
                let want = a != b && added.binary_search(&(lo, hi)).is_ok();
                assert_eq!(s.contains(full, a, b), want, "{a} {b}");
            }
        }
        assert!(!s.insert(full, added[0].0, added[0].1), "already there");
        assert!(s.contains(sparse, 5, 3) && !s.contains(sparse, 3, 4) && !s.contains(9, 3, 5));
        let mut o = PairSets::new(4, true);
        let p = o.add_phase();
        assert!(o.insert(p, 1, 2) && o.contains(p, 1, 2) && !o.contains(p, 2, 1));
    }
}
