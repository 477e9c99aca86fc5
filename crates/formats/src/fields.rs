//! Which fields of a record hold the text, the id, the URL and the title: JSON
//! Lines fields and Parquet columns alike, named by dotted paths (`metadata.url`).

use std::fmt;

/// A dotted path to a field (`metadata.url`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath(pub Vec<String>);

impl FieldPath {
    pub fn parse(s: &str) -> FieldPath {
        FieldPath(s.split('.').map(str::to_owned).collect())
    }

    /// The value at this path in a decoded JSON value, through nested objects.
    pub fn find<'v>(&self, value: &'v serde_json::Value) -> Option<&'v serde_json::Value> {
        self.0
            .iter()
            .try_fold(value, |v, key| v.as_object()?.get(key))
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join("."))
    }
}

/// Which fields hold what; several candidates are tried in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonlOptions {
    pub text: FieldPath,
    pub id: Vec<FieldPath>,
    pub url: Vec<FieldPath>,
    pub title: Vec<FieldPath>,
    /// Leave bad records out of the output instead of passing them through.
    pub drop_bad: bool,
}

impl Default for JsonlOptions {
    fn default() -> Self {
        JsonlOptions {
            text: FieldPath::parse("text"),
            id: vec![FieldPath::parse("id")],
            url: vec![FieldPath::parse("url"), FieldPath::parse("metadata.url")],
            title: vec![
                FieldPath::parse("title"),
                FieldPath::parse("metadata.title"),
            ],
            drop_bad: false,
        }
    }
}

impl JsonlOptions {
    /// The settings that change keys or outputs, one `name=value` a line.
    pub fn describe(&self) -> String {
        let list = |v: &[FieldPath]| {
            v.iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        format!(
            "text-field={}\nid-field={}\nurl-field={}\ntitle-field={}\ndrop-bad-records={}\n",
            self.text,
            list(&self.id),
            list(&self.url),
            list(&self.title),
            self.drop_bad
        )
    }
}
