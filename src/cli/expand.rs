use std::path::Path;

use baton::exit::Exit;
use baton::expand::table::SetRanks;

use super::ui::{self, DiagFormat};
use super::{ExpandFormat, Outcome, load_plan, node_sets};

pub fn run(
    plan: &Path,
    format: ExpandFormat,
    max_listed: usize,
    nodes: Option<super::GivenNodes<'_>>,
    trust: baton::plan::Trust,
) -> Outcome {
    let loaded = load_plan(plan, DiagFormat::Human, trust)?;
    let sets = node_sets(&loaded.plan, plan, nodes, trust)?;
    let mut expansion = baton::expand::expand(&loaded.plan);
    // A plan with node sets (or a --nodes list) runs every test over node sets.
    let set_ranks = if sets.is_empty() && nodes.is_none() {
        SetRanks::default()
    } else {
        let count = sets.iter().find_map(|s| s.node_count).or_else(|| {
            // A hostfile's count is in `sets` already: node_sets read it.
            match nodes {
                Some(super::GivenNodes::Hostlist(h)) => {
                    baton::nodeset::expand(h).ok().map(|h| h.len())
                }
                _ => None,
            }
        });
        SetRanks::of(&loaded.plan, count)
    };
    expansion.node_sets = sets;
    match format {
        ExpandFormat::Table => {
            let mut text = baton::expand::table::render(&expansion, max_listed, &set_ranks);
            if !expansion.node_sets.is_empty() {
                text.push_str("node sets\n");
                for s in &expansion.node_sets {
                    text.push_str(&s.render(max_listed));
                }
            }
            ui::out(&text)?
        }
        // Streamed: the JSON of a plan near the job limit is too big to build as one string.
        ExpandFormat::Json => ui::out_with(|out| {
            serde_json::to_writer_pretty(&mut *out, &expansion)?;
            out.write_all(b"\n")
        })?,
    }
    Ok(Exit::Ok)
}
