use std::io::Write;
use std::path::Path;

use baton::exit::Exit;

use super::{CheckFormat, ExpandFormat, load_plan};

pub fn run(
    plan: &Path,
    format: ExpandFormat,
    max_listed: usize,
    color: bool,
) -> anyhow::Result<Exit> {
    let Some(loaded) = load_plan(plan, color, CheckFormat::Human) else {
        return Ok(Exit::Invalid);
    };
    let expansion = baton::expand::expand(&loaded.plan);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match format {
        ExpandFormat::Table => {
            out.write_all(baton::expand::table::render(&expansion, max_listed).as_bytes())?
        }
        ExpandFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &expansion)?;
            out.write_all(b"\n")?;
        }
    }
    out.flush()?;
    Ok(Exit::Ok)
}
