//! Name resolution over the module tree: a path written in some module → the item it names,
//! following `use`s and glob re-exports to the file of the original definition.

use crate::modules::{Def, ModId, Ns, Tree};

/// What a path names.
#[derive(Clone, Debug)]
pub enum Res {
    Mod(ModId),
    Def(Def),
    /// A name inside a module whose items we cannot see (macro-generated): file, name.
    Opaque(String, String),
}

/// The namespace wanted of a path's last segment (earlier segments are always types or
/// modules).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Want {
    Type,
    Code,
    Macro,
    All,
}

impl Want {
    fn takes(self, ns: Ns) -> bool {
        match self {
            Want::Type => ns == Ns::Type,
            Want::Code => ns != Ns::Macro,
            Want::Macro => ns == Ns::Macro,
            Want::All => true,
        }
    }
}

/// (module, name) lookups in progress: `use super::*` in a child and `use child::*` in
/// its parent must not loop.
type Stack = Vec<(ModId, String)>;

impl Tree {
    /// `path` as written in module `scope`; None for other crates, locals and the unknown.
    pub fn resolve(&self, scope: ModId, path: &[String], want: Want) -> Option<Res> {
        self.resolve_in(scope, path, want, &mut Vec::new())
    }

    fn resolve_in(&self, scope: ModId, path: &[String], want: Want, st: &mut Stack) -> Option<Res> {
        let first = path.first()?;
        let want_at = |i: usize| {
            if i + 1 == path.len() {
                want
            } else {
                Want::Type
            }
        };
        let (mut cur, mut i) = match first.as_str() {
            "::" | "Self" => return None,
            "crate" | "$crate" => (self.mods[scope].root, 1),
            "self" => (scope, 1),
            "super" => {
                let mut m = self.mods[scope].parent?;
                let mut i = 1;
                while path.get(i).is_some_and(|s| s == "super") {
                    m = self.mods[m].parent?;
                    i += 1;
                }
                (m, i)
            }
            n if n == self.lib_name && Some(self.mods[scope].root) != self.lib => (self.lib?, 1),
            n => {
                let found = if want_at(0) == Want::Macro {
                    self.textual_macro(scope, n)
                        .or_else(|| self.lookup(scope, n, Want::Macro, true, st))
                } else {
                    self.lookup(scope, n, want_at(0), true, st)
                };
                match found? {
                    Res::Mod(m) => (m, 1),
                    other => return Some(other),
                }
            }
        };
        while i < path.len() {
            match self.lookup(cur, &path[i], want_at(i), false, st) {
                Some(Res::Mod(m)) => cur = m,
                // The first segment that names an item decides: `Enum::Variant`, `Type::f`.
                Some(other) => return Some(other),
                None if self.mods[cur].opaque => {
                    return Some(Res::Opaque(self.mods[cur].file.clone(), path[i].clone()))
                }
                None => return None,
            }
            i += 1;
        }
        Some(Res::Mod(cur))
    }

    /// `name` in module `m`: its items, then its named `use`s, then its globs. `block`:
    /// also the `use`s inside its fn bodies (a lookup from the module's own code).
    fn lookup(&self, m: ModId, name: &str, want: Want, block: bool, st: &mut Stack) -> Option<Res> {
        let key = (m, name.to_string());
        if st.contains(&key) {
            return None;
        }
        st.push(key);
        let r = self.lookup_here(m, name, want, block, st);
        st.pop();
        r
    }

    fn lookup_here(
        &self,
        m: ModId,
        name: &str,
        want: Want,
        block: bool,
        st: &mut Stack,
    ) -> Option<Res> {
        let module = &self.mods[m];
        if let Some(d) = module
            .defs
            .get(name)
            .into_iter()
            .flatten()
            .find(|d| want.takes(d.ns))
        {
            return Some(Res::Def(d.clone()));
        }
        if want != Want::Macro {
            if let Some(&c) = module.children.get(name) {
                return Some(Res::Mod(c));
            }
        }
        let visible = module.imports.iter().filter(|i| block || !i.block);
        for imp in visible.clone().filter(|i| i.alias.as_deref() == Some(name)) {
            if let Some(r) = self.resolve_in(m, &imp.path, want, st) {
                return Some(r);
            }
        }
        for imp in visible.filter(|i| i.alias.is_none()) {
            match self.resolve_in(m, &imp.path, Want::Type, st) {
                Some(Res::Mod(t)) => {
                    if let Some(r) = self.lookup(t, name, want, false, st) {
                        return Some(r);
                    }
                }
                Some(Res::Def(d)) if d.variants.iter().any(|v| v == name) => {
                    return Some(Res::Def(d));
                }
                _ => {}
            }
        }
        None
    }

    /// A macro_rules in this module or an ancestor: in scope without a path.
    fn textual_macro(&self, m: ModId, name: &str) -> Option<Res> {
        let mut at = Some(m);
        while let Some(a) = at {
            let defs = self.mods[a].defs.get(name).into_iter().flatten();
            if let Some(d) = defs.into_iter().find(|d| d.ns == Ns::Macro) {
                return Some(Res::Def(d.clone()));
            }
            at = self.mods[a].parent;
        }
        None
    }
}
