//! Shell completions and man pages, generated from the same clap definition that parses the
//! command line, so they can never describe flags baton does not have. Generated on demand (a
//! packager runs `baton man -o DIR` and `baton completions SHELL`), not at build time: the build
//! stays free of generated files and an installed baton can always regenerate its own.

use std::path::Path;

use anyhow::Context;
use clap::CommandFactory;

use baton::exit::Exit;

use super::{Outcome, ui};

/// The whole command line, as clap knows it.
pub fn command() -> clap::Command {
    super::Cli::command()
}

/// `baton completions SHELL`: the completion script on stdout.
pub fn completions(shell: clap_complete::Shell) -> Outcome {
    let mut cmd = command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "baton", &mut out);
    ui::out(&String::from_utf8_lossy(&out))?;
    Ok(Exit::Ok)
}

/// `baton man -o DIR`: `baton.1` and one `baton-SUB.1` per visible subcommand (nested ones as
/// `baton-baseline-save.1`), each written atomically.
pub fn man(dir: &Path) -> Outcome {
    let mut cmd = command();
    cmd.build();
    let mut written = Vec::new();
    write_pages(&cmd, "baton", dir, &mut written)?;
    for p in written {
        ui::out(&format!("{}\n", p.display()))?;
    }
    Ok(Exit::Ok)
}

fn write_pages(
    cmd: &clap::Command,
    name: &str,
    dir: &Path,
    written: &mut Vec<std::path::PathBuf>,
) -> Result<(), super::error::CliError> {
    let mut roff = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .title(name)
        .render(&mut roff)
        .with_context(|| format!("cannot render the man page of `{name}`"))?;
    let path = dir.join(format!("{name}.1"));
    baton::output::write_atomic(&path, &roff)?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every argument a user can see says what it is for, in `--help`, the man pages and the
    /// completions alike.
    #[test]
    fn every_visible_argument_has_help_text() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                let builtin = matches!(a.get_id().as_str(), "help" | "version");
                if a.is_hide_set() || builtin {
                    continue;
                }
                if a.get_help().is_none() && a.get_long_help().is_none() {
                    missing.push(format!("{path} {}", a.get_id()));
                }
            }
            for s in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                if s.get_about().is_none() && s.get_name() != "help" {
                    missing.push(format!("{path} {} (the subcommand)", s.get_name()));
                }
                walk(s, &format!("{path} {}", s.get_name()), missing);
            }
        }
        let mut cmd = command();
        cmd.build();
        let mut missing = Vec::new();
        walk(&cmd, "baton", &mut missing);
        assert!(missing.is_empty(), "arguments without help: {missing:#?}");
    }

    #[test]
    fn completions_and_man_pages_cover_every_subcommand() {
        let mut cmd = command();
        let mut bash = Vec::new();
        clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, "baton", &mut bash);
        let bash = String::from_utf8(bash).unwrap();
        for word in ["grade", "baseline", "completions", "--format", "--junit"] {
            assert!(bash.contains(word), "{word} not completed");
        }
        let dir = std::env::temp_dir().join(format!("baton-man-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        man(&dir).unwrap();
        let grade = std::fs::read_to_string(dir.join("baton-grade.1")).unwrap();
        assert!(grade.contains(".TH baton-grade 1"), "{grade}");
        assert!(grade.contains("junit"), "{grade}");
        assert!(dir.join("baton-baseline-save.1").is_file());
        assert!(
            !dir.join("baton-__worker.1").exists(),
            "hidden commands stay hidden"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
