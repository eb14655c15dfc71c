#[test]
fn baton_run_with_half_a_placement_names_the_variable_and_runs_nothing() {
    let d = common::tmp("rdv-run-half");
    let plan = common::two_gpu_plan(&d, "a.yaml", TESTS);
    let o = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["run", common::p(&plan), "-o", common::p(&d.join("out"))])
        .env("BATON_RANK", "1")
        .env_remove("BATON_SIZE")
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("BATON_RANK=1 is set but the number of ranks is not"),
        "{}",
        show(&o)
    );
    assert!(!d.join("out/results.json").exists());
}
