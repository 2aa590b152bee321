//! The documentation a fresh clone carries: the reference lives in `docs/`, the
//! README and every `--help` point there and not outside the repository, and the docs name
//! tests and operations that exist.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

const DOCS: [&str; 4] = ["formats.md", "races.md", "analyses.md", "reports.md"];

#[test]
fn readme_links_to_docs_in_the_repository() {
    let readme = read(&repo().join("README.md"));
    for d in DOCS {
        assert!(repo().join("docs").join(d).is_file(), "docs/{d} missing");
        assert!(
            readme.contains(&format!("(docs/{d}")),
            "README does not link docs/{d}"
        );
    }
    assert!(
        !readme.contains("../shared/SPEC.md"),
        "README points outside the repo"
    );
}

#[test]
fn help_texts_do_not_point_outside_the_repository() {
    let commands = [
        "analyze", "validate", "stats", "convert", "generate", "oracle", "diagnose", "perturb",
        "sample", "elide",
    ];
    let mut helps = vec![vec!["--help"]];
    helps.extend(commands.iter().map(|c| vec![*c, "--help"]));
    for args in helps {
        let out = Command::new(env!("CARGO_BIN_EXE_racepred"))
            .args(&args)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(!text.is_empty(), "{args:?}");
        for bad in ["../shared", "SPEC"] {
            assert!(
                !text.contains(bad),
                "`racepred {args:?}` mentions {bad}:\n{text}"
            );
        }
    }
}

#[test]
fn formats_doc_covers_every_std_operation_and_the_value_extension() {
    let f = read(&repo().join("docs/formats.md"));
    for op in [
        "r(X)",
        "w(X)",
        "acq(L)",
        "rel(L)",
        "fork(U)",
        "join(U)",
        "vr(X)",
        "vw(X)",
        "sig(C)",
        "wait(C)",
        "mbegin(M;",
        "mend(M)",
        "begin",
        "end(M)",
        "w(x)=EXPR",
        "r(y)->a=5",
        "let(b=EXPR)",
        "br(COND)",
        "alt(LINE)",
    ] {
        assert!(f.contains(op), "docs/formats.md does not describe `{op}`");
    }
    for section in [
        "## STD",
        "## RoadRunner",
        "## RAPID CSV",
        "## SSHB Go-tool",
        "## Binary",
    ] {
        assert!(f.contains(section), "docs/formats.md lacks {section}");
    }
}

/// Every `snake_case` name in a "Tests:" paragraph of docs/analyses.md is a test function.
#[test]
fn analyses_doc_names_tests_that_exist() {
    let doc = read(&repo().join("docs/analyses.md"));
    let mut sources = String::new();
    for dir in [
        "crates/racepred/tests",
        "crates/racepred/src/analysis/sshb",
        "crates/racepred/src",
        "crates/racepred/src/analysis",
        "crates/racepred-smt/tests",
        "crates/racepred-cli/tests",
    ] {
        for e in std::fs::read_dir(repo().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "rs") {
                sources.push_str(&read(&p));
            }
        }
    }
    let mut named = 0;
    let mut in_tests = false;
    for line in doc.lines() {
        // A "Tests:" paragraph (or list) runs to the next heading.
        if line.starts_with("Tests:") {
            in_tests = true;
        } else if line.starts_with('#') {
            in_tests = false;
        }
        if !in_tests {
            continue;
        }
        for (i, chunk) in line.split('`').enumerate() {
            let ident = i % 2 == 1
                && chunk.contains('_')
                && chunk
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if ident {
                named += 1;
                assert!(
                    sources.contains(&format!("fn {chunk}(")),
                    "docs/analyses.md names `{chunk}`, which is no test"
                );
            }
        }
    }
    assert!(named >= 30, "only {named} test names found");
    // Every analysis of the registry, SMT predictors included.
    for a in racepred::analysis::ANALYSES.iter().map(|r| r.name) {
        assert!(
            doc.contains(&format!("`{a}`")),
            "docs/analyses.md lacks `{a}`"
        );
    }
}
