//! `baton config PLAN`: the plan's effective values, the site file and `--set`s laid over it,
//! each with where it was written, like `git config --show-origin`.

use std::path::Path;

use baton::exit::Exit;
use baton::plan::Trust;
use baton::stdout::visible;

use super::error::CliError;
use super::ui::{self, DiagFormat};
use super::{ConfigFormat, Outcome};

pub fn run(plan: &Path, format: ConfigFormat, trust: Trust) -> Outcome {
    let layered = super::load::load_layered(plan, DiagFormat::Human, trust)?;
    ui::diagnostics(&layered.loaded.report, DiagFormat::Human);
    let text = match format {
        ConfigFormat::Text => layered
            .entries
            .iter()
            .map(|e| {
                format!(
                    "{}\t{}={}\n",
                    visible(&e.origin.to_string()),
                    e.key,
                    e.value
                )
            })
            .collect(),
        ConfigFormat::Json => {
            serde_json::to_string_pretty(&layered.entries)
                .map_err(|e| CliError::Unexpected(e.into()))?
                + "\n"
        }
    };
    ui::out(&text)?;
    Ok(Exit::Ok)
}
