use std::path::Path;

use baton::exit::Exit;

use super::{CheckFormat, ExpandFormat, load_plan};

pub fn run(
    plan: &Path,
    format: ExpandFormat,
    max_listed: usize,
    color: bool,
) -> anyhow::Result<Exit> {
    let Some(loaded) = load_plan(plan, color, CheckFormat::Human, super::plan_trust()) else {
        return Ok(Exit::Invalid);
    };
    let expansion = baton::expand::expand(&loaded.plan);
    match format {
        ExpandFormat::Table => {
            baton::stdout::print(&baton::expand::table::render(&expansion, max_listed))?
        }
        // Streamed: the JSON of a plan near the job limit is too big to build as one string.
        ExpandFormat::Json => baton::stdout::write_with(|out| {
            serde_json::to_writer_pretty(&mut *out, &expansion)?;
            out.write_all(b"\n")
        })?,
    }
    Ok(Exit::Ok)
}
