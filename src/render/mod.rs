//! `baton render`: job scripts for Slurm (`sbatch`), plain `srun` and `mpirun`, written from
//! minijinja templates.
//!
//! The templates ship inside the binary (`templates/*.j2`); a directory given with `--templates`
//! replaces any of them by name or adds partials. Two rules keep a plan from turning into
//! commands: undefined variables are errors (a typo in a template fails the render instead of
//! printing an empty string), and every string a template prints must go through a quoting filter
//! — `shell_quote` for the shell, `sbatch` for `#SBATCH` lines, `env_name` for variable names,
//! `comment` for comment text — so a template that forgets one fails to render rather than
//! producing an injectable script. The one exception, `trusted_shell`, prints `launch.setup`
//! lines as written; the context carries them only for a plan the user trusted.

mod context;
pub mod fleet;
pub(crate) mod quote;
pub mod submit;
pub mod sweep;

use std::path::{Path, PathBuf};

use minijinja::value::{Value, ValueKind};
use minijinja::{AutoEscape, Environment, Error, ErrorKind, UndefinedBehavior};

use crate::shell::shell_quote;
pub use context::{Context, Input, Sweep};
use quote::{sbatch_problem, sbatch_quote};

/// Longest template read from `--templates DIR`.
const MAX_TEMPLATE: usize = 1 << 20;

/// The shipped templates, by the names a `--templates` directory overrides.
const EMBEDDED: &[(&str, &str)] = &[
    (
        "slurm.sbatch.j2",
        include_str!("../../templates/slurm.sbatch.j2"),
    ),
    ("srun.sh.j2", include_str!("../../templates/srun.sh.j2")),
    ("mpirun.sh.j2", include_str!("../../templates/mpirun.sh.j2")),
    (
        "srun_steps.sh.j2",
        include_str!("../../templates/srun_steps.sh.j2"),
    ),
    ("setup.sh.j2", include_str!("../../templates/setup.sh.j2")),
    ("fleet.sh.j2", include_str!("../../templates/fleet.sh.j2")),
    (
        "prologue.sh.j2",
        include_str!("../../templates/prologue.sh.j2"),
    ),
    (
        "epilogue.sh.j2",
        include_str!("../../templates/epilogue.sh.j2"),
    ),
];

/// What a script launches its steps with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A batch script for `sbatch`: `#SBATCH` header, one `srun` step per environment set.
    Slurm,
    /// A shell script of `srun` steps, for inside `salloc` or straight from a login node.
    Srun,
    /// A shell script of `mpirun` runs, for machines without Slurm.
    Mpirun,
}

impl Target {
    pub const ALL: [Target; 3] = [Target::Slurm, Target::Srun, Target::Mpirun];

    pub fn name(self) -> &'static str {
        match self {
            Target::Slurm => "slurm",
            Target::Srun => "srun",
            Target::Mpirun => "mpirun",
        }
    }

    /// The template that renders this target.
    pub fn template(self) -> &'static str {
        match self {
            Target::Slurm => "slurm.sbatch.j2",
            Target::Srun => "srun.sh.j2",
            Target::Mpirun => "mpirun.sh.j2",
        }
    }

    /// The script's file name for plan `plan`.
    pub fn file_name(self, plan: &str) -> String {
        match self {
            Target::Slurm => format!("{plan}.sbatch"),
            Target::Srun => format!("{plan}-srun.sh"),
            Target::Mpirun => format!("{plan}-mpirun.sh"),
        }
    }
}

/// One rendered script.
#[derive(Debug, Clone)]
pub struct Script {
    pub target: Target,
    pub file_name: String,
    pub text: String,
}

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("`{key}` value {value:?} {why}")]
    SbatchValue {
        key: String,
        value: String,
        why: String,
    },
    #[error("{0}")]
    Layout(String),
    #[error("{0}")]
    Untrusted(String),
    #[error(transparent)]
    PlanFile(#[from] crate::plan::PlanFileError),
    #[error("{what} path {} is not UTF-8; scripts need it as text", .path.display())]
    NotUtf8 { what: String, path: PathBuf },
    #[error("cannot read templates from {}: {source}", .path.display())]
    TemplateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("template {name}: {message}")]
    Template { name: String, message: String },
}

/// The template set: the embedded templates, overridden by a directory's `*.j2` files.
pub struct Templates {
    env: Environment<'static>,
}

impl Templates {
    pub fn load(dir: Option<&Path>) -> Result<Templates, RenderError> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(true)
                .lstrip_blocks(true)
                .keep_trailing_newline(true)
                .build()
                .expect("static syntax configuration"),
        );
        env.set_formatter(|out, state, value| {
            if value.kind() == ValueKind::String && !value.is_safe() {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    "a string is printed without quoting; pipe it through `shell_quote`, \
                     `sbatch` (an #SBATCH value), `env_name` or `comment`",
                ));
            }
            minijinja::escape_formatter(out, state, value)
        });
        env.add_filter("shell_quote", shell_quote_filter);
        env.add_filter("sbatch", sbatch_filter);
        env.add_filter("env_name", env_name_filter);
        env.add_filter("comment", comment_filter);
        env.add_filter("trusted_shell", trusted_shell_filter);
        let mut sources: Vec<(String, String)> = EMBEDDED
            .iter()
            .map(|(n, s)| (n.to_string(), s.to_string()))
            .collect();
        if let Some(dir) = dir {
            let io = |source| RenderError::TemplateDir {
                path: dir.to_path_buf(),
                source,
            };
            for entry in std::fs::read_dir(dir).map_err(io)? {
                let path = entry.map_err(io)?.path();
                let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                    continue;
                };
                if !name.ends_with(".j2") || !path.is_file() {
                    continue;
                }
                // Through the one door: bounded, a regular file only.
                let err = |source| RenderError::TemplateDir {
                    path: path.clone(),
                    source,
                };
                let bytes = crate::input::read_bounded(&path, MAX_TEMPLATE, "template")
                    .map_err(|e| err(e.into_io()))?;
                let text = String::from_utf8(bytes)
                    .map_err(|_| err(std::io::Error::other("a template is UTF-8 text")))?;
                sources.retain(|(n, _)| n != name);
                sources.push((name.to_string(), text));
            }
        }
        for (name, text) in sources {
            env.add_template_owned(name.clone(), text)
                .map_err(|e| template_error(&name, &e))?;
        }
        Ok(Templates { env })
    }

    /// Renders `target`'s script for the plan described by `ctx`.
    pub fn render(&self, target: Target, ctx: &Context) -> Result<Script, RenderError> {
        let name = target.template();
        let text = self
            .env
            .get_template(name)
            .and_then(|t| t.render(Value::from(minijinja::value::Serde(ctx))))
            .map_err(|e| template_error(name, &e))?;
        Ok(Script {
            target,
            file_name: target.file_name(&ctx.plan.name),
            text,
        })
    }
}

/// Renders the scripts for `targets`, in the order given.
pub fn render(
    input: &Input,
    targets: &[Target],
    templates: Option<&Path>,
) -> Result<Vec<Script>, RenderError> {
    let ctx = Context::new(input)?;
    let t = Templates::load(templates)?;
    targets
        .iter()
        .map(|&target| t.render(target, &ctx))
        .collect()
}

fn template_error(name: &str, e: &Error) -> RenderError {
    let mut message = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        message.push_str(&format!(": {c}"));
        cause = c.source();
    }
    if e.kind() == ErrorKind::UndefinedError {
        message.push_str(
            "; templates see: version, plan, layout, slurm, mpirun, env_sets, baton, baton_mpi, worker, \
             step, cpus_auto, setup, container, trust_plan, baseline, sweep, results, resume, fleet \
             (docs/launching.md lists their fields)",
        );
    }
    RenderError::Template {
        name: name.to_string(),
        message,
    }
}

/// Strict undefined in filters too: minijinja hands an undefined value to a filter as a value.
fn defined(value: &Value) -> Result<(), Error> {
    if value.is_undefined() {
        Err(Error::new(
            ErrorKind::UndefinedError,
            "a filter was given a variable that does not exist",
        ))
    } else {
        Ok(())
    }
}

/// `{{ x | shell_quote }}`: one literal shell word; a list becomes its words, each quoted.
fn shell_quote_filter(value: &Value) -> Result<Value, Error> {
    defined(value)?;
    let quoted = match value.kind() {
        ValueKind::String | ValueKind::Number => shell_quote(&value.to_string()),
        ValueKind::Seq => value
            .try_iter()?
            .map(|v| shell_quote_filter(&v).map(|q| q.to_string()))
            .collect::<Result<Vec<_>, _>>()?
            .join(" "),
        other => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("shell_quote takes a string, number or list, not {other}"),
            ));
        }
    };
    Ok(Value::from_safe_string(quoted))
}

/// `{{ x | sbatch }}`: a value checked and quoted for an `#SBATCH` line.
fn sbatch_filter(value: &Value) -> Result<Value, Error> {
    defined(value)?;
    let s = match value.kind() {
        ValueKind::String | ValueKind::Number => value.to_string(),
        other => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("sbatch takes a string or number, not {other}"),
            ));
        }
    };
    if let Some(why) = sbatch_problem(&s) {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("#SBATCH value {s:?} {why}"),
        ));
    }
    Ok(Value::from_safe_string(sbatch_quote(&s)))
}

/// `{{ line | trusted_shell }}`: a `launch.setup` line, verbatim. Only for those lines: the
/// context carries them only when the user trusted the plan (`--trust-plan`), and each is one
/// line (the plan checker refuses control characters; checked again here).
fn trusted_shell_filter(value: &Value) -> Result<Value, Error> {
    defined(value)?;
    let s = value.to_string();
    if s.chars().any(char::is_control) {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("setup line {s:?} has control characters"),
        ));
    }
    Ok(Value::from_safe_string(s))
}

/// `{{ x | comment }}`: text for a `#` comment, which must stay on its line.
fn comment_filter(value: &Value) -> Result<Value, Error> {
    defined(value)?;
    let s = value.to_string();
    if s.chars().any(char::is_control) {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{s:?} cannot go into a comment: it has control characters"),
        ));
    }
    Ok(Value::from_safe_string(s))
}

/// `{{ name | env_name }}`: an environment variable name, checked, for `export NAME=…`.
fn env_name_filter(value: &str) -> Result<Value, Error> {
    if crate::shell::is_env_name(value) {
        Ok(Value::from_safe_string(value.to_string()))
    } else {
        Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{value:?} is not an environment variable name"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "version: 1\nname: p\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 2 }\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [8]\n";

    fn with_plan<T>(edit: impl FnOnce(&mut crate::plan::Plan), f: impl FnOnce(&Input) -> T) -> T {
        let mut plan = crate::plan::parse_str("p.yaml", PLAN).unwrap().plan;
        edit(&mut plan);
        let jobs = crate::expand::expand(&plan).jobs;
        f(&Input {
            plan: &plan,
            plan_text: PLAN,
            plan_path: Path::new("/plans/p.yaml"),
            jobs: &jobs,
            baton: Some("/opt/baton/bin/baton"),
            sweep: None,
            trust: crate::plan::Trust::Data,
            vouched: false,
            results: None,
            resume: false,
            fleet: &fleet::Fleet::default(),
        })
    }

    #[test]
    fn sbatch_values_are_validated_before_any_template_runs() {
        // The plan checker refuses these too; the renderer does not rely on it.
        let err = with_plan(
            |p| p.launch.slurm.partition = Some("gpu\n#SBATCH --account=other".into()),
            |i| Context::new(i).unwrap_err(),
        );
        assert!(
            matches!(&err, RenderError::SbatchValue { key, .. } if key == "launch.slurm.partition"),
            "{err}"
        );
        let err = with_plan(
            |p| p.launch.slurm.extra = vec!["--qos=a\rb".into()],
            |i| Context::new(i).unwrap_err(),
        );
        assert!(err.to_string().contains("launch.slurm.extra"), "{err}");
    }

    #[test]
    fn every_target_renders_with_the_shipped_templates() {
        let scripts = with_plan(|_| {}, |i| render(i, &Target::ALL, None)).unwrap();
        let names: Vec<&str> = scripts.iter().map(|s| s.file_name.as_str()).collect();
        assert_eq!(names, ["p.sbatch", "p-srun.sh", "p-mpirun.sh"]);
        for s in &scripts {
            assert!(s.text.starts_with("#!/bin/bash\n"), "{}", s.text);
            assert!(
                s.text
                    .contains("\"$worker\" run \"$plan\" --env-set 0 -o \"$out/set-0\""),
                "{}",
                s.text
            );
            assert!(
                s.text.contains("worker='/opt/baton/bin/baton-mpi'\n"),
                "the host backend's rank is baton-mpi: {}",
                s.text
            );
        }
    }

    /// GPU ranks need no MPI library: the nccl backend's rank is plain baton, and srun starts
    /// it without an MPI plugin unless the plan names one.
    #[test]
    fn the_nccl_backends_rank_is_plain_baton_under_srun_mpi_none() {
        let text = PLAN.replace("backend: mpi", "backend: nccl");
        let plan = crate::plan::parse_str("p.yaml", &text).unwrap().plan;
        assert_eq!(plan.launch.slurm.mpi, "none");
        let jobs = crate::expand::expand(&plan).jobs;
        let scripts = render(
            &Input {
                plan: &plan,
                plan_text: &text,
                plan_path: Path::new("/plans/p.yaml"),
                jobs: &jobs,
                baton: Some("/opt/baton/bin/baton"),
                sweep: None,
                trust: crate::plan::Trust::Data,
                vouched: false,
                results: None,
                resume: false,
                fleet: &fleet::Fleet::default(),
            },
            &Target::ALL,
            None,
        )
        .unwrap();
        for s in &scripts {
            assert!(
                s.text.contains("worker='/opt/baton/bin/baton'\n"),
                "{}",
                s.text
            );
            assert!(!s.text.contains("baton-mpi'"), "{}", s.text);
        }
        assert!(
            scripts[0].text.contains("srun --mpi='none'")
                || scripts[0].text.contains("srun --mpi=none"),
            "{}",
            scripts[0].text
        );
    }

    #[test]
    fn relative_baseline_and_hostfile_resolve_beside_the_plan() {
        // Trusted: `/plans` does not exist here to hold the baseline.
        let s = with_plan(
            |p| {
                p.baseline = Some("base/line.json".into());
                p.launch.mpirun.hostfile = Some("hosts".into());
            },
            |i| {
                let i = Input {
                    trust: crate::plan::Trust::Trusted,
                    vouched: false,
                    sweep: None,
                    ..*i
                };
                render(&i, &[Target::Mpirun], None)
            },
        )
        .unwrap();
        assert!(s[0].text.contains("baseline='/plans/base/line.json'\n"));
        assert!(s[0].text.contains("    '/plans/hosts' >\"$out/hostfile\""));
    }

    #[test]
    fn filters_refuse_what_they_cannot_quote() {
        let t = Templates::load(None).unwrap();
        let env = &t.env;
        let err = env
            .render_str(
                "#SBATCH --comment={{ x | sbatch }}",
                minijinja::context! { x => "a\nb" },
            )
            .unwrap_err();
        assert!(err.to_string().contains("control character"), "{err}");
        let err = env
            .render_str(
                "export {{ x | env_name }}=1",
                minijinja::context! { x => "A;B" },
            )
            .unwrap_err();
        assert!(
            err.to_string().contains("not an environment variable name"),
            "{err}"
        );
        let err = env
            .render_str("echo {{ x }}", minijinja::context! { x => "$(id)" })
            .unwrap_err();
        assert!(err.to_string().contains("without quoting"), "{err}");
        assert_eq!(
            env.render_str(
                "echo {{ x | shell_quote }} {{ n }}",
                minijinja::context! { x => ["a b", "it's"], n => 3 }
            )
            .unwrap(),
            "echo 'a b' 'it'\\''s' 3"
        );
    }
}
