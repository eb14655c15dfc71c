//! Headless Chromium for the report tests: found on PATH (scripts/install-deps installs it),
//! printing a page to PDF and counting its pages.

use std::path::Path;
use std::process::Command;

/// `chromium` or `chromium-browser`, whichever runs.
pub fn find() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Prints `html` to `pdf` with `bin` (its profile in `profile`); the PDF's page count.
pub fn print_pages(bin: &str, html: &Path, pdf: &Path, profile: &Path) -> u32 {
    let o = Command::new("timeout")
        .args(["60", bin, "--headless", "--no-sandbox", "--disable-gpu"])
        .args(["--no-first-run", "--no-pdf-header-footer"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--print-to-pdf={}", pdf.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", super::show(&o));
    let bytes = std::fs::read(pdf).expect("pdf written");
    assert!(bytes.starts_with(b"%PDF"));
    // The page tree counts the pages.
    String::from_utf8_lossy(&bytes)
        .split("/Count ")
        .skip(1)
        .filter_map(|t| {
            t.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse::<u32>()
                .ok()
        })
        .max()
        .expect("a page tree")
}
