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

/// Every `mod.rs` that holds more than declarations (`mod`) and re-exports (`use`): its other
/// items, named, to move into files of their own beside it. The `mod.rs` of a `tests/`
/// directory is tests (their shared helpers), not a module's front door: not judged.
pub fn logic_in_mod_rs(sources: &BTreeMap<String, String>) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for (file, text) in sources {
        let in_tests = file.split('/').any(|c| c == "tests");
        if !(file == "mod.rs" || file.ends_with("/mod.rs")) || in_tests {
            continue;
        }
        let ast = syn::parse_file(text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let items: Vec<String> = ast.items.iter().filter_map(logic).collect();
        if !items.is_empty() {
            out.insert(file.clone(), items);
        }
    }
    out
}

/// What an item is, unless it declares a module or re-exports.
fn logic(item: &Item) -> Option<String> {
    let ident = |i: &syn::Ident| i.to_string();
    Some(match item {
        Item::Mod(_) | Item::Use(_) => return None,
        Item::Fn(f) => format!("fn {}", ident(&f.sig.ident)),
        Item::Struct(s) => format!("struct {}", ident(&s.ident)),
        Item::Enum(e) => format!("enum {}", ident(&e.ident)),
        Item::Trait(t) => format!("trait {}", ident(&t.ident)),
        Item::Type(t) => format!("type {}", ident(&t.ident)),
        Item::Const(c) => format!("const {}", ident(&c.ident)),
        Item::Static(s) => format!("static {}", ident(&s.ident)),
        Item::Impl(i) => {
            let ty = &i.self_ty;
            format!("impl {}", quote_type(ty))
        }
        Item::Macro(m) => format!(
            "{}!",
            m.mac
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default()
        ),
        _ => "an item".to_string(),
    })
}

/// A type's last path segment (`impl FakeCloud`), enough to find the block.
fn quote_type(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        _ => "a type".to_string(),
    }
}

/// What breaks the rule, one line each: a `mod.rs` with logic that `pending` does not name,
/// and a name in `pending` that is no such file any more (so the list cannot go stale).
pub fn judge_mod_rs(found: &BTreeMap<String, Vec<String>>, pending: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = found
        .iter()
        .filter(|(f, _)| !pending.contains(&f.as_str()))
        .map(|(f, items)| {
            format!(
                "{f}: holds {}: move them into files of their own beside it",
                items.join(", ")
            )
        })
        .collect();
    out.extend(
        pending
            .iter()
            .filter(|f| !found.contains_key(**f))
            .map(|f| {
                format!("{f}: in MOD_RS_REGISTRIES but only declares and re-exports: remove it")
            }),
    );
    out
}
