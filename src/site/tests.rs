use super::emit::{emit, scalar};
use super::layered::{Layers, parse_layered};
use super::tree::{Item, Source};
use crate::plan::{Scalar, Trust};

const PLAN: &str = "version: 1
name: p
backend: mpi
launch: { nodes: 1, ranks_per_node: 2 }
env: { A: 1.10, B: \"x\" }
tests:
  - name: t
    collective: all_reduce
    sizes: [8]
";

fn tree(text: &str) -> Item {
    Item::from_loc(
        &crate::plan::parse_tree("p.yaml", text, "plan").unwrap(),
        Source::Plan,
        text,
    )
}

#[test]
fn scalars_are_written_back_with_their_types() {
    assert_eq!(scalar(&Scalar::Float(2.0)), "2.0");
    assert_eq!(scalar(&Scalar::Float(f64::INFINITY)), ".inf");
    assert_eq!(scalar(&Scalar::Int(-3)), "-3");
    assert_eq!(
        scalar(&Scalar::Str("a: \"b\"\n".into())),
        "\"a: \\\"b\\\"\\n\""
    );
    assert_eq!(scalar(&Scalar::Null), "null");
}

#[test]
fn each_emitted_line_knows_the_line_it_came_from() {
    let e = emit(&tree(PLAN), "# header");
    assert!(e.text.contains("\"A\": 1.10\n"), "as written:\n{}", e.text);
    let line = e.text.lines().position(|l| l.contains("\"B\"")).unwrap() as u64 + 1;
    let at = e.origin(line, 10).unwrap();
    assert_eq!((at.source, at.pos.line), (Source::Plan, 5));
    assert!(e.origin(999, 1).is_none());
}

#[test]
fn sets_lay_over_in_order_and_make_missing_mappings() {
    let sets = [
        "env.C=3".to_string(),
        "launch.nodes=2".into(),
        "launch.nodes=4".into(),
    ];
    let layers = Layers::new(None, &sets).unwrap();
    let l = parse_layered("p.yaml", PLAN, Trust::Data, &layers).unwrap();
    assert_eq!(l.loaded.plan.launch.nodes, 4);
    assert_eq!(l.loaded.plan.env.get("C").map(String::as_str), Some("3"));
    assert_eq!(l.loaded.plan.env.get("A").map(String::as_str), Some("1.10"));
    assert!(l.text.starts_with("# baton: the plan p.yaml"), "{}", l.text);
}

#[test]
fn a_set_through_a_scalar_or_past_a_list_is_refused_with_its_argument() {
    for (set, words) in [
        ("name.x=1", "`name` is a string"),
        ("tests.1.iters=2", "a list of 1"),
    ] {
        let layers = Layers::new(None, &[set.to_string()]).unwrap();
        let r = parse_layered("p.yaml", PLAN, Trust::Data, &layers).unwrap_err();
        assert_eq!(r.file, "--set");
        let msg = &r.diagnostics[0].message;
        assert!(msg.contains(words) && msg.contains(set), "{msg}");
    }
}

#[test]
fn a_plan_error_under_layers_keeps_the_plans_line() {
    let bad = PLAN.replace("collective: all_reduce", "collective: all_reduse");
    let layers = Layers::new(None, &["launch.nodes=1".to_string()]).unwrap();
    let r = parse_layered("p.yaml", &bad, Trust::Data, &layers).unwrap_err();
    assert_eq!(r.file, "p.yaml");
    assert_eq!(r.source, bad);
    assert_eq!(
        r.diagnostics[0].pos.map(|p| p.line),
        Some(8),
        "{}",
        r.short()
    );
}
