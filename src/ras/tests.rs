//! Hostile RAS answers (#25): whatever comes back on the socket — binary, cut short, huge,
//! absurd counts, ranks their communicator cannot hold — reading it never panics, costs
//! bounded memory, and an answer that is no status says "RAS answer unreadable: …", never
//! "all well".

use proptest::prelude::*;

use super::*;

fn ranks(r: &Report) -> usize {
    r.communicators
        .iter()
        .map(|c| c.ranks.len() + c.missing.len())
        .sum()
}

fn hostile() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..256)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        prop::sample::select(vec![
            "Errors\n",
            "Warnings\n",
            "NCCL version ",
            "DEAD\n",
            "  Process 18446744073709551615 on node x managing GPU 99999999999\n",
            "  Rank 18446744073709551615 -- GPU 4294967296 managed by process -1 on node \n",
            "  Rank 3 -- GPU 0 managed by process 7 on node h\n",
            "  The missing ranks: 1,2,3,,x,99999999999999999999\n",
            "  Missing communicator data from 1 rank\n",
            "#0-0 (",
            "#0-0 (ab) INCOMPLETE,MISMATCH\n",
            "  2 ranks have launched up to operation 18446744073709551615\n",
            "{\"communicators\":[{\"size\":",
            "\"ranks\":[{\"rank\":",
            "]}",
            "\n",
        ])
        .prop_map(str::to_string),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    /// Any answer, read as either form: no panic, no more than [`MAX_RANKS`] ranks kept, a
    /// bounded sentence, and "unreadable" as the only way to fail.
    #[test]
    fn hostile_answers_never_panic_and_stay_bounded(body in hostile(), json in any::<bool>()) {
        match read(&body, json) {
            Ok(r) => {
                prop_assert!(ranks(&r) <= MAX_RANKS);
                let said = r.describe(&|x| x.host.clone());
                prop_assert!(said.len() <= MAX_WORDS + 8, "{}", said.len());
                let _ = r.named_hosts(&|x| x.host.clone());
            }
            Err(e) => prop_assert!(e.to_string().starts_with("RAS answer unreadable: "), "{e}"),
        }
    }

    /// A recorded answer cut anywhere: JSON cut short is unreadable; text cut before its
    /// `Errors` section is too, never a healthy job.
    #[test]
    fn a_recorded_answer_cut_short_is_unreadable_not_healthy(at in 0usize..4000, which in 0usize..3) {
        let name = ["nccl-2.30.7-rank-stopped", "nccl-docs-dead", "nccl-2.30.7-ok"][which];
        for (json, ext) in [(true, "json"), (false, "txt")] {
            let whole = fixture(&format!("{name}.{ext}"));
            let at = at.min(whole.len());
            let Some(cut) = whole.get(..at) else { continue };
            let got = read(cut, json);
            if json && cut.trim_end() != whole.trim_end() {
                prop_assert!(got.is_err(), "{name}.{ext} cut at {at}: {got:?}");
            }
            if !json && !cut.contains("\nErrors") {
                prop_assert!(got.is_err(), "{name}.{ext} cut at {at}: {got:?}");
            }
        }
    }
}

#[test]
fn every_recorded_answer_holds_together() {
    for name in [
        "nccl-2.30.7-rank-stopped",
        "nccl-docs-dead",
        "nccl-2.30.7-ok",
    ] {
        for (json, ext) in [(true, "json"), (false, "txt")] {
            let r = read(&fixture(&format!("{name}.{ext}")), json);
            assert!(r.is_ok(), "{name}.{ext}: {r:?}");
        }
    }
}

#[test]
fn binary_is_unreadable_in_either_form() {
    let junk: String = (0..20_000u32)
        .map(|i| char::from((i * 7919 % 251) as u8))
        .collect();
    for json in [true, false] {
        let e = read(&junk, json).unwrap_err();
        assert!(
            e.0.contains("not the JSON") || e.0.contains("no `Errors` section"),
            "{e}"
        );
    }
}

#[test]
fn absurd_counts_saturate_instead_of_overflowing() {
    let j = r#"{"communicators":[{"hash":"0x1","size":2,"ranks":[
        {"rank":0,"collective_counts":{"AllReduce":18446744073709551615,"Broadcast":18446744073709551615}},
        {"rank":1,"collective_counts":{"AllReduce":1}}]}]}"#;
    let r = read(j, true).unwrap();
    assert_eq!(r.communicators[0].ranks[0].collectives, Some(u64::MAX));
    let said = r.describe(&|_| "h".into());
    assert!(
        said.contains("rank 1 (h) 18446744073709551614 collective(s) behind"),
        "{said}"
    );
}

#[test]
fn a_rank_count_mismatch_is_unreadable_and_says_which_communicator() {
    let j = fixture("nccl-2.30.7-ok.json").replacen("\"size\": 4", "\"size\": 2", 1);
    let e = read(&j, true).unwrap_err().to_string();
    assert_eq!(
        e,
        "RAS answer unreadable: communicator 0xd02144a62bcec42e of size 2: 4 ranks listed"
    );
    let twice = r#"{"communicators":[{"hash":"0x1","size":4,"ranks":[{"rank":1},{"rank":1}]}]}"#;
    assert!(
        read(twice, true)
            .unwrap_err()
            .0
            .contains("rank 1 is listed twice")
    );
    let outside = r#"{"communicators":[{"hash":"0x1","size":4,"missing_ranks":[{"rank":9}]}]}"#;
    assert!(
        read(outside, true)
            .unwrap_err()
            .0
            .contains("rank 9 is outside it")
    );
}

/// A text status whose one communicator misses ranks `0..n`.
fn missing(n: u32) -> String {
    let list: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    format!(
        "Errors\n======\n#0-0 (ab) INCOMPLETE\n  The missing ranks: {}\n",
        list.join(",")
    )
}

#[test]
fn millions_of_missing_ranks_stop_at_the_bound() {
    let e = read(&missing(1_000_000), false).unwrap_err();
    assert!(e.0.contains("more than 65536 ranks"), "{e}");
}

#[test]
fn many_named_ranks_make_a_bounded_sentence() {
    let r = read(&missing(5000), false).unwrap();
    let said = r.describe(&|_| "n".repeat(1000));
    assert!(said.len() <= MAX_WORDS + 8, "{}", said.len());
    assert!(r.describe(&|_| "h".into()).ends_with("and 4968 more"));
}
