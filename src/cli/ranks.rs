//! `baton ranks`: the rendezvous alone, so a site engineer can check the launcher wiring (who is
//! rank 0, which hosts, which GPUs each rank sees) on CPUs before booking GPU time.

use std::time::Instant;

use baton::exit::Exit;
use baton::rendezvous;

use super::Outcome;
use super::error::CliError;
use super::ui;

/// Barriers timed for the round-trip figure.
const ROUNDS: u32 = 20;

pub fn run() -> Outcome {
    let t = Instant::now();
    let joined = match rendezvous::join_from_env("ranks") {
        Ok(Some(j)) => j,
        Ok(None) => {
            let e = rendezvous::RendezvousError::NoLauncher;
            return Err(CliError::Invalid(format!("baton ranks: {e}")));
        }
        Err(e) => {
            let who = std::env::var("BATON_RANK")
                .or_else(|_| std::env::var("SLURM_PROCID"))
                .map(|r| format!(" (rank {r})"))
                .unwrap_or_default();
            return Err(CliError::Ended(e.exit(), format!("baton ranks{who}: {e}")));
        }
    };
    let met = t.elapsed();
    let w = &joined.world;
    let rank = joined.placement.rank;
    let fail = |e: rendezvous::RendezvousError| {
        Err(CliError::Runtime(format!("baton ranks (rank {rank}): {e}")))
    };
    let t = Instant::now();
    for _ in 0..ROUNDS {
        if let Err(e) = w.try_barrier() {
            return fail(e);
        }
    }
    let barrier = t.elapsed() / ROUNDS;
    if rank == 0 {
        let members = w.members();
        let mut hosts: Vec<&str> = members.iter().map(|m| m.host.as_str()).collect();
        hosts.sort_unstable();
        hosts.dedup();
        let width = members
            .iter()
            .map(|m| m.host.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let mut out = format!(
            "{} rank(s) on {} host(s), placed by {}, met at {} ({}) in {:.2} s\n",
            members.len(),
            hosts.len(),
            joined.placement.source.name(),
            joined.root.display(),
            joined.root.from,
            met.as_secs_f64()
        );
        out += &format!(
            "{:>5}  {:>5}  {:<width$}  inventory\n",
            "rank", "local", "host"
        );
        for m in members {
            out += &format!(
                "{:>5}  {:>5}  {:<width$}  {}\n",
                m.rank,
                m.local_rank,
                baton::stdout::visible(&m.host),
                baton::stdout::visible(&m.inventory)
            );
        }
        out += &format!(
            "barrier round trip: {:.1} µs (mean of {ROUNDS})\n",
            barrier.as_secs_f64() * 1e6
        );
        for t in w.turned_away() {
            out += &format!("turned away: {}\n", baton::stdout::visible(t));
        }
        ui::out(&out)?;
    }
    // Nobody leaves before rank 0 has printed: a launcher that ends the step when the first
    // rank exits would otherwise cut the table short.
    if let Err(e) = w.try_barrier() {
        return fail(e);
    }
    Ok(Exit::Ok)
}
