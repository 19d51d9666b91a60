//! Matrix expansion: one step per combination of a `matrix:` block's values.
//!
//! Ids: `ID[k1=v1,k2=v2]` with keys in sorted order; combinations are listed
//! with the last key varying fastest, so the expanded plan is the same on
//! every machine. Dependencies: when a dependent and its dependency share
//! matrix keys, an expansion depends only on the dependency's expansions
//! whose shared values agree with its own (`test[package=a]` on
//! `build[package=a]`); otherwise it depends on every expansion of the
//! dependency. An expansion that would find no agreeing expansion is a plan
//! error, never a dropped dependency. Pure: no I/O.

use std::collections::{BTreeMap, HashMap};

use super::raw::{Matrix, MatrixValue};
use crate::format::expr::{Ty, Val};

/// A matrix value as the expression language sees it.
fn typed_value(v: &MatrixValue) -> Val {
    match v {
        MatrixValue::Bool(b) => Val::Bool(*b),
        MatrixValue::Num(n) => Val::Num(n.as_f64().unwrap_or(f64::NAN)),
        MatrixValue::Str(s) => Val::Str(s.clone()),
    }
}

/// Each key's type in expressions: the type all its values share, else `Any`.
pub(crate) fn key_types(matrix: Option<&Matrix>) -> BTreeMap<String, Ty> {
    let Some(m) = matrix else {
        return BTreeMap::new();
    };
    m.0.iter()
        .map(|(k, values)| {
            let mut tys = values.iter().map(|v| match v {
                MatrixValue::Bool(_) => Ty::Bool,
                MatrixValue::Num(_) => Ty::Num,
                MatrixValue::Str(_) => Ty::Str,
            });
            let first = tys.next().unwrap_or(Ty::Any);
            let ty = if tys.all(|t| t == first) {
                first
            } else {
                Ty::Any
            };
            (k.clone(), ty)
        })
        .collect()
}

/// One template's expansions: the keys (sorted) and each combination's values in key order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Expansion {
    /// Sorted keys (empty without a matrix).
    pub keys: Vec<String>,
    /// One entry per expansion: the values in key order.
    pub combos: Vec<Vec<String>>,
    /// The same values with their YAML types (for conditions).
    pub typed: Vec<Vec<Val>>,
}

impl Expansion {
    /// Expand a template's matrix (one empty combination when there is none).
    pub(crate) fn of(matrix: Option<&Matrix>) -> Expansion {
        let Some(m) = matrix.filter(|m| !m.0.is_empty()) else {
            return Expansion {
                keys: Vec::new(),
                combos: vec![Vec::new()],
                typed: vec![Vec::new()],
            };
        };
        let keys: Vec<String> = m.0.keys().cloned().collect();
        let mut combos: Vec<Vec<String>> = vec![Vec::new()];
        let mut typed: Vec<Vec<Val>> = vec![Vec::new()];
        for values in m.0.values() {
            let mut next = Vec::with_capacity(combos.len() * values.len());
            let mut next_typed = Vec::with_capacity(combos.len() * values.len());
            for (c, t) in combos.iter().zip(&typed) {
                for v in values {
                    let mut c = c.clone();
                    c.push(v.render());
                    next.push(c);
                    let mut t = t.clone();
                    t.push(typed_value(v));
                    next_typed.push(t);
                }
            }
            combos = next;
            typed = next_typed;
        }
        Expansion {
            keys,
            combos,
            typed,
        }
    }

    /// Combination `c` as key -> typed value.
    pub(crate) fn typed_values(&self, c: usize) -> BTreeMap<String, Val> {
        self.keys
            .iter()
            .cloned()
            .zip(self.typed[c].iter().cloned())
            .collect()
    }

    /// How many steps this template becomes.
    pub(crate) fn len(&self) -> usize {
        self.combos.len()
    }

    /// The id of combination `c` of template `id`.
    pub(crate) fn id(&self, id: &str, c: usize) -> String {
        if self.keys.is_empty() {
            return id.to_owned();
        }
        let mut s = String::with_capacity(id.len() + 16);
        s.push_str(id);
        s.push('[');
        for (i, (k, v)) in self.keys.iter().zip(&self.combos[c]).enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(k);
            s.push('=');
            s.push_str(v);
        }
        s.push(']');
        s
    }

    /// Combination `c` as key -> value.
    pub(crate) fn values(&self, c: usize) -> BTreeMap<String, String> {
        self.keys
            .iter()
            .cloned()
            .zip(self.combos[c].iter().cloned())
            .collect()
    }
}

/// The environment variable that carries matrix key `key`.
pub(crate) fn env_name(key: &str) -> String {
    format!("PLANGATE_MATRIX_{}", key.to_ascii_uppercase())
}

/// For each expansion of `dependent`, the positions (within `dependency`'s
/// expansions) it depends on; `None` for an expansion with no agreeing
/// combination.
pub(crate) fn link(dependent: &Expansion, dependency: &Expansion) -> Vec<Option<Vec<usize>>> {
    let shared: Vec<(usize, usize)> = dependent
        .keys
        .iter()
        .enumerate()
        .filter_map(|(i, k)| dependency.keys.iter().position(|x| x == k).map(|j| (i, j)))
        .collect();
    if shared.is_empty() {
        let all: Vec<usize> = (0..dependency.len()).collect();
        return vec![Some(all); dependent.len()];
    }
    let mut groups: HashMap<Vec<&str>, Vec<usize>> = HashMap::new();
    for (c, combo) in dependency.combos.iter().enumerate() {
        let key: Vec<&str> = shared.iter().map(|&(_, j)| combo[j].as_str()).collect();
        groups.entry(key).or_default().push(c);
    }
    dependent
        .combos
        .iter()
        .map(|combo| {
            let key: Vec<&str> = shared.iter().map(|&(i, _)| combo[i].as_str()).collect();
            groups.get(&key).cloned()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pairs: &[(&str, &[&str])]) -> Matrix {
        Matrix(
            pairs
                .iter()
                .map(|(k, vs)| {
                    (
                        (*k).to_owned(),
                        vs.iter()
                            .map(|v| MatrixValue::Str((*v).to_owned()))
                            .collect(),
                    )
                })
                .collect(),
        )
    }

    #[test]
    fn ids_are_sorted_by_key_last_key_fastest() {
        let e = Expansion::of(Some(&m(&[
            ("os", &["linux", "mac"]),
            ("arch", &["x", "y"]),
        ])));
        let ids: Vec<String> = (0..e.len()).map(|c| e.id("t", c)).collect();
        assert_eq!(
            ids,
            [
                "t[arch=x,os=linux]",
                "t[arch=x,os=mac]",
                "t[arch=y,os=linux]",
                "t[arch=y,os=mac]"
            ]
        );
        assert_eq!(Expansion::of(None).id("t", 0), "t");
        assert_eq!(env_name("package"), "PLANGATE_MATRIX_PACKAGE");
    }

    #[test]
    fn shared_keys_link_agreeing_combinations_only() {
        let build = Expansion::of(Some(&m(&[("pkg", &["a", "b"])])));
        let test = Expansion::of(Some(&m(&[("pkg", &["a", "b"]), ("os", &["l", "m"])])));
        // test: (os=l,pkg=a) (os=l,pkg=b) (os=m,pkg=a) (os=m,pkg=b)
        assert_eq!(
            link(&test, &build),
            vec![Some(vec![0]), Some(vec![1]), Some(vec![0]), Some(vec![1])]
        );
        let plain = Expansion::of(None);
        assert_eq!(link(&plain, &build), vec![Some(vec![0, 1])]);
        assert_eq!(link(&build, &plain), vec![Some(vec![0]), Some(vec![0])]);
        let other = Expansion::of(Some(&m(&[("pkg", &["a", "c"])])));
        assert_eq!(link(&other, &build), vec![Some(vec![0]), None]);
    }
}
