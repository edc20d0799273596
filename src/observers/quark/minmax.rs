//! Quark's min/max observers: `PerTensorMinMaxObserver`, `PerChannelMinMaxObserver`,
//! `PerGroupMinMaxObserver`.
//!
//! * Per tensor: running `min`/`max` (`torch.aminmax`, NaN propagates); `is_dynamic` keeps only
//!   the last batch.
//! * Per channel: `ch_axis` moved to the front, the rest flattened (a 1-d input is one value per
//!   channel), per-row min/max; running only while the channel count stays the same — a batch
//!   with a different count silently restarts the statistics.
//! * Per group: `ch_axis` swapped with the last axis, rows cut into groups of `group_size`
//!   (`dim[ch_axis] % group_size` must be 0, `−1` = the whole axis); **every batch overwrites**
//!   the statistics (it is a weight observer). Int or fp8 qparams per group.
//!
//! qparams: [`super::qparams::calculate_qparams`].

use super::kernels::{group_layout, scaled_fake_quantize};
use super::qparams::{self, nan_max, nan_min};
use super::spec::{QuarkSpec, SpecDefaults};
use super::{aminmax, build_qparams};
use crate::error::{Error, Result, Stage};
use crate::observer::legacy::Observer;
use crate::observer::{ObserverState, QParams};
use crate::params::Params;
use crate::tensor::Tensor;

/// `PerTensorMinMaxObserver`.
#[derive(Debug, Clone)]
pub struct PerTensorMinMax {
    spec: QuarkSpec,
    min: f32,
    max: f32,
}

impl PerTensorMinMax {
    /// Build from parameters (see [`SpecDefaults::params`]).
    pub fn new(defaults: &SpecDefaults, params: &Params) -> Result<Self> {
        Ok(Self::from_spec(defaults.parse(params)?))
    }

    /// Build from a parsed spec.
    pub fn from_spec(spec: QuarkSpec) -> Self {
        PerTensorMinMax {
            spec,
            min: f32::INFINITY,
            max: f32::NEG_INFINITY,
        }
    }

    /// The configuration.
    pub fn spec(&self) -> &QuarkSpec {
        &self.spec
    }

    /// Running (min, max); `(+inf, −inf)` before any data.
    pub fn min_max(&self) -> (f32, f32) {
        (self.min, self.max)
    }

    /// True once a non-empty batch was seen.
    pub fn observed(&self) -> bool {
        !(self.min == f32::INFINITY && self.max == f32::NEG_INFINITY)
    }
}

impl Observer for PerTensorMinMax {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let (lo, hi) = aminmax(&batch.data);
        if self.spec.is_dynamic {
            (self.min, self.max) = (lo, hi);
        } else {
            self.min = nan_min(lo, self.min);
            self.max = nan_max(hi, self.max);
        }
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        let sz = qparams::calculate_qparams(&self.spec, &[self.min], &[self.max], true)?;
        let (min_val, max_val) = if self.observed() {
            (vec![self.min], vec![self.max])
        } else {
            (Vec::new(), Vec::new())
        };
        let mut q = build_qparams(&self.spec, sz, min_val, max_val);
        if !self.observed() {
            q.notes
                .push("no data observed: Quark returns its default qparams".to_string());
        }
        Ok(q)
    }

    fn reset(&mut self) {
        (self.min, self.max) = (f32::INFINITY, f32::NEG_INFINITY);
    }

    fn state(&self) -> ObserverState {
        ObserverState {
            min_val: if self.observed() {
                vec![self.min]
            } else {
                Vec::new()
            },
            max_val: if self.observed() {
                vec![self.max]
            } else {
                Vec::new()
            },
            histogram: None,
        }
    }

    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        scaled_fake_quantize(&self.spec, x, &q.scale, &q.zero_point)
    }
}

/// Per-row `aminmax` of `data` laid out as `rows × len` by `row_of`.
fn row_min_max(data: &[f32], rows: usize, row_of: impl Fn(usize) -> usize) -> (Vec<f32>, Vec<f32>) {
    let mut lo = vec![f32::INFINITY; rows];
    let mut hi = vec![f32::NEG_INFINITY; rows];
    for (i, &v) in data.iter().enumerate() {
        let r = row_of(i);
        lo[r] = nan_min(lo[r], v);
        hi[r] = nan_max(hi[r], v);
    }
    (lo, hi)
}

/// `PerChannelMinMaxObserver`.
#[derive(Debug, Clone)]
pub struct PerChannelMinMax {
    spec: QuarkSpec,
    min: Vec<f32>,
    max: Vec<f32>,
    axis: Option<usize>,
    notes: Vec<String>,
}

impl PerChannelMinMax {
    /// Build from parameters.
    pub fn new(defaults: &SpecDefaults, params: &Params) -> Result<Self> {
        Ok(PerChannelMinMax {
            spec: defaults.parse(params)?,
            min: Vec::new(),
            max: Vec::new(),
            axis: None,
            notes: Vec::new(),
        })
    }
}

impl Observer for PerChannelMinMax {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let shape = if batch.shape.is_empty() {
            vec![1]
        } else {
            batch.shape.clone()
        };
        let axis = self.spec.axis_for(shape.len())?;
        let channels = shape[axis];
        let ix = crate::quant::ChannelIndexer::new(&shape, axis);
        let (lo, hi) = row_min_max(&batch.data, channels, |i| ix.channel(i));
        if !self.spec.is_dynamic && self.min.len() == channels {
            for c in 0..channels {
                self.min[c] = nan_min(self.min[c], lo[c]);
                self.max[c] = nan_max(self.max[c], hi[c]);
            }
        } else {
            if !self.min.is_empty() && !self.spec.is_dynamic {
                self.notes.push(format!(
                    "the channel count changed from {} to {channels}: Quark restarted the statistics",
                    self.min.len()
                ));
            }
            (self.min, self.max) = (lo, hi);
        }
        self.axis = Some(axis);
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        let observed = !self.min.is_empty();
        let sz = if observed {
            qparams::calculate_qparams(&self.spec, &self.min, &self.max, false)?
        } else {
            qparams::calculate_qparams(&self.spec, &[f32::INFINITY], &[f32::NEG_INFINITY], true)?
        };
        let mut q = build_qparams(&self.spec, sz, self.min.clone(), self.max.clone());
        q.axis = if observed { self.axis } else { None };
        q.notes.extend(self.notes.iter().cloned());
        Ok(q)
    }

    fn reset(&mut self) {
        self.min.clear();
        self.max.clear();
        self.axis = None;
        self.notes.clear();
    }

    fn state(&self) -> ObserverState {
        ObserverState {
            min_val: self.min.clone(),
            max_val: self.max.clone(),
            histogram: None,
        }
    }

    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        if q.axis.is_none() {
            // Default qparams of an observer without data: one scale for everything.
            let spec = QuarkSpec {
                qscheme: super::spec::QScheme::PerTensor,
                ..self.spec.clone()
            };
            return scaled_fake_quantize(&spec, x, &q.scale, &q.zero_point);
        }
        scaled_fake_quantize(&self.spec, x, &q.scale, &q.zero_point)
    }
}

/// `PerGroupMinMaxObserver`.
#[derive(Debug, Clone)]
pub struct PerGroupMinMax {
    spec: QuarkSpec,
    min: Vec<f32>,
    max: Vec<f32>,
    layout: Option<(usize, usize, usize)>,
}

impl PerGroupMinMax {
    /// Build from parameters.
    pub fn new(defaults: &SpecDefaults, params: &Params) -> Result<Self> {
        Ok(PerGroupMinMax {
            spec: defaults.parse(params)?,
            min: Vec::new(),
            max: Vec::new(),
            layout: None,
        })
    }
}

impl Observer for PerGroupMinMax {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let shape = if batch.shape.is_empty() {
            vec![1]
        } else {
            batch.shape.clone()
        };
        let axis = self.spec.axis_for(shape.len())?;
        let len = shape[axis];
        let group_size = self.spec.group_size.unwrap_or(-1);
        if group_size > 0 && len % group_size as usize != 0 {
            return Err(Error::framework(
                "ValueError",
                format!(
                    "The number of element per dimension ch_axis={} is {len} which is not divisible by group_size={group_size}. The `group_size` used should be updated in the QTensorConfig.",
                    self.spec.ch_axis.unwrap_or(0)
                ),
                Stage::Forward,
            ));
        }
        if group_size == -1 && shape.len() < 2 {
            return Err(Error::framework(
                "IndexError",
                "Dimension out of range (expected to be in range of [-1, 0], but got 1)",
                Stage::Forward,
            ));
        }
        let layout = group_layout(&self.spec, &shape)?;
        let (lo, hi) = row_min_max(&batch.data, layout.num_blocks(), |i| layout.block_of(i));
        (self.min, self.max) = (lo, hi);
        self.layout = Some((axis, layout.block_size(), layout.num_blocks()));
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        let Some((axis, block, _)) = self.layout else {
            let sz =
                qparams::int_qparams(&self.spec, &[f32::INFINITY], &[f32::NEG_INFINITY], true)?;
            return Ok(build_qparams(&self.spec, sz, Vec::new(), Vec::new()));
        };
        let sz = if self.spec.dtype.is_fp8() {
            qparams::fp8_qparams(&self.spec, &self.min, &self.max, qparams::EPS)
        } else {
            qparams::int_qparams(&self.spec, &self.min, &self.max, false)?
        };
        let mut q = build_qparams(&self.spec, sz, self.min.clone(), self.max.clone());
        q.extra.insert("block_axis".into(), axis.into());
        q.extra.insert("block_size".into(), block.into());
        Ok(q)
    }

    fn reset(&mut self) {
        self.min.clear();
        self.max.clear();
        self.layout = None;
    }

    fn state(&self) -> ObserverState {
        ObserverState {
            min_val: self.min.clone(),
            max_val: self.max.clone(),
            histogram: None,
        }
    }

    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        if self.layout.is_none() {
            let spec = QuarkSpec {
                qscheme: super::spec::QScheme::PerTensor,
                ..self.spec.clone()
            };
            return scaled_fake_quantize(&spec, x, &q.scale, &q.zero_point);
        }
        scaled_fake_quantize(&self.spec, x, &q.scale, &q.zero_point)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::ZeroPoint;
    use crate::observers::quark::spec::{PER_CHANNEL_DTYPES, UNIFORM_DTYPES};

    fn t(shape: &[usize], data: &[f32]) -> Tensor {
        Tensor::new(shape.to_vec(), data.to_vec()).unwrap()
    }

    #[test]
    fn per_tensor_running_and_dynamic() {
        let d = SpecDefaults::per_tensor(UNIFORM_DTYPES);
        let mut o = PerTensorMinMax::new(&d, &Params::new()).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!((q.scale.clone(), q.min_val.len()), (vec![1.0], 0));
        o.observe(&t(&[2], &[-1.0, 2.0])).unwrap();
        o.observe(&t(&[2], &[0.5, 0.25])).unwrap();
        assert_eq!(o.qparams().unwrap().max_val, vec![2.0]);
        let mut dynamic =
            PerTensorMinMax::new(&d, &Params::new().with("is_dynamic", true)).unwrap();
        dynamic.observe(&t(&[2], &[-1.0, 2.0])).unwrap();
        dynamic.observe(&t(&[2], &[0.5, 0.25])).unwrap();
        let q = dynamic.qparams().unwrap();
        assert_eq!((q.min_val, q.max_val), (vec![0.25], vec![0.5]));
    }

    #[test]
    fn per_channel_restarts_when_the_channel_count_changes() {
        let d = SpecDefaults {
            qschemes: &["per_channel"],
            qscheme: "per_channel",
            symmetric: Some(false),
            ch_axis: Some(0),
            ..SpecDefaults::per_tensor(PER_CHANNEL_DTYPES)
        };
        let mut o = PerChannelMinMax::new(&d, &Params::new().with("dtype", "uint8")).unwrap();
        o.observe(&t(&[2, 2], &[1.0, 2.0, -3.0, 4.0])).unwrap();
        o.observe(&t(&[2, 1], &[5.0, -6.0])).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(
            (q.min_val.clone(), q.max_val.clone()),
            (vec![1.0, -6.0], vec![5.0, 4.0])
        );
        assert_eq!(q.axis, Some(0));
        o.observe(&t(&[3], &[1.0, 2.0, 3.0])).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.min_val, vec![1.0, 2.0, 3.0]);
        assert!(q.notes.iter().any(|n| n.contains("restarted")));
        // Negative axes count from the end.
        let mut last = PerChannelMinMax::new(&d, &Params::new().with("ch_axis", -1)).unwrap();
        last.observe(&t(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
            .unwrap();
        assert_eq!(last.qparams().unwrap().max_val, vec![4.0, 5.0, 6.0]);
        let err = last.observe(&t(&[2], &[1.0, 2.0])).and(Ok(()));
        assert!(err.is_ok(), "-1 is valid on 1-d");
        let mut bad = PerChannelMinMax::new(&d, &Params::new().with("ch_axis", 2)).unwrap();
        let err = bad.observe(&t(&[2, 2], &[0.0; 4])).unwrap_err().to_string();
        assert!(err.starts_with("IndexError"), "{err}");
    }

    #[test]
    fn per_group_overwrites_and_checks_divisibility() {
        let d = SpecDefaults {
            qschemes: &["per_group"],
            qscheme: "per_group",
            ch_axis: Some(1),
            group_size: Some(2),
            ..SpecDefaults::per_tensor(UNIFORM_DTYPES)
        };
        let mut o = PerGroupMinMax::new(&d, &Params::new()).unwrap();
        o.observe(&t(&[2, 4], &[1.0, -2.0, 3.0, 4.0, 5.0, 6.0, -7.0, 8.0]))
            .unwrap();
        o.observe(&t(&[2, 4], &[0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 2.55]))
            .unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.max_val, vec![1.0, 1.0, 1.0, 2.55]);
        assert_eq!(q.scale[3], 2.55f32 / 127.5);
        assert_eq!(q.zero_point, ZeroPoint::Int(vec![0; 4]));
        assert_eq!(q.extra["block_size"], 2);
        let err = o.observe(&t(&[1, 3], &[0.0; 3])).unwrap_err().to_string();
        assert!(err.contains("not divisible by group_size=2"), "{err}");
        let y = o
            .fake_quantize(&t(&[2, 4], &[0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 3.0]), &q)
            .unwrap();
        assert_eq!(y.data[7], 127.0 * (2.55f32 / 127.5));
    }
}
