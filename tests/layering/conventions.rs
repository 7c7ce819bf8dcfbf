//! One module convention and one unit-test placement (docs/ARCHITECTURE.md "The rules
//! tests/layering/main.rs checks"):
//! - a module with files of its own is a directory with `mod.rs`, never `x.rs` beside `x/`;
//! - no `#[path]`: a module's file is where the module system puts it;
//! - every test function is in a module named `tests` (inline, `tests.rs`, or `tests/` split
//!   by subject), the child of the module it tests.

use std::collections::BTreeMap;

use syn::Item;

/// `x.rs` beside a directory `x/` holding sources.
pub fn module_files(sources: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for file in sources.keys() {
        let Some(stem) = file.strip_suffix(".rs") else {
            continue;
        };
        let dir = format!("{stem}/");
        if sources.keys().any(|f| f.starts_with(&dir)) {
            out.push(format!("{file} beside {dir}: move it to {stem}/mod.rs"));
        }
    }
    out
}

/// Every `#[path]` attribute and every test function outside a `tests` module.
pub fn misplaced(sources: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (file, text) in sources {
        let ast = syn::parse_file(text).unwrap_or_else(|e| panic!("{file}: {e}"));
        // The file's own module path: `a/tests/b.rs` and `a/tests.rs` are in `tests`.
        let in_tests = file
            .trim_end_matches(".rs")
            .split('/')
            .any(|c| c == "tests");
        walk(file, &ast.items, in_tests, &mut out);
    }
    out
}

fn walk(file: &str, items: &[Item], in_tests: bool, out: &mut Vec<String>) {
    for item in items {
        match item {
            Item::Mod(m) => {
                if m.attrs.iter().any(|a| a.path().is_ident("path")) {
                    out.push(format!(
                        "{file}: mod {}: #[path] (put the file where `mod` finds it)",
                        m.ident
                    ));
                }
                if let Some((_, inner)) = &m.content {
                    walk(file, inner, in_tests || m.ident == "tests", out);
                }
            }
            Item::Fn(f) if !in_tests && is_test(&f.attrs) => {
                out.push(format!(
                    "{file}: fn {}: a test outside a `tests` module",
                    f.sig.ident
                ));
            }
            _ => {}
        }
    }
}

/// `#[test]`, `#[tokio::test]` and the like.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().segments.last().is_some_and(|s| s.ident == "test"))
}
