//! Settings chosen by name (`--normalization loose`, `--compress gz`): one table per
//! enum gives each value its name and aliases, and [`named_choices!`] writes from it
//! the `name()`, `Display`, `FromStr` and `ALL` every such enum needs, so a name and
//! the message listing the choices can never disagree.

/// `a`, `a or b`, `a, b or c`: the names a message offers, each between `quote`.
pub fn one_of(names: &[&str], quote: &str) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{quote}{n}{quote}")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Writes the names of a field-less enum from one table:
///
/// ```
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// enum Packing { Gzip, Plain }
/// webdedup_text::named_choices! {
///     Packing, "packing", quote "'", {
///         Gzip => "gz" | "gzip",
///         Plain => "none",
///     }
/// }
/// assert_eq!(Packing::Gzip.name(), "gz");
/// assert_eq!(Packing::Gzip.to_string(), "gz");
/// assert_eq!("gzip".parse(), Ok(Packing::Gzip));
/// assert_eq!(Packing::ALL, [Packing::Gzip, Packing::Plain]);
/// assert_eq!(
///     "xz".parse::<Packing>(),
///     Err("unknown packing 'xz' (expected 'gz' or 'none')".to_string())
/// );
/// ```
///
/// The first name of a row is the value's name; the others are aliases that
/// parse to it. `ALL` and the message list the values in the table's order;
/// `quote` is the mark around each name in the message.
#[macro_export]
macro_rules! named_choices {
    ($ty:ident, $what:literal, quote $quote:literal, {
        $($variant:ident => $name:literal $(| $alias:literal)*),+ $(,)?
    }) => {
        impl $ty {
            /// Every value, in the order the error message lists them.
            pub const ALL: [$ty; [$($name),+].len()] = [$($ty::$variant),+];

            /// The name the value is chosen by (and shown as).
            pub fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl ::std::str::FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($name $(| $alias)* => Ok($ty::$variant),)+
                    other => Err(format!(
                        "unknown {} '{other}' (expected {})",
                        $what,
                        $crate::choices::one_of(&[$($name),+], $quote)
                    )),
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::one_of;

    #[test]
    fn lists_the_names_as_a_sentence_does() {
        assert_eq!(one_of(&["a"], ""), "a");
        assert_eq!(one_of(&["a", "b"], "'"), "'a' or 'b'");
        assert_eq!(one_of(&["a", "b", "c"], ""), "a, b or c");
    }
}
