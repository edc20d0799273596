//! The parameters of Quark's observers, declared once.
//!
//! Every Quark observer is built from one `QTensorConfig`; each class reads some of its fields,
//! and some classes keep instance attributes of their own (`_num_bins`, `_skip_zeros`,
//! `percentile`). [`quark_params!`] knows every such parameter — name, type, kind and
//! documentation — and each observer's table lists the ones its class reads, with the class's
//! defaults and whether a change needs the data again (`Data`) or only the search (`Search`).
//! Defaults are those of Quark's `DataTypeSpec` helpers (`Int8PerTensorSpec`: symmetric,
//! `scale_type="float"`, `round_method="half_even"`, static; `Int8PerChannelSpec`: asymmetric;
//! `OCP_MX*Spec`: `ch_axis=-1`, `group_size=32`, `scale_format="e8m0"`, `"even"`, dynamic).
//! Where Quark has none (`ch_axis`, `group_size` of per-channel/per-group specs) the default is
//! the usual weight layout.
//!
//! The generated struct resolves to a [`QuarkConfig`](super::spec::QuarkConfig) with
//! `quark_config()`, which applies `QTensorConfig.__post_init__`'s checks.

/// Declare the parameters of one Quark observer class:
///
/// ```text
/// quark_params! {
///     /// doc
///     pub struct Name {
///         dtype: DtypeChoice = default, Data|Search;
///         qscheme: SchemeChoice = default;
///         symmetric: default, Data|Search;
///         ch_axis: default, Data|Search;          // optional
///         group_size: default, Data|Search;       // optional
///         scale_type: Data|Search;
///         is_dynamic: default, Data|Search;
///         scale_format: default;
///         histogram: bins default, skip_zeros default;   // optional (histogram observers)
///         mse_search: start_bin default;                 // optional (MSE observers)
///         qparams_every_batch: Data|Search;              // optional (power-of-two observers)
///         extra { /* declare_params! fields of this class alone */ }   // optional
///     }
/// }
/// ```
///
/// `zero_point_type`, `round_method` and `scale_calculation_mode` only ever enter the search.
macro_rules! quark_params {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            dtype: $dtype:ty = $dtype_default:expr, $dtype_affects:ident;
            qscheme: $qscheme:ty = $qscheme_default:expr;
            symmetric: $symmetric_default:expr, $symmetric_affects:ident;
            $( ch_axis: $axis_default:expr, $axis_affects:ident; )?
            $( group_size: $group_default:expr, $group_affects:ident; )?
            scale_type: $scale_type_affects:ident;
            is_dynamic: $dynamic_default:expr, $dynamic_affects:ident;
            scale_format: $format_default:expr;
            $( histogram: bins $bins_default:expr, skip_zeros $skip_default:expr; )?
            $( mse_search: start_bin $start_default:expr; )?
            $( qparams_every_batch: $every_affects:ident; )?
            $( extra {
                $(
                    $(#[doc = $doc:literal])*
                    $field:ident : $ty:ty = $default:expr ;
                        $kind:ident ( $($karg:expr),* $(,)? ) , $affects:ident ;
                )*
            } )?
        }
    ) => {
        crate::declare_params! {
            $(#[$meta])*
            pub struct $name {
                /// Quark Dtype of the quantized values
                dtype: $dtype = $dtype_default; choice(), $dtype_affects;
                /// QSchemeType (fixed by the observer class)
                qscheme: $qscheme = $qscheme_default; choice(), Search;
                /// symmetric range around zero (int dtypes require it)
                symmetric: Option<bool> = $symmetric_default; boolean(), $symmetric_affects;
                $(
                    /// channel axis (per-channel) or axis the groups/blocks run along; Quark
                    /// has no default
                    ch_axis: i64 = $axis_default; int(-16, 15), $axis_affects;
                )?
                $(
                    /// elements per group/block (-1: the whole axis)
                    group_size: i64 = $group_default; int(-1, 1 << 20), $group_affects;
                )?
                /// dtype the scale is cast to (float/pof2/float32 keep float32)
                scale_type: $crate::observers::quark::spec::ScaleType =
                    $crate::observers::quark::spec::ScaleType::Float; choice(), $scale_type_affects;
                /// int32 zero point (range includes 0) or float32 (raw min/max)
                zero_point_type: $crate::observers::quark::spec::ZeroPointType =
                    $crate::observers::quark::spec::ZeroPointType::Int32; choice(), Search;
                /// dynamic: keep only the last batch's statistics
                is_dynamic: bool = $dynamic_default; boolean(), $dynamic_affects;
                /// rounding of the GPU kernels; on CPU Quark always rounds half to even
                round_method: $crate::observers::quark::spec::RoundMethod =
                    $crate::observers::quark::spec::RoundMethod::HalfEven; choice(), Search;
                /// scale format for fp4/MX scales
                scale_format: Option<$crate::observers::quark::spec::ScaleFormat> =
                    $format_default; choice(), Search;
                /// E8M0 scale rounding: even (round amax's mantissa first), floor, ceil
                scale_calculation_mode: $crate::observers::quark::spec::ScaleCalculationMode =
                    $crate::observers::quark::spec::ScaleCalculationMode::Even; choice(), Search;
                $(
                    /// initial number of bins (Quark's _num_bins instance attribute; grows with
                    /// the range)
                    bins: i64 = $bins_default; int(1, 1 << 20), Data;
                    /// drop exact zeros before binning (Quark's _skip_zeros instance attribute)
                    skip_zeros: bool = $skip_default; boolean(), Data;
                )?
                $(
                    /// first bin centre tried as amax (default of get_min_max_by_mse)
                    start_bin: i64 = $start_default; int(0, 1 << 24), Search;
                    /// step between tried bins
                    stride: i64 = 1; int(1, 1 << 20), Search;
                )?
                $(
                    /// compute qparams after every batch as Quark's calibration loop does (the
                    /// most common result wins)
                    qparams_every_batch: bool = false; boolean(), $every_affects;
                )?
                $( $(
                    $(#[doc = $doc])*
                    $field: $ty = $default; $kind($($karg),*), $affects;
                )* )?
            }
        }

        impl $name {
            /// The `QTensorConfig` these values make, checked like Quark's `__post_init__`.
            pub fn quark_config(&self) -> $crate::error::Result<$crate::observers::quark::spec::QuarkConfig> {
                #[allow(unused_mut)]
                let mut spec = $crate::observers::quark::spec::QuarkConfig {
                    dtype: self.dtype.into(),
                    qscheme: self.qscheme.into(),
                    symmetric: self.symmetric,
                    ch_axis: None,
                    group_size: None,
                    scale_type: self.scale_type,
                    float_zero_point: self.zero_point_type
                        == $crate::observers::quark::spec::ZeroPointType::Float32,
                    is_dynamic: self.is_dynamic,
                    scale_format: self.scale_format,
                    scale_calculation_mode: self.scale_calculation_mode.rounding(),
                };
                // Each repetition names its section's `Affects` only to be tied to the section.
                $( spec.ch_axis = Some(self.ch_axis); let _ = $crate::params::Affects::$axis_affects; )?
                $( spec.group_size = Some(self.group_size); let _ = $crate::params::Affects::$group_affects; )?
                spec.checked()
            }
        }
    };
}

pub(crate) use quark_params;
