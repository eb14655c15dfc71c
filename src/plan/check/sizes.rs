//! `sizes`: lists and sweeps, bounded.

use crate::units::parse_size;

use super::{Checker, MAX_SIZE, MAX_SIZES_PER_TEST};
use crate::plan::diag::Diagnostic;
use crate::plan::loc::{Loc, Node, Scalar};
use crate::plan::model::*;

impl Checker<'_> {
    pub(super) fn size_value(&mut self, n: &Loc<Node>, what: &str) -> Option<u64> {
        let r = match &n.value {
            Node::Scalar(Scalar::Int(i)) if *i > MAX_SIZE as i128 => {
                Err(too_large(what, &i.to_string()))
            }
            Node::Scalar(Scalar::Int(i)) if *i > 0 => Ok(*i as u64),
            Node::Scalar(Scalar::Int(i)) => {
                Err(format!("{what} must be a positive size, found {i}"))
            }
            Node::Scalar(Scalar::Str(s)) => match parse_size(s) {
                Ok(0) => Err(format!("{what} must be a positive size, found `{s}`")),
                Ok(v) if v > MAX_SIZE => Err(too_large(what, s)),
                Ok(v) => Ok(v),
                Err(e) => Err(format!("{what}: {e}")),
            },
            other => Err(format!(
                "{what} must be a size such as 8, 1M or 8G, found {}",
                other.kind()
            )),
        };
        match r {
            Ok(v) => Some(v),
            Err(m) => {
                self.err(Diagnostic::error(m, Some(n.pos)).help(
                    "sizes are binary: 1K = 1024 bytes, 8G = 8 GiB, as nccl-tests -b/-e read them",
                ));
                None
            }
        }
    }

    pub(super) fn sizes(&mut self, n: &Loc<Node>) -> Option<Sizes> {
        match &n.value {
            Node::Seq(items) => {
                if items.is_empty() {
                    self.err(
                        Diagnostic::error("`sizes` is an empty list", Some(n.pos))
                            .label("no sizes"),
                    );
                    return None;
                }
                let mut out: Vec<u64> = Vec::new();
                let mut ok = true;
                for it in items {
                    match self.size_value(it, "size") {
                        Some(v) if out.contains(&v) => {
                            self.err(Diagnostic::error(
                                format!("size {} is listed twice", crate::units::Size(v)),
                                Some(it.pos),
                            ));
                            ok = false;
                        }
                        Some(v) => out.push(v),
                        None => ok = false,
                    }
                }
                if out.len() as u64 > MAX_SIZES_PER_TEST {
                    self.err(Diagnostic::error(
                        format!(
                            "`sizes` lists {} sizes; at most {MAX_SIZES_PER_TEST}",
                            out.len()
                        ),
                        Some(n.pos),
                    ));
                    return None;
                }
                ok.then_some(Sizes::List(out))
            }
            Node::Map(entries) => {
                let get = |k: &str| {
                    entries
                        .iter()
                        .find(|(key, _)| key.value.text() == k)
                        .map(|(_, v)| v)
                };
                let from = get("from").and_then(|v| self.size_value(v, "`sizes.from`"));
                let to = get("to").and_then(|v| self.size_value(v, "`sizes.to`"));
                let factor = get("factor");
                let step = get("step");
                let (from, to) = (from?, to?);
                if from > to {
                    self.err(
                        Diagnostic::error(
                            format!(
                                "`sizes.from` ({}) is larger than `sizes.to` ({})",
                                crate::units::Size(from),
                                crate::units::Size(to)
                            ),
                            get("from").map(|v| v.pos),
                        )
                        .label("from > to"),
                    );
                    return None;
                }
                let sizes = match (factor, step) {
                    (Some(_), Some(s)) => {
                        self.err(Diagnostic::error(
                            "give either `factor` or `step`, not both",
                            Some(s.pos),
                        ));
                        return None;
                    }
                    (Some(f), None) => match &f.value {
                        Node::Scalar(Scalar::Int(i)) if *i >= 2 && *i <= u32::MAX as i128 => {
                            Sizes::Factor {
                                from,
                                to,
                                factor: *i as u64,
                            }
                        }
                        other => {
                            self.err(
                                Diagnostic::error(
                                    format!(
                                        "`sizes.factor` must be a whole number ≥ 2, found {}",
                                        node_text(other)
                                    ),
                                    Some(f.pos),
                                )
                                .label("factor ≤ 1 never grows")
                                .help("use `step:` for additive steps"),
                            );
                            return None;
                        }
                    },
                    (None, Some(s)) => Sizes::Step {
                        from,
                        to,
                        step: self.size_value(s, "`sizes.step`")?,
                    },
                    (None, None) => {
                        if from == to {
                            Sizes::List(vec![from])
                        } else {
                            self.err(
                                Diagnostic::error(
                                    "`sizes` needs `factor` or `step` between `from` and `to`",
                                    Some(n.pos),
                                )
                                .help("e.g. sizes: { from: 8, to: 8G, factor: 2 }"),
                            );
                            return None;
                        }
                    }
                };
                if sizes.len() > MAX_SIZES_PER_TEST {
                    self.err(Diagnostic::error(
                        format!(
                            "`sizes` sweeps {} sizes; at most {MAX_SIZES_PER_TEST}",
                            sizes.len()
                        ),
                        Some(n.pos),
                    ));
                    return None;
                }
                Some(sizes)
            }
            other => {
                self.err(Diagnostic::error(
                    format!(
                        "`sizes` must be a mapping {{from, to, factor|step}} or a list, found {}",
                        other.kind()
                    ),
                    Some(n.pos),
                ));
                None
            }
        }
    }
}

fn too_large(what: &str, v: &str) -> String {
    format!(
        "{what} `{v}` is larger than the largest supported size ({})",
        crate::units::Size(MAX_SIZE)
    )
}

fn node_text(n: &Node) -> String {
    match n {
        Node::Scalar(s) => format!("`{s}`"),
        other => other.kind().to_string(),
    }
}
