//! The one median every stage takes (grading's medians over repeats, the node-set `outlier`
//! rule and its robust deviation, the figures in `nodes.json`), so a value a report shows and
//! the value a verdict judged are the same number.

/// The median of `v` (the mean of the middle two for an even count), sorting `v` in place;
/// `None` when it is empty.
pub fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn odd_even_and_empty() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }
}
