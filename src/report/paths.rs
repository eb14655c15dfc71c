//! File names as a report shows them. The names reach the grade as the user typed them or as
//! baton joined them (`/tmp/x/plans/../baselines//good.json`); a reader wants the file, not how
//! it was reached: `.` and `..` resolved on the text (no file system access, so names of files
//! that are gone still show), and a path under the current directory shown relative to it.

use std::path::{Component, Path, PathBuf};

/// `path` cleaned for a reader: lexically normalised, relative to the current directory when
/// under it. Text that is not a path (an error note after the name) passes through cleaned.
pub fn shown(path: &str) -> String {
    let cwd = std::env::current_dir().ok();
    shown_from(path, cwd.as_deref())
}

fn shown_from(path: &str, cwd: Option<&Path>) -> String {
    let p = normalise(Path::new(path));
    if p.is_absolute()
        && let Some(rel) = cwd.map(normalise).and_then(|c| p.strip_prefix(c).ok())
        && !rel.as_os_str().is_empty()
    {
        return rel.display().to_string();
    }
    if p.as_os_str().is_empty() {
        ".".into()
    } else {
        p.display().to_string()
    }
}

/// `a/./b//c/../d` → `a/b/d`; a leading `..` of a relative path stays (it is meaningful), one
/// above the root is dropped (the root is its own parent).
fn normalise(p: &Path) -> PathBuf {
    let mut out: Vec<Component<'_>> = Vec::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(c),
            },
            c => out.push(c),
        }
    }
    out.iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_names_read_as_the_file_they_reach() {
        let cwd = Path::new("/work/repo");
        assert_eq!(
            shown_from("/tmp/x/plans/../baselines//good.json", Some(cwd)),
            "/tmp/x/baselines/good.json"
        );
        assert_eq!(
            shown_from("/work/repo/out/./results.json", Some(cwd)),
            "out/results.json"
        );
        assert_eq!(
            shown_from("plans/examples/../b.json", Some(cwd)),
            "plans/b.json"
        );
        assert_eq!(shown_from("../up/./r.json", Some(cwd)), "../up/r.json");
        assert_eq!(shown_from("/../etc", None), "/etc");
        assert_eq!(shown_from("./", None), ".");
        assert_eq!(shown_from("/work/repo", Some(cwd)), "/work/repo");
    }
}
