//! The site file through the real binary: one plan, two clusters. Discovery (`--site`,
//! `BATON_SITE`, the default, `--no-site`), precedence plan < site < `--set`, the origins
//! `baton config` shows, the scripts `render` writes from each site, and the errors of a bad site
//! file or `--set`.

use crate::common;

use std::path::{Path, PathBuf};

use common::{code, p, show, stderr, stdout, tmp, write};

const PLAN: &str = "version: 1
name: two-clusters
backend: mpi
launch:
  nodes: 2
  ranks_per_node: 2
  slurm:
    partition: debug
    time: \"00:10:00\"
env:
  NCCL_DEBUG: WARN
tests:
  - name: smoke
    collective: all_reduce
    sizes: { from: 8, to: 1K, factor: 2 }
    expect:
      - wrong: 0
";

/// A site of `cluster` (partition, account, fabric variables) whose setup line is shell.
fn site(cluster: &str, hca: &str, ifname: &str) -> String {
    format!(
        "site: 1
name: {cluster}
launch:
  slurm:
    partition: {cluster}-gpu
    account: acct-{cluster}
  setup:
    - module load nccl/2.21 && echo \"loaded on $(hostname)\" | tee -a \"$HOME/site.log\"
env:
  NCCL_IB_HCA: {hca}
  NCCL_SOCKET_IFNAME: {ifname}
"
    )
}

/// `baton ARGS` with no system-wide site file (whatever this machine has) and no BATON_SITE.
fn baton(args: &[&str]) -> std::process::Output {
    baton_with(args, &[])
}

fn baton_with(args: &[&str], envs: &[(&str, &str)]) -> std::process::Output {
    let mut all = vec![("BATON_SITE_DEFAULT", "/nonexistent/baton/site.yaml")];
    all.extend_from_slice(envs);
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_baton"));
    c.args(args).env("NO_COLOR", "1").env_remove("BATON_SITE");
    for (k, v) in all {
        c.env(k, v);
    }
    c.output().expect("baton runs")
}

struct Two {
    dir: PathBuf,
    plan: PathBuf,
    east: PathBuf,
    west: PathBuf,
}

fn two(name: &str) -> Two {
    let dir = tmp(name);
    Two {
        plan: write(&dir, "plan.yaml", PLAN),
        east: write(&dir, "east.yaml", &site("east", "mlx5_0,mlx5_1", "ib0")),
        west: write(&dir, "west.yaml", &site("west", "mlx5_2,mlx5_3", "eth0")),
        dir,
    }
}

fn render(plan: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = vec!["render", p(plan), "-t", "slurm", "-o", p(out)];
    args.extend_from_slice(extra);
    let o = baton(&args);
    assert_eq!(code(&o), 0, "{}", show(&o));
    common::read(&out.join("two-clusters.sbatch"))
}

#[test]
fn two_sites_render_scripts_that_differ_exactly_in_partition_account_and_environment() {
    let t = two("site-two-sites");
    let east = render(&t.plan, &t.dir.join("east"), &["--site", p(&t.east)]);
    let west = render(&t.plan, &t.dir.join("west"), &["--site", p(&t.west)]);
    assert!(
        east.contains("#SBATCH --partition=east-gpu\n#SBATCH --account=acct-east\n"),
        "{east}"
    );
    assert!(
        west.contains("#SBATCH --partition=west-gpu\n#SBATCH --account=acct-west\n"),
        "{west}"
    );
    let (e, w): (Vec<&str>, Vec<&str>) = (east.lines().collect(), west.lines().collect());
    assert_eq!(e.len(), w.len(), "same shape:\n{east}\n---\n{west}");
    let differing: Vec<(&str, &str)> = e
        .iter()
        .zip(&w)
        .filter(|(a, b)| a != b)
        .map(|(a, b)| (*a, *b))
        .collect();
    let site_values = |l: &str, c: &str, hca: &str, ifn: &str| {
        [
            format!("{c}-gpu"),
            format!("acct-{c}"),
            hca.into(),
            ifn.into(),
            format!("{c}.yaml"),
        ]
        .iter()
        .any(|v| l.contains(v.as_str()))
    };
    // Both #SBATCH lines, the carried plan's partition, account, two variables, and the line
    // naming the site file: nothing else.
    assert_eq!(differing.len(), 7, "{differing:#?}");
    for (a, b) in &differing {
        assert!(site_values(a, "east", "mlx5_0,mlx5_1", "ib0"), "{a}");
        assert!(site_values(b, "west", "mlx5_2,mlx5_3", "eth0"), "{b}");
    }
    // The plan's own value the sites do not set is the same in both.
    assert!(east.contains("\"time\": \"00:10:00\"") && east.contains("#SBATCH --time=00:10:00"));
}

#[test]
fn set_wins_over_plan_and_both_sites() {
    let t = two("site-set-wins");
    for (s, name) in [(&t.east, "east"), (&t.west, "west")] {
        let out = t.dir.join(name);
        let script = render(&t.plan, &out, &["--site", p(s), "--set", "launch.nodes=4"]);
        assert!(script.contains("#SBATCH --nodes=4\n"), "{script}");
        let o = baton(&[
            "config",
            p(&t.plan),
            "--site",
            p(s),
            "--set",
            "launch.nodes=4",
            "--format",
            "json",
        ]);
        assert_eq!(code(&o), 0, "{}", show(&o));
        let entries: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let nodes = entries
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == "launch.nodes")
            .unwrap();
        assert_eq!(nodes["value"], "4");
        assert_eq!(nodes["origin"]["kind"], "set");
    }
    // A --set over a key the site sets wins over the site too.
    let o = baton(&[
        "config",
        p(&t.plan),
        "--site",
        p(&t.east),
        "--set",
        "launch.slurm.partition=big",
    ]);
    assert!(
        stdout(&o).contains("--set launch.slurm.partition=big\tlaunch.slurm.partition=\"big\"\n"),
        "{}",
        show(&o)
    );
}

#[test]
fn config_names_each_source_with_file_and_line() {
    let t = two("site-origins");
    let o = baton(&[
        "config",
        p(&t.plan),
        "--site",
        p(&t.east),
        "--set",
        "launch.nodes=4",
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let text = stdout(&o);
    let (plan, site) = (p(&t.plan), p(&t.east));
    for line in [
        format!("{plan}:6\tlaunch.ranks_per_node=2"),
        format!("{plan}:9\tlaunch.slurm.time=\"00:10:00\""),
        format!("{plan}:11\tenv.NCCL_DEBUG=\"WARN\""),
        format!("site:{site}:5\tlaunch.slurm.partition=\"east-gpu\""),
        format!("site:{site}:6\tlaunch.slurm.account=\"acct-east\""),
        format!("site:{site}:10\tenv.NCCL_IB_HCA=\"mlx5_0,mlx5_1\""),
        "--set launch.nodes=4\tlaunch.nodes=4".to_string(),
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
    }
}

#[test]
fn a_site_is_found_by_flag_then_variable_then_default_and_no_site_ignores_them() {
    let t = two("site-discovery");
    let partition = |args: &[&str], envs: &[(&str, &str)]| {
        let mut a = vec!["config", p(&t.plan)];
        a.extend_from_slice(args);
        let o = baton_with(&a, envs);
        assert_eq!(code(&o), 0, "{}", show(&o));
        let text = stdout(&o);
        text.lines()
            .find(|l| l.contains("launch.slurm.partition="))
            .map(|l| l.rsplit('=').next().unwrap().to_string())
            .unwrap()
    };
    let (east, west) = (p(&t.east), p(&t.west));
    let default = [("BATON_SITE_DEFAULT", west)];
    assert_eq!(partition(&[], &default), "\"west-gpu\"");
    assert_eq!(
        partition(&[], &[("BATON_SITE_DEFAULT", west), ("BATON_SITE", east)]),
        "\"east-gpu\""
    );
    assert_eq!(
        partition(&["--site", west], &[("BATON_SITE", east)]),
        "\"west-gpu\""
    );
    assert_eq!(
        partition(&["--no-site"], &[("BATON_SITE", east)]),
        "\"debug\""
    );
    assert_eq!(partition(&["--no-site"], &default), "\"debug\"");
    assert_eq!(partition(&[], &[]), "\"debug\"");
    // A site named but missing is bad input, not silently no site.
    let o = baton_with(
        &["check", p(&t.plan)],
        &[("BATON_SITE", "/nonexistent/site.yaml")],
    );
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("/nonexistent/site.yaml"),
        "{}",
        show(&o)
    );
}

#[test]
fn a_bad_site_file_is_exit_2_with_its_file_and_line() {
    let t = two("site-bad");
    let typo = write(
        &t.dir,
        "typo.yaml",
        "site: 1\nlaunch:\n  slurm:\n    partiton: x\n",
    );
    let o = baton(&["check", p(&t.plan), "--site", p(&typo)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = stderr(&o);
    assert!(err.contains(&format!("{}:4:5", p(&typo))), "{err}");
    assert!(err.contains("did you mean `partition`?"), "{err}");
    // A value the plan's checks refuse is told at the site's line, not the layered plan's.
    let time = write(
        &t.dir,
        "time.yaml",
        "site: 1\nlaunch:\n  slurm:\n    time: 1h\n",
    );
    let o = baton(&["check", p(&t.plan), "--site", p(&time), "--format", "short"]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains(&format!("{}:4:11: error:", p(&time))),
        "{}",
        show(&o)
    );
    // Hostile site files end in a diagnostic: a FIFO (never waited on), a huge file (bounded
    // read), a binary one, a topology file that is a device.
    let fifo = t.dir.join("fifo.yaml");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let big = write(&t.dir, "big.yaml", &"a".repeat(2 << 20));
    let binary = write(&t.dir, "binary.yaml", "site: 1\u{1}\n");
    let device = write(
        &t.dir,
        "device.yaml",
        "site: 1\nnodes:\n  topology: /dev/zero\n",
    );
    for (f, words) in [
        (&fifo, "not a regular file"),
        (&big, "site files are limited to 1024 KiB"),
        (&binary, "site file contains a control character"),
        (&device, "/dev/zero"),
    ] {
        let o = baton(&["check", p(&t.plan), "--site", p(f)]);
        assert_eq!(code(&o), 2, "{}", show(&o));
        assert!(stderr(&o).contains(words), "{}", show(&o));
    }
    // Not a site file: a plan given as one, or another version.
    for (name, text) in [
        ("plan-as-site.yaml", PLAN),
        ("v2.yaml", "site: 2\n"),
        ("empty.yaml", ""),
    ] {
        let f = write(&t.dir, name, text);
        let o = baton(&[
            "render",
            p(&t.plan),
            "--site",
            p(&f),
            "-t",
            "slurm",
            "--dry-run",
        ]);
        assert_eq!(code(&o), 2, "{name}: {}", show(&o));
        assert!(stderr(&o).contains(p(&f)), "{name}: {}", show(&o));
    }
}

#[test]
fn a_set_of_an_unknown_or_mistyped_key_is_exit_2_naming_it() {
    let t = two("site-bad-set");
    for (set, words) in [
        // (Not `no.such.key=1`: a value after a secret's name, `key`, is masked when shown.)
        ("no.such.thing=1", "unknown key `no`"),
        ("launch.nodes=zero", "`launch.nodes` must be an integer"),
        ("launch.slurm.partiton=x", "unknown key `partiton`"),
        ("launch.nodes", "is not KEY.PATH=VALUE"),
        ("launch..nodes=1", "is not a key path"),
        ("name.sub=1", "`name` is a string, not a mapping"),
        ("tests.3.iters=5", "`tests` is a list of 1 item(s)"),
    ] {
        let o = baton(&["check", p(&t.plan), "--site", p(&t.east), "--set", set]);
        assert_eq!(code(&o), 2, "{set}: {}", show(&o));
        let err = stderr(&o);
        assert!(err.contains(words), "{set}: {err}");
        assert!(err.contains(set), "{set}: the argument is shown: {err}");
    }
}

#[test]
fn a_site_setup_line_renders_as_written_while_plan_values_stay_quoted() {
    let d = tmp("site-setup-trusted");
    let plan = write(
        &d,
        "plan.yaml",
        &PLAN.replace("partition: debug", "partition: \"p$(id)\""),
    );
    let site = write(
        &d,
        "site.yaml",
        &site("east", "mlx5_0", "ib0").replace("    partition: east-gpu\n", ""),
    );
    let out = d.join("scripts");
    let o = baton(&[
        "render",
        p(&plan),
        "--site",
        p(&site),
        "-t",
        "srun,slurm",
        "-o",
        p(&out),
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let srun = common::read(&out.join("two-clusters-srun.sh"));
    let line =
        "module load nccl/2.21 && echo \"loaded on $(hostname)\" | tee -a \"$HOME/site.log\"\n";
    assert!(
        srun.contains(&format!("\n{line}")),
        "the site's line as written:\n{srun}"
    );
    assert!(
        srun.contains("alloc+=(--partition='p$(id)')"),
        "the plan's value quoted:\n{srun}"
    );
    // The scripts run the layered plan they carry as it is, trusted for the site's lines.
    let sbatch = common::read(&out.join("two-clusters.sbatch"));
    assert!(
        sbatch.contains("run_args=(-o \"$out\" --no-site)\nrun_args+=(--trust-plan)"),
        "{sbatch}"
    );
    assert!(srun.contains("--no-site"), "{srun}");
    // The site vouches for its own lines only: a plan's setup under a site without one is
    // still refused without --trust-plan (under the site's, the site's lines replace it).
    let own = write(
        &d,
        "own.yaml",
        &PLAN.replace("  slurm:\n", "  setup: [\"echo plan $(id)\"]\n  slurm:\n"),
    );
    let bare = write(
        &d,
        "bare.yaml",
        "site: 1\nlaunch:\n  slurm:\n    account: a\n",
    );
    let o = baton(&[
        "render",
        p(&own),
        "--site",
        p(&bare),
        "-t",
        "slurm",
        "--dry-run",
    ]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("--trust-plan"), "{}", show(&o));
}

#[test]
fn scripts_rendered_from_a_site_pass_shellcheck() {
    if std::process::Command::new("shellcheck")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: no shellcheck (scripts/install-deps installs it)");
        return;
    }
    let t = two("site-shellcheck");
    let out = t.dir.join("scripts");
    let o = baton(&[
        "render",
        p(&t.plan),
        "--site",
        p(&t.east),
        "-t",
        "slurm,srun,mpirun",
        "-o",
        p(&out),
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    for f in [
        "two-clusters.sbatch",
        "two-clusters-srun.sh",
        "two-clusters-mpirun.sh",
    ] {
        let r = std::process::Command::new("shellcheck")
            .args(["-s", "bash"])
            .arg(out.join(f))
            .output()
            .unwrap();
        assert_eq!(code(&r), 0, "{f}: {}", show(&r));
    }
}

/// Every shipped plan and test plan, written back as a layered plan (a `--set` that changes
/// nothing), checks to the same plan with the same identity: laying layers over a plan never
/// changes what it says besides them, env values as written (`1.10`) included.
#[test]
fn a_layered_plan_that_changes_nothing_is_the_same_plan() {
    use baton::plan::Trust;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut plans: Vec<PathBuf> = Vec::new();
    for dir in ["plans", "plans/examples", "tests/data/plans"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let f = e.unwrap().path();
            if f.extension().is_some_and(|x| x == "yaml") {
                plans.push(f);
            }
        }
    }
    let extra = tmp("site-same-plan").join("written.yaml");
    std::fs::write(
        &extra,
        PLAN.replace(
            "NCCL_DEBUG: WARN",
            "NCCL_DEBUG: WARN\n  X_VER: 1.10\n  Y: 0x10",
        ),
    )
    .unwrap();
    plans.push(extra);
    let mut checked = 0;
    for f in &plans {
        let text = common::read(f);
        let Ok(plain) = baton::plan::parse_str_with("p.yaml", &text, Trust::Trusted) else {
            continue;
        };
        let same = format!("name={}", plain.plan.name);
        let layers = baton::site::Layers::new(None, &[same]).unwrap();
        let layered = baton::site::parse_layered("p.yaml", &text, Trust::Trusted, &layers)
            .unwrap_or_else(|r| panic!("{}: {}", f.display(), r.short()));
        assert_ne!(layered.text, text);
        assert_eq!(layered.loaded.plan, plain.plan, "{}", f.display());
        let id =
            |p: &baton::plan::Plan| baton::expand::plan_identity(p, &baton::expand::expand(p).jobs);
        assert_eq!(id(&layered.loaded.plan), id(&plain.plan), "{}", f.display());
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} plans checked");
}

/// A run records which site file it used (path and a hash of its bytes), and never the site's
/// secret values.
#[cfg(feature = "mpi")]
#[test]
fn a_run_records_its_site_file_but_not_its_secrets() {
    use sha2::{Digest, Sha256};
    let d = tmp("site-run-records");
    let plan = write(&d, "plan.yaml", &PLAN.replace("nodes: 2", "nodes: 1"));
    let text = site("east", "mlx5_9", "lo");
    let site = write(&d, "site.yaml", &text);
    let out = d.join("out");
    let o = baton(&["run", p(&plan), "--site", p(&site), "-o", p(&out)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let results = common::results(&out.join("results.json"));
    let recorded = results.plan.unwrap().site.expect("the site is recorded");
    assert_eq!(recorded.path, p(&site));
    let digest: String = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(recorded.hash, format!("sha256:{digest}"));
    // Without a site nothing is recorded.
    let o = baton(&["run", p(&plan), "-o", p(&d.join("plain"))]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let plain = common::results(&d.join("plain").join("results.json"));
    assert_eq!(plain.plan.unwrap().site, None);
    // A secret-looking variable of the site reaches neither the results nor the report.
    let secret = write(&d, "secret.yaml", &(text + "  UCX_AUTH_TOKEN: hunter2\n"));
    let out = d.join("secret");
    baton(&["run", p(&plan), "--site", p(&secret), "-o", p(&out)]);
    for f in ["results.json", "junit.xml", "report/report.md"] {
        assert!(!common::read(&out.join(f)).contains("hunter2"), "{f}");
    }
}

/// The shipped site files lay over the shipped plans: each checks, with the site's values.
#[test]
fn shipped_site_files_lay_over_the_shipped_plans() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let plans = [
        "plans/phase-a-node.yaml",
        "plans/phase-b-pair.yaml",
        "plans/isolate.yaml",
        "plans/examples/quickstart.yaml",
        "plans/examples/nodesets-cpu.yaml",
        "plans/examples/acceptance-cpu/phase-b.yaml",
    ];
    for (site, partition) in [
        ("sites/example.yaml", "gpu-h200"),
        ("sites/sim.yaml", "sim"),
    ] {
        for plan in plans {
            let (s, pl) = (root.join(site), root.join(plan));
            let o = baton(&["check", p(&pl), "--site", p(&s), "--nodes", "node[01-08]"]);
            assert_eq!(code(&o), 0, "{plan} with {site}: {}", show(&o));
            let o = baton(&["config", p(&pl), "--site", p(&s)]);
            let want = format!("launch.slurm.partition=\"{partition}\"");
            assert!(
                stdout(&o).contains(&want),
                "{plan} with {site}: {}",
                show(&o)
            );
        }
    }
    let o = baton(&[
        "config",
        p(&root.join(plans[1])),
        "--site",
        p(&root.join("sites/example.yaml")),
    ]);
    assert!(
        stdout(&o).contains("nodes.domains.3=\"gpu[025-032]\""),
        "{}",
        show(&o)
    );
}
