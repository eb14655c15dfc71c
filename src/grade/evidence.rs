//! Why a job got slower, from what the results record, before any guess from the shape of the
//! drop. The seed incident — P2P fell back to SHM because the run set NCCL_P2P_DISABLE=1 — drops
//! at every size, and the shape alone says "the GPUs, check clocks": the opposite of the truth.
//! So a diagnosis names, in this order, a transport that changed or is not the one asked for, the
//! NCCL/UCX settings that differ, corrupted data, throttling, and other GPU/driver/NCCL versions;
//! the shape comes last, and says it is only a hint when nothing else is known.

use super::diagnosis::{Diagnosis, Shape};
use crate::ingest::class_satisfies;
use crate::plan::TransportRule;
use crate::results::{Environment, JobResult};

/// After the settings that force a transport (the likeliest cause of all), those that pick
/// devices, algorithms and protocols.
const TUNING: &[&str] = &[
    "NCCL_IB_HCA",
    "NCCL_SOCKET_IFNAME",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_NVLS_ENABLE",
    "NCCL_COLLNET_ENABLE",
];

/// Variables baton sets on its own runs to capture transports: never the user's cause.
use crate::results::env::CAPTURE;

/// One side of a comparison: a job's results and the environment of the run they came from.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    pub job: &'a JobResult,
    pub env: Option<&'a Environment>,
}

/// Transport classes a job's links used, most links first.
pub fn classes(r: &JobResult) -> Vec<String> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for t in &r.transports {
        match counts.iter_mut().find(|(c, _)| *c == t.transport) {
            Some(e) => e.1 += 1,
            None => counts.push((t.transport.clone(), 1)),
        }
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    counts.into_iter().map(|c| c.0).collect()
}

/// The facts that can explain `now` being slower than `then`, strongest first. `expected` is the
/// transport the plan asks for, if it asks.
pub fn facts(then: Side<'_>, now: Side<'_>, expected: Option<&TransportRule>) -> Vec<Diagnosis> {
    let mut out = Vec::new();
    let (was, is) = (classes(then.job), classes(now.job));
    let unknown_then = "the baseline's results do not say how it connected";
    let same_classes = {
        let (mut a, mut b) = (was.clone(), is.clone());
        a.sort();
        b.sort();
        a == b
    };
    if !was.is_empty() && !is.is_empty() && !same_classes {
        let (from, to) = (was.join("+"), is.join("+"));
        out.push(Diagnosis {
            text: format!(
                "transport changed from {from} (baseline) to {to}: NCCL fell down its transport ladder — check NCCL_P2P_DISABLE/NCCL_SHM_DISABLE/NCCL_NET settings, GPU peer access (ACS, IOMMU) and NIC/rail state"
            ),
            shape: Shape::TransportChanged { from, to },
        });
    } else if let Some(exp) = expected
        && !is.is_empty()
        && is.iter().any(|c| !exp.allows_somewhere(c))
    {
        let seen = is.join("+");
        out.push(Diagnosis {
            text: format!(
                "transport {seen}, the plan expects {exp}{}",
                if was.is_empty() {
                    format!(" ({unknown_then})")
                } else {
                    String::new()
                }
            ),
            shape: Shape::TransportNotExpected {
                seen,
                expected: exp.to_string(),
            },
        });
    }
    let changed = settings_changed(then, now);
    if !changed.is_empty() {
        out.push(Diagnosis {
            text: format!(
                "settings differ from the baseline: {}",
                changed
                    .iter()
                    .map(|(k, new, old)| format!(
                        "{k}={} (baseline: {})",
                        new.as_deref().unwrap_or("not set"),
                        old.as_deref().unwrap_or("not recorded")
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            shape: Shape::SettingsChanged {
                names: changed.into_iter().map(|c| c.0).collect(),
            },
        });
    }
    let wrong = now
        .job
        .cells()
        .filter(|c| c.3.wrong.is_some_and(|w| w > 0))
        .count();
    if wrong > 0 {
        out.push(Diagnosis {
            text: format!(
                "#wrong > 0 in {wrong} cell(s): the data came back corrupted — hardware, not tuning"
            ),
            shape: Shape::Corrupted {
                cells: wrong as u64,
            },
        });
    }
    let mut reasons: Vec<String> = now
        .job
        .telemetry
        .iter()
        .flat_map(|t| t.throttle_reasons.iter().cloned())
        .filter(|r| {
            !matches!(
                r.as_str(),
                "none" | "gpu_idle" | "applications_clocks_setting"
            )
        })
        .collect();
    reasons.sort();
    reasons.dedup();
    if !reasons.is_empty() {
        out.push(Diagnosis {
            text: format!(
                "the GPUs were throttled during the job ({})",
                reasons.join(", ")
            ),
            shape: Shape::Throttled { reasons },
        });
    }
    if let (Some(a), Some(b)) = (then.env, now.env) {
        let versions = versions_changed(a, b);
        if !versions.is_empty() {
            out.push(Diagnosis {
                text: format!(
                    "other software or hardware than the baseline: {}",
                    versions.join(", ")
                ),
                shape: Shape::VersionsChanged,
            });
        }
    }
    if was.is_empty()
        && !is.is_empty()
        && expected.is_none()
        && is.iter().any(|c| !class_satisfies(c, "P2P"))
    {
        out.push(Diagnosis {
            text: format!("this run connected via {} ({unknown_then})", is.join("+")),
            shape: Shape::TransportNotExpected {
                seen: is.join("+"),
                expected: "unknown".into(),
            },
        });
    }
    out
}

/// The NCCL/UCX variables whose values differ: (name, now, then), forcing ones first.
pub fn settings_changed(
    then: Side<'_>,
    now: Side<'_>,
) -> Vec<(String, Option<String>, Option<String>)> {
    let vars = |s: Side<'_>| {
        let mut m: Vec<(String, String)> = s
            .env
            .map(|e| e.variables.clone().into_iter().collect())
            .unwrap_or_default();
        // The job's own settings (plan, matrix, or what its log states) win.
        for (k, v) in &s.job.env {
            m.retain(|(x, _)| x != k);
            m.push((k.clone(), v.clone()));
        }
        m.retain(|(k, _)| {
            (k.starts_with("NCCL_") || k.starts_with("UCX_")) && !CAPTURE.contains(&k.as_str())
        });
        m
    };
    let (a, b) = (vars(then), vars(now));
    let get = |m: &[(String, String)], k: &str| m.iter().find(|x| x.0 == k).map(|x| x.1.clone());
    let mut names: Vec<String> = a.iter().chain(&b).map(|x| x.0.clone()).collect();
    names.sort();
    names.dedup();
    let mut out: Vec<(String, Option<String>, Option<String>)> = names
        .into_iter()
        .filter_map(|k| {
            let (old, new) = (get(&a, &k), get(&b, &k));
            (old != new).then_some((k, new, old))
        })
        .collect();
    let rank = |name: &str| {
        let forcing = super::transport::FORCING;
        forcing
            .iter()
            .chain(TUNING)
            .position(|f| *f == name)
            .unwrap_or(forcing.len() + TUNING.len())
    };
    out.sort_by_key(|c| rank(&c.0));
    out
}

fn versions_changed(then: &Environment, now: &Environment) -> Vec<String> {
    let mut out = Vec::new();
    for (what, a, b) in [
        ("NCCL", &then.nccl_version, &now.nccl_version),
        ("driver", &then.driver_version, &now.driver_version),
        ("CUDA", &then.cuda_version, &now.cuda_version),
    ] {
        if let (Some(a), Some(b)) = (a, b)
            && a != b
        {
            out.push(format!("{what} {b} (baseline {a})"));
        }
    }
    let gpus = |e: &Environment| {
        let mut g: Vec<String> = e
            .hosts
            .iter()
            .flat_map(|h| h.gpus.iter().map(|g| g.name.clone()))
            .collect();
        g.sort();
        g.dedup();
        g
    };
    let (a, b) = (gpus(then), gpus(now));
    if !a.is_empty() && !b.is_empty() && a != b {
        out.push(format!("GPUs {} (baseline {})", b.join(", "), a.join(", ")));
    }
    out
}

/// Evidence first; the shape of the drop last. With evidence, the shape only locates the drop;
/// without any, it is offered as what it is: a hint.
pub fn explain(shape: Diagnosis, facts: Vec<Diagnosis>) -> Diagnosis {
    let Some(first) = facts.first() else {
        return Diagnosis {
            text: format!(
                "hint from the shape of the drop alone (the results record no transport, setting, telemetry or version difference): {}",
                shape.text
            ),
            shape: shape.shape,
        };
    };
    let mut text = facts
        .iter()
        .map(|f| f.text.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    text.push_str(&format!("; {}", shape.shape.located()));
    Diagnosis {
        shape: first.shape.clone(),
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::TransportLink;

    fn job(env: &[(&str, &str)], transport: Option<&str>) -> JobResult {
        let mut j: JobResult = serde_json::from_str(
            r#"{"id":"a","test":"a","backend":"nccl","collective":"all_reduce","dtype":"float",
            "op":"sum","root":null,"split":null,
            "settings":{"iters":20,"warmup":1,"agg_iters":1,"cuda_graph":0,"check":true,"average":"avg","in_place":"both"},
            "layout":{"nranks":2,"nodes":1,"processes":2,"gpus_per_process":1},"status":"completed"}"#,
        )
        .unwrap();
        j.env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        if let Some(t) = transport {
            j.transports.push(TransportLink {
                channel: 0,
                from_rank: 0,
                to_rank: 1,
                transport: t.into(),
                detail: t.into(),
                host: None,
                comm: None,
            });
        }
        j
    }

    fn side(j: &JobResult) -> Side<'_> {
        Side { job: j, env: None }
    }

    #[test]
    fn the_seed_incident_names_the_transport_and_the_setting_not_the_clocks() {
        // A healthy baseline whose log had no NCCL_DEBUG lines; the incident log did.
        let then = job(&[], None);
        let now = job(
            &[("NCCL_P2P_DISABLE", "1"), ("NCCL_DEBUG", "INFO")],
            Some("SHM"),
        );
        let f = facts(side(&then), side(&now), Some(&TransportRule::one("P2P")));
        assert!(
            matches!(f[0].shape, Shape::TransportNotExpected { .. }),
            "{f:?}"
        );
        assert!(f[0].text.contains("transport SHM, the plan expects P2P"));
        assert!(
            f[1].text
                .contains("NCCL_P2P_DISABLE=1 (baseline: not recorded)")
        );
        assert!(
            !f[1].text.contains("NCCL_DEBUG"),
            "capture settings are not causes"
        );
        let shape = super::super::diagnosis::classify(
            &[(1 << 20, 90.0), (1 << 25, 91.0), (1 << 30, 92.0)],
            5.0,
        )
        .unwrap();
        let d = explain(shape, f);
        assert!(!d.text.contains("clocks"), "{}", d.text);
        assert!(d.text.ends_with("drop at all sizes"), "{}", d.text);
        // Without a transport criterion the setting still leads.
        let f = facts(side(&then), side(&now), None);
        assert!(f[0].text.contains("NCCL_P2P_DISABLE=1"), "{f:?}");
    }

    #[test]
    fn with_nothing_recorded_the_shape_says_it_is_a_hint() {
        let a = job(&[], None);
        let shape = super::super::diagnosis::classify(
            &[(1 << 20, 30.0), (1 << 25, 30.0), (1 << 30, 30.0)],
            5.0,
        )
        .unwrap();
        let d = explain(shape, facts(side(&a), side(&a), None));
        assert!(
            d.text.starts_with("hint from the shape of the drop alone"),
            "{}",
            d.text
        );
    }
}
