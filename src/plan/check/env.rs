//! Environment maps: names, values as written, NUL bytes, alltoallv's numbers.

use indexmap::IndexMap;

use super::{Checker, valid_env_key};
use crate::collective::Traffic;
use crate::collective::traffic::{MATRIX_SCALE_VAR, SPREAD_VAR};
use crate::plan::diag::Diagnostic;
use crate::plan::loc::{Loc, Node, Pos, Scalar};

impl Checker<'_> {
    pub(super) fn env_map(&mut self, node: &Loc<Node>, key: &str) -> IndexMap<String, String> {
        let mut out = IndexMap::new();
        let Node::Map(entries) = &node.value else {
            self.err(Diagnostic::error(
                format!("`{key}` must be a mapping of variable names to values"),
                Some(node.pos),
            ));
            return out;
        };
        for (k, v) in entries {
            let name = k.value.text();
            if name.starts_with("BATON_") {
                // baton's own variables: its test hooks (`BATON_FAULT`), the rendezvous'
                // key and addresses. Not a plan's, trusted or not, nor a `--set`'s.
                self.err(
                    Diagnostic::error(
                        format!("`{key}` sets `{name}`: `BATON_*` variables are baton's own"),
                        Some(k.pos),
                    )
                    .help("set it in the launching shell if you mean it; no plan may"),
                );
            }
            if !valid_env_key(&name) {
                self.err(
                    Diagnostic::error(
                        format!("`{name}` is not an environment variable name"),
                        Some(k.pos),
                    )
                    .help("names are letters, digits and `_`, not starting with a digit"),
                );
                continue;
            }
            let value = match &v.value {
                Node::Scalar(Scalar::Null) => {
                    self.err(Diagnostic::error(
                        format!("`{name}` has no value; write \"\" for an empty one"),
                        Some(v.pos),
                    ));
                    continue;
                }
                Node::Scalar(Scalar::Str(s)) => s.clone(),
                Node::Scalar(s) => self.as_written(v).map_or_else(|| s.text(), str::to_string),
                other => {
                    self.err(Diagnostic::error(
                        format!(
                            "`{name}` must be a string or number, found {}",
                            other.kind()
                        ),
                        Some(v.pos),
                    ));
                    continue;
                }
            };
            if value.contains('\0') {
                self.err(Diagnostic::error(
                    format!("`{name}` contains a NUL byte"),
                    Some(v.pos),
                ));
                continue;
            }
            if name == "NCCL_TESTS_SPLIT" || name == "NCCL_TESTS_SPLIT_MASK" {
                self.warn(
                    Diagnostic::warning(
                        format!("`{name}` in env does not split baton's jobs"),
                        Some(k.pos),
                    )
                    .help("use the test's `split:` key (or a `split` matrix axis)"),
                );
            }
            self.alltoallv_value(&name, &value, v.pos);
            out.insert(name, value);
        }
        out
    }

    /// alltoallv's spread and scale are numbers nccl-tests would silently ignore or clamp when
    /// wrong; `check` names them before anything runs. (The matrix file is read where the ranks
    /// run, which may not be here.)
    fn alltoallv_value(&mut self, name: &str, value: &str, pos: Pos) {
        let (spread, scale) = match name {
            SPREAD_VAR => (Some(value), None),
            MATRIX_SCALE_VAR => (None, Some(value)),
            _ => return,
        };
        let matrix = scale.map(|_| "0");
        if let Err(e) = Traffic::from_vars(spread, scale, matrix) {
            self.err(Diagnostic::error(e.to_string(), Some(pos)));
        }
    }

    /// A non-string scalar exactly as the plan writes it. An environment variable is text, and
    /// the text the user wrote is what they mean: `1.10`, `0x10`, `007` and `1e3`, not the
    /// numbers YAML reads from them (1.1, 16, 7, 1000). Through an alias this is the anchored
    /// value's text. `None` when the span is unknown or is not one plain scalar (a tag with a
    /// quoted value, `!!int "5"`); then the value is printed from its YAML type.
    pub(super) fn as_written(&self, v: &Loc<Node>) -> Option<&str> {
        let start = v.defined.offset?;
        let text = self.source.get(start..start.checked_add(v.defined.len)?)?;
        let plain = !text.is_empty()
            && !text.starts_with(['"', '\''])
            && !text.contains(char::is_whitespace);
        plain.then_some(text)
    }
}
