//! Typed parameter sets, declared once.
//!
//! [`declare_params!`](crate::declare_params) turns one declaration per parameter — name, Rust
//! type, default, kind and range, what it affects, documentation — into
//!
//! * a typed struct (the observer's configuration is built from it),
//! * the registry's [`ParamSpec`] list (which the CLI's `list`, the page's controls, URL state
//!   and the TypeScript types are generated from),
//! * parsing with validation, where an absent or `null` value takes the declared default, and
//! * [`ParamSet::to_params`], the complete set of values with every default filled in.
//!
//! ```
//! quantscope::declare_params! {
//!     /// Arguments of a toy observer.
//!     pub struct ToyArgs {
//!         /// number of bins
//!         bins: i64 = 2048; int(2, 65536), Data;
//!         /// share of the mass kept
//!         percentile: f64 = 99.9; float(0.0, 100.0), Search;
//!     }
//! }
//! use quantscope::params::{ParamSet, Params};
//! let args = ToyArgs::from_params(&Params::from_json(r#"{"bins": 256}"#).unwrap()).unwrap();
//! assert_eq!((args.bins, args.percentile), (256, 99.9));
//! assert_eq!(ToyArgs::specs()[1].name, "percentile");
//! ```
//!
//! Choices are enums declared with [`choice_enum!`](crate::choice_enum), so their spellings
//! exist once too.

use super::spec::{as_integer, Affects, Bits, ParamKind, ParamSpec};
use super::Params;
use crate::error::{Error, Result};
use serde_json::Value;

/// A Rust type a parameter can have.
pub trait ParamValue: Sized + Clone {
    /// The value from JSON already validated against its kind; `None` if the type does not fit.
    fn from_json(v: &Value) -> Option<Self>;
    /// The value as JSON.
    fn to_json(&self) -> Value;
}

impl ParamValue for i64 {
    fn from_json(v: &Value) -> Option<Self> {
        as_integer(v)
    }
    fn to_json(&self) -> Value {
        Value::from(*self)
    }
}

impl ParamValue for f64 {
    fn from_json(v: &Value) -> Option<Self> {
        v.as_f64()
    }
    fn to_json(&self) -> Value {
        Value::from(*self)
    }
}

impl ParamValue for bool {
    fn from_json(v: &Value) -> Option<Self> {
        v.as_bool()
    }
    fn to_json(&self) -> Value {
        Value::from(*self)
    }
}

impl ParamValue for String {
    fn from_json(v: &Value) -> Option<Self> {
        v.as_str().map(str::to_string)
    }
    fn to_json(&self) -> Value {
        Value::from(self.as_str())
    }
}

impl ParamValue for Vec<f64> {
    /// A list of numbers, or one number as a list of one.
    fn from_json(v: &Value) -> Option<Self> {
        match v.as_f64() {
            Some(x) => Some(vec![x]),
            None => v.as_array()?.iter().map(Value::as_f64).collect(),
        }
    }
    fn to_json(&self) -> Value {
        Value::from(self.clone())
    }
}

impl ParamValue for Bits {
    fn from_json(v: &Value) -> Option<Self> {
        Bits::from_value(v)
    }
    fn to_json(&self) -> Value {
        self.to_value()
    }
}

impl<T: ParamValue> ParamValue for Option<T> {
    fn from_json(v: &Value) -> Option<Self> {
        if v.is_null() {
            Some(None)
        } else {
            T::from_json(v).map(Some)
        }
    }
    fn to_json(&self) -> Value {
        self.as_ref().map_or(Value::Null, T::to_json)
    }
}

/// An enum whose variants are spelled as strings (declared with
/// [`choice_enum!`](crate::choice_enum), or implemented by hand for a type that also accepts
/// aliases).
pub trait Choice: Copy + Sized + 'static {
    /// Every spelling, in declaration order.
    const OPTIONS: &'static [&'static str];
    /// This variant's spelling.
    fn name(self) -> &'static str;
    /// The variant spelled `text`.
    fn from_name(text: &str) -> Option<Self>;
}

/// Every choice is a parameter value, spelled by [`Choice::name`].
impl<E: Choice> ParamValue for E {
    fn from_json(v: &Value) -> Option<Self> {
        v.as_str().and_then(E::from_name)
    }
    fn to_json(&self) -> Value {
        Value::from(self.name())
    }
}

/// The options of a choice parameter (of type `E` or `Option<E>`).
pub trait ChoiceOptions {
    /// Every spelling.
    fn options() -> &'static [&'static str];
}

impl<E: Choice> ChoiceOptions for E {
    fn options() -> &'static [&'static str] {
        E::OPTIONS
    }
}

impl<E: Choice> ChoiceOptions for Option<E> {
    fn options() -> &'static [&'static str] {
        E::OPTIONS
    }
}

/// Kinds a declaration can name (`int(2, 100)`, `choice()`, …). Each takes the field's Rust
/// type as a type parameter so that `choice` can list the enum's spellings.
pub mod kinds {
    use super::ChoiceOptions;
    use crate::params::spec::ParamKind;

    /// An integer in `min..=max` (sliders only ever produce integers).
    pub fn int<T>(min: i64, max: i64) -> ParamKind {
        ParamKind::Int { min, max }
    }

    /// A real number in `min..=max` on a linear slider.
    pub fn float<T>(min: f64, max: f64) -> ParamKind {
        ParamKind::Float {
            min,
            max,
            log: false,
        }
    }

    /// A real number in `min..=max` on a logarithmic slider.
    pub fn log_float<T>(min: f64, max: f64) -> ParamKind {
        ParamKind::Float {
            min,
            max,
            log: true,
        }
    }

    /// A switch.
    pub fn boolean<T>() -> ParamKind {
        ParamKind::Bool
    }

    /// One of the spellings of the field's enum.
    pub fn choice<T: ChoiceOptions>() -> ParamKind {
        ParamKind::Choice {
            options: T::options().to_vec(),
        }
    }

    /// Free text.
    pub fn text<T>() -> ParamKind {
        ParamKind::Text
    }

    /// A vector of numbers (from a tensor).
    pub fn vector<T>() -> ParamKind {
        ParamKind::Vector
    }

    /// An integer bit width in `min..=max` or one of the float `formats` `[exponent, mantissa]`.
    pub fn bits<T>(min: i64, max: i64, formats: &[[i64; 2]]) -> ParamKind {
        ParamKind::Bits {
            min,
            max,
            formats: formats.to_vec(),
        }
    }
}

/// The declaration of one field (used by [`declare_params!`](crate::declare_params)).
pub fn declared<T: ParamValue>(
    field: &'static str,
    kind: ParamKind,
    default: T,
    doc: &'static str,
    affects: Affects,
    flags: &[&str],
) -> ParamSpec {
    let mut spec = ParamSpec::new(
        field.trim_start_matches("r#"),
        kind,
        default.to_json(),
        doc.trim(),
    );
    spec.affects = affects;
    spec.attribute = flags.contains(&"attribute");
    spec
}

/// The value of `spec` in `params`: validated and typed, or `default` when absent or `null`.
pub fn read<T: ParamValue>(params: &Params, spec: &ParamSpec, default: T) -> Result<T> {
    match params.get(spec.name) {
        None => Ok(default),
        Some(v) => {
            spec.validate(v)?;
            T::from_json(v).ok_or_else(|| Error::param(spec.name, format!("unsupported value {v}")))
        }
    }
}

/// A set of parameters declared with [`declare_params!`](crate::declare_params).
pub trait ParamSet: Sized + Clone + std::fmt::Debug + PartialEq + Send + Sync + 'static {
    /// Append the declarations, in order.
    fn declare(out: &mut Vec<ParamSpec>);

    /// The typed values in `params` (other keys are ignored), each validated against its
    /// declaration, defaults filled in.
    fn from_params(params: &Params) -> Result<Self>;

    /// Write every value (defaults included) into `out`.
    fn write(&self, out: &mut Params);

    /// Every parameter at its declared default.
    fn defaults() -> Self;

    /// The declarations, in order.
    fn specs() -> Vec<ParamSpec> {
        let mut out = Vec::new();
        Self::declare(&mut out);
        out
    }

    /// Every value, defaults included.
    fn to_params(&self) -> Params {
        let mut out = Params::new();
        self.write(&mut out);
        out
    }
}

/// No parameters.
impl ParamSet for () {
    fn declare(_: &mut Vec<ParamSpec>) {}
    fn from_params(_: &Params) -> Result<Self> {
        Ok(())
    }
    fn write(&self, _: &mut Params) {}
    fn defaults() -> Self {}
}

/// Declare a typed parameter set: one line per parameter.
///
/// ```text
/// declare_params! {
///     /// doc of the struct
///     pub struct Name {
///         /// doc of the parameter (shown as its tooltip)
///         field: Type = default; kind(args…), Data|Search [, attribute];
///     }
///     include { group: GroupType }   // optional: shared sets, appended in order
/// }
/// ```
///
/// `kind` is one of [`kinds`]; `Data` parameters change what is collected from the data,
/// `Search` ones only the search over it; `attribute` marks a value assigned after construction.
/// A field named `r#type` declares the parameter `type`.
#[macro_export]
macro_rules! declare_params {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $field:ident : $ty:ty = $default:expr ;
                    $kind:ident ( $($karg:expr),* $(,)? ) , $affects:ident $(, $flag:ident)* ;
            )*
        }
        $( include { $( $(#[doc = $gdoc:literal])* $group:ident : $gty:ty ),* $(,)? } )?
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        $vis struct $name {
            $( $(#[doc = $doc])* pub $field: $ty, )*
            $( $( $(#[doc = $gdoc])* pub $group: $gty, )* )?
        }

        impl $crate::params::ParamSet for $name {
            fn declare(out: &mut Vec<$crate::params::ParamSpec>) {
                $(
                    out.push($crate::params::declare::declared::<$ty>(
                        stringify!($field),
                        $crate::params::kinds::$kind::<$ty>($($karg),*),
                        $default,
                        concat!("", $($doc),*),
                        $crate::params::Affects::$affects,
                        &[$(stringify!($flag)),*],
                    ));
                )*
                $( $( <$gty as $crate::params::ParamSet>::declare(out); )* )?
            }

            fn from_params(params: &$crate::params::Params) -> $crate::error::Result<Self> {
                Ok($name {
                    $(
                        $field: {
                            let spec = $crate::params::declare::declared::<$ty>(
                                stringify!($field),
                                $crate::params::kinds::$kind::<$ty>($($karg),*),
                                $default,
                                concat!("", $($doc),*),
                                $crate::params::Affects::$affects,
                                &[$(stringify!($flag)),*],
                            );
                            $crate::params::declare::read::<$ty>(params, &spec, $default)?
                        },
                    )*
                    $( $( $group: <$gty as $crate::params::ParamSet>::from_params(params)?, )* )?
                })
            }

            fn write(&self, out: &mut $crate::params::Params) {
                $(
                    out.0.insert(
                        stringify!($field).trim_start_matches("r#").to_string(),
                        $crate::params::ParamValue::to_json(&self.$field),
                    );
                )*
                $( $( $crate::params::ParamSet::write(&self.$group, out); )* )?
            }

            fn defaults() -> Self {
                $name {
                    $( $field: $default, )*
                    $( $( $group: <$gty as $crate::params::ParamSet>::defaults(), )* )?
                }
            }
        }
    };
}

/// Declare an enum whose variants are spelled as strings (a choice parameter's type).
///
/// ```
/// quantscope::choice_enum! {
///     /// Rounding of a toy quantizer.
///     pub enum Rounding { HalfEven = "half_even", Floor = "floor" }
/// }
/// use quantscope::params::Choice;
/// assert_eq!(Rounding::from_name("floor"), Some(Rounding::Floor));
/// assert_eq!(Rounding::OPTIONS, &["half_even", "floor"]);
/// ```
#[macro_export]
macro_rules! choice_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )*
        }

        impl $crate::params::Choice for $name {
            const OPTIONS: &'static [&'static str] = &[$($text),*];
            fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )*
                }
            }
            fn from_name(text: &str) -> Option<Self> {
                match text {
                    $( $text => Some($name::$variant), )*
                    _ => None,
                }
            }
        }

    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    crate::choice_enum! {
        /// A test choice.
        pub enum Shade { Light = "light", Dark = "dark" }
    }

    crate::declare_params! {
        /// Shared parameters.
        pub struct Shared {
            /// shade of the thing
            shade: Shade = Shade::Light; choice(), Search;
        }
    }

    crate::declare_params! {
        /// Test parameters.
        pub struct Args {
            /// number of bins,
            /// over two lines
            bins: i64 = 2048; int(2, 4096), Data;
            /// optional limit
            limit: Option<i64> = None; int(-10, 10), Search;
            /// a float
            eps: f64 = 0.5; log_float(0.001, 1.0), Search;
            /// a keyword spelled like Rust's
            r#type: bool = false; boolean(), Data, attribute;
            /// bit width
            bits: Bits = Bits::Int(8); bits(2, 16, &[[4, 3]]), Data;
        }
        include { shared: Shared }
    }

    #[test]
    fn declarations_parse_validate_and_fill_defaults() {
        let specs = Args::specs();
        let names: Vec<_> = specs.iter().map(|s| s.name).collect();
        assert_eq!(names, ["bins", "limit", "eps", "type", "bits", "shade"]);
        assert_eq!(specs[0].doc, "number of bins, over two lines");
        assert_eq!(specs[1].default, Value::Null);
        assert!(specs[3].attribute && !specs[0].attribute);
        assert_eq!(specs[5].affects, Affects::Search);
        let p = |v: Value| Params::from_value(v).unwrap();
        let a = Args::from_params(&p(
            json!({"bins": 16, "type": true, "bits": [4, 3], "shade": "dark", "other": 1}),
        ))
        .unwrap();
        assert_eq!(a.bins, 16);
        assert_eq!(a.limit, None);
        assert!(a.r#type);
        assert_eq!(a.shared.shade, Shade::Dark);
        assert_eq!(
            a.bits,
            Bits::Float {
                exponent: 4,
                mantissa: 3
            }
        );
        let d = Args::from_params(&Params::new()).unwrap();
        assert_eq!(Args::defaults(), d);
        assert_eq!(
            Args::from_params(&d.to_params()).unwrap(),
            d,
            "explicit defaults equal no values"
        );
        assert_eq!(
            d.to_params().0.get("limit"),
            Some(&Value::Null),
            "every key is written"
        );
        let err = Args::from_params(&p(json!({"bins": 1})))
            .unwrap_err()
            .to_string();
        assert!(err.contains("bins") && err.contains("outside"), "{err}");
        assert!(Args::from_params(&p(json!({"shade": "grey"}))).is_err());
        assert!(Args::from_params(&p(json!({"bins": 7.5}))).is_err());
    }
}
