//! Burn-in: which periodic intervals fell well below the run's running median.

/// Indices of the intervals whose value is more than `drop` (a fraction: 0.10 = 10 %) below the
/// median of all intervals before them. The first interval has nothing to compare with and is
/// never marked; a long drop stays marked until it is half of the run, when the median itself
/// has fallen (a burn-in that spends half its time low has a different problem).
pub fn drops_below_running_median(values: &[f64], drop: f64) -> Vec<usize> {
    let mut sorted: Vec<f64> = Vec::with_capacity(values.len());
    let mut out = Vec::new();
    for (i, &v) in values.iter().enumerate() {
        if !sorted.is_empty() && v.is_finite() {
            let median = median_of_sorted(&sorted);
            if v < median * (1.0 - drop) {
                out.push(i);
            }
        }
        if v.is_finite() {
            // Sorted insertion keeps each step O(n) moves, not a sort: hours of 1 s lines are
            // tens of thousands of points.
            let at = sorted.partition_point(|x| *x < v);
            sorted.insert(at, v);
        }
    }
    out
}

fn median_of_sorted(s: &[f64]) -> f64 {
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The summary line the tool prints at the end of a periodic run and `rperftest plot` prints
/// for a time series.
pub fn drop_summary(marked: usize, intervals: usize, drop: f64) -> String {
    format!(
        " Intervals more than {}% below the running median: {marked} of {intervals}\n",
        super::model::value_label(drop * 100.0)
    )
}

/// `10%`, `10` or `0.1%` as a fraction; bad input is an error naming the option.
pub fn parse_percent(s: &str, option: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%');
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..100.0).contains(&v) => Ok(v / 100.0),
        _ => Err(format!("{option} '{s}': expected a percentage from 0 to below 100, e.g. {option} 10%")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_the_dip_and_not_the_first_interval() {
        let v = [500.0, 1000.0, 1010.0, 990.0, 600.0, 850.0, 1000.0, 1005.0];
        // medians before each: -, 500, 750, 1000, 995, 1000, 995, 1000
        assert_eq!(drops_below_running_median(&v, 0.10), vec![4, 5]);
        assert_eq!(drops_below_running_median(&v, 0.20), vec![4]);
    }

    #[test]
    fn a_flat_run_has_no_marks() {
        assert!(drops_below_running_median(&[100.0; 50], 0.10).is_empty());
        assert!(drops_below_running_median(&[], 0.10).is_empty());
    }

    #[test]
    fn non_finite_values_are_skipped() {
        assert_eq!(drops_below_running_median(&[10.0, f64::NAN, 10.0, 1.0], 0.5), vec![3]);
    }

    #[test]
    fn percent_parsing() {
        assert_eq!(parse_percent("10%", "--drop").unwrap(), 0.10);
        assert_eq!(parse_percent("5", "--drop").unwrap(), 0.05);
        assert!(parse_percent("abc", "--drop").unwrap_err().contains("--drop 10%"));
        assert!(parse_percent("100", "--tolerance").is_err());
        assert!(parse_percent("-1", "--tolerance").is_err());
    }

    #[test]
    fn summary_line() {
        assert_eq!(drop_summary(2, 30, 0.1), " Intervals more than 10% below the running median: 2 of 30\n");
    }
}
