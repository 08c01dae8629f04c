//! Exact medians of groups of numbers without holding the numbers: radix selection in passes
//! over wherever they are (the run's cells, in a file past a few MB).
//!
//! Each f64 becomes a u64 whose order is [`f64::total_cmp`]'s ([`order_key`]), and the k-th
//! smallest key of a group is found 16 bits at a time: a pass counts, in a 65,536-entry
//! histogram, the next 16 bits of the keys that share the bits found so far, and the entry
//! where the running count passes k gives 16 more. Four passes give all 64 bits, so the
//! value found is one of the values, bit for bit, and the median is what sorting gives
//! ([`super::judge::median`]): the middle one, or the mean of the two middle ones. Memory is a
//! histogram (256 KiB) per group and middle rank still unresolved, not a value per pair.

/// The bits found per pass.
const DIGIT_BITS: u32 = 16;
const DIGITS: usize = 1 << DIGIT_BITS;
const PASSES: u32 = 64 / DIGIT_BITS;

/// A u64 in the order of [`f64::total_cmp`]: negatives (sign set) flipped whole, positives
/// with the sign set, so -NaN < -inf < … < -0 < +0 < … < +inf < +NaN.
pub fn order_key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

/// [`order_key`]'s inverse.
pub fn from_order_key(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// One middle rank of one group being found.
struct Pick {
    group: usize,
    /// The rank among the keys that share `prefix`.
    k: u64,
    /// The key's bits found so far (the top 16 × passes made).
    prefix: u64,
    /// Index of its histogram in this pass (picks with the same group and prefix share one).
    hist: usize,
}

/// The median of each group, the groups numbered from 0 by `each`: `each(sink)` hands every
/// (group, value) to `sink`, the same ones in each of the (up to four) calls. A group with no
/// value has None (or is past the end of the list).
pub fn medians(mut each: impl FnMut(&mut dyn FnMut(usize, f64))) -> Vec<Option<f64>> {
    // Pass 1: the top 16 bits of every group's keys (and so its count).
    let mut hists: Vec<Vec<u32>> = Vec::new();
    each(&mut |g, x| {
        if g >= hists.len() {
            hists.resize_with(g + 1, Vec::new);
        }
        let h = &mut hists[g];
        if h.is_empty() {
            h.resize(DIGITS, 0);
        }
        h[digit(order_key(x), 0)] += 1;
    });
    let counts: Vec<u64> = hists
        .iter()
        .map(|h| h.iter().map(|&c| u64::from(c)).sum())
        .collect();
    let mut picks: Vec<Pick> = Vec::new();
    for (g, &n) in counts.iter().enumerate().filter(|(_, &n)| n > 0) {
        let ranks = if n % 2 == 1 {
            vec![n / 2]
        } else {
            vec![n / 2 - 1, n / 2]
        };
        for k in ranks {
            picks.push(Pick {
                group: g,
                k,
                prefix: 0,
                hist: g,
            });
        }
    }
    descend(&mut picks, &hists);
    drop(hists);
    for pass in 1..PASSES {
        let hists = count_pass(&mut picks, pass, &mut each);
        descend(&mut picks, &hists);
    }
    let mut out = vec![None; counts.len()];
    for (g, found) in out.iter_mut().enumerate() {
        let mine: Vec<f64> = picks
            .iter()
            .filter(|p| p.group == g)
            .map(|p| from_order_key(p.prefix))
            .collect();
        *found = match mine[..] {
            [m] => Some(m),
            [lo, hi] => Some((lo + hi) / 2.0),
            _ => None,
        };
    }
    out
}

/// The 16 bits of `key` after the `pass` × 16 top ones.
fn digit(key: u64, pass: u32) -> usize {
    ((key >> (64 - DIGIT_BITS * (pass + 1))) & (DIGITS as u64 - 1)) as usize
}

/// Each pick's next 16 bits from its histogram: the entry where the running count passes k.
fn descend(picks: &mut [Pick], hists: &[Vec<u32>]) {
    for p in picks {
        let mut below = 0u64;
        for (d, &c) in hists[p.hist].iter().enumerate() {
            let c = u64::from(c);
            if p.k < below + c {
                p.k -= below;
                p.prefix = p.prefix << DIGIT_BITS | d as u64;
                break;
            }
            below += c;
        }
    }
}

/// Pass `pass` (1 to 3): a histogram of the next 16 bits per distinct (group, prefix) of the
/// picks, over the keys with that prefix.
fn count_pass(
    picks: &mut [Pick],
    pass: u32,
    each: &mut impl FnMut(&mut dyn FnMut(usize, f64)),
) -> Vec<Vec<u32>> {
    // Per group, its picks' (prefix, histogram) (one or two).
    let groups = picks.iter().map(|p| p.group + 1).max().unwrap_or(0);
    let mut by_group: Vec<Vec<(u64, usize)>> = vec![Vec::new(); groups];
    let mut hists: Vec<Vec<u32>> = Vec::new();
    for p in picks.iter_mut() {
        let slots = &mut by_group[p.group];
        p.hist = match slots.iter().find(|(pre, _)| *pre == p.prefix) {
            Some(&(_, h)) => h,
            None => {
                hists.push(vec![0; DIGITS]);
                slots.push((p.prefix, hists.len() - 1));
                hists.len() - 1
            }
        };
    }
    let shift = 64 - DIGIT_BITS * pass;
    each(&mut |g, x| {
        let key = order_key(x);
        for &(pre, h) in by_group.get(g).map_or(&[][..], Vec::as_slice) {
            if key >> shift == pre {
                hists[h][digit(key, pass)] += 1;
            }
        }
    });
    hists
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::median;

    /// A small xorshift: the same numbers on every run.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    fn by_passes(groups: &[Vec<f64>]) -> Vec<Option<f64>> {
        let mut calls = 0;
        let got = medians(|sink| {
            calls += 1;
            // Interleaved, as a run's cells of several tests and rails are.
            let longest = groups.iter().map(Vec::len).max().unwrap_or(0);
            for i in 0..longest {
                for (g, v) in groups.iter().enumerate() {
                    if let Some(&x) = v.get(i) {
                        sink(g, x);
                    }
                }
            }
        });
        assert!(calls <= 4, "{calls} passes");
        let mut got = got;
        got.resize(groups.len(), None);
        got
    }

    fn by_sorting(groups: &[Vec<f64>]) -> Vec<Option<f64>> {
        groups.iter().map(|v| median(&mut v.clone())).collect()
    }

    fn same(a: &[Option<f64>], b: &[Option<f64>]) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| x.map(f64::to_bits) == y.map(f64::to_bits))
    }

    #[test]
    fn the_order_key_keeps_total_cmp_order_and_comes_back() {
        let xs = [
            f64::NEG_INFINITY,
            -1.5,
            -0.0,
            0.0,
            1e-300,
            2.5,
            f64::INFINITY,
            f64::NAN,
            -f64::NAN,
        ];
        for &a in &xs {
            assert_eq!(from_order_key(order_key(a)).to_bits(), a.to_bits());
            for &b in &xs {
                assert_eq!(order_key(a).cmp(&order_key(b)), a.total_cmp(&b), "{a} {b}");
            }
        }
    }

    #[test]
    fn medians_by_passes_are_bit_for_bit_the_sorted_ones() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..200 {
            let ngroups = 1 + (rng.next() % 6) as usize;
            let groups: Vec<Vec<f64>> = (0..ngroups)
                .map(|_| {
                    let n = match rng.next() % 4 {
                        0 => (rng.next() % 4) as usize,
                        _ => (rng.next() % 300) as usize,
                    };
                    let palette: Vec<f64> = (0..1 + rng.next() % 5)
                        .map(|_| (rng.next() % 1000) as f64 / 7.0)
                        .collect();
                    (0..n)
                        .map(|_| match rng.next() % 10 {
                            // Duplicates, shared high bits, signs, raw bit patterns.
                            0..=3 => palette[(rng.next() % palette.len() as u64) as usize],
                            4 => -((rng.next() % 100) as f64),
                            5 => f64::from_bits(rng.next()),
                            6 => 5000.0 + (rng.next() % 16) as f64 * f64::EPSILON * 4096.0,
                            _ => (rng.next() % 1_000_000) as f64 / 1000.0,
                        })
                        .collect()
                })
                .collect();
            let (got, want) = (by_passes(&groups), by_sorting(&groups));
            assert!(same(&got, &want), "round {round}: {got:?} vs {want:?}");
        }
    }

    #[test]
    fn tiny_and_empty_groups() {
        let groups = vec![
            vec![],
            vec![3.0],
            vec![4.0, 1.0],
            vec![2.0, 2.0, 2.0],
            vec![-0.0, 0.0],
            vec![f64::NAN, 1.0, 2.0],
        ];
        assert!(same(&by_passes(&groups), &by_sorting(&groups)));
        assert_eq!(medians(|_| {}), Vec::<Option<f64>>::new());
    }
}
