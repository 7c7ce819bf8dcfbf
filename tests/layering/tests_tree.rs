//! tests/ you can find your way in: at its top the Rust test binaries (one folder with a main.rs
//! per subject), their support library, the benchmarks, the fuzz targets and the CI stages; every
//! other harness (shell, Python, Go, JavaScript, YAML) lives under tests/harness/.

use std::path::Path;

/// Folders at the top of tests/ that are not a Rust test binary, and why each is there.
const FOLDERS: &[&str] = &["support", "bench", "fuzz", "ci", "harness"];
/// Files at the top of tests/: the map, the CI runner, the README's quick start.
const FILES: &[&str] = &["README.md", "run-all.sh", "quickstart.sh"];

fn misplaced(tests: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(tests).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let p = e.path();
        if p.is_dir() {
            let binary = p.join("main.rs").is_file();
            if !binary && !FOLDERS.contains(&name.as_str()) {
                out.push(format!(
                    "tests/{name}/: neither a test binary (main.rs) nor one of {FOLDERS:?}"
                ));
            }
            if binary {
                for f in walk(&p) {
                    if f.extension().is_none_or(|x| x != "rs") {
                        out.push(format!("{}: not Rust, in a test binary's folder (move it under tests/harness/)", f.display()));
                    }
                }
            }
        } else if !FILES.contains(&name.as_str()) {
            out.push(format!(
                "tests/{name}: a loose file (harnesses go under tests/harness/)"
            ));
        }
    }
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn tests_holds_binaries_support_and_one_harness_folder() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let found = misplaced(&tests);
    assert!(
        found.is_empty(),
        "tests/ is out of shape:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_script_beside_the_binaries_is_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("node")).unwrap();
    std::fs::write(dir.path().join("node/main.rs"), "").unwrap();
    std::fs::write(dir.path().join("node/run.sh"), "").unwrap();
    std::fs::create_dir_all(dir.path().join("scripts")).unwrap();
    std::fs::write(dir.path().join("setup.py"), "").unwrap();
    std::fs::create_dir_all(dir.path().join("harness/k8s")).unwrap();
    let found = misplaced(dir.path());
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found[0].contains("node/run.sh"), "{found:#?}");
    assert!(found[1].starts_with("tests/scripts/"), "{found:#?}");
    assert!(found[2].starts_with("tests/setup.py"), "{found:#?}");
}
