//! File sizes (DESIGN rule 13, issue 15): lines of non-test code per file under src/.
//!
//! A file's non-test lines are all its lines but those of its `#[cfg(test)]` modules: an
//! inline `#[cfg(test)] mod tests { .. }` (to the `}` at the attribute's indentation: the
//! text is rustfmt's) and a `#[cfg(test)] mod x;` declaration. Stopping at the first
//! `#[cfg(test)]` instead would skip whatever follows a test module declared near the top
//! (cloud/openstack/mod.rs declares `testserver` at line 33 of 291). Files that are only tests
//! (declared `#[cfg(test)]`, or below such a module: tests.rs, *_tests.rs, tests/…) are not
//! counted at all.

use std::collections::BTreeMap;

use crate::modules::Tree;

/// Non-test lines of every file under src/ that is not only tests, by its path there.
pub fn non_test_lines(tree: &Tree, sources: &BTreeMap<String, String>) -> BTreeMap<String, usize> {
    tree.files
        .iter()
        .filter(|(_, id, _)| !tree.mods[*id].test_only)
        .map(|(f, _, _)| (f.clone(), count(&sources[f])))
        .collect()
}

/// Files that are only tests, by their path under src/.
pub fn test_only(tree: &Tree) -> Vec<String> {
    let mut out: Vec<String> = tree
        .files
        .iter()
        .filter(|(_, id, _)| tree.mods[*id].test_only)
        .map(|(f, _, _)| f.clone())
        .collect();
    out.sort();
    out
}

/// Lines of `text` outside its `#[cfg(test)]` modules.
pub fn count(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let (mut n, mut i) = (0, 0);
    while i < lines.len() {
        match test_module_end(&lines, i) {
            Some(last) => i = last + 1,
            None => {
                n += 1;
                i += 1;
            }
        }
    }
    n
}

/// When line `i` is a `#[cfg(test)]` on a module, the index of the module's last line.
fn test_module_end(lines: &[&str], i: usize) -> Option<usize> {
    let line = lines[i];
    if line.trim() != "#[cfg(test)]" {
        return None;
    }
    let indent = &line[..line.len() - line.trim_start().len()];
    // Other attributes (`#[path = ..]`) may stand between it and the item.
    let mut j = i + 1;
    while lines.get(j)?.trim_start().starts_with("#[") {
        j += 1;
    }
    let item = lines[j].trim();
    // `pub mod`, `pub(crate) mod`, `mod`.
    let item = match item.strip_prefix("pub") {
        Some(rest) => rest.split_once(' ')?.1,
        None => item,
    };
    let decl = item.strip_prefix("mod ")?;
    if decl.ends_with(';') || decl.ends_with('}') {
        return Some(j);
    }
    let close = format!("{indent}}}");
    (j + 1..lines.len()).find(|&k| lines[k] == close)
}

/// What breaks the limit, one line each: a file over `max` that no list names, and a listed
/// file that is gone or no longer over it (so the lists cannot go stale).
pub fn judge(
    sizes: &BTreeMap<String, usize>,
    max: usize,
    pending: &[&str],
    exempt: &[(&str, &str)],
) -> Vec<String> {
    let listed = |f: &str| pending.contains(&f) || exempt.iter().any(|(e, _)| *e == f);
    let mut out: Vec<String> = sizes
        .iter()
        .filter(|(f, n)| **n > max && !listed(f))
        .map(|(f, n)| format!("{f}: {n} lines of non-test code, over {max}: split it by job"))
        .collect();
    let lists = pending
        .iter()
        .map(|f| (*f, "PENDING"))
        .chain(exempt.iter().map(|(f, _)| (*f, "EXEMPT")));
    for (f, list) in lists {
        match sizes.get(f) {
            None => out.push(format!(
                "{f}: in {list} but not a non-test file under src/: remove it from {list}"
            )),
            Some(n) if *n <= max => out.push(format!(
                "{f}: {n} lines, within {max} now: remove it from {list}"
            )),
            Some(_) => {}
        }
    }
    out
}
