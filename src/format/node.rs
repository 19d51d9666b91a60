//! A YAML document as a tree of values that remember where they were written.
//!
//! serde-saphyr does the parsing (and enforces its budgets against alias bombs
//! and deep nesting); this module keeps each node's line and column so that
//! every later diagnostic, from the schema check or the semantic checks, can
//! point at the exact place in the file. Nothing here does I/O.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

pub(crate) use crate::model::Pos;

/// A YAML value with its position.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    /// Where the value starts.
    pub pos: Pos,
    /// The value.
    pub value: NodeValue,
}

/// The value of a [`Node`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NodeValue {
    /// `~`, `null` or nothing.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer too large for i64.
    UInt(u64),
    /// A floating-point number.
    Float(f64),
    /// A string.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in source order; keys carry their own positions.
    Map(Vec<(Key, Node)>),
}

/// A mapping key and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Key {
    /// The key as a string (scalar keys are converted).
    pub name: String,
    /// Where the key starts.
    pub pos: Pos,
}

impl Node {
    /// Convert to JSON for schema validation and typed deserialization.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match &self.value {
            NodeValue::Null => Value::Null,
            NodeValue::Bool(b) => Value::Bool(*b),
            NodeValue::Int(i) => Value::from(*i),
            NodeValue::UInt(u) => Value::from(*u),
            // `1.0` is the integer 1 to JSON Schema; keep the typed layer in agreement.
            NodeValue::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(*f as i64),
            NodeValue::Float(f) => serde_json::Number::from_f64(*f)
                .map(Value::Number)
                .unwrap_or(Value::Null),
            NodeValue::Str(s) => Value::String(s.clone()),
            NodeValue::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            NodeValue::Map(pairs) => Value::Object(
                pairs
                    .iter()
                    .map(|(k, v)| (k.name.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }

    /// The node at a JSON pointer (`/steps/0/parameters`), if it exists.
    pub(crate) fn at_pointer(&self, pointer: &str) -> Option<&Node> {
        let mut node = self;
        for raw in pointer.split('/').skip(1) {
            let seg = raw.replace("~1", "/").replace("~0", "~");
            node = node.child(&seg)?;
        }
        Some(node)
    }

    /// The child named `seg` (a map key, or a sequence index).
    pub(crate) fn child(&self, seg: &str) -> Option<&Node> {
        match &self.value {
            NodeValue::Map(pairs) => pairs.iter().find(|(k, _)| k.name == seg).map(|(_, v)| v),
            NodeValue::Seq(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        }
    }

    /// The position of key `name` in this mapping.
    pub(crate) fn key_pos(&self, name: &str) -> Option<Pos> {
        match &self.value {
            NodeValue::Map(pairs) => pairs
                .iter()
                .find(|(k, _)| k.name == name)
                .map(|(k, _)| k.pos),
            _ => None,
        }
    }

    /// Best position for a JSON pointer: the node itself, else its nearest ancestor.
    pub(crate) fn pos_of(&self, pointer: &str) -> Pos {
        let mut node = self;
        let mut pos = self.pos;
        for raw in pointer.split('/').skip(1) {
            let seg = raw.replace("~1", "/").replace("~0", "~");
            match node.child(&seg) {
                Some(next) => {
                    pos = next.pos;
                    node = next;
                }
                None => break,
            }
        }
        pos
    }
}

fn pos_of(loc: &serde_saphyr::Location) -> Pos {
    Pos {
        line: loc.line(),
        column: loc.column(),
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<NodeValue>::deserialize(d)?;
        Ok(Node {
            pos: pos_of(&spanned.referenced),
            value: spanned.value,
        })
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<NodeValue>::deserialize(d)?;
        let name = match spanned.value {
            NodeValue::Str(s) => s,
            NodeValue::Bool(b) => b.to_string(),
            NodeValue::Int(i) => i.to_string(),
            NodeValue::UInt(u) => u.to_string(),
            NodeValue::Float(f) => f.to_string(),
            NodeValue::Null => "null".to_owned(),
            NodeValue::Seq(_) | NodeValue::Map(_) => {
                return Err(de::Error::custom("a mapping key must be a plain scalar"));
            }
        };
        Ok(Key {
            name,
            pos: pos_of(&spanned.referenced),
        })
    }
}

impl<'de> Deserialize<'de> for NodeValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = NodeValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<NodeValue, E> {
        Ok(NodeValue::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<NodeValue, E> {
        Ok(NodeValue::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<NodeValue, D::Error> {
        NodeValue::deserialize(d)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<NodeValue, E> {
        Ok(NodeValue::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<NodeValue, E> {
        Ok(NodeValue::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<NodeValue, E> {
        Ok(i64::try_from(v).map_or(NodeValue::UInt(v), NodeValue::Int))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<NodeValue, E> {
        i64::try_from(v)
            .map(NodeValue::Int)
            .map_err(|_| E::custom("integer out of range"))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<NodeValue, E> {
        u64::try_from(v)
            .map(|u| self.visit_u64::<E>(u))
            .map_err(|_| E::custom("integer out of range"))?
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<NodeValue, E> {
        Ok(NodeValue::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<NodeValue, E> {
        Ok(NodeValue::Str(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<NodeValue, E> {
        Ok(NodeValue::Str(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<NodeValue, E> {
        Ok(NodeValue::Str(String::from_utf8_lossy(v).into_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NodeValue, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(NodeValue::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NodeValue, A::Error> {
        let mut pairs: Vec<(Key, Node)> = Vec::new();
        while let Some(key) = map.next_key::<Key>()? {
            let value = map.next_value::<Node>()?;
            if let Some((first, _)) = pairs.iter().find(|(k, _)| k.name == key.name) {
                return Err(de::Error::custom(format!(
                    "duplicate key `{}` at line {} column {} (first defined at line {} column {})",
                    key.name, key.pos.line, key.pos.column, first.pos.line, first.pos.column
                )));
            }
            pairs.push((key, value));
        }
        Ok(NodeValue::Map(pairs))
    }
}
