//! What a module defines (fn, struct, enum, union, trait, type, const, static,
//! macro_rules, and items our own item macros make) and what it imports (`use` leaves).

use std::collections::BTreeMap;

use syn::buffer::{Cursor, TokenBuffer};
use syn::ext::IdentExt;
use syn::visit::Visit;
use syn::{Ident, Item, ItemMod, ItemUse, UseTree};

use crate::modules::{Def, Dirs, Import, ModId, Ns, Tree};

impl Tree {
    pub fn items(
        &mut self,
        sources: &BTreeMap<String, String>,
        id: ModId,
        items: &[Item],
        dirs: &Dirs,
    ) -> Result<(), String> {
        for item in items {
            match item {
                Item::Fn(f) => self.def(id, &f.sig.ident, Ns::Value, "fn", vec![]),
                Item::Struct(s) => self.def(id, &s.ident, Ns::Type, "struct", vec![]),
                Item::Enum(e) => {
                    let vs = e.variants.iter().map(|v| name(&v.ident)).collect();
                    self.def(id, &e.ident, Ns::Type, "enum", vs)
                }
                Item::Union(u) => self.def(id, &u.ident, Ns::Type, "union", vec![]),
                Item::Trait(t) => self.def(id, &t.ident, Ns::Type, "trait", vec![]),
                Item::TraitAlias(t) => self.def(id, &t.ident, Ns::Type, "trait", vec![]),
                Item::Type(t) => self.def(id, &t.ident, Ns::Type, "type", vec![]),
                Item::Const(c) => self.def(id, &c.ident, Ns::Value, "const", vec![]),
                Item::Static(s) => self.def(id, &s.ident, Ns::Value, "static", vec![]),
                Item::ForeignMod(f) => {
                    for fi in &f.items {
                        match fi {
                            syn::ForeignItem::Fn(f) => {
                                self.def(id, &f.sig.ident, Ns::Value, "fn", vec![])
                            }
                            syn::ForeignItem::Static(s) => {
                                self.def(id, &s.ident, Ns::Value, "static", vec![])
                            }
                            syn::ForeignItem::Type(t) => {
                                self.def(id, &t.ident, Ns::Type, "type", vec![])
                            }
                            _ => {}
                        }
                    }
                }
                Item::Macro(m) => self.item_macro(id, m),
                Item::Use(u) => self.imports(id, u, false),
                Item::Mod(m) => self.module(sources, id, m, dirs)?,
                _ => {}
            }
            if !matches!(item, Item::Mod(_) | Item::Use(_)) {
                let mut inner = BlockUses(Vec::new());
                inner.visit_item(item);
                for u in inner.0 {
                    self.imports(id, &u, true);
                }
            }
        }
        Ok(())
    }

    fn def(&mut self, id: ModId, ident: &Ident, ns: Ns, kind: &'static str, vs: Vec<String>) {
        let file = self.mods[id].file.clone();
        self.def_in(id, file, name(ident), ns, kind, vs);
    }

    /// Defines `name` in module `id`, the item being in `file`.
    fn def_in(
        &mut self,
        id: ModId,
        file: String,
        name: String,
        ns: Ns,
        kind: &'static str,
        variants: Vec<String>,
    ) {
        if name == "_" {
            return;
        }
        let d = Def {
            name: name.clone(),
            file,
            ns,
            kind,
            variants,
        };
        self.mods[id].defs.entry(name).or_default().push(d);
    }

    fn item_macro(&mut self, id: ModId, m: &syn::ItemMacro) {
        if !m.mac.path.is_ident("macro_rules") {
            if let Some(last) = m.mac.path.segments.last() {
                self.mods[id].item_macros.push(name(&last.ident));
            }
            return;
        }
        let Some(ident) = &m.ident else { return };
        self.def(id, ident, Ns::Macro, "macro", vec![]);
        let buf = TokenBuffer::new2(m.mac.tokens.clone());
        let mut made = Vec::new();
        items_made(buf.begin(), &mut made);
        self.mods[id].macro_made.insert(name(ident), made);
        if m.attrs.iter().any(|a| a.path().is_ident("macro_export")) {
            let (root, file) = (self.mods[id].root, self.mods[id].file.clone());
            self.def_in(root, file, name(ident), Ns::Macro, "macro", vec![]);
        }
    }

    /// Item macros of our own macro_rules define what their bodies say; others make the
    /// module opaque.
    pub fn expand_item_macros(&mut self) {
        for id in 0..self.mods.len() {
            for mac in std::mem::take(&mut self.mods[id].item_macros) {
                let mut at = Some(id);
                let mut made = None;
                while let Some(a) = at {
                    if let Some(m) = self.mods[a].macro_made.get(&mac) {
                        made = Some(m.clone());
                        break;
                    }
                    at = self.mods[a].parent;
                }
                match made {
                    Some(items) => {
                        for (n, ns, kind) in items {
                            let file = self.mods[id].file.clone();
                            self.def_in(id, file, n, ns, kind, vec![]);
                        }
                    }
                    None => self.mods[id].opaque = true,
                }
            }
        }
    }

    fn imports(&mut self, id: ModId, u: &ItemUse, block: bool) {
        for (path, alias) in flatten(u) {
            self.mods[id].imports.push(Import { path, alias, block });
        }
    }
}

pub fn name(i: &Ident) -> String {
    i.unraw().to_string()
}

/// Each leaf of a `use`: its full path and the name it binds (None for a glob).
/// `{self}` binds the module's own name; a leading `::` is kept as a `::` segment.
pub fn flatten(u: &ItemUse) -> Vec<(Vec<String>, Option<String>)> {
    fn walk(t: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
        match t {
            UseTree::Path(p) => {
                prefix.push(name(&p.ident));
                walk(&p.tree, prefix, out);
                prefix.pop();
            }
            UseTree::Name(n) if n.ident == "self" => {
                out.push((prefix.clone(), prefix.last().cloned()));
            }
            UseTree::Name(n) => {
                let mut p = prefix.clone();
                p.push(name(&n.ident));
                out.push((p, Some(name(&n.ident))));
            }
            UseTree::Rename(r) => {
                let mut p = prefix.clone();
                if r.ident != "self" {
                    p.push(name(&r.ident));
                }
                out.push((p, Some(name(&r.rename))));
            }
            UseTree::Glob(_) => out.push((prefix.clone(), None)),
            UseTree::Group(g) => {
                for t in &g.items {
                    walk(t, prefix, out);
                }
            }
        }
    }
    let mut prefix = Vec::new();
    if u.leading_colon.is_some() {
        prefix.push("::".to_string());
    }
    let mut out = Vec::new();
    walk(&u.tree, &mut prefix, &mut out);
    out
}

/// `use` declarations inside fn bodies (not inside nested modules, which have their own).
struct BlockUses(Vec<ItemUse>);

impl<'ast> Visit<'ast> for BlockUses {
    fn visit_item_use(&mut self, u: &'ast ItemUse) {
        self.0.push(u.clone());
    }
    fn visit_item_mod(&mut self, _: &'ast ItemMod) {}
}

/// `enum Op`, `fn name`, ... in a macro_rules body; `$name` metavariables are skipped.
fn items_made(mut c: Cursor, out: &mut Vec<(String, Ns, &'static str)>) {
    while !c.eof() {
        if let Some((inner, _, _, next)) = c.any_group() {
            items_made(inner, out);
            c = next;
            continue;
        }
        if let Some((kw, next)) = c.ident() {
            let ns_kind = match kw.to_string().as_str() {
                "fn" => Some((Ns::Value, "fn")),
                "const" => Some((Ns::Value, "const")),
                "static" => Some((Ns::Value, "static")),
                "struct" => Some((Ns::Type, "struct")),
                "enum" => Some((Ns::Type, "enum")),
                "union" => Some((Ns::Type, "union")),
                "trait" => Some((Ns::Type, "trait")),
                "type" => Some((Ns::Type, "type")),
                _ => None,
            };
            if let (Some((ns, kind)), Some((id, after))) = (ns_kind, next.ident()) {
                out.push((name(&id), ns, kind));
                c = after;
                continue;
            }
            c = next;
            continue;
        }
        match c.token_tree() {
            Some((_, next)) => c = next,
            None => break,
        }
    }
}
