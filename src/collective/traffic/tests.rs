//! Expected figures worked by hand from alltoallv.cu's formulas (distance-weighted share,
//! 16-byte rounding, max over ranks), not computed by the code under test.

use super::*;

#[test]
fn spread_one_weights_by_distance() {
    // n = 4, each rank sends 1 MiB in all: rank 0 → j gets j·2^20/6, rounded down to 16.
    let t = Traffic::default();
    let total = 1 << 20;
    let got: Vec<u64> = (0..4).map(|j| t.peer_bytes(0, j, 4, total)).collect();
    assert_eq!(got, vec![0, 174752, 349520, 524288]);
    // Distance wraps: rank 3 → rank 0 is distance 1.
    assert_eq!(t.peer_bytes(3, 0, 4, total), 174752);
    assert_eq!(t.max_counts(total, 4, 4), (1048560 / 4, 1048560 / 4));
}

#[test]
fn spread_blends_uniform_and_weighted() {
    let uniform = Traffic::from_vars(Some("0"), None, None).unwrap();
    assert_eq!(uniform.send_counts(1, 4, 1 << 20, 4), vec![65536; 4]);
    let half = Traffic::from_vars(Some("0.5"), None, None).unwrap();
    // 2^18/2 + j·2^20/12: 131072, 218453.3, 305834.7, 393216 → rounded to 16 bytes.
    let got: Vec<u64> = (0..4).map(|j| half.peer_bytes(0, j, 4, 1 << 20)).collect();
    assert_eq!(got, vec![131072, 218448, 305824, 393216]);
    // One rank keeps the whole size, rounded.
    assert_eq!(half.peer_bytes(0, 0, 1, 1000), 992);
}

#[test]
fn matrix_is_scaled_rounded_and_maxed() {
    let text = "100  200  150\n50   100  75\n\n300  150  200\n";
    let m = Traffic::from_vars(None, None, Some(text)).unwrap();
    assert_eq!(m.send_counts(0, 3, 0, 1), vec![96, 192, 144]);
    assert_eq!(m.recv_counts(2, 3, 0, 1), vec![144, 64, 192]);
    // Row sums 432, 208, 624; column sums 432, 432, 400 (bytes); float elements.
    assert_eq!(m.max_counts(0, 4, 3), (156, 108));
    let m2 = Traffic::from_vars(None, Some("2"), Some(text)).unwrap();
    assert_eq!(m2.send_counts(1, 3, 0, 1), vec![96, 192, 144]);
    assert!(m.fits(3).is_ok() && m.fits(2).is_ok());
    assert_eq!(m.fits(4), Err(TrafficError::TooSmall { dim: 3, n: 4 }));
}

#[test]
fn bad_traffic_is_named() {
    let e = Traffic::from_vars(Some("lots"), None, None).unwrap_err();
    assert!(
        e.to_string()
            .contains("NCCL_TESTS_ALLTOALLV_SPREAD=\"lots\"")
    );
    assert_eq!(
        Traffic::from_vars(Some("1.5"), None, None),
        Err(TrafficError::SpreadRange(1.5))
    );
    assert!(matches!(
        Traffic::parse_matrix("1 2\n3\n", 1.0),
        Err(TrafficError::Ragged { row: 1, .. })
    ));
    assert!(matches!(
        Traffic::parse_matrix("1 2\n", 1.0),
        Err(TrafficError::NotSquare { rows: 1, cols: 2 })
    ));
    assert!(matches!(
        Traffic::parse_matrix("1 -2\n3 4", 1.0),
        Err(TrafficError::BadValue { row: 0, col: 1, .. })
    ));
    assert_eq!(Traffic::parse_matrix(" \n", 1.0), Err(TrafficError::Empty));
    assert_eq!(
        Traffic::from_vars(None, Some("-1"), Some("1")),
        Err(TrafficError::NegativeScale(-1.0))
    );
}
