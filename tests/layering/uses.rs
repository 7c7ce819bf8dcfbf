//! What each file uses of the others: every `use` leaf and every path in its code (types,
//! expressions, patterns, macro bodies) resolved to the file that defines the item.

use std::collections::{BTreeMap, BTreeSet};

use syn::buffer::{Cursor, TokenBuffer};
use syn::ext::IdentExt;
use syn::visit::{self, Visit};

use crate::items::{flatten, name};
use crate::modules::{ModId, Tree};
use crate::resolve::{Res, Want};

/// (file, file it uses) → names of the items it uses there.
pub type Uses = BTreeMap<(String, String), BTreeSet<String>>;

pub fn file_uses(tree: &Tree) -> Uses {
    let mut out = Uses::new();
    for (file, id, ast) in &tree.files {
        let mut v = Collect {
            tree,
            file,
            scope: *id,
            out: &mut out,
        };
        v.visit_file(ast);
    }
    out
}

struct Collect<'t> {
    tree: &'t Tree,
    file: &'t str,
    scope: ModId,
    out: &'t mut Uses,
}

impl Collect<'_> {
    fn record(&mut self, r: Option<Res>) {
        let (file, item) = match r {
            Some(Res::Def(d)) => (d.file, d.name),
            Some(Res::Opaque(file, item)) => (file, item),
            _ => return,
        };
        if file != self.file {
            let key = (self.file.to_string(), file);
            self.out.entry(key).or_default().insert(item);
        }
    }

    fn path(&mut self, segs: &[String], want: Want) {
        let r = self.tree.resolve(self.scope, segs, want);
        self.record(r);
    }

    /// `<T as Trait>::x` names the trait from scope; `<T>::x` names nothing from scope.
    fn qualified(&mut self, q: Option<&syn::QSelf>, p: &syn::Path) {
        let Some(q) = q else {
            return self.visit_path(p);
        };
        self.visit_type(&q.ty);
        if q.position > 0 {
            let mut s = segs(p);
            s.truncate(q.position + usize::from(p.leading_colon.is_some()));
            self.path(&s, Want::Type);
        }
        visit::visit_path(self, p);
    }

    /// Paths in a macro's tokens, which syn leaves unparsed: `a::b`, `name!`, and the
    /// `{name}` captures of format strings. Field and method names after `.` are skipped.
    fn scan(&mut self, mut c: Cursor) {
        let mut prev = Prev::Other;
        while !c.eof() {
            if let Some((inner, _, _, next)) = c.any_group() {
                self.scan(inner);
                (c, prev) = (next, Prev::Other);
            } else if let Some((_, next)) = c.lifetime() {
                (c, prev) = (next, Prev::Other);
            } else if let Some((lit, next)) = c.literal() {
                for n in format_captures(&lit.to_string()) {
                    self.path(&[n], Want::Code);
                }
                (c, prev) = (next, Prev::Other);
            } else if let Some((id, next)) = c.ident() {
                let mut s = vec![name(&id)];
                let mut after = next;
                while let Some(n) = colons(after) {
                    match n.ident() {
                        Some((id, a)) => {
                            s.push(name(&id));
                            after = a;
                        }
                        None => break,
                    }
                }
                let first = id.to_string();
                let is_macro = bang(after);
                let is_field = s.len() == 1 && colons(after).is_none() && punct(after) == Some(':');
                match prev {
                    Prev::Dot | Prev::Colons | Prev::Binding => {}
                    Prev::Dollar if first == "crate" => {
                        s[0] = "$crate".to_string();
                        self.path(&s, if is_macro { Want::Macro } else { Want::Code });
                    }
                    Prev::Dollar => {}
                    _ if KEYWORDS.contains(&first.as_str()) && s.len() == 1 => {}
                    _ if is_field => {}
                    _ => self.path(&s, if is_macro { Want::Macro } else { Want::Code }),
                }
                prev = if BINDERS.contains(&first.as_str()) && s.len() == 1 {
                    Prev::Binding
                } else {
                    Prev::Other
                };
                c = after;
            } else if let Some(next) = colons(c) {
                (c, prev) = (next, Prev::Colons);
            } else if let Some((p, next)) = c.punct() {
                prev = match p.as_char() {
                    '.' => Prev::Dot,
                    '$' => Prev::Dollar,
                    _ => Prev::Other,
                };
                c = next;
            } else if let Some((_, next)) = c.token_tree() {
                (c, prev) = (next, Prev::Other);
            } else {
                break;
            }
        }
    }
}

/// What came before an identifier in a macro body.
#[derive(Clone, Copy, PartialEq)]
enum Prev {
    Dot,
    Dollar,
    Colons,
    Binding,
    Other,
}

/// Words after which an identifier is a new name, not a use.
const BINDERS: &[&str] = &[
    "let", "fn", "mut", "ref", "struct", "enum", "union", "trait", "type", "mod", "const", "static",
];

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "static", "struct", "trait", "true", "type", "unsafe", "use", "where", "while",
    "self", "Self", "super", "crate",
];

fn punct(c: Cursor) -> Option<char> {
    c.punct().map(|(p, _)| p.as_char())
}

/// The cursor after a `::` at `c`.
fn colons(c: Cursor) -> Option<Cursor> {
    let (p, n) = c.punct()?;
    let (q, n) = n.punct().filter(|_| p.as_char() == ':')?;
    (q.as_char() == ':').then_some(n)
}

/// A `!` that is not `!=`.
fn bang(c: Cursor) -> bool {
    match c.punct() {
        Some((p, n)) => p.as_char() == '!' && punct(n) != Some('='),
        None => false,
    }
}

/// `{name}` / `{name:?}` in a string literal: format strings capture names from scope.
fn format_captures(lit: &str) -> Vec<String> {
    if !lit.ends_with('"') {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut rest = lit;
    while let Some(i) = rest.find('{') {
        rest = &rest[i + 1..];
        if let Some(r) = rest.strip_prefix('{') {
            rest = r;
            continue;
        }
        let end = rest.find(['}', ':']).unwrap_or(rest.len());
        let n = &rest[..end];
        let ident_like = n.starts_with(|c: char| c.is_alphabetic() || c == '_')
            && n.chars().all(|c| c.is_alphanumeric() || c == '_');
        if ident_like {
            out.push(n.to_string());
        }
    }
    out
}

pub fn segs(p: &syn::Path) -> Vec<String> {
    let lead = p.leading_colon.map(|_| "::".to_string());
    lead.into_iter()
        .chain(p.segments.iter().map(|s| name(&s.ident)))
        .collect()
}

impl<'ast> Visit<'ast> for Collect<'_> {
    // Derives, cfgs and docs name no items of ours.
    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {}

    // `pub(in crate::x)` names a module, which is no use.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        // `mod x;` declares a module; it does not use it. Inline modules are walked here.
        let child = self.tree.mods[self.scope].children.get(&name(&m.ident));
        if let (Some(_), Some(&c)) = (&m.content, child) {
            let outer = std::mem::replace(&mut self.scope, c);
            visit::visit_item_mod(self, m);
            self.scope = outer;
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        for (path, alias) in flatten(u) {
            match alias {
                Some(_) => self.path(&path, Want::All),
                // A glob's own path counts only when it names an item (`use Enum::*`);
                // through a module, the names the file then mentions count.
                None => {
                    if let Some(Res::Def(d)) = self.tree.resolve(self.scope, &path, Want::Type) {
                        self.record(Some(Res::Def(d)));
                    }
                }
            }
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.path(&segs(p), Want::Code);
        visit::visit_path(self, p);
    }

    fn visit_expr_path(&mut self, e: &'ast syn::ExprPath) {
        self.qualified(e.qself.as_ref(), &e.path);
    }

    fn visit_type_path(&mut self, t: &'ast syn::TypePath) {
        self.qualified(t.qself.as_ref(), &t.path);
    }

    // A bare name in a pattern is a binding unless it names a const, static, unit struct
    // or (through `use Enum::*`) a variant.
    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        if p.by_ref.is_none() && p.mutability.is_none() && p.subpat.is_none() {
            let n = p.ident.unraw().to_string();
            if let Some(Res::Def(d)) =
                self.tree
                    .resolve(self.scope, std::slice::from_ref(&n), Want::Code)
            {
                let unit = matches!(d.kind, "const" | "static" | "struct");
                if unit || (d.kind == "enum" && d.name != n) {
                    self.record(Some(Res::Def(d)));
                }
            }
        }
        visit::visit_pat_ident(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if !m.path.is_ident("macro_rules") {
            self.path(&segs(&m.path), Want::Macro);
        }
        visit::visit_path(self, &m.path);
        let buf = TokenBuffer::new2(m.tokens.clone());
        self.scan(buf.begin());
    }
}
